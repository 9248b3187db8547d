#!/usr/bin/env bash
# --tv auto (issue 41; docs/campaigns.md, "Power by budget"): the time budget chooses the least TV of the ladder at
# which every row case's full-power plan fits, before drawing; the run is then drawn and judged exactly as --tv
# <chosen>. One scenario per ctest test:
#   budget_tv_test.sh <samplecheck> <scenario> <scratch dir> [<python3>]
# No assertion on wall time: only relations (chosen TV >= the suite's, the report's TV is every case's, a run at
# --tv <chosen> plans the same draws, a resumed run keeps the TV the first one chose).
set -uo pipefail
bin=$1; scenario=$2; dir=$3/$scenario; python=${4:-python3}
here=$(cd "$(dirname "$0")" && pwd)
rm -rf "$dir"; mkdir -p "$dir"
# shellcheck source=../lib/expect.sh
source "$here/../lib/expect.sh"
expect_err() { grep -qF -- "$1" "$dir/err.txt" || fail "stderr lacks '$1'"; }
expect_out() { grep -qF -- "$1" "$dir/out.txt" || fail "stdout lacks '$1'"; }
# A suite of `n` row cases (V = 32) at TV 1e-4 with a `budget` s time budget: at its own TV each case needs about
# 2e9 draws (more than its 2^28 cap), so no budget of seconds affords it and the budget chooses a larger TV. Its
# caps equal the budget's (2^28), so a run at --tv <chosen> --budget 0 plans what the budget gave.
suite() {
  "$python" - "$1" "$2" "$3" <<'EOF'
import json, sys
cases = [{"name": "c%02d" % i, "row": {"kind": "gaussian", "vocab": 32}, "params": {"top_k": 20 if i % 2 else 0}}
         for i in range(int(sys.argv[2]))]
json.dump({"schema": "samplecheck-suite/1", "name": "tvauto", "seed": 7, "tv": 1e-4, "power": 0.99,
           "budget_seconds": float(sys.argv[3]), "min_draws": 1000, "max_draws": 1 << 28,
           "budget_max_draws": 1 << 28, "cases": cases}, open(sys.argv[1], "w"))
EOF
}
jqr() { jq -r "$1" "$2"; }
# edit IN OUT 'python statements on r': a JSON file edited in Python (jq would round the 64-bit plan fingerprint).
edit() {
  "$python" -c 'import json, sys
r = json.load(open(sys.argv[1]))
exec(sys.argv[3])
json.dump(r, open(sys.argv[2], "w"), indent=1)' "$1" "$2" "$3"
}
draws() { jq -c '[.cases[] | [.name, .draws]]' "$1"; }
# The report $1 of a --tv auto run: its TV is the chosen one, at least the suite's, every case's, the draw plan's,
# with the new basis $2 and the budget $3 that chose it.
check_chosen() {
  local r=$1 basis=$2 budget=$3
  tv=$(jqr .tv "$r")
  [ "$(jqr .draw_plan.basis "$r")" = "$basis" ] || fail "basis $(jqr .draw_plan.basis "$r"), not $basis"
  [ "$(jqr .draw_plan.tv "$r")" = "$tv" ] || fail "draw_plan.tv $(jqr .draw_plan.tv "$r") is not the report's $tv"
  [ "$(jqr '.draw_plan.tv_chosen_by.budget_seconds' "$r")" = "$budget" ] || fail "tv_chosen_by is not the $budget s budget"
  jq -e --argjson tv "$tv" '[.cases[].plan.tv] | all(. == $tv)' "$r" >/dev/null || fail "a case is not at TV $tv"
  jq -e '.tv >= 1e-4 and .tv <= 0.5' "$r" >/dev/null || fail "chosen TV $tv below the suite's 1e-4 or above 0.5"
  jq -e '.draw_plan.reason | test("--tv auto: .*TV [0-9.e-]+ ") and test("time budget [0-9.]+ s; measured .* counted draws/s")' "$r" \
    >/dev/null || fail "draw_plan.reason does not name the budget, the rate and the chosen TV"
}

case "$scenario" in
  tv_auto_exact)
    # exact with a 4 s budget: the note before drawing, the report (tv, basis "budget: tv", the reason), the
    # summary and VERDICT line, the HTML header; a pass without --allow-underpowered. --plan-from the report, its
    # reproduce line and a run at --tv <chosen> --budget 0 draw the same; the gate passes it.
    suite "$dir/s.json" 4 4
    expect_rc 0 "$bin" run --suite "$dir/s.json" --tv auto --report "$dir/r.json" --html "$dir/r.html" --progress lines
    check_chosen "$dir/r.json" "budget: tv" 4
    shown=$(jq -r '.tv' "$dir/r.json" | "$python" -c 'import sys; print("%g" % float(sys.stdin.read()))')
    expect_err "note: TV chosen by the budget: $shown (the least TV of the ladder the 4 s budget affords at the measured "
    expect_err "draws/s: power 0.99 at it, estimated "
    expect_out "(Holm), TV $shown (chosen by the 4 s budget at "
    expect_out "VERDICT: PASS at TV $shown (chosen by the 4 s budget at "
    grep -qF "$shown / 0.99 (TV chosen by the 4 s budget at " "$dir/r.html" || fail "the HTML header does not say the budget chose the TV"
    grep -q "underpowered" "$dir/out.txt" && fail "underpowered at its stated TV"
    jq -e '[.cases[] | .plan.achieved_power >= 0.99 - 1e-9] | all' "$dir/r.json" >/dev/null ||
      fail "a case below power 0.99 at the chosen TV"
    expect_rc 0 "$bin" gate "$dir/r.json"
    expect_out "VERDICT: PASS at TV $shown (chosen by the 4 s budget at "
    expect_rc 0 "$bin" run --suite "$dir/s.json" --tv auto --plan-from "$dir/r.json" --report "$dir/p.json" --progress none
    [ "$(draws "$dir/p.json")" = "$(draws "$dir/r.json")" ] || fail "--plan-from drew another plan"
    [ "$(jqr .tv "$dir/p.json")" = "$tv" ] || fail "--plan-from replayed at TV $(jqr .tv "$dir/p.json"), not $tv"
    expect_out "VERDICT: PASS at TV $shown (chosen by the 4 s budget at "
    # The reproduce line fixes the chosen TV (clock-free: --budget 0, every case's draws under the suite's caps).
    reproduce=$(jqr .reproduce "$dir/r.json")
    case "$reproduce" in *" --tv "*" --budget 0"*) ;; *) fail "reproduce line without --tv <chosen> --budget 0: $reproduce" ;; esac
    eval "set -- ${reproduce#samplecheck }"
    expect_rc 0 "$bin" "$@" --report "$dir/q.json" --progress none
    [ "$(draws "$dir/q.json")" = "$(draws "$dir/r.json")" ] || fail "the reproduce line drew another plan"
    [ "$(jqr .tv "$dir/q.json")" = "$tv" ] || fail "the reproduce line ran at TV $(jqr .tv "$dir/q.json")"
    expect_rc 0 "$bin" run --suite "$dir/s.json" --tv "$tv" --budget 0 --report "$dir/t.json" --progress none
    [ "$(draws "$dir/t.json")" = "$(draws "$dir/r.json")" ] || fail "--tv $tv plans other draws than --tv auto chose"
    expect_rc 0 "$bin" gate "$dir/t.json"
    ;;
  tv_auto_none_fits)
    # A budget no TV of the ladder fits (0.001 s): said before drawing, the largest TV (0.5) kept, the cases at
    # their caps as a budget that does not fit leaves them ("budget: caps").
    suite "$dir/s.json" 2 4
    expect_rc 0 "$bin" run --suite "$dir/s.json" --tv auto --budget 0.001 --report "$dir/r.json" --progress lines
    expect_err "note: TV chosen by the budget: none up to 0.5 fits: the 0.001 s budget does not afford full power even at TV 0.5"
    expect_err "the run keeps TV 0.5, its cases at their caps"
    check_chosen "$dir/r.json" "budget: caps" 0.001
    [ "$tv" = "0.5" ] || fail "kept TV $tv, not the ladder's largest 0.5"
    expect_rc 0 "$bin" gate "$dir/r.json"
    ;;
  tv_auto_slow_process)
    # The pure-Python reference client (process protocol, about 10^5 draws/s, far slower than exact): a 4 s budget
    # affords far fewer draws than the suite's TV needs, so the chosen TV is above the suite's 1e-4.
    "$python" -c 'import json' 2>/dev/null || { echo "SKIPPED: no python3"; exit 77; }
    suite "$dir/s.json" 4 4
    spec="process:exec $python $here/../../examples/python/samplecheck_client.py"
    expect_rc 0 "$bin" run --suite "$dir/s.json" --sampler "$spec" --tv auto --report "$dir/r.json" --progress lines
    check_chosen "$dir/r.json" "budget: tv" 4
    jq -e '.tv > 1e-4' "$dir/r.json" >/dev/null || fail "the slow sampler's chosen TV $tv is not above the suite's"
    expect_err "note: TV chosen by the budget: "
    expect_out "VERDICT: PASS at TV "
    expect_rc 0 "$bin" gate "$dir/r.json"
    ;;
  tv_auto_resume)
    # A --tv auto run stopped by SIGINT keeps the chosen TV in its journal (identity tv) and plan file; --resume (the
    # same command line) draws that plan at that TV, choosing nothing again, and its report passes the gate. A plan
    # file whose TV was changed is refused against the journal's identity (exit 2).
    suite "$dir/s.json" 40 8
    interrupted() {
      rm -f "$dir/r.json" "$dir/r.json.journal" "$dir/r.json.journal.plan"
      "$bin" run --suite "$dir/s.json" --tv auto --report "$dir/r.json" --progress lines >"$dir/first.txt" 2>&1 &
      local pid=$!
      for _ in $(seq 1200); do [ -f "$dir/r.json.journal" ] && [ "$(wc -l < "$dir/r.json.journal")" -ge 2 ] && break; sleep 0.1; done
      kill -INT $pid; wait $pid
      [ "$(wc -l < "$dir/r.json.journal")" -ge 2 ] || fail "no case was journaled"
      grep -q '"interrupted": true' "$dir/r.json" || fail "the run finished before the signal"
    }
    interrupted
    grep -qF "note: TV chosen by the budget: " "$dir/first.txt" || fail "the first run chose no TV"
    chosen=$(jqr .tv "$dir/r.json")
    [ "$(head -n 1 "$dir/r.json.journal" | jq -r .tv)" = "$chosen" ] || fail "the journal's identity is not at TV $chosen"
    [ "$(jq -r .draw_plan.tv "$dir/r.json.journal.plan")" = "$chosen" ] || fail "the journal's plan is not at TV $chosen"
    planned=$(jq -c '[.draw_plan.cases[] | [.case, .draws]]' "$dir/r.json.journal.plan")
    expect_rc 0 "$bin" run --suite "$dir/s.json" --tv auto --report "$dir/r.json" --resume --progress lines
    expect_err "resuming from $dir/r.json.journal"
    grep -qF "TV chosen by the budget" "$dir/err.txt" && fail "the resumed run chose the TV again"
    [ "$(jqr .tv "$dir/r.json")" = "$chosen" ] || fail "resumed at TV $(jqr .tv "$dir/r.json"), not the chosen $chosen"
    [ "$(draws "$dir/r.json")" = "$planned" ] || fail "the resumed run did not draw the journal's plan"
    [ -e "$dir/r.json.journal" ] && fail "the journal outlived the finished run"
    case "$(jqr .reproduce "$dir/r.json")" in *" --tv $chosen --budget 0"*) ;; *) fail "resumed reproduce line: $(jqr .reproduce "$dir/r.json")" ;; esac
    expect_out "VERDICT: PASS at TV "
    expect_rc 0 "$bin" gate "$dir/r.json"
    interrupted
    chosen=$(jqr .tv "$dir/r.json")
    other=$([ "$chosen" = "0.5" ] && echo 0.4 || echo 0.5)
    edit "$dir/r.json.journal.plan" "$dir/plan.json" "r['draw_plan']['tv'] = $other"
    cp "$dir/plan.json" "$dir/r.json.journal.plan"
    expect_rc 2 "$bin" run --suite "$dir/s.json" --tv auto --report "$dir/r.json" --resume --progress none
    expect_err "cannot resume from $dir/r.json.journal: the journal's tv is"
    ;;
  tv_auto_refused)
    # --tv auto without a budget, on a shard, with a recorded plan of no TV, and --tv a number against a plan made
    # at another TV: exit 2 naming what is allowed.
    suite "$dir/s.json" 2 0
    expect_rc 2 "$bin" run --suite "$dir/s.json" --tv auto --progress none
    expect_err "--tv auto needs a time budget to choose the TV by: suite tvauto has no budget_seconds; allowed: --tv auto with --budget S (S > 0)"
    expect_rc 2 "$bin" run --suite "$dir/s.json" --tv auto --budget 0 --progress none
    expect_err "suite tvauto is run with --budget 0; allowed:"
    expect_rc 2 "$bin" run --suite "$dir/s.json" --tv auto --budget 4 --shard 0/2 --report "$dir/s0.json" --progress none
    expect_err "--tv auto chooses the TV by the clock, and a shard plans without it"
    expect_rc 2 "$bin" run --suite "$dir/s.json" --tv fast --progress none
    expect_err "--tv 'fast' is not a number"
    expect_err "or auto (the time budget chooses it)"
    expect_rc 0 "$bin" run --suite "$dir/s.json" --tv 0.05 --report "$dir/fixed.json" --progress none
    expect_rc 0 "$bin" run --suite smoke --report "$dir/smoke.json" --progress none
    expect_rc 2 "$bin" run --suite smoke --tv auto --budget 4 --plan-from "$dir/smoke.json" --progress none
    expect_err "records no TV (it was planned at the suite's TV): drop --tv auto to replay it"
    expect_rc 2 "$bin" run --suite "$dir/s.json" --tv 0.1 --plan-from "$dir/fixed.json" --progress none
    expect_err "--tv 0.1: the plan of $dir/fixed.json was made at TV 0.05 (give that --tv, or none"
    # A --tv report replays and gates at its TV (draw_plan.tv).
    expect_rc 0 "$bin" gate "$dir/fixed.json"
    expect_rc 0 "$bin" run --suite "$dir/s.json" --plan-from "$dir/fixed.json" --report "$dir/again.json" --progress none
    [ "$(jqr .tv "$dir/again.json")" = "0.05" ] || fail "--plan-from of a --tv 0.05 report ran at $(jqr .tv "$dir/again.json")"
    ;;
  tv_auto_forged)
    # The gate of a --tv auto report: a forged report TV, a forged chosen TV (report and draw plan), a case moved
    # to another TV, and the new basis without the budget that chose it are refused (exit 2).
    suite "$dir/s.json" 2 2
    expect_rc 0 "$bin" run --suite "$dir/s.json" --tv auto --report "$dir/r.json" --progress none
    shown=$(jq -r '.tv' "$dir/r.json" | "$python" -c 'import sys; print("%g" % float(sys.stdin.read()))')
    edit "$dir/r.json" "$dir/same.json" ""
    expect_rc 0 "$bin" gate "$dir/same.json"
    edit "$dir/r.json" "$dir/f1.json" "r['tv'] = 1e-4"
    expect_rc 2 "$bin" gate "$dir/f1.json"
    expect_err "the report's tv 0.0001 is not the TV its draw_plan was made at"
    edit "$dir/r.json" "$dir/f2.json" "r['tv'] = r['draw_plan']['tv'] = 1e-4"
    expect_rc 2 "$bin" gate "$dir/f2.json"
    expect_err "plan.tv $shown is not the TV its report's draw_plan was made at (0.0001)"
    edit "$dir/r.json" "$dir/f3.json" "r['tv'] = r['draw_plan']['tv'] = 1e-4
for c in r['cases']: c['plan']['tv'] = 1e-4"
    expect_rc 2 "$bin" gate "$dir/f3.json"
    expect_err "draws below what suite tvauto plans for it, but plan.recorded_cut is not set"
    edit "$dir/r.json" "$dir/f4.json" "r['cases'][0]['plan']['tv'] = 1e-4"
    expect_rc 2 "$bin" gate "$dir/f4.json"
    expect_err "case c00: plan.tv 0.0001 is not the TV its report's draw_plan was made at ($shown)"
    edit "$dir/r.json" "$dir/f5.json" "del r['draw_plan']['tv_chosen_by']"
    expect_rc 2 "$bin" gate "$dir/f5.json"
    expect_err "basis \"budget: tv\" without \"tv_chosen_by\""
    ;;
  *) fail "unknown scenario $scenario" ;;
esac
echo "PASS ($scenario)"
