#!/usr/bin/env bash
# `samplecheck replay` end to end (docs/replay.md): replay-smoke passes with the exact sides (exit 0, a report the
# gate re-judges, an HTML report, the aggregate's line); every planted replay fault fails it (exit 1); bad sources
# and a missing suite are usage errors (exit 2) naming the value; a second replay (or run) on the report a replay is
# writing is refused (exit 2) as run refuses it; on a GPU our kernel passes it as engine and trainer.
# Usage: replay_cli_test.sh <samplecheck> <scenario> <scratch dir>
set -uo pipefail
bin=$1 scenario=$2 dir=$3
rm -rf "$dir"; mkdir -p "$dir"
source "$(dirname "${BASH_SOURCE[0]}")/../lib/expect.sh"
client="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/replay_process_client.py"

# A suite of top-k rows only, which replay_process_client.py replays exactly (4 cases, 64 rollout tokens each).
write_topk_suite() {
  cat >"$dir/topk.json" <<'JSON'
{
  "schema": "samplecheck-replay-suite/1",
  "name": "replay-topk",
  "description": "top-k rows only: what tests/campaign/replay_process_client.py replays",
  "seed": 3,
  "rollout": 64,
  "max_ratio_bias": 0.05,
  "cases": [
    {"name": "topk-a", "row": {"kind": "gaussian", "vocab": 64, "sigma": 2.0}, "params": {"top_k": 8}},
    {"name": "topk-b", "row": {"kind": "gaussian", "vocab": 64, "sigma": 2.0}, "params": {"top_k": 16, "temperature": 0.7}},
    {"name": "topk-c", "row": {"kind": "gaussian", "vocab": 128, "sigma": 1.0}, "params": {"top_k": 4}},
    {"name": "topk-d", "row": {"kind": "gaussian", "vocab": 128, "sigma": 1.0}, "params": {"top_k": 32}}
  ]
}
JSON
}

# bounded_errors <report> <text> <end> <max>: the report's 4 row cases are errors whose reason holds <text>, ends
# with <end> and is shorter than <max> characters (a bounded quote of a huge message).
bounded_errors() {
  python3 - "$@" <<'PY'
import json, sys
path, text, end, most = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
rows = [c for c in json.load(open(path))["cases"] if c["name"] != "aggregate"]
assert len(rows) == 4 and all(c["status"] == "error" for c in rows), [(c["name"], c["status"]) for c in rows]
for c in rows:
    assert text in c["reason"] and c["reason"].endswith(end), c["reason"][-200:]
    assert len(c["reason"]) < most, len(c["reason"])
PY
}

case "$scenario" in
  exact_passes)
    expect_rc 0 "$bin" replay --suite replay-smoke --engine exact --trainer exact --quiet --report "$dir/r.json" \
      --html "$dir/r.html"
    grep -q '^replay: .*label guard events [1-9]' "$dir/out.txt" || fail "no aggregate line with guard events"
    # Its checks are exact: the summary states no alpha or TV (a replay report's TV is 0).
    grep -q ' error;  checks exact (fp32 tolerance, no sampling test), ' "$dir/out.txt" || fail "summary: $(grep cases: "$dir/out.txt")"
    expect_rc 0 "$bin" gate "$dir/r.json"
    grep -q ' error;  checks exact (fp32 tolerance, no sampling test), ' "$dir/out.txt" || fail "gate summary"
    grep -q 'replay-agreement' "$dir/r.html" || fail "the HTML report shows no replay check"
    # The gate checks a replay report against its suite's plan and its own consistency (issue 33 on replay
    # reports): each edit below is refused (exit 2) with the inconsistency named.
    for edit in tv drop rename params seed; do
      python3 - "$dir/r.json" "$dir/t-$edit.json" "$edit" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
edit = sys.argv[3]
if edit == "tv": r["tv"] = 0.05
if edit == "drop": del r["cases"][3]
if edit == "rename": r["cases"][2]["name"] = "made-up"
if edit == "params": r["cases"][1]["params"]["top_k"] = 7
if edit == "seed": r["cases"][1]["row_seed"] += 1
json.dump(r, open(sys.argv[2], "w"))
PY
      expect_rc 2 "$bin" gate "$dir/t-$edit.json"
      grep -q 'inconsistent report\|plan' "$dir/err.txt" || fail "edit $edit: the refusal names no inconsistency"
    done
    ;;
  faults_fail)
    for fault in $("$bin" replay --list | sed -n '/^planted replay faults/,/^built-in/p' | grep -E '^  [a-z]' | tr -d ' '); do
      expect_rc 1 "$bin" replay --suite replay-smoke --trainer "fault:$fault" --quiet
      grep -q 'VERDICT: FAIL' "$dir/out.txt" || fail "fault $fault: no failing verdict"
    done
    [ -n "${fault:-}" ] || fail "replay --list names no fault"
    ;;
  usage_errors)
    expect_rc 2 "$bin" replay --suite replay-smoke --trainer bogus --quiet
    grep -q "unknown replay source kind 'bogus' in spec 'bogus'" "$dir/err.txt" || fail "the error does not name the source"
    expect_rc 2 "$bin" replay --suite replay-smoke --engine fault:nope --quiet
    grep -q "unknown fault 'nope'" "$dir/err.txt" || fail "the error does not name the fault"
    expect_rc 2 "$bin" replay --quiet
    expect_rc 2 "$bin" replay --suite no-such-suite --quiet
    ;;
  two_replays_one_report)
    # One writer per report (harness/session): while a replay writes r.json (a long rollout, ended by SIGTERM), a
    # second replay on it is refused with run's message, naming the first one's pid; so is a run.
    "$bin" replay --suite replay-smoke --rollout 1048576 --progress none --report "$dir/r.json" >"$dir/first.txt" 2>&1 &
    pid=$!
    trap 'kill -9 $pid 2>/dev/null' EXIT
    for _ in $(seq 600); do [ -e "$dir/r.json.lock" ] && break; sleep 0.05; done
    [ -e "$dir/r.json.lock" ] || fail "the first replay holds no lock on r.json"
    refusal="another samplecheck (pid $pid) is writing $dir/r.json (it holds $dir/r.json.lock): one writer per report"
    expect_rc 2 "$bin" replay --suite replay-smoke --progress none --report "$dir/r.json"
    grep -qxF "samplecheck replay: $refusal; wait for it to finish or write elsewhere" "$dir/err.txt" ||
      fail "the second replay was not refused as one writer per report"
    expect_rc 2 "$bin" run --suite smoke --progress none --report "$dir/r.json"
    grep -qxF "samplecheck run: $refusal; wait for it to finish or write elsewhere" "$dir/err.txt" ||
      fail "run was not refused with the same message"
    kill -TERM $pid; wait $pid; rc=$?
    trap - EXIT
    cat "$dir/first.txt"
    [ "$rc" -eq 143 ] || fail "the first replay, stopped by SIGTERM, exited $rc (expected 143)"
    [ -e "$dir/r.json.lock" ] && fail "the lock file was left behind"
    # The lock went with its writer; -q is still --progress none.
    expect_rc 0 "$bin" replay --suite replay-smoke -q --report "$dir/r.json"
    echo "PASS (two_replays_one_report)"
    ;;
  process_started_once)
    # Issue 44: every process source is started once (each start a handshake, up to SAMPLECHECK_PROCESS_TIMEOUT_S),
    # whether a side's HELLO claims the judged profile, the other side's does, or --profile gives it: one line per
    # start in each side's file. A source that cannot start is started once too: a stuck handshake costs one
    # deadline, a refused HELLO is not asked again.
    write_topk_suite
    for how in engine-claims trainer-claims profile-given; do
      rm -f "$dir"/*.starts
      e_profile=vllm t_profile="" extra=()
      [ "$how" = trainer-claims ] && e_profile="" t_profile=vllm
      [ "$how" = profile-given ] && e_profile="" extra=(--profile vllm)
      expect_rc 0 "$bin" replay --suite "$dir/topk.json" "${extra[@]}" --quiet --report "$dir/r.json" \
        --engine "process:exec python3 $client ok $dir/e.starts $e_profile" \
        --trainer "process:exec python3 $client ok $dir/t.starts $t_profile"
      grep -q '^VERDICT: PASS' "$dir/out.txt" || fail "$how: the top-k client does not pass the top-k suite"
      for side in e t; do
        starts=$(wc -l <"$dir/$side.starts")
        [ "$starts" -eq 1 ] || fail "$how: the $side side was started $starts times (expected once): $(cat "$dir/$side.starts")"
      done
    done
    rm -f "$dir"/*.starts
    # The start count is the evidence (no wall-clock bound: the deadline is paid once per start).
    SAMPLECHECK_PROCESS_TIMEOUT_S=2 expect_rc 2 "$bin" replay --suite "$dir/topk.json" --quiet \
      --engine "process:exec python3 $client mute $dir/m.starts"
    grep -q "^samplecheck replay: --engine: .*did not answer in time while waiting for its HELLO: the deadline of 2 s" \
      "$dir/err.txt" || fail "the stuck handshake's error does not name the deadline"
    [ "$(wc -l <"$dir/m.starts")" -eq 1 ] || fail "the stuck engine was started $(wc -l <"$dir/m.starts") times"
    echo "PASS (process_started_once)"
    ;;
  stop_signals)
    # Issue 44: SIGTERM (SIGINT) during a replay whose trainer is a slow process (its 2nd call, or its 4th: the last
    # case, where the killed call's error once made every row "finished" and the exit 1): exit 143 (130) with the
    # partial report, as run: "interrupted": true, the cases that finished and the aggregate over them, verdict
    # fail; the case whose call the signal cut short is left out (the trainer samplecheck itself killed is not
    # blamed: "killed by signal 9"), and nothing suggests --resume, which replay does not have.
    write_topk_suite
    names=(topk-a topk-b topk-c topk-d)
    for how in TERM:143:2 INT:130:2 TERM:143:4; do
      IFS=: read -r sig want call <<<"$how"
      rm -f "$dir"/t.starts* "$dir/r.json"
      set -m  # the replay in a process group of its own, where a background job's SIGINT is not ignored
      "$bin" replay --suite "$dir/topk.json" --progress lines --report "$dir/r.json" \
        --trainer "process:exec python3 $client slow$call $dir/t.starts" >"$dir/out.txt" 2>"$dir/err.txt" &
      pid=$!
      set +m
      trap 'kill -9 $pid 2>/dev/null' EXIT
      for _ in $(seq 600); do [ -e "$dir/t.starts.busy" ] && break; sleep 0.05; done
      [ -e "$dir/t.starts.busy" ] || fail "SIG$sig: the slow trainer never got its call $call"
      kill -"$sig" $pid; wait $pid; rc=$?
      trap - EXIT
      cat "$dir/out.txt" "$dir/err.txt"
      [ "$rc" -eq "$want" ] || fail "SIG$sig at call $call: replay exited $rc (expected $want)"
      grep -q "killed by signal\|ERROR\|FAIL  " "$dir/out.txt" "$dir/err.txt" &&
        fail "SIG$sig at call $call: the trainer is blamed for samplecheck's own kill"
      grep -q -- "--resume" "$dir/out.txt" "$dir/err.txt" && fail "SIG$sig at call $call: replay suggests --resume"
      grep -q "^interrupted: $call of 5 cases judged$" "$dir/out.txt" || fail "SIG$sig at call $call: no interrupted line"
      grep -q "not a pass: interrupted: $call of 5 cases finished (samplecheck replay keeps no journal: run the replay" \
        "$dir/out.txt" || fail "SIG$sig at call $call: the verdict does not say it was interrupted"
      python3 - "$dir/r.json" "${names[@]:0:call-1}" aggregate <<'PY' || fail "SIG$sig at call $call: not the partial report"
import json, sys
r = json.load(open(sys.argv[1]))
assert r["interrupted"] is True and r["verdict"] == "fail", (r["interrupted"], r["verdict"])
assert [c["name"] for c in r["cases"]] == sys.argv[2:], [c["name"] for c in r["cases"]]
assert all(c["status"] == "pass" for c in r["cases"]), [(c["name"], c["status"]) for c in r["cases"]]
problems = " ".join(r["verdict_problems"])
assert problems.startswith("interrupted: ") and "--resume" not in problems, problems
PY
      # The partial report is consistent: the gate re-judges it (not a pass: interrupted).
      expect_rc 1 "$bin" gate "$dir/r.json"
    done
    echo "PASS (stop_signals)"
    ;;
  huge_messages)
    # Issue 44: a process error's message is quoted bounded (4 KB and "(N bytes more)"), once per case: a 20 MB
    # ERROR answer made a 240 MB report. A client that writes 20 MB on stderr and exits is quoted by the last 4 KB of
    # its stderr; one whose HELLO is refused with 20 MB is started once and refused with a bounded message.
    write_topk_suite
    rm -f "$dir"/*.starts
    expect_rc 1 "$bin" replay --suite "$dir/topk.json" --quiet --report "$dir/r.json" \
      --trainer "process:exec python3 $client huge-error $dir/h.starts"
    [ "$(stat -c %s "$dir/r.json")" -lt 200000 ] || fail "a 20 MB ERROR made a $(stat -c %s "$dir/r.json") byte report"
    bounded_errors "$dir/r.json" "LOGPROBS_BATCH failed: out of memory: xxxx" " bytes more)" 4500 ||
      fail "the ERROR's message is not quoted bounded in every case"
    [ "$(wc -l <"$dir/h.starts")" -eq 1 ] || fail "the failing trainer was started $(wc -l <"$dir/h.starts") times"
    expect_rc 1 "$bin" replay --suite "$dir/topk.json" --quiet --report "$dir/r.json" \
      --trainer "process:exec python3 $client huge-exit $dir/x.starts"
    [ "$(stat -c %s "$dir/r.json")" -lt 200000 ] || fail "20 MB of stderr made a $(stat -c %s "$dir/r.json") byte report"
    bounded_errors "$dir/r.json" "exited with status 3" "last words" 4700 ||
      fail "the dead trainer's stderr is not quoted bounded"
    [ "$(wc -l <"$dir/x.starts")" -eq 1 ] || fail "the dying trainer was started $(wc -l <"$dir/x.starts") times"
    expect_rc 2 "$bin" replay --suite "$dir/topk.json" --quiet --trainer "process:exec python3 $client huge-refuse $dir/r.starts"
    [ "$(stat -c %s "$dir/err.txt")" -lt 10000 ] || fail "a 20 MB refusal printed $(stat -c %s "$dir/err.txt") bytes"
    grep -q "^samplecheck replay: --trainer: process replay source .* cannot serve: no model: mmmm.*\.\.\. ([0-9]* bytes more)$" \
      "$dir/err.txt" || fail "the refusal is not quoted bounded"
    [ "$(wc -l <"$dir/r.starts")" -eq 1 ] || fail "the refused trainer was started $(wc -l <"$dir/r.starts") times"
    echo "PASS (huge_messages)"
    ;;
  cuda_passes)
    nvidia-smi -L >/dev/null 2>&1 || { echo "SKIPPED: no CUDA device (nvidia-smi -L lists none)"; exit 77; }
    expect_rc 0 "$bin" replay --suite replay-smoke --engine cuda --trainer cuda --quiet --report "$dir/cuda.json"
    expect_rc 0 "$bin" gate "$dir/cuda.json"
    ;;
  *) fail "unknown scenario" ;;
esac
