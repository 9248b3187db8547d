#!/usr/bin/env bash
# The README's Slurm array template submitted to a real Slurm on this machine (docs/scale.md, ctest
# tools.scale.slurm_real):
#   slurm_test.sh <samplecheck> <scratch dir>
# Starts munged (its own key and socket) and a one-node cluster (slurmctld + slurmd, their own slurm.conf, state,
# spool, logs and ports, all under the scratch dir), submits examples/scale/submit-slurm.sh for standard on exact
# in 3 array tasks (the merge queued afterok on the array, as the script does), waits for both jobs (bounded), and
# checks that the merged report judges as the unsharded run of the same suite, sampler, seed and --max-draws.
# Without Debian's slurm-wlm and munge (slurmctld slurmd slurm-client munge), without root, or when a daemon cannot
# start here: one line "SKIPPED: <why>", exit 77. Exit 0 pass, 1 fail. The daemons are always stopped.
# Settings (environment): SAMPLECHECK_SLURM_PORT (slurmctld's port, slurmd's the next; default 26817, moved up by 10
# while something listens there), SAMPLECHECK_SLURM_TIMEOUT (seconds for both jobs together; default 600).
set -uo pipefail
scenario=slurm_real
here=${BASH_SOURCE[0]%/*}; [ "$here" = "${BASH_SOURCE[0]}" ] && here=.
skip() { echo "SKIPPED: $*"; exit 77; }
# What is needed, checked with builtins only (a PATH without it reaches this line). The daemons live in sbin, which
# a non-root PATH often lacks.
PATH=$PATH:/usr/local/sbin:/usr/sbin:/sbin
for tool in sbatch squeue scontrol sinfo scancel slurmctld slurmd munged munge unmunge; do
  command -v "$tool" >/dev/null 2>&1 ||
    skip "no $tool on PATH (Debian: apt-get install --no-install-recommends slurmctld slurmd slurm-client munge)"
done
[ "$(id -u)" = 0 ] || skip "not root: this test's slurmd runs the jobs as SlurmUser=root"
[ $# -eq 2 ] || { echo "usage: slurm_test.sh <samplecheck> <scratch dir>" >&2; exit 1; }
bin=$(cd "$(dirname "$1")" && pwd)/$(basename "$1"); dir=$2
ex=$(cd "$here/../../examples/scale" && pwd)
rm -rf "$dir"; mkdir -p "$dir"; dir=$(cd "$dir" && pwd)
# shellcheck source=../lib/expect.sh
source "$here/../lib/expect.sh"  # fail
# shellcheck source=scale_lib.sh
source "$here/scale_lib.sh"
[ -x "$bin" ] || fail "no samplecheck at $bin"
command -v jq >/dev/null || fail "jq is needed to compare the reports"
start=$SECONDS
port=${SAMPLECHECK_SLURM_PORT:-26817}
listening() { timeout 2 bash -c "exec 3<>/dev/tcp/127.0.0.1/$1" 2>/dev/null; }
for ((i = 0; i < 8; i++)); do  # the next free pair when another Slurm (or anything) listens there
  listening "$port" || listening $((port + 1)) || break
  port=$((port + 10))
done
deadline_s=${SAMPLECHECK_SLURM_TIMEOUT:-600}
shards=3
# Nothing of an outer scheduler reaches sbatch or the jobs (an SBATCH_* variable overrides the template's #SBATCH
# lines, a shard index makes --shard auto read another scheduler's).
for v in $(compgen -e | grep -E '^(SLURM_|SBATCH_|SALLOC_|SRUN_)'); do unset "$v"; done
unset GTEST_SHARD_INDEX GTEST_TOTAL_SHARDS JOB_COMPLETION_INDEX

# --- Stopping what was started, whatever happens -----------------------------------------------------------------
munged_pid=""; ctld_pid=""; slurmd_pid=""; sockdir=""; conf=""; jobs_ids=()
sl() { timeout 20 "$@"; }  # every Slurm client call bounded (a client retries an unreachable controller)
stop_pid() {  # stop_pid <pid>: SIGTERM, up to 10 s, then SIGKILL
  local pid=$1 i
  [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null || return 0
  kill "$pid" 2>/dev/null
  for ((i = 0; i < 50; i++)); do kill -0 "$pid" 2>/dev/null || break; sleep 0.2; done
  kill -0 "$pid" 2>/dev/null && kill -KILL "$pid" 2>/dev/null
  wait "$pid" 2>/dev/null
  return 0
}
ours() {  # the job steps and job processes of this cluster (slurmstepd detaches from slurmd): by their environment
  local p pid env
  [ -n "$conf" ] || return 0
  for p in /proc/[0-9]*; do
    pid=${p#/proc/}; [ "$pid" = $$ ] && continue
    env=$( { tr '\0' '\n' <"$p/environ"; } 2>/dev/null) || continue
    grep -qxF "SLURM_CONF=$conf" <<<"$env" || continue
    [ "$(cat "$p/comm" 2>/dev/null)" = slurmstepd ] || grep -q '^SLURM_JOB_ID=' <<<"$env" && echo "$pid"
  done
}
cleanup() {
  local i pid
  if [ -n "$ctld_pid" ] && kill -0 "$ctld_pid" 2>/dev/null && [ ${#jobs_ids[@]} -gt 0 ]; then
    sl scancel "${jobs_ids[@]}" 2>/dev/null
    i=$((SECONDS + 10)); while [ -n "$(ours)" ] && [ $SECONDS -lt $i ]; do sleep 0.5; done
  fi
  for pid in $(ours); do kill -KILL "$pid" 2>/dev/null; done
  stop_pid "$slurmd_pid"; stop_pid "$ctld_pid"; stop_pid "$munged_pid"
  for pid in $(ours); do kill -KILL "$pid" 2>/dev/null; done
  [ -n "$sockdir" ] && rm -rf "$sockdir"
  return 0
}
trap cleanup EXIT
trap 'exit 1' INT TERM HUP

# --- munged: its own key, socket, pid, log and seed ---------------------------------------------------------------
mkdir -m 700 "$dir/munge"
dd if=/dev/urandom of="$dir/munge/munge.key" bs=1024 count=1 status=none && chmod 400 "$dir/munge/munge.key"
sock=$dir/munge/munge.socket
if [ ${#sock} -gt 100 ]; then sockdir=$(mktemp -d /tmp/samplecheck-munge.XXXXXX); sock=$sockdir/munge.socket; fi
# --force: as root, and in a scratch folder munged would otherwise refuse as not secure enough.
munged --foreground --force --socket="$sock" --key-file="$dir/munge/munge.key" --log-file="$dir/munge/munged.log" \
  --pid-file="$dir/munge/munged.pid" --seed-file="$dir/munge/munged.seed" >"$dir/munge/munged.out" 2>&1 &
munged_pid=$!
last_line() { tail -n 1 "$@" 2>/dev/null | tr -s '\n' ' ' | sed 's/ *$//'; }
for ((i = 0; ; i++)); do
  munge -n -S "$sock" 2>/dev/null | unmunge -S "$sock" >/dev/null 2>&1 && break
  kill -0 "$munged_pid" 2>/dev/null || skip "munged did not start: $(last_line "$dir/munge/munged.out")"
  [ $i -lt 50 ] || skip "munged did not answer within 10 s: $(last_line "$dir/munge/munged.log")"
  sleep 0.2
done

# --- A one-node cluster: this host, its CPUs, 4 GPUs that are /dev/null -------------------------------------------
# The template asks for --gres=gpu:1 and --cpus-per-task=4 (there is no GPU here: SAMPLER=exact). The node offers
# max(nproc, 4) CPUs (config_overrides: slurmd reports the configured values, not the hardware's) and a gres gpu
# whose devices are links to /dev/null (Slurm drops a GPU without a device file).
node=$(uname -n); node=${node%%.*}  # the short host name: slurmd's and slurmctld's own
cpus=$(nproc); [ "$cpus" -ge 4 ] || cpus=4
mkdir -p "$dir/slurm/state" "$dir/slurm/spool" "$dir/slurm/log" "$dir/jobs" "$dir/out"
for g in 0 1 2 3; do ln -s /dev/null "$dir/slurm/gpu$g"; done
conf=$dir/slurm/slurm.conf
cat >"$conf" <<EOF
# samplecheck's tests/tools/slurm_test.sh: a one-node cluster on this host, everything under $dir/slurm.
ClusterName=samplecheck
SlurmctldHost=$node(127.0.0.1)
SlurmctldPort=$port
SlurmdPort=$((port + 1))
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$sock
StateSaveLocation=$dir/slurm/state
SlurmdSpoolDir=$dir/slurm/spool
SlurmctldPidFile=$dir/slurm/slurmctld.pid
SlurmdPidFile=$dir/slurm/slurmd.pid
SlurmctldLogFile=$dir/slurm/log/slurmctld.log
SlurmdLogFile=$dir/slurm/log/slurmd.log
SlurmctldDebug=info
SlurmdDebug=info
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
SchedulerType=sched/backfill
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
MpiDefault=none
ReturnToService=2
SlurmdParameters=config_overrides
MinJobAge=3600
GresTypes=gpu
NodeName=$node NodeAddr=127.0.0.1 CPUs=$cpus Gres=gpu:4 State=UNKNOWN
PartitionName=samplecheck Nodes=$node Default=YES MaxTime=INFINITE State=UP
EOF
echo "Name=gpu File=$dir/slurm/gpu[0-3]" >"$dir/slurm/gres.conf"
export SLURM_CONF=$conf
slurmctld -D -f "$conf" >"$dir/slurm/log/slurmctld.out" 2>&1 &
ctld_pid=$!
slurmd -D -f "$conf" -N "$node" >"$dir/slurm/log/slurmd.out" 2>&1 &
slurmd_pid=$!
for ((i = 0; ; i++)); do
  state=$(sl sinfo -h -n "$node" -o %T 2>/dev/null | head -n 1)
  [ "$state" = idle ] && break
  kill -0 "$ctld_pid" 2>/dev/null || skip "slurmctld did not start: $(last_line "$dir/slurm/log/slurmctld.out")"
  kill -0 "$slurmd_pid" 2>/dev/null || skip "slurmd did not start: $(last_line "$dir/slurm/log/slurmd.out")"
  if [ $i -ge 60 ]; then
    reason=$(sl scontrol show node "$node" 2>/dev/null | grep -o 'Reason=.*')
    skip "node $node not idle within 30 s (state '${state:-none}'${reason:+, $reason}): slurmd: $(last_line "$dir/slurm/log/slurmd.log")"
  fi
  sleep 0.5
done
echo "slurm: $(slurmctld -V), node $node idle ($cpus CPUs, gres gpu:4), slurmctld port $port, munged socket $sock"

# --- The README's template, as a user submits it ------------------------------------------------------------------
# README / docs/scale.md: SAMPLECHECK=... SUITE=standard SAMPLER=cuda SEED=... RUN_ARGS=... submit-slurm.sh N OUT,
# from the folder the job logs go to. Here: exact (no GPU), 3 tasks, 32768 draws at most per case (underpowered on
# purpose: a plumbing test; the same cap as tools.scale.shard_merge_standard).
run_args="--max-draws 32768 --allow-underpowered"
cd "$dir/jobs" || fail "cd $dir/jobs"
SAMPLECHECK=$bin SUITE=standard SAMPLER=exact SEED=11 RUN_ARGS=$run_args \
  "$ex/submit-slurm.sh" "$shards" "$dir/out" >"$dir/submit.out" 2>&1
rc=$?
cat "$dir/submit.out"
[ $rc -eq 0 ] || fail "submit-slurm.sh exited $rc"
line=$(grep '^shards: job ' "$dir/submit.out")
array=$(sed -n 's/^shards: job \([0-9]*\)[; ].*/\1/p' <<<"$line")
merge=$(sed -n 's/.*; merge: job \([0-9]*\) .*/\1/p' <<<"$line")
[ -n "$array" ] && [ -n "$merge" ] || fail "no job ids in submit-slurm.sh's output"
jobs_ids=("$array" "$merge")
dep=$(sl scontrol -o show job "$merge" | grep -o 'Dependency=[^ ]*')
echo "submitted: array job $array ($shards tasks), merge job $merge ($dep)"
[[ $dep == *"afterok:${array}_*"* ]] || fail "the merge job is not queued afterok on the array: $dep"

# --- Both jobs to their end, bounded ------------------------------------------------------------------------------
field() { grep -oE "(^| )$1=[^ ]*" | sed "s/^ *$1=//"; }  # field <name> < scontrol -o lines: one value a line
report_jobs() {  # the jobs' states and their output files, then fail
  echo "--- jobs (state, reason, exit code):"
  sl scontrol -o show job "$array" 2>&1 | while read -r l; do
    echo "shard task ${array}_$(field ArrayTaskId <<<"$l"): $(field JobState <<<"$l") $(field Reason <<<"$l") exit $(field ExitCode <<<"$l")"
  done
  sl scontrol -o show job "$merge" 2>&1 | while read -r l; do
    echo "merge job $merge: $(field JobState <<<"$l") $(field Reason <<<"$l") exit $(field ExitCode <<<"$l")"
  done
  for f in "$dir"/jobs/*.log; do [ -e "$f" ] && { echo "--- $f (last 30 lines):"; tail -n 30 "$f"; }; done
  echo "--- slurmctld.log (last 10 lines):"; tail -n 10 "$dir/slurm/log/slurmctld.log"
  fail "$*"
}
t0=$SECONDS
while :; do
  tasks=$(sl scontrol -o show job "$array" 2>/dev/null) || report_jobs "scontrol show job $array failed"
  mjob=$(sl scontrol -o show job "$merge" 2>/dev/null) || report_jobs "scontrol show job $merge failed"
  bad=$(field JobState <<<"$tasks"$'\n'"$mjob" | grep -vxE 'PENDING|CONFIGURING|RUNNING|COMPLETING|COMPLETED' | head -n 1)
  [ -z "$bad" ] || report_jobs "a job ended $bad"
  [ "$(field Reason <<<"$mjob")" = DependencyNeverSatisfied ] && report_jobs "the merge job's dependency can never be satisfied"
  [ "$(field JobState <<<"$mjob")" = COMPLETED ] && break
  [ $((SECONDS - t0)) -lt "$deadline_s" ] || report_jobs "the jobs did not finish within $deadline_s s"
  sleep 2
done
done_tasks=$(field JobState <<<"$tasks" | grep -cx COMPLETED)
[ "$done_tasks" -eq "$shards" ] || report_jobs "$done_tasks of $shards array tasks completed"
field ExitCode <<<"$tasks"$'\n'"$mjob" | grep -qvx '0:0' && report_jobs "a job exited non-zero"
echo "slurm: array job $array: $shards tasks COMPLETED, exit 0:0; merge job $merge: COMPLETED, exit 0:0; $((SECONDS - t0)) s"

# --- The evidence: the merge job's output, the merged report against the unsharded run ----------------------------
mlog=$dir/jobs/samplecheck-merge-$merge.log
[ -f "$mlog" ] || report_jobs "no output file $mlog of the merge job"
grep -h "^shard [0-9]*/$shards of standard" "$dir"/jobs/samplecheck-"${array}"_*.log
grep -q "merged $shards shards" "$mlog" || report_jobs "the merge job did not merge $shards shards"
grep -E "merged $shards shards|^ +[0-9]+ cases: |VERDICT" "$mlog"
[ -f "$dir/out/merged.json" ] && [ -f "$dir/out/merged.html" ] || fail "no merged.json / merged.html in $dir/out"
jq -e ".merged_shards == $shards and .shard == null" "$dir/out/merged.json" >/dev/null || fail "merged.json is not a merge of $shards shards"
# The unsharded run, same suite, sampler, seed and cap. standard has a 60 s budget: a plain run plans as the shards
# do when the budget affords every case its capped draws ("budget: full power", docs/scale.md); where this machine
# is too slow for that, the unsharded run of the shards' plan is one shard of one, merged.
quiet() { "$@" >"$dir/quiet.txt" 2>&1 || { tail -n 20 "$dir/quiet.txt"; fail "exit $?: $*"; }; }
# shellcheck disable=SC2086
quiet "$bin" run --suite standard --sampler exact --seed 11 $run_args --progress none --report "$dir/unsharded.json"
basis=$(jq -r '.draw_plan.basis' "$dir/unsharded.json")
if [ "$basis" != "budget: full power" ]; then
  echo "the plain run planned by '$basis', not at full power: comparing with --shard 0/1 + merge instead"
  # shellcheck disable=SC2086
  quiet "$bin" run --suite standard --sampler exact --seed 11 $run_args --progress none --shard 0/1 --report "$dir/one.json"
  quiet "$bin" merge "$dir/one.json" --report "$dir/unsharded.json"
fi
same_judgement "$dir/unsharded.json" "$dir/out/merged.json"
echo "diff: empty (merged.json of the $shards array tasks against the unsharded run: $(jq '.cases | length' "$dir/out/merged.json") cases, verdict $(jq -r .verdict "$dir/out/merged.json"))"
echo "wall: $((SECONDS - start)) s"
echo "PASS ($scenario)"
