#!/usr/bin/env bash
# Nothing lost, nothing faked (docs/cli.md, failure modes): one scenario per ctest test.
#   robustness_test.sh <samplecheck> <scenario> <scratch dir> <failing-write shim .so>
# Every scenario is deterministic in its assertions (fixed seeds; the interrupted run asserts only what holds
# however far it got before the signal).
set -uo pipefail
bin=$1; scenario=$2; dir=$3/$scenario; shim=${4:-}
here=$(cd "$(dirname "$0")" && pwd)
suites=$here/../../harness/suites/data
rm -rf "$dir"; mkdir -p "$dir"
# shellcheck source=../lib/expect.sh
source "$(dirname "${BASH_SOURCE[0]}")/../lib/expect.sh"
expect_err() { grep -q -- "$1" "$dir/err.txt" || fail "stderr lacks '$1'"; }
# The report without what changes from run to run (times, the command line is the same by construction).
normalized() {
  python3 - "$1" <<'EOF'
import json, sys
r = json.load(open(sys.argv[1]))
for k in ("started", "seconds", "samplecheck_version"):
    r.pop(k, None)
if r.get("budget"):
    r["budget"].pop("draws_per_second", None)  # measured
if r.get("draw_plan"):  # the cases' draws stay; what decided them (a resumed run follows its journal's) and times go
    for k in ("basis", "reason", "planned_seconds", "spent_seconds"):
        r["draw_plan"].pop(k, None)
for c in r["cases"]:
    c.pop("seconds", None)
print(json.dumps(r, sort_keys=True))
EOF
}

case "$scenario" in
  report_survives_failing_write)
    # A good report, then the same run on a disk that fills up mid-write (an LD_PRELOAD shim makes write(2) fail
    # with ENOSPC after 4096 bytes to the report's temporary file): exit 2 naming the OS reason, and the previous
    # report and HTML byte for byte as they were.
    expect_rc 0 "$bin" run --suite smoke --seed 1 --report "$dir/r.json" --html "$dir/r.html" --progress none
    cp "$dir/r.json" "$dir/good.json"; cp "$dir/r.html" "$dir/good.html"
    [ -n "$shim" ] && [ -f "$shim" ] || fail "no failing-write shim given"
    expect_rc 2 env LD_PRELOAD="$shim" SAMPLECHECK_FAIL_WRITES_MATCH=".r.json.tmp-" SAMPLECHECK_FAIL_WRITES_AFTER=4096 \
      "$bin" run --suite smoke --seed 2 --report "$dir/r.json" --html "$dir/r.html" --progress none
    expect_err "No space left on device"
    cmp "$dir/r.json" "$dir/good.json" || fail "the previous report changed"
    cmp "$dir/r.html" "$dir/good.html" || fail "the previous HTML changed"
    ls -a "$dir" | grep -q '\.tmp-' && fail "a temporary file was left behind"
    expect_rc 2 env LD_PRELOAD="$shim" SAMPLECHECK_FAIL_WRITES_MATCH=".r.html.tmp-" SAMPLECHECK_FAIL_WRITES_AFTER=100 \
      "$bin" run --suite smoke --seed 2 --report "$dir/r2.json" --html "$dir/r.html" --progress none
    cmp "$dir/r.html" "$dir/good.html" || fail "the previous HTML changed"
    ;;
  non_utf8_input)
    # A suite path with a byte that is not UTF-8 reaches the report (suite source) and the HTML: the verdict is
    # given and both files are valid (the byte becomes U+FFFD), the gate reads the report back.
    bad=$(printf 'bad\xff.json')
    cp "$suites/smoke.json" "$dir/$bad"
    expect_rc 0 "$bin" run --suite "$dir/$bad" --seed 1 --max-draws 20000 --allow-underpowered --report "$dir/r.json" \
      --html "$dir/r.html" --progress none
    grep -q "VERDICT: PASS" "$dir/out.txt" || fail "no verdict"
    python3 -c 'import json,sys; r=json.load(open(sys.argv[1])); assert "\ufffd" in r["suite"]["source"], r["suite"]' \
      "$dir/r.json" || fail "the report is not valid JSON with U+FFFD"
    python3 -c 'import sys; open(sys.argv[1], encoding="utf-8").read()' "$dir/r.html" || fail "the HTML is not UTF-8"
    # The report cannot name its suite file (its path is not UTF-8): the gate is told where it is.
    expect_rc 0 "$bin" gate "$dir/r.json" --suite "$dir/$bad"
    ;;
  output_paths_checked_first)
    # An unwritable report path stops the run before anything is drawn, naming the OS reason.
    expect_rc 2 "$bin" run --suite smoke --report "$dir/no/such/dir/r.json"
    expect_err "No such file or directory"
    grep -q "plan:\|VERDICT" "$dir/out.txt" "$dir/err.txt" && fail "the run started"
    # A symbolic link at the report path is refused (it would redirect the report onto another file) unless asked.
    echo "precious" > "$dir/target.txt"
    ln -s "$dir/target.txt" "$dir/link.json"
    expect_rc 2 "$bin" run --suite smoke --seed 1 --max-draws 20000 --report "$dir/link.json" --progress none
    expect_err "symbolic link"
    [ "$(cat "$dir/target.txt")" = "precious" ] || fail "the link's target changed"
    expect_rc 0 "$bin" run --suite smoke --seed 1 --max-draws 20000 --allow-underpowered --report "$dir/link.json" \
      --progress none --follow-symlinks
    [ -L "$dir/link.json" ] || fail "the link was replaced"
    grep -q '"schema": "samplecheck-report/1"' "$dir/target.txt" || fail "not written through the link"
    ;;
  verdict_needs_evidence)
    # Every case skipped (top_k = 0 is invalid under flashinfer-joint): zero draws is no pass.
    cat > "$dir/skipped.json" <<'EOF'
{"schema": "samplecheck-suite/1", "name": "all-skipped",
 "cases": [{"name": "k0", "row": {"kind": "gaussian", "vocab": 100}, "params": {"top_k": 0}}]}
EOF
    expect_rc 1 "$bin" run --suite "$dir/skipped.json" --sampler exact --profile flashinfer-joint \
      --report "$dir/r.json" --progress none
    grep -q "1 skipped" "$dir/out.txt" || fail "the skipped case is not in the summary line"
    grep -q "no evidence: 0 judged" "$dir/out.txt" || fail "no evidence line"
    grep -q "VERDICT: FAIL" "$dir/out.txt" || fail "no FAIL verdict"
    expect_rc 1 "$bin" gate "$dir/r.json" --allow-skipped
    grep -q "no evidence: 0 judged" "$dir/out.txt" || fail "gate: no evidence line"
    # A report with no case at all (hand-made): its planned case is missing, an inconsistency (exit 2).
    python3 -c 'import json,sys; r=json.load(open(sys.argv[1])); r["cases"]=[]; json.dump(r, open(sys.argv[2],"w"))' \
      "$dir/r.json" "$dir/empty.json"
    expect_rc 2 "$bin" gate "$dir/empty.json"
    expect_err "cases are missing"
    # A skipped case fails the verdict by default, and passes it when allowed.
    expect_rc 1 "$bin" run --suite standard --sampler exact --profile flashinfer-joint --max-draws 1000 \
      --allow-underpowered --report "$dir/s.json" --progress none
    grep -Eq "[0-9]+ case\(s\) skipped, never judged" "$dir/out.txt" || fail "skipped cases not named"
    expect_rc 0 "$bin" gate "$dir/s.json" --allow-skipped
    # Floors on judged cases and draws.
    expect_rc 1 "$bin" gate "$dir/s.json" --allow-skipped --min-judged-cases 100000
    expect_rc 1 "$bin" gate "$dir/s.json" --allow-skipped --min-draws 1000000000
    ;;
  interrupted_run_resumes)
    # 24 cases of 2^24 exact draws (about 1 s each per core), given by the suite's time budget (each case's own cap
    # is 2^16; the budget raises it to 2^24). SIGINT after 2 s: exit 130, a partial report that says what was
    # judged and does not pass, and a journal; --resume finishes the run (the journal's cases were planned by the
    # budget), and its report equals an uninterrupted run's (times and the measured throughput aside).
    python3 - "$dir/long.json" <<'EOF'
import json, sys
cases = [{"name": "c%02d" % i, "row": {"kind": "gaussian", "vocab": 1000, "sigma": 2}, "params": {"top_k": 50},
          "max_draws": 1 << 16} for i in range(24)]
json.dump({"schema": "samplecheck-suite/1", "name": "long", "seed": 5, "tv": 1e-4, "budget_seconds": 3600,
           "budget_max_draws": 1 << 24, "cases": cases}, open(sys.argv[1], "w"))
EOF
    run=("$bin" run --suite "$dir/long.json" --sampler exact --seed 5)
    # SIGINT once a case is journaled (a stop before any case finished would keep the previous report: none).
    "${run[@]}" --report "$dir/r.json" --progress lines >"$dir/out.txt" 2>"$dir/err.txt" &
    pid=$!
    for _ in $(seq 1200); do [ -f "$dir/r.json.journal" ] && [ "$(wc -l < "$dir/r.json.journal")" -ge 2 ] && break; sleep 0.1; done
    kill -INT $pid; wait $pid
    rc=$?
    cat "$dir/out.txt" "$dir/err.txt"
    [ $rc -eq 130 ] || fail "interrupted run: expected exit 130, got $rc"
    grep -q '"interrupted": true' "$dir/r.json" || fail "the partial report does not say it was interrupted"
    grep -q '"verdict": "fail"' "$dir/r.json" || fail "a partial report passed"
    [ -f "$dir/r.json.journal" ] || fail "no journal"
    grep -q '"draws": 16777216' "$dir/r.json" || fail "the time budget did not raise the draws to 2^24"
    expect_rc 2 "${run[@]}" --report "$dir/r.json" --resume --max-draws 1000 --progress none
    expect_err "cannot resume"
    expect_rc 0 "${run[@]}" --report "$dir/r.json" --resume --progress none
    [ -f "$dir/r.json.journal" ] && fail "the journal of a finished run was left"
    expect_rc 0 "${run[@]}" --report "$dir/whole.json" --progress none
    [ "$(normalized "$dir/r.json")" = "$(normalized "$dir/whole.json")" ] || fail "the resumed report differs"
    ;;
  strict_inputs)
    # Each bad value: exit 2 and a message naming the value and what is allowed.
    expect_rc 2 "$bin" explain --logits 1,2 --top-k 99999999999999999999; expect_err "outside the allowed range"
    expect_rc 2 "$bin" run --suite smoke --seed -1; expect_err "'-1' is not a whole non-negative number"
    expect_rc 2 "$bin" explain --logits 1,2 --top-p ''; expect_err "'' is not a number"
    expect_rc 2 "$bin" explain --logits 1e400,2; expect_err "1e400 overflows"
    expect_rc 2 "$bin" explain --logits-file /dev/zero; expect_err "larger than"
    expect_rc 2 "$bin" rnu; expect_err "unknown command 'rnu'"
    expect_rc 2 "$bin" properties --sampler exact --reproduce garbage; expect_err "not a RapidCheck reproduce string"
    echo '{"schema": "samplecheck-suite/1", "name": "a", "name": "b", "cases": []}' > "$dir/dup.json"
    expect_rc 2 "$bin" run --suite "$dir/dup.json"; expect_err 'duplicate key "name"'
    echo '{"schema": "samplecheck-suite/1", "cases": [{"name": "", "row": {"kind": "gaussian"}, "params": {}}]}' \
      > "$dir/noname.json"
    expect_rc 2 "$bin" run --suite "$dir/noname.json"; expect_err '"name" is empty'
    # A plan of days (2^43 draws per case at the measured throughput) is refused before drawing unless forced.
    echo '{"schema": "samplecheck-suite/1", "name": "huge", "max_draws": 1e13, "cases": [{"name": "x", "row": {"kind": "gaussian", "vocab": 100}, "params": {}}]}' \
      > "$dir/huge.json"
    expect_rc 2 "$bin" run --suite "$dir/huge.json" --tv 1e-9; expect_err "or --force"
    # A cross product of 10^6 cases is refused before it is prepared.
    python3 -c 'import json,sys; json.dump({"schema": "samplecheck-suite/1", "name": "cross", "cases": [{"name": "x", "rows": [{"kind": "gaussian", "vocab": 10}]*1000, "params": [{"temperature": 1}]*1000}]}, open(sys.argv[1], "w"))' \
      "$dir/cross.json"
    expect_rc 2 "$bin" run --suite "$dir/cross.json"; expect_err "1000000 cases"
    ;;
  no_external_programs)
    # A run starts no program the user did not name: fake nvidia-smi and git first on PATH would leave a mark.
    mkdir -p "$dir/bin"
    for p in nvidia-smi git sh; do
      printf '#!/bin/sh\ntouch "%s/called-%s"\nexit 1\n' "$dir" "$p" > "$dir/bin/$p"; chmod +x "$dir/bin/$p"
    done
    expect_rc 0 env PATH="$dir/bin:$PATH" "$bin" run --suite smoke --seed 1 --max-draws 20000 --allow-underpowered \
      --report "$dir/r.json" --progress none
    ls "$dir" | grep -q '^called-' && fail "samplecheck ran $(ls "$dir" | grep '^called-' | tr '\n' ' ')"
    grep -q '"git_revision"' "$dir/r.json" || fail "no git_revision field"
    ;;
  *) fail "unknown scenario" ;;
esac
echo "PASS ($scenario)"
