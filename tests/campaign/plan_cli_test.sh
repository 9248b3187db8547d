#!/usr/bin/env bash
# The recorded plan end to end (docs/campaigns.md, "The plan"): `run --plan-from` replays a report's plan and
# refuses another suite's (exit 2); a resumed run draws the plan its journal recorded, not one its own budget
# would make (a time budget planned on another machine, or the same machine busier); the gate checks a report against
# the plan it records; a forged plan never makes a pass this suite's own plan would not, and a plan file that is
# malformed, too large or not a regular file is refused by name (issue 44).
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
    grep -q "plan-unfingerprinted.json: .*\"draw_plan\": \"fingerprint\" is 0" "$dir/err.txt" ||
      fail "a draw_plan of fingerprint 0 was not refused"
    edit "$dir/case-edited.json" 'case["gauss-temp"]["draws"] += 1'
    expect_rc 2 "$bin" gate "$dir/case-edited.json"
    grep -q "case gauss-temp: 929477 draws, its report's draw_plan gives it 929476" "$dir/err.txt" ||
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
  forged_plan_is_cut)
    # Issue 44: a recorded plan is an input. The plan of a --max-draws 64 run, its caps raised to 2^20 and every
    # "why" set to "power" (the fingerprint covers neither), replays 64 draws a case: fewer than smoke plans, so the
    # cases are cut (plan.recorded_cut) and underpowered, in the run and in the gate; a report that hides the cut is
    # refused by the gate; with --max-draws the replay is judged at least as strictly as either alone.
    m=(--suite smoke --sampler mutant:topp-truncated-cdf --seed 1 --progress none)
    expect_rc 0 "$bin" run "${m[@]}" --max-draws 64 --allow-underpowered --report "$dir/capped.json"
    edit() {  # edit <in> <out> <python statements on r, the report>
      python3 -c 'import json, sys
r = json.load(open(sys.argv[1]))
exec(sys.argv[3]); json.dump(r, open(sys.argv[2], "w"))' "$1" "$2" "$3" || fail "edit $2"
    }
    edit "$dir/capped.json" "$dir/forged.json" '
for c in r["draw_plan"]["cases"]:
    c["max_draws"] = 1 << 20
    if c["why"] == "cap": c["why"] = "power"'
    edit "$dir/forged.json" "$dir/zero.json" 'r["draw_plan"]["fingerprint"] = 0'
    expect_rc 2 "$bin" run "${m[@]}" --plan-from "$dir/zero.json"
    grep -q "zero.json.*\"fingerprint\" is 0" "$dir/err.txt" || fail "a plan of fingerprint 0 was not refused by name"
    expect_rc 2 "$bin" gate "$dir/zero.json"
    grep -q "\"fingerprint\" is 0" "$dir/err.txt" || fail "the gate took a plan of fingerprint 0"
    expect_rc 1 "$bin" run "${m[@]}" --plan-from "$dir/forged.json" --report "$dir/f.json"
    grep -q "^  not a pass: underpowered: .* under a recorded plan that gives fewer draws than this suite plans" "$dir/out.txt" ||
      fail "the forged plan's cases are not underpowered"
    jq -e '[.cases[] | select(.tests > 0 and .draws < .plan.planned_draws) | .plan.recorded_cut] | length > 20 and all' \
      "$dir/f.json" >/dev/null || fail "the cut cases are not marked"
    jq -e '[.draw_plan.cases[] | select(.case | test("^(gauss|gen|topp|V5)")) | .why] | all(. == "cap")' "$dir/f.json" \
      >/dev/null || fail "the forged why was kept"
    expect_rc 1 "$bin" gate "$dir/f.json"
    grep -q "underpowered" "$dir/out.txt" || fail "the gate passes the forged plan's report"
    edit "$dir/f.json" "$dir/hidden.json" '
for c in r["cases"]: c["plan"].pop("recorded_cut", None)'
    expect_rc 2 "$bin" gate "$dir/hidden.json"
    grep -q "draws below what suite smoke plans for it, but plan.recorded_cut is not set" "$dir/err.txt" ||
      fail "the gate took a report that hides its cut"
    expect_rc 1 "$bin" run "${m[@]}" --plan-from "$dir/forged.json" --max-draws 100
    grep -q "^  not a pass: underpowered: " "$dir/out.txt" || fail "--plan-from with --max-draws is judged less strictly"
    expect_rc 1 "$bin" run "${m[@]}" --plan-from "$dir/capped.json" --max-draws 100 --report "$dir/g.json"
    grep -q "^  not a pass: underpowered: .* under --max-draws 64" "$dir/out.txt" || fail "the plan's own cap was dropped"
    expect_rc 1 "$bin" gate "$dir/g.json"
    ;;
  journal_plan_unfingerprinted)
    # A journal's plan edited to fingerprint 0 is refused by --resume (exit 2), naming the file and the field.
    python3 - "$dir/long.json" <<'PY'
import json, sys
cases = [{"name": "c%d" % i, "row": {"kind": "gaussian", "vocab": 2000, "sigma": 1 + i / 10}} for i in range(24)]
json.dump({"schema": "samplecheck-suite/1", "name": "long", "seed": 5, "tv": 1e-4, "max_draws": 16384,
           "min_draws": 1000, "budget_max_draws": 1 << 24, "cases": cases}, open(sys.argv[1], "w"))
PY
    run=("$bin" run --suite "$dir/long.json" --sampler exact --jobs 1)
    "${run[@]}" --budget 3600 --report "$dir/r.json" --progress none > /dev/null 2>&1 & pid=$!
    sleep 2; kill -INT $pid; wait $pid; rc=$?
    [ "$rc" -eq 130 ] || fail "the stopped run exited $rc, not 130"
    python3 -c 'import json, sys
p = json.load(open(sys.argv[1])); p["draw_plan"]["fingerprint"] = 0; json.dump(p, open(sys.argv[1], "w"))' \
      "$dir/r.json.journal.plan" || fail "edit the journal plan"
    expect_rc 2 "${run[@]}" --budget 3600 --report "$dir/r.json" --resume --progress none
    grep -q "cannot resume: .*r.json.journal.plan: \"draw_plan\": \"fingerprint\" is 0" "$dir/err.txt" ||
      fail "a journal plan of fingerprint 0 was not refused by name"
    ;;
  plan_file_refusals)
    # Duplicate cases, a plan too large, a plan that is not a regular file: refused (exit 2) by name; a plan of 10^5
    # entries is parsed (in linear time) and refused for its cases.
    s=(--suite smoke --sampler exact --seed 1 --progress none)
    expect_rc 0 "$bin" run "${s[@]}" --max-draws 64 --allow-underpowered --report "$dir/a.json"
    python3 -c 'import json, sys
r = json.load(open(sys.argv[1])); r["draw_plan"]["cases"] *= 1000; json.dump(r, open(sys.argv[2], "w"))' \
      "$dir/a.json" "$dir/dup.json" || fail "edit dup.json"
    expect_rc 2 "$bin" run "${s[@]}" --plan-from "$dir/dup.json"
    grep -q "dup.json.*\"draw_plan\": case gauss-full is listed twice" "$dir/err.txt" || fail "duplicates not named"
    plan() {  # plan <out> <python expression of the cases, of r the report's draw_plan> [reason length]
      python3 -c 'import json, sys
r = json.load(open(sys.argv[1]))["draw_plan"]; r["cases"] = eval(sys.argv[3]); r["reason"] = "x" * int(sys.argv[4])
json.dump({"schema": "samplecheck-plan/1", "draw_plan": r}, open(sys.argv[2], "w"))' \
        "$dir/a.json" "$1" "$2" "${3:-0}" || fail "plan $1"
    }
    plan "$dir/dup.plan" '[r["cases"][0]] * 100000'
    expect_rc 2 "$bin" run "${s[@]}" --plan-from "$dir/dup.plan"
    grep -q "dup.plan: \"draw_plan\": case gauss-full is listed twice" "$dir/err.txt" || fail "plan duplicates"
    plan "$dir/many.plan" '[dict(r["cases"][0], case="c%d" % i) for i in range(100000)]'
    expect_rc 2 "$bin" run "${s[@]}" --plan-from "$dir/many.plan"
    grep -q "it plans 100000 cases, this suite 38" "$dir/err.txt" || fail "a plan of 10^5 cases not judged"
    plan "$dir/big.plan" 'r["cases"]' $((65 << 20))
    expect_rc 2 "$bin" run "${s[@]}" --plan-from "$dir/big.plan"
    grep -q "a plan .*big.plan is larger than 67108864 bytes, the most samplecheck reads as a plan" "$dir/err.txt" ||
      fail "a plan over 64 MiB was not refused"
    rm -f "$dir/dup.plan" "$dir/many.plan" "$dir/big.plan"  # 90 MB of scratch the build tree need not keep
    mkfifo "$dir/fifo"
    expect_rc 2 timeout 10 "$bin" run "${s[@]}" --plan-from "$dir/fifo"
    grep -q "fifo is not a regular file" "$dir/err.txt" || fail "a FIFO was not refused"
    ;;
  *) fail "unknown scenario $scenario" ;;
esac
