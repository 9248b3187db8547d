#!/usr/bin/env bash
# Issue 44's hostile inputs, rerun from the issue's descriptions against a built samplecheck (not a ctest: the
# evidence of the issue's note). Each probe prints HELD or BROKEN and what it saw.
#   bash results/issue44-probes/probe.sh <samplecheck> <scratch dir> <example plugin .so>
set -uo pipefail
B=$1; D=$2; SO=$3
rm -rf "$D"; mkdir -p "$D"; cd "$D" || exit 2
held=0; broken=0
# A python3 with numpy (Debian's, where the one on PATH has none).
python3() { if command python3 -c 'import numpy' 2>/dev/null; then command python3 "$@"; else /usr/bin/python3 "$@"; fi; }
ok() { echo "HELD   $1: $2"; held=$((held + 1)); }
bad() { echo "BROKEN $1: $2"; broken=$((broken + 1)); }
# probe NAME EXPECTED_RC FILE_THAT_MUST_SURVIVE -- command...
keeps() {
  local name=$1 want=$2 keep=$3; shift 4
  local before; before=$(sha256sum "$keep" 2>/dev/null)
  timeout 60 "$@" >"$name.out" 2>"$name.err"; local rc=$?
  local after; after=$(sha256sum "$keep" 2>/dev/null)
  if [ "$rc" -eq "$want" ] && [ "$before" = "$after" ]; then ok "$name" "exit $rc, $keep unchanged: $(head -c 160 "$name.err" | tr '\n' ' ')"
  else bad "$name" "exit $rc (want $want), $keep $([ "$before" = "$after" ] && echo unchanged || echo CHANGED)"; fi
}
python3 - <<'PY'
import json, numpy as np
np.save("rows.npy", np.random.default_rng(1).normal(size=(2, 50)).astype(np.float32))
json.dump({"schema": "samplecheck-replay-suite/1", "name": "s", "cases": [
  {"name": "a", "row": {"kind": "gaussian", "vocab": 50}, "params": {"top_k": 5}},
  {"name": "n", "row": {"kind": "npy", "path": "rows.npy", "row": 0}, "params": {"top_p": 0.9}}]},
  open("s.json", "w"))
json.dump({"schema": "samplecheck-suite/1", "name": "r", "cases": [
  {"name": "n", "row": {"kind": "npy", "path": "rows.npy", "row": 0}, "params": {"top_k": 5}, "max_draws": 4096}]},
  open("r.json", "w"))
PY
cat > trainer.py <<'PY'
import sys, time
sys.exit(0)
PY
cp "$SO" p.so
# --- Data loss
keeps replay-report-is-suite 2 s.json -- "$B" replay --suite s.json --report s.json
keeps replay-html-is-suite 2 s.json -- "$B" replay --suite s.json --html s.json
keeps replay-report-is-trainer-script 2 trainer.py -- "$B" replay --suite s.json --trainer "process:python3 trainer.py" --report trainer.py
keeps replay-report-is-case-npy 2 rows.npy -- "$B" replay --suite s.json --report rows.npy
keeps replay-report-equals-html 2 s.json -- "$B" replay --suite s.json --report x.json --html x.json
[ -e x.json ] && bad replay-report-equals-html-wrote "x.json written" || ok replay-report-equals-html-wrote "nothing written"
keeps run-report-is-plugin 2 p.so -- "$B" run --suite smoke --sampler plugin:p.so --report p.so
keeps run-report-is-case-npy 2 rows.npy -- "$B" run --suite r.json --report rows.npy
# --follow-symlinks must not bypass the one-writer lock
ln -s target.json link.json
"$B" run --suite smoke --seed 3 --report target.json --progress none >l1.out 2>&1 & p1=$!
sleep 0.3; "$B" run --suite smoke --seed 3 --report link.json --follow-symlinks --progress none >l2.out 2>&1; rc2=$?; wait $p1; rc1=$?
[ $rc1 -eq 0 ] && [ $rc2 -eq 2 ] && ok follow-symlinks-lock "exits $rc1/$rc2: $(grep -h -m1 'writ' l2.out)" || bad follow-symlinks-lock "exits $rc1/$rc2"
# --- Forged plans
"$B" run --suite smoke --sampler mutant:topp-truncated-cdf --max-draws 64 --allow-underpowered --report cut.json --progress none >/dev/null 2>&1
python3 - <<'PY'
import json
r = json.load(open("cut.json"))
p = r["draw_plan"]
f = json.loads(json.dumps(r)); f["draw_plan"]["fingerprint"] = 0; json.dump(f, open("fp0.json", "w"))
g = json.loads(json.dumps(r))
for c in g["draw_plan"]["cases"]:
    c["why"] = "power"; c["max_draws"] = 1 << 20
g["max_draws_override"] = None
json.dump(g, open("forged.json", "w"))
d = json.loads(json.dumps(r)); d["draw_plan"]["cases"] = d["draw_plan"]["cases"] * 1000; json.dump(d, open("dup.json", "w"))
PY
for f in fp0 forged dup; do
  timeout 120 "$B" run --suite smoke --sampler mutant:topp-truncated-cdf --plan-from $f.json --report plan-$f.json --progress none >plan-$f.out 2>&1; rc=$?
  [ $rc -ne 0 ] && [ $rc -ne 124 ] && ok "plan-from-$f" "exit $rc: $(grep -m1 -E 'plan|underpowered|FAIL' plan-$f.out | head -c 200)" || bad "plan-from-$f" "exit $rc"
done
timeout 120 "$B" run --suite smoke --sampler mutant:topp-truncated-cdf --plan-from forged.json --max-draws 100 --progress none >pm.out 2>&1; rc=$?
[ $rc -ne 0 ] && [ $rc -ne 124 ] && ok plan-from-plus-max-draws "exit $rc: $(grep -m1 -E 'underpowered|FAIL' pm.out | head -c 200)" || bad plan-from-plus-max-draws "exit $rc"
# gate on a forged report: edited fingerprint and draws
python3 - <<'PY'
import json
r = json.load(open("cut.json")); r["draw_plan"]["fingerprint"] = 0; json.dump(r, open("gate-fp0.json", "w"))
PY
"$B" gate gate-fp0.json >g.out 2>&1; rc=$?
[ $rc -ne 0 ] && ok gate-fingerprint-0 "exit $rc: $(head -c 200 g.out | tr '\n' ' ')" || bad gate-fingerprint-0 "exit 0"
# big plan: linear parse (timed for the note, not asserted)
python3 - <<'PY'
import json
r = json.load(open("cut.json")); base = r["draw_plan"]["cases"][0]
r["draw_plan"]["cases"] = [dict(base, case="c%06d" % i) for i in range(400000)]
json.dump(r, open("big.json", "w"))
PY
s=$(date +%s.%N); timeout 120 "$B" run --suite smoke --plan-from big.json --progress none >big.out 2>&1; rc=$?; e=$(date +%s.%N)
t=$(python3 -c "print(round($e - $s, 1))"); sz=$(du -m big.json | cut -f1)
[ $rc -eq 2 ] && ok big-plan "a ${sz} MB plan refused in ${t} s: $(head -c 160 big.out)" || bad big-plan "exit $rc after ${t} s"
# FIFOs
mkfifo fifo.npy fifo.json
python3 - <<'PY'
import json
json.dump({"schema": "samplecheck-suite/1", "name": "f", "cases": [{"name": "n", "row": {"kind": "npy", "path": "fifo.npy"}, "params": {}}]}, open("f.json", "w"))
PY
timeout 20 "$B" run --suite f.json --progress none >fifo1.out 2>&1; rc=$?
[ $rc -eq 2 ] && ok fifo-npy "exit 2: $(head -c 160 fifo1.out)" || bad fifo-npy "exit $rc"
timeout 20 "$B" run --suite smoke --plan-from fifo.json --progress none >fifo2.out 2>&1; rc=$?
[ $rc -eq 2 ] && ok fifo-plan-from "exit 2: $(head -c 160 fifo2.out)" || bad fifo-plan-from "exit $rc"
# --- Replay suites: unknown fields, duplicate names
python3 - <<'PY'
import json
c = {"name": "a", "row": {"kind": "gaussian", "vocab": 50}, "params": {"top_k": 5}}
json.dump({"schema": "samplecheck-replay-suite/1", "name": "t", "cases": [dict(c, trainer_logit="bf16")]}, open("typo.json", "w"))
json.dump({"schema": "samplecheck-replay-suite/1", "name": "t", "max_ratio_bais": 0.5, "cases": [c]}, open("typo2.json", "w"))
json.dump({"schema": "samplecheck-replay-suite/1", "name": "t", "cases": [c, c]}, open("dupname.json", "w"))
PY
for f in typo typo2 dupname; do
  "$B" replay --suite $f.json --trainer fault:no-label-guard --progress none >$f.out 2>&1; rc=$?
  [ $rc -eq 2 ] && ok "replay-suite-$f" "exit 2: $(head -c 200 $f.out)" || bad "replay-suite-$f" "exit $rc"
done
# --- gate on replay reports
"$B" replay --suite s.json --trainer fault:no-renormalization --report rfail.json --progress none >/dev/null 2>&1
python3 - <<'PY'
import json
r = json.load(open("rfail.json"))
r["verdict"] = "pass"
for c in r["cases"]:
    c["status"] = "pass"
    for k in ("replay_trainer", "replay_engine"):
        if k in c.get("checks", {}): c["checks"][k]["violations"] = 0
json.dump(r, open("rforged.json", "w"))
PY
"$B" gate rforged.json >rg.out 2>&1; rc=$?
[ $rc -ne 0 ] && ok gate-replay-status-pass "exit $rc: $(head -c 200 rg.out | tr '\n' ' ')" || bad gate-replay-status-pass "exit 0"
"$B" replay --suite s.json --report rpass.json --progress none >/dev/null 2>&1
"$B" gate rpass.json --max-tv 0.01 >rt.out 2>&1; rc=$?
[ $rc -eq 2 ] && ok gate-max-tv-on-replay "exit 2: $(head -c 200 rt.out | tr '\n' ' ')" || bad gate-max-tv-on-replay "exit $rc"
# --- replay processes: started once, stop signals, bounded messages (the client of tests/campaign)
C=$(cd "$(dirname "$B")/../../.." && pwd)/tests/campaign/replay_process_client.py
python3 - <<'PY'
import json
json.dump({"schema": "samplecheck-replay-suite/1", "name": "k", "cases": [
  {"name": "k%d" % i, "row": {"kind": "gaussian", "vocab": 64}, "params": {"top_k": 8}} for i in range(4)]},
  open("k.json", "w"))
PY
# two replays on one report: the second refused naming the first writer, the first's result kept
set -m
"$B" replay --suite k.json --trainer "process:exec /usr/bin/python3 $C slow2 $PWD/w.starts" --quiet --report two.json >two1.out 2>&1 & p1=$!
set +m
for _ in $(seq 200); do [ -f w.starts.busy ] && break; sleep 0.1; done
"$B" replay --suite k.json --quiet --report two.json >two2.out 2>&1; rc2=$?
kill -TERM $p1; wait $p1; rc1=$?
[ $rc2 -eq 2 ] && [ $rc1 -eq 143 ] && grep -q '"interrupted": true' two.json && ok two-replays-one-report "second exit 2: $(head -c 180 two2.out)" || bad two-replays-one-report "exits $rc1/$rc2"
"$B" replay --suite k.json --engine "process:exec /usr/bin/python3 $C ok $PWD/e.starts vllm" --trainer "process:exec /usr/bin/python3 $C ok $PWD/t.starts" --quiet >once.out 2>&1; rc=$?
[ $rc -eq 0 ] && [ "$(wc -l <e.starts)" -eq 1 ] && [ "$(wc -l <t.starts)" -eq 1 ] && ok replay-process-started-once "exit 0, engine started $(wc -l <e.starts)x, trainer $(wc -l <t.starts)x" || bad replay-process-started-once "exit $rc, starts $(wc -l <e.starts)/$(wc -l <t.starts)"
for sig in TERM INT; do
  rm -f s.starts*
  set -m
  "$B" replay --suite k.json --trainer "process:exec /usr/bin/python3 $C slow2 $PWD/s.starts" --progress lines --report sig-$sig.json >sig-$sig.out 2>&1 & p=$!
  set +m
  for _ in $(seq 200); do [ -f s.starts.busy ] && break; sleep 0.1; done
  kill -$sig $p; wait $p; rc=$?
  want=$([ $sig = TERM ] && echo 143 || echo 130)
  if [ $rc -eq "$want" ] && ! grep -q -- "--resume\|killed by signal" sig-$sig.out && grep -q '"interrupted": true' sig-$sig.json; then ok "replay-SIG$sig" "exit $rc, partial report: $(grep -m1 interrupted sig-$sig.out | head -c 160)"
  else bad "replay-SIG$sig" "exit $rc (want $want): $(tail -3 sig-$sig.out | tr '\n' ' ' | head -c 300)"; fi
done
"$B" replay --suite k.json --trainer "process:exec /usr/bin/python3 $C huge-error $PWD/h.starts" --quiet --report huge.json >huge.out 2>&1; rc=$?
sz=$(stat -c %s huge.json 2>/dev/null || echo 0)
[ $rc -eq 1 ] && [ "$sz" -lt 200000 ] && ok replay-huge-error "exit 1, a 20 MB ERROR message x 4 cases gave a $sz byte report" || bad replay-huge-error "exit $rc, report $sz bytes"
# --- serve(): float tokens are an error, never truncated
python3 - "$C" <<'PY' >float.out 2>&1
import os, sys
sys.path.insert(0, os.path.join(os.path.dirname(sys.argv[1]), "..", "..", "python"))
import numpy as np, samplecheck
r = samplecheck.check(lambda logits, params: [np.float32(0.75)] * len(logits), suite="smoke", max_draws=300, case="gauss-full")
print("passed" if r.passed else "failed", r)
PY
grep -q "^failed" float.out && grep -q "float32" float.out && ok serve-float-tokens "$(grep -m1 -o 'returned[^;]*' float.out | head -c 160)" || bad serve-float-tokens "$(tail -2 float.out | head -c 300)"
echo "probes: $held held, $broken broken"
[ "$broken" -eq 0 ]
