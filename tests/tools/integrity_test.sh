#!/usr/bin/env bash
# A gate that cannot be fooled and never destroys a file (issue 33): one scenario per ctest test.
#   integrity_test.sh <samplecheck> <scenario> <scratch dir> [<fatal test plugin .so>]
# Each scenario failed on 348caff (the binary of that commit given as <samplecheck> makes it fail) and passes since.
# No assertion on wall time: a stop signal is judged by the exit status, never by how long it took.
set -uo pipefail
bin=$1; scenario=$2; dir=$3/$scenario; fatal_plugin=${4:-}
here=$(cd "$(dirname "$0")" && pwd)
# The tampered-report corpus: tests/gate/tampered, or one make_corpus.py wrote elsewhere (fuzz/report_gate_generated.sh).
corpus=${SAMPLECHECK_TAMPERED_CORPUS:-$here/../gate/tampered}
rm -rf "$dir"; mkdir -p "$dir"
# shellcheck source=../lib/expect.sh
source "$here/../lib/expect.sh"
expect_err() { grep -qF -- "$1" "$dir/err.txt" || fail "stderr lacks '$1'"; }
expect_out() { grep -qF -- "$1" "$dir/out.txt" || fail "stdout lacks '$1'"; }
# A one-case suite of 200 draws (its own cap: no --max-draws, so no flag of this change is needed to run it).
tiny_suite() {
  echo '{"schema": "samplecheck-suite/1", "name": "tiny", "seed": 3, "tv": 0.2, "min_draws": 200, "max_draws": 200, "cases": [{"name": "c", "row": {"kind": "gaussian", "vocab": 8}}]}' > "$1"
}
# A suite whose one case needs 10^10 draws: a run of it is stopped long before a case finishes.
endless_suite() {
  echo '{"schema": "samplecheck-suite/1", "name": "endless", "seed": 3, "min_draws": 1e10, "max_draws": 1e10, "cases": [{"name": "big", "row": {"kind": "gaussian", "vocab": 64}}]}' > "$1"
}

# A run of 200 cases of 2^20 draws stopped by SIGINT once a case is journaled: many.json, r.json(.journal).
interrupted_run() {
  python3 - "$dir/many.json" <<'EOF'
import json, sys
cases = [{"name": "c%03d" % i, "row": {"kind": "gaussian", "vocab": 64}, "params": {"top_k": 9}} for i in range(200)]
json.dump({"schema": "samplecheck-suite/1", "name": "many", "seed": 3, "tv": 1e-6, "min_draws": 1048576,
           "max_draws": 1048576, "cases": cases}, open(sys.argv[1], "w"))
EOF
  "$bin" run --suite "$dir/many.json" --report "$dir/r.json" --progress none >"$dir/first.txt" 2>&1 &
  local pid=$!
  for _ in $(seq 1200); do [ -f "$dir/r.json.journal" ] && [ "$(wc -l < "$dir/r.json.journal")" -ge 2 ] && break; sleep 0.1; done
  kill -INT $pid; wait $pid
  [ "$(wc -l < "$dir/r.json.journal")" -ge 2 ] || fail "no case was journaled"
  grep -q '"interrupted": true' "$dir/r.json" || fail "the run finished before the signal"
}

case "$scenario" in
  tampered_reports)
    # The corpus of tests/gate/tampered (make_corpus.py): every edit of a report issue 33 (row reports) or issue 44
    # (replay reports, shards) found a gate passing is refused with exit 2 naming the inconsistency (or, for an
    # edited verdict, judged again: exit 1); an array of shard reports is merged instead, and the gate agrees with
    # merge: the merged report gated gives merge's exit code, a shard gated alone never passes. "<file>,<option>..."
    # gates with those options. Run from the corpus folder: the reports name their suites ("suite.json",
    # "replay-suite.json").
    n=0
    while read -r entry code text; do
      case "$entry" in ''|'#'*) continue ;; esac
      n=$((n + 1))
      IFS=, read -r -a options <<<"$entry"
      file=${options[0]}; options=("${options[@]:1}")
      if python3 -c 'import json,sys; sys.exit(0 if isinstance(json.load(open(sys.argv[1])), list) else 1)' "$corpus/$file"; then
        rm -f "$dir/merged.json"
        python3 -c 'import json,sys
for i, s in enumerate(json.load(open(sys.argv[1]))): json.dump(s, open("%s/shard%d.json" % (sys.argv[2], i), "w"))' \
          "$corpus/$file" "$dir"
        (cd "$corpus" && "$bin" merge "$dir/shard0.json" "$dir/shard1.json" --report "$dir/merged.json") \
          >"$dir/out.txt" 2>"$dir/err.txt"
      else
        (cd "$corpus" && "$bin" gate "$file" "${options[@]}") >"$dir/out.txt" 2>"$dir/err.txt"
      fi
      rc=$?
      [ "$rc" -eq "$code" ] || { cat "$dir/out.txt" "$dir/err.txt"; fail "$entry: exit $rc, expected $code"; }
      grep -qF -- "$text" "$dir/out.txt" "$dir/err.txt" || { cat "$dir/out.txt" "$dir/err.txt"; fail "$entry: no '$text'"; }
      if [ -f "$dir/shard0.json" ]; then
        if [ "$code" -ne 2 ]; then
          [ -f "$dir/merged.json" ] || fail "$entry: merge exited $rc without its report"
          (cd "$corpus" && "$bin" gate "$dir/merged.json") >"$dir/gate.txt" 2>&1; grc=$?
          [ "$grc" -eq "$rc" ] || { cat "$dir/gate.txt"; fail "$entry: merge exited $rc, the merged report gated $grc"; }
        fi
        for shard in "$dir"/shard*.json; do
          (cd "$corpus" && "$bin" gate "$shard") >"$dir/gate.txt" 2>&1; grc=$?
          [ "$grc" -ne 0 ] || { cat "$dir/gate.txt"; fail "$entry: $(basename "$shard") alone passes the gate"; }
        done
        rm -f "$dir"/shard*.json
      fi
      echo "ok $entry: exit $rc ($text)"
    done < "$corpus/expected.txt"
    [ "$n" -ge 50 ] || fail "only $n corpus entries"
    ;;
  nan_is_never_a_pass)
    # A p-value that is not a probability fails its case as "cannot be judged" in the campaign's own verdict too
    # (merge and run apply it): every corpus file with a NaN, 5 or inf p-value was refused above; here the verdict of
    # a report whose stored statistics are consistent but whose p-value the checks read back as NaN.
    python3 - "$corpus/untouched-pass.json" "$dir/r.json" <<'EOF'
import json, sys
r = json.load(open(sys.argv[1]))
c = r["cases"][0]
c["max_abs_z"]["p_value"] = "nan"
json.dump(r, open(sys.argv[2], "w"))
EOF
    cp "$corpus/suite.json" "$dir/suite.json"
    (cd "$dir" && "$bin" gate r.json) >"$dir/out.txt" 2>"$dir/err.txt"; rc=$?
    cat "$dir/out.txt" "$dir/err.txt"
    [ "$rc" -eq 2 ] || fail "a NaN max-|z| p-value: exit $rc, expected 2"
    expect_err "is not a probability in [0, 1]"
    ;;
  outputs_not_regular)
    # A device node, a FIFO or a read-only file at an output path is refused (exit 2), and left as it was. As root
    # (the atomic rename would put a regular file where /dev/null was): a private node, never the real /dev/null.
    tiny_suite "$dir/tiny.json"
    if [ "$(id -u)" -eq 0 ]; then
      mknod "$dir/null" c 1 3 || fail "mknod"
      expect_rc 2 "$bin" run --suite "$dir/tiny.json" --report "$dir/null" --progress none
      expect_err "character device"
      [ -c "$dir/null" ] || fail "the device node was replaced"
    fi
    mkfifo "$dir/fifo"
    expect_rc 2 timeout 60 "$bin" run --suite "$dir/tiny.json" --html "$dir/fifo" --progress none
    expect_err "FIFO"
    [ -p "$dir/fifo" ] || fail "the FIFO was replaced"
    echo "keep me" > "$dir/ro.json"; chmod 0444 "$dir/ro.json"
    expect_rc 2 "$bin" run --suite "$dir/tiny.json" --report "$dir/ro.json" --progress none
    expect_err "read-only"
    [ "$(cat "$dir/ro.json")" = "keep me" ] || fail "the read-only file was replaced"
    expect_rc 2 "$bin" identify --sampler exact --draws 1000 --json "$dir/ro.json"
    [ "$(cat "$dir/ro.json")" = "keep me" ] || fail "identify replaced the read-only file"
    ;;
  outputs_name_inputs)
    # An output that is another output or an input of the same command is refused before anything is written.
    tiny_suite "$dir/tiny.json"
    cp "$dir/tiny.json" "$dir/tiny.orig"
    expect_rc 0 "$bin" run --suite "$dir/tiny.json" --report "$dir/a.json" --progress none
    cp "$dir/a.json" "$dir/a.orig"
    expect_rc 2 "$bin" run --suite "$dir/tiny.json" --report "$dir/x.json" --html "$dir/x.json" --progress none
    expect_err "name the same file"
    [ -e "$dir/x.json" ] && fail "x.json was written"
    expect_rc 2 "$bin" run --suite "$dir/tiny.json" --report "$dir/tiny.json" --progress none
    expect_err "that this command reads"
    cmp -s "$dir/tiny.json" "$dir/tiny.orig" || fail "run overwrote its suite"
    expect_rc 2 "$bin" verify --suite "$dir/tiny.json" --no-properties --baseline "$dir/a.json" --report "$dir/a.json" \
      --progress none
    expect_err "that this command reads"
    cmp -s "$dir/a.json" "$dir/a.orig" || fail "verify overwrote its baseline"
    ln -s "$dir/a.json" "$dir/alias.json"
    expect_rc 2 "$bin" verify --suite "$dir/tiny.json" --no-properties --baseline "$dir/alias.json" \
      --report "$dir/a.json" --progress none
    cmp -s "$dir/a.json" "$dir/a.orig" || fail "verify overwrote its baseline through a link"
    for i in 0 1; do
      expect_rc 0 "$bin" run --suite "$dir/tiny.json" --shard $i/2 --report "$dir/s$i.json" --progress none
    done
    cp "$dir/s0.json" "$dir/s0.orig"
    expect_rc 2 "$bin" merge "$dir/s0.json" "$dir/s1.json" --report "$dir/s0.json"
    expect_err "that this command reads"
    cmp -s "$dir/s0.json" "$dir/s0.orig" || fail "merge overwrote a shard"
    expect_rc 2 "$bin" identify --sampler exact --draws 1000 --json "$dir/tiny.json"
    expect_err "is not an identify result"
    cmp -s "$dir/tiny.json" "$dir/tiny.orig" || fail "identify overwrote a suite"
    ;;
  journal_not_reset)
    # The journal of an unfinished run is never reset by a run without --resume: refused (exit 2) naming its
    # finished cases, left byte for byte; --restart discards it explicitly.
    interrupted_run
    cp "$dir/r.json.journal" "$dir/journal.orig"
    expect_rc 2 timeout 120 "$bin" run --suite "$dir/many.json" --report "$dir/r.json" --progress none
    expect_err "finished case(s) of an unfinished run"
    cmp -s "$dir/r.json.journal" "$dir/journal.orig" || fail "the journal was reset"
    ;;
  resume_after_suite_edit)
    # --resume after the suite file was edited: a journaled case whose parameters changed is not reused with its
    # old draws (refused, naming the case and what changed).
    interrupted_run
    python3 - "$dir/many.json" <<'EOF'
import json, sys
s = json.load(open(sys.argv[1]))
for c in s["cases"]:
    c["params"]["top_k"] = 5
json.dump(s, open(sys.argv[1], "w"))
EOF
    expect_rc 2 timeout 120 "$bin" run --suite "$dir/many.json" --report "$dir/r.json" --resume --progress none
    expect_err "changed since the journal"
    expect_err "its parameters"
    ;;
  resume_across_builds)
    # A journal resumes under any build of the same campaign sources (issue 41): its identity compares the
    # fingerprint of core/, reference/, stats/, harness/, kernels/, tools/, not the git commit. A journal begun by a
    # build of another commit with the same fingerprint resumes; one of other campaign sources is refused (exit 2)
    # naming both fingerprints and revisions; a journal from before fingerprints resumes only under its revision.
    interrupted_run
    for f in r.json r.json.journal r.json.journal.plan; do cp "$dir/$f" "$dir/$f.orig"; done
    restore() { for f in r.json r.json.journal r.json.journal.plan; do cp "$dir/$f.orig" "$dir/$f"; done; }
    identity() {  # the journal's first line edited by the jq filter $1
      { head -n 1 "$dir/r.json.journal.orig" | jq -c "$1"; tail -n +2 "$dir/r.json.journal.orig"; } >"$dir/r.json.journal"
    }
    head -n 1 "$dir/r.json.journal" | jq -e '.source_fingerprint | type == "string"' >/dev/null ||
      fail "the journal records no source_fingerprint"
    restore; identity '.git_revision = "13a4b57000000000000000000000000000000000"'
    expect_rc 0 timeout 300 "$bin" run --suite "$dir/many.json" --report "$dir/r.json" --resume
    expect_err "resuming from $dir/r.json.journal"
    grep -q '"interrupted": false' "$dir/r.json" || fail "the resumed run did not finish"
    restore; identity '.source_fingerprint = "0123456789abcdef" | .git_revision = "13a4b57000000000000000000000000000000000"'
    expect_rc 2 timeout 120 "$bin" run --suite "$dir/many.json" --report "$dir/r.json" --resume --progress none
    expect_err "the campaign sources differ"
    expect_err "source fingerprint is 0123456789abcdef (samplecheck revision 13a4b57000000000000000000000000000000000)"
    expect_err "this run's $(head -n 1 "$dir/r.json.journal.orig" | jq -r .source_fingerprint) (revision"
    restore; identity 'del(.source_fingerprint) | .git_revision = "13a4b57000000000000000000000000000000000"'
    expect_rc 2 timeout 120 "$bin" run --suite "$dir/many.json" --report "$dir/r.json" --resume --progress none
    expect_err "recorded no campaign-source fingerprint (revision 13a4b57000000000000000000000000000000000)"
    restore; identity 'del(.source_fingerprint)'
    expect_rc 0 timeout 300 "$bin" run --suite "$dir/many.json" --report "$dir/r.json" --resume --progress none
    ;;
  one_writer_per_report)
    # A second samplecheck writing the same report is refused while the first holds its lock (a process holding
    # flock on the lock file stands in for the first writer, as samplecheck holds it).
    tiny_suite "$dir/tiny.json"
    python3 -c 'import fcntl, os, sys, time
f = open(sys.argv[1], "a"); fcntl.flock(f, fcntl.LOCK_EX); f.write("%d\n" % os.getpid()); f.flush(); time.sleep(120)' \
      "$dir/r.json.lock" &
    holder=$!
    for _ in $(seq 100); do [ -e "$dir/r.json.lock" ] && break; sleep 0.05; done
    sleep 0.2
    expect_rc 2 "$bin" run --suite "$dir/tiny.json" --report "$dir/r.json" --progress none
    expect_err "is writing"
    [ -e "$dir/r.json" ] && fail "the second writer wrote the report"
    kill $holder; wait $holder 2>/dev/null
    expect_rc 0 "$bin" run --suite "$dir/tiny.json" --report "$dir/r.json" --progress none
    [ -e "$dir/r.json.lock" ] && fail "the lock file was left behind"
    ;;
  stop_keeps_report)
    # A stop signal before a case of the run has finished leaves the previous report as it was (exit 130).
    tiny_suite "$dir/tiny.json"
    endless_suite "$dir/endless.json"
    expect_rc 0 "$bin" run --suite "$dir/tiny.json" --report "$dir/r.json" --progress none
    cp "$dir/r.json" "$dir/r.orig"
    "$bin" run --suite "$dir/endless.json" --report "$dir/r.json" --progress none >"$dir/out.txt" 2>&1 &
    pid=$!
    trap 'kill $pid 2>/dev/null' EXIT
    for _ in $(seq 600); do [ -e "$dir/r.json.journal" ] && break; sleep 0.1; done
    kill -INT $pid; wait $pid; rc=$?
    cat "$dir/out.txt"
    [ "$rc" -eq 130 ] || fail "expected exit 130, got $rc"
    cmp -s "$dir/r.json" "$dir/r.orig" || fail "the previous report was replaced"
    ;;
  stuck_plugin_call_ends)
    # One SIGTERM (what timeout(1) sends) ends a run whose in-process plugin is stuck in a call: the program exits
    # by itself with 143 after the grace, saying why; before, it waited for the call forever (killed here after 90 s).
    [ -n "$fatal_plugin" ] && [ -f "$fatal_plugin" ] || fail "no fatal test plugin given"
    tiny_suite "$dir/tiny.json"
    python3 - "$bin" "$dir/tiny.json" "plugin-inproc:$fatal_plugin:hang-in-count" "$dir/err.txt" <<'EOF' || fail "stuck call"
import signal, subprocess, sys, time
p = subprocess.Popen([sys.argv[1], "run", "--suite", sys.argv[2], "--sampler", sys.argv[3], "--progress", "none"],
                     stderr=open(sys.argv[4], "w"))
time.sleep(2)
p.send_signal(signal.SIGTERM)
try:
    rc = p.wait(timeout=90)
except subprocess.TimeoutExpired:
    p.kill()
    print("still running 90 s after SIGTERM")
    sys.exit(1)
print("returncode", rc)
sys.exit(0 if rc == 143 else 1)
EOF
    cat "$dir/err.txt"
    expect_err "did not return within the grace"
    ;;
  second_signal_ends_at_once)
    # A second stop signal ends the program by that signal (default action), not after the grace.
    [ -n "$fatal_plugin" ] && [ -f "$fatal_plugin" ] || fail "no fatal test plugin given"
    tiny_suite "$dir/tiny.json"
    python3 - "$bin" "$dir/tiny.json" "plugin-inproc:$fatal_plugin:hang-in-count" <<'EOF' || fail "second SIGINT"
import os, signal, subprocess, sys, time
p = subprocess.Popen([sys.argv[1], "run", "--suite", sys.argv[2], "--sampler", sys.argv[3], "--progress", "none"])
time.sleep(1.5)
p.send_signal(signal.SIGINT)
time.sleep(0.3)
p.send_signal(signal.SIGINT)
rc = p.wait(timeout=120)
print("returncode", rc)
sys.exit(0 if rc == -signal.SIGINT else 1)
EOF
    ;;
  json_depth_limit)
    # Nesting far past any samplecheck file is refused at once with the depth named: a suite, a report, a journal.
    python3 -c 'import sys; d=20000; open(sys.argv[1],"w").write("{\"schema\": \"samplecheck-suite/1\", \"x\": " + "["*d + "]"*d + "}")' "$dir/deep.json"
    expect_rc 2 "$bin" run --suite "$dir/deep.json" --progress none
    expect_err "nested deeper than"
    expect_rc 2 "$bin" gate "$dir/deep.json"
    expect_err "nested deeper than"
    expect_rc 2 "$bin" run --suite "$dir/deep.json" --verifier exact --progress none
    expect_err "nested deeper than"
    ;;
  underpowered_is_no_pass)
    # --max-draws 1: 38 draws at power 0.01 is not a pass; --allow-underpowered accepts it, and the gate says the same.
    expect_rc 1 "$bin" run --suite smoke --max-draws 1 --report "$dir/r.json" --progress none
    expect_out "underpowered"
    expect_rc 1 "$bin" gate "$dir/r.json"
    expect_rc 0 "$bin" gate "$dir/r.json" --allow-underpowered
    expect_rc 0 "$bin" run --suite smoke --max-draws 1 --allow-underpowered --progress none
    ;;
  properties_all_skipped)
    # Every property left out: no property was judged, not "0 passed" and exit 0.
    skip=()
    while read -r name; do skip+=(--skip-property "$name"); done < <("$bin" list --properties --names)
    [ "${#skip[@]}" -gt 0 ] || fail "no properties listed"
    expect_rc 1 "$bin" properties --sampler exact --quiet "${skip[@]}"
    expect_out "no property was judged"
    ;;
  unknown_claimed_profile)
    # A sampler that claims a profile this samplecheck does not know is refused, never judged as vllm.
    command -v python3 >/dev/null || fail "python3"
    # The example client with its HELLO's profile edited; the copy finds the samplecheck package by PYTHONPATH.
    sed 's/profile="vllm"/profile="nosuch-profile"/' "$here/../../examples/python/samplecheck_client.py" \
      > "$dir/client.py"
    grep -q 'nosuch-profile' "$dir/client.py" || fail "the client was not edited"
    tiny_suite "$dir/tiny.json"
    expect_rc 2 env PYTHONPATH="$here/../../python" "$bin" run --suite "$dir/tiny.json" \
      --sampler "process:exec python3 $dir/client.py" --progress none
    expect_err 'nosuch-profile'
    ;;
  list_everything)
    # list prints every suite (the speculative-decoding ones too), sampler and verifier kind, check and mutant.
    expect_rc 0 "$bin" list
    cp "$dir/out.txt" "$dir/all.txt"
    for s in smoke standard nightly spec-smoke spec-standard; do grep -qw -- "$s" "$dir/all.txt" || fail "suite $s"; done
    expect_rc 0 "$bin" list --verifiers --names
    [ "$(tr '\n' ' ' < "$dir/out.txt")" = "exact cuda mutant plugin plugin-inproc process lossy " ] || fail "verifier kinds"
    expect_rc 0 "$bin" list --verifier-mutants --names
    cp "$dir/out.txt" "$dir/vm.txt"
    [ -s "$dir/vm.txt" ] || fail "no verifier mutants"
    while read -r m; do
      grep -qw -- "$m" "$dir/all.txt" || fail "verifier mutant $m not in list"
    done < "$dir/vm.txt"
    expect_rc 0 "$bin" list --checks --names
    while read -r c; do grep -qw -- "$c" "$dir/all.txt" || fail "check $c"; done < "$dir/out.txt"
    grep -qw spec-rejection "$dir/all.txt" || fail "spec checks"
    # Every verifier mutant is one --verifier mutant:<name> accepts (the list is the table the verifier reads).
    m=$(head -1 "$dir/vm.txt")
    "$bin" run --suite spec-smoke --verifier "mutant:$m" --max-draws 1 --progress none >/dev/null 2>"$dir/err.txt"
    grep -q "unknown" "$dir/err.txt" && fail "mutant:$m unknown to --verifier"
    ;;
  precise_messages)
    # Bad input is named precisely: no library's internal error text (nlohmann's parse_error.101, Boost's iround,
    # "key 'source' not found").
    echo '{"schema": x}' > "$dir/bad.json"
    expect_rc 2 "$bin" run --suite "$dir/bad.json" --progress none
    expect_err "not valid JSON at line 1, column"
    grep -q "json.exception" "$dir/err.txt" && fail "nlohmann's exception text"
    expect_rc 2 "$bin" plan --tv 1e-3 --bins 16 --draws 1e300
    expect_err "--draws 1e300 is outside the allowed range"
    grep -qi "boost\|iround" "$dir/err.txt" && fail "Boost's error text"
    python3 -c 'import json,sys; r=json.load(open(sys.argv[1])); del r["suite"]["source"]; json.dump(r, open(sys.argv[2], "w"))' \
      "$corpus/untouched-pass.json" "$dir/nosource.json"
    expect_rc 2 "$bin" gate "$dir/nosource.json"
    expect_err "/suite/source is missing"
    python3 -c 'import json,sys; r=json.load(open(sys.argv[1])); r["cases"][0]["binnings"]=5; json.dump(r, open(sys.argv[2], "w"))' \
      "$corpus/untouched-pass.json" "$dir/binnings.json"
    expect_rc 2 "$bin" gate "$dir/binnings.json"
    grep -q "json.exception" "$dir/err.txt" && fail "nlohmann's exception text for a check's fields"
    python3 -c 'import json,sys; r=json.load(open(sys.argv[1])); r["seed"]=-1; json.dump(r, open(sys.argv[2], "w"))' \
      "$corpus/untouched-pass.json" "$dir/seed.json"
    expect_rc 2 "$bin" gate "$dir/seed.json"
    expect_err "/seed must be a whole number"
    expect_rc 2 "$bin" merge "$dir/seed.json"
    grep -q "seed.json: .*seed.json:" "$dir/err.txt" && fail "merge names the file twice"
    ;;
  *) fail "unknown scenario" ;;
esac
echo "PASS ($scenario)"
