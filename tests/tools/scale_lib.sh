# shellcheck shell=bash
# Sourced by the sharded-campaign tests (tests/tools/scale_test.sh, tests/tools/slurm_test.sh) after
# tests/lib/expect.sh and after they set $dir (the scenario's scratch folder):
#   same_judgement <a.json> <b.json>   fails unless the two reports judge alike: a report without what differs
#                                      between runs of one plan (times, machine, command line, the shard bookkeeping);
#                                      the diff, if any, is in $dir/diff.txt and its first 40 lines are printed
# reproduce: a merged report has no reproduce lines yet (each shard's would name its own --shard); left out.
same_judgement() {
  local f='del(.samplecheck_version, .git_revision, .started, .seconds, .command_line, .budget, .draw_plan, .merged_shards, .shard, .machine, .gpu, .cases[].seconds, .reproduce, .cases[].reproduce)'
  diff <(jq -S "$f" "$1") <(jq -S "$f" "$2") >"$dir/diff.txt" || { head -40 "$dir/diff.txt"; fail "$1 and $2 differ"; }
}
