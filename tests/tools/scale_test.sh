#!/usr/bin/env bash
# Sharded campaigns and their merge, end to end (docs/scale.md), one scenario per ctest test:
#   scale_test.sh <samplecheck> <scenario> <scratch dir>
# Every scenario is deterministic (fixed seeds); the statistical ones state their alpha and power.
set -uo pipefail
bin=$1; scenario=$2; dir=$3/$scenario
rm -rf "$dir"; mkdir -p "$dir"
# shellcheck source=../lib/expect.sh
source "$(dirname "${BASH_SOURCE[0]}")/../lib/expect.sh"
expect_error() {  # expect_error <message fragment> <command...>: exit 2 and the message on stderr
  local want=$1; shift
  expect_rc 2 "$@"
  grep -qF -- "$want" "$dir/err.txt" || fail "message '$want' missing for: $*"
}
# same_judgement <a.json> <b.json>: the two reports judge alike (shared with slurm_test.sh).
# shellcheck source=scale_lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/scale_lib.sh"
std=(--suite standard --sampler exact --seed 11 --max-draws 32768 --allow-underpowered --progress none)

case "$scenario" in
  shard_merge_standard)
    # standard on exact as 1 shard and as 4 shards (run side by side), each merged: every case's counts, binnings,
    # statistics, p-values (Holm over all 460 cases) and verdict are identical, because a case's draws come from
    # its seed at fixed offsets whichever shard makes them. The verdict is a pass: exact judged by its own profile,
    # campaign false-alarm rate <= alpha = 1e-4 (Holm), fixed seed 11.
    expect_rc 0 "$bin" run "${std[@]}" --shard 0/1 --report "$dir/one.json"
    pids=()
    for i in 0 1 2 3; do "$bin" run "${std[@]}" --shard $i/4 --report "$dir/s$i.json" >"$dir/s$i.out" 2>&1 & pids+=($!); done
    for i in 0 1 2 3; do wait "${pids[$i]}" || { cat "$dir/s$i.out"; fail "shard $i/4 exited $?"; }; done
    grep -q "shard 2/4 of standard on exact:vllm" "$dir/s2.out" || fail "shard summary line"
    jq -e '.shard.count == 4 and .verdict == "fail"' "$dir/s1.json" >/dev/null || fail "a shard's report is not marked a shard's"
    expect_rc 1 "$bin" gate "$dir/s1.json"
    grep -q "not a verdict: samplecheck merge judges" "$dir/out.txt" || fail "gate passes a lone shard"
    expect_rc 0 "$bin" merge "$dir/one.json" --report "$dir/m1.json"
    expect_rc 0 "$bin" merge "$dir/s3.json" "$dir/s1.json" "$dir/s0.json" "$dir/s2.json" --report "$dir/m4.json" --html "$dir/m4.html"
    grep -q "merged 4 shards" "$dir/out.txt" && grep -q "460 cases: 460 pass" "$dir/out.txt" || fail "merged summary"
    grep -q '<svg' "$dir/m4.html" || fail "no chart in the merged HTML"
    jq -e '.merged_shards == 4 and .shard == null and (.cases | length) == 460' "$dir/m4.json" >/dev/null || fail "merged report"
    same_judgement "$dir/m1.json" "$dir/m4.json"
    expect_rc 0 "$bin" gate "$dir/m4.json"
    # The unsharded run of a suite without a time budget plans the same draws: the same report again.
    expect_rc 0 "$bin" run --suite smoke --sampler exact --seed 5 --report "$dir/plain.json" --progress none
    for i in 0 1 2; do expect_rc 0 "$bin" run --suite smoke --sampler exact --seed 5 --shard $i/3 --report "$dir/p$i.json" --progress none; done
    expect_rc 0 "$bin" merge "$dir/p0.json" "$dir/p1.json" "$dir/p2.json" --report "$dir/pm.json"
    same_judgement "$dir/plain.json" "$dir/pm.json"
    ;;
  shard_merge_catches_mutant)
    # The merged verdict is a judgement, not a formality: mutant:topk-plus-one (keeps one token too many) sharded in 3
    # fails after merge with support violations, as unsharded (power ~1: thousands of draws land on the extra token).
    for i in 0 1 2; do expect_rc 0 "$bin" run --suite smoke --sampler mutant:topk-plus-one --seed 1 --shard $i/3 --report "$dir/s$i.json" --progress none; done
    expect_rc 1 "$bin" merge "$dir/s0.json" "$dir/s1.json" "$dir/s2.json" --report "$dir/m.json"
    grep -q "VERDICT: FAIL" "$dir/out.txt" || fail "merged mutant not failing"
    expect_rc 1 "$bin" run --suite smoke --sampler mutant:topk-plus-one --seed 1 --report "$dir/plain.json" --progress none
    same_judgement "$dir/plain.json" "$dir/m.json"
    ;;
  merge_bad_inputs)
    # Every bad input of merge exits 2 with a message naming the file and what is wrong.
    run_shards() {  # run_shards <prefix> <count> <extra args...>
      local p=$1 n=$2; shift 2
      for ((i = 0; i < n; i++)); do
        "$bin" run --suite smoke --sampler exact --seed 3 --max-draws 4096 --allow-underpowered --shard $i/$n --report "$dir/$p$i.json" --progress none "$@" >/dev/null 2>&1 || fail "shard $p$i"
      done
    }
    run_shards a 2
    run_shards b 2 --draw-seed 9
    run_shards c 3
    "$bin" run --suite smoke --sampler exact --seed 3 --max-draws 4096 --allow-underpowered --report "$dir/full.json" --progress none >/dev/null 2>&1
    expect_error "missing: merge needs every shard" "$bin" merge "$dir/a0.json"
    expect_error "is given twice" "$bin" merge "$dir/a0.json" "$dir/a0.json"
    expect_error "its draw seed is 9, not 3" "$bin" merge "$dir/a0.json" "$dir/b1.json"
    expect_error "its shard count is 3, not 2" "$bin" merge "$dir/a0.json" "$dir/c1.json"
    expect_error "is not a shard's report" "$bin" merge "$dir/full.json" "$dir/a1.json"
    expect_error "No such file" "$bin" merge "$dir/a0.json" "$dir/nonexistent.json"
    echo '{"schema": "samplecheck-report/1", "cases": [' >"$dir/torn.json"
    expect_error "torn.json" "$bin" merge "$dir/a0.json" "$dir/torn.json"
    jq '.suite.name = "standard" | .suite.source = "builtin:standard"' "$dir/a1.json" >"$dir/other_suite.json"
    expect_error "its suite is standard (builtin:standard), not smoke (builtin:smoke)" "$bin" merge "$dir/a0.json" "$dir/other_suite.json"
    jq '.profile = "hf"' "$dir/a1.json" >"$dir/other_profile.json"
    expect_error "its profile is hf, not vllm" "$bin" merge "$dir/a0.json" "$dir/other_profile.json"
    jq '.sampler.spec = "mutant:none"' "$dir/a1.json" >"$dir/other_sampler.json"
    expect_error "its sampler is mutant:none, not exact" "$bin" merge "$dir/a0.json" "$dir/other_sampler.json"
    jq '.git_revision = "0000000"' "$dir/a1.json" >"$dir/other_rev.json"
    expect_error "its git revision is 0000000" "$bin" merge "$dir/a0.json" "$dir/other_rev.json"
    jq '.interrupted = true' "$dir/a1.json" >"$dir/interrupted.json"
    expect_error "was interrupted" "$bin" merge "$dir/a0.json" "$dir/interrupted.json"
    # Tampered evidence: a piece missing, a piece twice, a token outside the row, a plan that is not the suite's.
    # Pieces cut without their counts: the counts no longer are the draws of the pieces.
    jq '(.shard.evidence[0].pieces) = [[0, 1024]]' "$dir/a1.json" >"$dir/short.json"
    expect_error "its draw ranges hold 1024 (a shard's counts are the draws it made)" "$bin" merge "$dir/a0.json" "$dir/short.json"
    first=$(jq -r '.shard.evidence[0].case' "$dir/a1.json")
    jq --argjson e "$(jq '.shard.evidence[0] | .agreement = null' "$dir/a1.json")" '.shard.evidence += [$e]' "$dir/a0.json" >"$dir/twice.json"
    expect_error "were drawn by two shards" "$bin" merge "$dir/twice.json" "$dir/a1.json"
    jq --argjson e "$(jq '.shard.evidence[0]' "$dir/a1.json")" '.shard.evidence += [$e]' "$dir/a0.json" >"$dir/twice_first.json"
    expect_error "two shards hold its first draws" "$bin" merge "$dir/twice_first.json" "$dir/a1.json"
    jq '(.shard.evidence[0].histogram[-1][0]) = 99999999' "$dir/a1.json" >"$dir/token.json"
    expect_error "counts token 99999999, outside its vocabulary" "$bin" merge "$dir/a0.json" "$dir/token.json"
    jq '.shard.plan_fingerprint = "0000000000000001"' "$dir/a0.json" >"$dir/fp0.json"; jq '.shard.plan_fingerprint = "0000000000000001"' "$dir/a1.json" >"$dir/fp1.json"
    expect_error "differs from the one the shards drew" "$bin" merge "$dir/fp0.json" "$dir/fp1.json"
    jq '.shard.index = 7' "$dir/a1.json" >"$dir/index.json"
    expect_error "shard index must be below its count" "$bin" merge "$dir/a0.json" "$dir/index.json"
    expect_rc 0 "$bin" merge "$dir/a1.json" "$dir/a0.json"  # the good pair, in any order
    [ -n "$first" ] || fail "no evidence in a shard"
    ;;
  shard_options)
    # --shard I/N, auto (GoogleTest, Slurm), auto/N (Kubernetes); and what is refused, with exit 2.
    small=(--suite smoke --sampler exact --seed 3 --max-draws 4096 --allow-underpowered --progress none)
    expect_rc 0 env GTEST_SHARD_INDEX=1 GTEST_TOTAL_SHARDS=2 "$bin" run "${small[@]}" --shard auto --report "$dir/g.json"
    jq -e '.shard.index == 1 and .shard.count == 2 and .shard.source == "GTEST_SHARD_INDEX"' "$dir/g.json" >/dev/null || fail "gtest"
    expect_rc 0 env SLURM_ARRAY_TASK_ID=11 SLURM_ARRAY_TASK_MIN=10 SLURM_ARRAY_TASK_COUNT=3 "$bin" run "${small[@]}" --shard auto --report "$dir/s.json"
    jq -e '.shard.index == 1 and .shard.count == 3 and .shard.source == "SLURM_ARRAY_TASK_ID"' "$dir/s.json" >/dev/null || fail "slurm"
    expect_rc 0 env JOB_COMPLETION_INDEX=2 "$bin" run "${small[@]}" --shard auto/4 --report "$dir/k.json"
    jq -e '.shard.index == 2 and .shard.count == 4 and .shard.source == "JOB_COMPLETION_INDEX"' "$dir/k.json" >/dev/null || fail "k8s"
    expect_error "the shard count is not: give it as --shard auto/N" env JOB_COMPLETION_INDEX=2 "$bin" run "${small[@]}" --shard auto --report "$dir/x.json"
    expect_error "no scheduler's shard index in the environment" env -u GTEST_SHARD_INDEX -u SLURM_ARRAY_TASK_ID -u JOB_COMPLETION_INDEX "$bin" run "${small[@]}" --shard auto --report "$dir/x.json"
    expect_error "the index runs from 0 to 3" "$bin" run "${small[@]}" --shard 4/4 --report "$dir/x.json"
    expect_error "is outside [1, 65536]" "$bin" run "${small[@]}" --shard 0/0 --report "$dir/x.json"
    expect_error "'x' is not a whole non-negative number" "$bin" run "${small[@]}" --shard x/2 --report "$dir/x.json"
    expect_error "has no count" "$bin" run "${small[@]}" --shard 3 --report "$dir/x.json"
    expect_error "GTEST_TOTAL_SHARDS '-2' is not a whole" env GTEST_SHARD_INDEX=0 GTEST_TOTAL_SHARDS=-2 "$bin" run "${small[@]}" --shard auto --report "$dir/x.json"
    expect_error "--shard auto/2 but SLURM_ARRAY_TASK_COUNT is 3" env SLURM_ARRAY_TASK_ID=0 SLURM_ARRAY_TASK_COUNT=3 "$bin" run "${small[@]}" --shard auto/2 --report "$dir/x.json"
    expect_error "--shard needs --report" "$bin" run "${small[@]}" --shard 0/2
    expect_error "--html does not apply to a shard" "$bin" run "${small[@]}" --shard 0/2 --report "$dir/x.json" --html "$dir/x.html"
    expect_error "--resume does not apply to a shard" "$bin" run "${small[@]}" --shard 0/2 --report "$dir/x.json" --resume
    ;;
  devices_without_gpu)
    # --devices on a machine without a usable GPU (CI): a clear refusal, exit 2. On a GPU machine: a GPU sampler
    # only, and only devices that exist.
    if [ -e /dev/nvidiactl ] && "$bin" list 2>/dev/null | grep -q "cuda"; then
      expect_error "is not one" "$bin" run --suite smoke --sampler exact --devices all --progress none
      expect_error "this host has" "$bin" run --suite smoke --sampler cuda --devices 0,99 --progress none
    else
      expect_error "no usable CUDA device here" "$bin" run --suite smoke --sampler exact --devices all --progress none
      expect_error "no usable CUDA device here" "$bin" run --suite smoke --sampler cuda --devices 0,1 --progress none
    fi
    ;;
  templates_simulated)
    # The templates of examples/scale run as the schedulers would run them (no Slurm or Kubernetes here): the
    # Slurm array script with the variables Slurm sets (task ids 4..6 of an array, SLURM_ARRAY_TASK_MIN 4), the merge
    # script; the Indexed Job's command with JOB_COMPLETION_INDEX, its merge Job's command. smoke on exact instead
    # of standard on cuda (CI has no GPU); the verdicts must pass and agree with the unsharded run.
    ex=$(cd "$(dirname "$0")/../../examples/scale" && pwd)
    export PATH="$(dirname "$bin"):$PATH" SUITE=smoke SAMPLER=exact SEED=4 OUT="$dir/slurm"
    for id in 4 5 6; do
      expect_rc 0 env SLURM_ARRAY_JOB_ID=77 SLURM_ARRAY_TASK_ID=$id SLURM_ARRAY_TASK_MIN=4 SLURM_ARRAY_TASK_COUNT=3 bash "$ex/slurm-shards.sbatch"
    done
    expect_rc 0 bash "$ex/slurm-merge.sbatch"
    grep -q "merged 3 shards" "$dir/out.txt" || fail "slurm merge"
    expect_rc 0 "$bin" run --suite smoke --sampler exact --seed 4 --report "$dir/plain.json" --progress none
    same_judgement "$dir/plain.json" "$dir/slurm/merged.json"
    # Kubernetes: the container commands of the two manifests, the volume mounted at $dir/k8s.
    mkdir -p "$dir/k8s"
    cmd_of() { sed -n '/^ *args:/,/^ *resources:\|^ *volumeMounts:/p' "$1" | grep -v 'args:\|resources:\|volumeMounts:\|^ *#' \
               | sed 's/^ *- *>-//; s/^ *- //' | tr '\n' ' ' | sed "s|/results|$dir/k8s|g; s|--suite standard --sampler cuda|--suite smoke --sampler exact|"; }
    shard_cmd=$(cmd_of "$ex/k8s-indexed-job.yaml")
    [[ $shard_cmd == *"--shard auto/8"* ]] || fail "the Indexed Job's command: $shard_cmd"
    for i in 0 1 2 3 4 5 6 7; do expect_rc 0 env -u SLURM_ARRAY_TASK_ID JOB_COMPLETION_INDEX=$i sh -c "$shard_cmd"; done
    expect_rc 0 sh -c "$(cmd_of "$ex/k8s-merge-job.yaml")"
    grep -q "merged 8 shards" "$dir/out.txt" || fail "k8s merge"
    ;;
  calibration_sharded)
    # The null calibration split over 2 shards and judged from their reports prints the judgement of the unsharded
    # run of the same seeds (smoke, 4 runs from seed 100, 2e4 draws per case: a plumbing test, not a calibration).
    build=$(cd "$(dirname "$bin")/.." && pwd)
    cal=(bash "$(dirname "$0")/../../scripts/calibration-nightly" --build-dir "$build" --suite smoke --runs 4 --seed 100 --max-draws 20000)
    judgement() { grep -E "^(false alarms|KS uniformity)" "$1" | sed 's/; [0-9.e+-]* s$//'; }
    expect_rc 0 "${cal[@]}"; judgement "$dir/out.txt" >"$dir/whole.txt"
    for i in 0 1; do expect_rc 0 "${cal[@]}" --shard $i/2 --out "$dir/runs"; done
    reports=$(ls "$dir/runs" | grep -c '^run-[0-9]*\.json$'); summaries=$(ls "$dir/runs" | grep -c '^run-[0-9]*\.summary\.json$')
    [ "$reports" = 4 ] && [ "$summaries" = 4 ] || fail "the shards wrote $reports reports and $summaries summaries, not 4 and 4"
    expect_rc 0 "${cal[@]}" --judge "$dir/runs"; judgement "$dir/out.txt" >"$dir/judged.txt"
    [ -s "$dir/whole.txt" ] && diff "$dir/whole.txt" "$dir/judged.txt" || fail "the judged shards differ from the whole run"
    # A shard run again resumes: its runs' summaries are there, nothing is drawn again.
    expect_rc 0 "${cal[@]}" --shard 1/2 --out "$dir/runs"
    [ "$(grep -c '(reused)' "$dir/out.txt")" = 2 ] || fail "the shard run again did not reuse its 2 runs"
    # The summaries alone (what travels between machines) give the same judgement.
    rm "$dir"/runs/run-[0-9].json
    expect_rc 0 "${cal[@]}" --judge "$dir/runs"; judgement "$dir/out.txt" >"$dir/judged-summaries.txt"
    diff "$dir/whole.txt" "$dir/judged-summaries.txt" || fail "the judgement from the summaries differs from the whole run"
    rm "$dir/runs/run-2.summary.json"
    expect_rc 1 "${cal[@]}" --judge "$dir/runs"
    grep -q "every run's report or summary is needed" "$dir/out.txt" || fail "a missing run was not named"
    expect_rc 2 "${cal[@]}" --shard 0/2
    grep -q "needs --out" "$dir/err.txt" || fail "--shard without --out"
    ;;
  *) fail "unknown scenario" ;;
esac
echo "PASS ($scenario)"
