#!/usr/bin/env bash
# The recorded plan end to end (docs/campaigns.md, "The plan"): `run --plan-from` replays a report's plan and
# refuses another suite's (exit 2); a resumed run draws the plan its journal recorded, not one its own budget
# would make (a time budget planned on another machine, or the same machine busier).
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
  *) fail "unknown scenario $scenario" ;;
esac
