#!/usr/bin/env bash
# The recorded plan end to end (docs/campaigns.md, "The plan"): `run --plan-from` replays a report's plan and
# refuses another suite's (exit 2); a resumed run draws the plan its journal recorded, not one its own budget
# would make (a time budget planned on another machine, or the same machine busier); the gate checks a report against
# the plan it records.
# Usage: plan_cli_test.sh <samplecheck> <scenario> <scratch dir>
set -uo pipefail
bin=$1 scenario=$2 dir=$3
rm -rf "$dir"; mkdir -p "$dir"
source "$(dirname "${BASH_SOURCE[0]}")/../lib/expect.sh"
draws() { jq -c '[.cases[] | [.name, .draws, .p_value]]' "$1"; }

case "$scenario" in
  plan_from_replays)
    expect_rc 0 "$bin" run --suite smoke --sampler exact --seed 1 --budget 3600 --report "$dir/a.json" --progress none
    jq -e '.draw_plan.basis == "budget: full power" and (.draw_plan.cases | length) == 38' "$dir/a.json" >/dev/null ||
      fail "the report records no full-power plan"
    expect_rc 0 "$bin" run --suite smoke --sampler exact --seed 1 --plan-from "$dir/a.json" --report "$dir/b.json" \
      --progress none
    [ "$(draws "$dir/a.json")" = "$(draws "$dir/b.json")" ] || fail "the replayed plan drew differently"
    jq -e '.draw_plan.basis == "recorded"' "$dir/b.json" >/dev/null || fail "the replay does not say it replayed"
    expect_rc 2 "$bin" run --suite standard --sampler exact --seed 1 --plan-from "$dir/a.json" --progress none
    grep -q "is not this campaign's" "$dir/err.txt" || fail "no reason for the refusal"
    expect_rc 2 "$bin" run --suite smoke --sampler exact --seed 2 --plan-from "$dir/a.json" --progress none
    expect_rc 2 "$bin" run --suite smoke --sampler exact --plan-from "$dir/none.json" --progress none
    # The report it replays is an input: writing the replay over it would destroy it (issue 33's outputs rule).
    expect_rc 2 "$bin" run --suite smoke --sampler exact --seed 1 --plan-from "$dir/a.json" --report "$dir/a.json" \
      --progress none
    grep -q "is --plan-from" "$dir/err.txt" || fail "the replay over its own plan was not refused"
    ;;
  resume_follows_the_journal)
    # 24 cases of up to 2^24 draws each when the budget gives full power (each case's cap is 2^14). The first run
    # has a budget of an hour and is stopped after 2 s; the resumed one is given a budget of a millisecond, which
    # alone would plan the caps: it must draw the journal's plan, and equal an uninterrupted run.
    python3 - "$dir/long.json" <<'PY'
import json, sys
cases = [{"name": "c%d" % i, "row": {"kind": "gaussian", "vocab": 2000, "sigma": 1 + i / 10}} for i in range(24)]
json.dump({"schema": "samplecheck-suite/1", "name": "long", "seed": 5, "tv": 1e-4, "max_draws": 16384,
           "min_draws": 1000, "budget_max_draws": 1 << 24, "cases": cases}, open(sys.argv[1], "w"))
PY
    run=("$bin" run --suite "$dir/long.json" --sampler exact --jobs 1)
    expect_rc 0 "${run[@]}" --budget 3600 --report "$dir/whole.json" --progress none
    "${run[@]}" --budget 3600 --report "$dir/r.json" --progress none > /dev/null 2>&1 & pid=$!
    sleep 2; kill -INT $pid; wait $pid; rc=$?
    [ "$rc" -eq 130 ] || fail "the stopped run exited $rc, not 130"
    [ -f "$dir/r.json.journal.plan" ] || fail "the journal keeps no plan"
    expect_rc 0 "${run[@]}" --budget 0.001 --report "$dir/r.json" --resume --progress none
    [ "$(draws "$dir/r.json")" = "$(draws "$dir/whole.json")" ] || fail "the resumed run drew another plan"
    [ ! -e "$dir/r.json.journal.plan" ] || fail "a finished run left its plan file"
    ;;
  gate_replays_the_recorded_plan)
    # The gate checks a report against the plan it records (a time budget's draws depend on the throughput measured
    # then, so the suite planned again would give other draws): a full-power budgeted report gates as it ran; a
    # case's draws other than its draw_plan's, or a draw_plan that is not the suite's at its draws, is refused
    # (exit 2). The report is edited with python, whose integers keep the 64-bit fingerprint (jq 1.6 rounds it).
    expect_rc 0 "$bin" run --suite smoke --sampler exact --seed 1 --budget 3600 --report "$dir/a.json" --progress none
    jq -e '.draw_plan.basis == "budget: full power"' "$dir/a.json" >/dev/null || fail "no full-power plan recorded"
    expect_rc 0 "$bin" gate "$dir/a.json"
    edit() {  # edit <out> <python statement on r, the report>
      python3 -c 'import json, sys
r = json.load(open(sys.argv[1])); plan = {c["case"]: c for c in r["draw_plan"]["cases"]}
case = {c["name"]: c for c in r["cases"]}
exec(sys.argv[3]); json.dump(r, open(sys.argv[2], "w"))' "$dir/a.json" "$1" "$2" || fail "edit $1"
    }
    edit "$dir/plan-edited.json" 'plan["gauss-temp"]["draws"] += 1'
    expect_rc 2 "$bin" gate "$dir/plan-edited.json"
    grep -q "is not this campaign's" "$dir/err.txt" || fail "a draw_plan of other draws was not named"
    edit "$dir/plan-unfingerprinted.json" 'r["draw_plan"]["fingerprint"] = 0; plan["gauss-temp"]["draws"] += 1'
    expect_rc 2 "$bin" gate "$dir/plan-unfingerprinted.json"
    grep -q "case gauss-temp: 929476 draws, its report's draw_plan gives it 929477" "$dir/err.txt" ||
      fail "a case's draws other than its plan's were not named"
    # A replay of a plan capped by --max-draws is as capped as the run that recorded it: it says so
    # (max_draws_override), is underpowered unless allowed, and gates as it ran (exit 1, not 2).
    expect_rc 0 "$bin" run --suite smoke --sampler exact --seed 1 --max-draws 1000 --allow-underpowered \
      --report "$dir/c.json" --progress none
    expect_rc 1 "$bin" run --suite smoke --sampler exact --seed 1 --plan-from "$dir/c.json" --report "$dir/d.json" \
      --progress none
    grep -q "underpowered" "$dir/out.txt" || fail "the capped replay is not said to be underpowered"
    jq -e '.max_draws_override == 1000 and .draw_plan.basis == "recorded"' "$dir/d.json" >/dev/null ||
      fail "the capped replay does not state its cap"
    expect_rc 1 "$bin" gate "$dir/d.json"
    expect_rc 0 "$bin" gate "$dir/d.json" --allow-underpowered
    ;;
  *) fail "unknown scenario $scenario" ;;
esac
