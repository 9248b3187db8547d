#!/usr/bin/env python3
"""Writes the tampered-report corpus of tests/gate/tampered (and the seed corpus of fuzz/corpus/report_gate).

    make_corpus.py <samplecheck> <out dir> [<fuzz corpus dir>]

Runs the suite of this folder (suite.json: small rows, a batch of two) with the exact sampler (a passing report),
with a mutant (a failing one), capped by --max-draws, and as two shards, and the replay suite of this folder
(replay-suite.json) with the reference and with three planted trainer faults; then edits those reports each way
issues 33 and 44 found a gate (or merge) could be fooled, and writes every edit beside expected.txt: "<file>[,<gate
option>...] <exit code of gate / merge> <text the message must hold>". tests/tools/integrity_test.sh (scenario
tampered_reports) gates every file and checks both; report_gate_fuzzer replays every file (the ctest
fuzz_replay.report_gate_tampered), and fuzz_replay.report_gate_generated writes the corpus again at test time and
gates that as expected.txt says. The runs are deterministic (fixed seeds), so the outcomes are reproducible; the files are kept in the repository so that
a change of samplecheck that breaks them is seen. The fuzz corpus gets the issue 33 entries and the untouched reports
only (seed=False below).
"""
import copy
import json
import os
import subprocess
import sys

bin_, out = os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[2])
fuzz = os.path.abspath(sys.argv[3]) if len(sys.argv) > 3 else None
here = os.path.dirname(os.path.abspath(__file__))
os.makedirs(out, exist_ok=True)


def run(*args, expect):
    # From this folder, so that every report names its suite as "suite.json" (the gate finds it from here).
    rc = subprocess.run([bin_, *args, "--progress", "none"], cwd=here, stdout=subprocess.DEVNULL).returncode
    assert rc == expect, (args, rc)


tmp = os.path.join(out, ".runs")
os.makedirs(tmp, exist_ok=True)
run("run", "--suite", "suite.json", "--report", f"{tmp}/pass.json", expect=0)
run("run", "--suite", "suite.json", "--sampler", "mutant:topk-plus-one", "--report", f"{tmp}/fail.json", expect=1)
# Fails by goodness of fit alone (p = 0 and 1e-177, no support violation): what a NaN p-value used to hide.
run("run", "--suite", "suite.json", "--sampler", "mutant:no-renorm-cdf", "--report", f"{tmp}/fail_gof.json", expect=1)
run("run", "--suite", "suite.json", "--max-draws", "500", "--allow-underpowered", "--report", f"{tmp}/capped.json",
    expect=0)
for i in range(2):
    run("run", "--suite", "suite.json", "--shard", f"{i}/2", "--report", f"{tmp}/shard{i}.json", expect=0)
load = lambda name: json.load(open(f"{tmp}/{name}.json"))
passing, failing, failing_gof, capped = load("pass"), load("fail"), load("fail_gof"), load("capped")
shards = [load("shard0"), load("shard1")]

expected = []


def write(name, report, code, text, seed=True):
    # seed: also a seed of the fuzz corpus (the issue 44 edits are not: fuzz_replay.report_gate_tampered replays the
    # fuzz target over this folder itself, and fuzz/corpus stays small).
    body = json.dumps(report, separators=(",", ":"), sort_keys=True) + "\n"
    for folder in filter(None, [out, fuzz if seed else None]):
        with open(os.path.join(folder, name + ".json"), "w") as f:
            f.write(body)
    expected.append(f"{name}.json {code} {text}")


def case(r, name):
    return next(c for c in r["cases"] if c["name"] == name)


def edited(base, fn):
    r = copy.deepcopy(base)
    fn(r)
    return r


# The untouched reports: the gate passes the first, fails the second (they anchor the corpus).
write("untouched-pass", passing, 0, "VERDICT: PASS")
write("untouched-fail", failing, 1, "VERDICT: FAIL")
write("untouched-fail-gof", failing_gof, 1, "VERDICT: FAIL")


def one_token(r):  # every draw of the head binning on one cell, the total kept
    b = case(r, "flat")["binnings"][0]
    b["observed"] = [sum(b["observed"])] + [0] * (len(b["observed"]) - 1)
write("counts-on-one-token", edited(passing, one_token), 2, "its observed and expected cells give")


def expected_follow(r):  # ... and the expectations edited to match them
    b = case(r, "flat")["binnings"][0]
    b["observed"] = [sum(b["observed"])] + [0] * (len(b["observed"]) - 1)
    b["expected"] = [1.0] + [0.0] * (len(b["expected"]) - 1)
write("expectations-follow-counts", edited(passing, expected_follow), 2, "binning")


def ten_times(r):
    for b in case(r, "topk")["binnings"]:
        b["observed"] = [10 * o for o in b["observed"]]
write("counts-ten-times-draws", edited(passing, ten_times), 2, "more than the case's")


def negative(r):
    case(r, "flat")["binnings"][0]["observed"][0] = -5
write("count-negative", edited(passing, negative), 2, "whole number >= 0")


def zero_draws(r):
    case(r, "topp")["draws"] = 0
write("draws-zero", edited(passing, zero_draws), 2, "more than the case's 0 draws")


def p_to(value):
    def fn(r):
        for c in r["cases"]:
            for b in c.get("binnings") or []:
                b["pearson_p"] = value
            if c.get("max_abs_z") and c["max_abs_z"]["token"] >= 0:
                c["max_abs_z"]["p_value"] = value
            c["p_value"] = value if isinstance(value, str) else min(1, value)
    return fn
write("failing-p-nan", edited(failing_gof, p_to("nan")), 2, "pearson_p is nan")
write("p-five", edited(passing, p_to(5)), 2, "pearson_p is 5")


def max_z_to_one(r):  # the most extreme token's p-value edited to 1 (its head cell's count says otherwise)
    for c in r["cases"]:
        if c.get("max_abs_z") and c["max_abs_z"]["token"] >= 0:
            c["max_abs_z"]["p_value"] = 1
write("failing-max-z-p-one", edited(failing_gof, max_z_to_one), 2, "single-token counts give at most")
write("p-inf", edited(passing, p_to("inf")), 2, "pearson_p is inf")


def cut(keep, planned=None):
    def fn(r):
        r["cases"] = r["cases"][:keep]
        r.pop("interrupted", None)
        if planned is not None:
            r["planned_cases"] = planned
    return fn
write("cut-to-3", edited(passing, cut(3)), 2, "cases are missing")
write("cut-to-3-planned-3", edited(passing, cut(3, 3)), 2, "plans")


def delete_failing(r):
    r["cases"] = [c for c in r["cases"] if c["status"] != "fail"]
    r["planned_cases"] = len(r["cases"])
    r["interrupted"] = False
write("failing-cases-deleted", edited(failing, delete_failing), 2, "plans")


def duplicate(r):
    r["cases"].append(copy.deepcopy(r["cases"][0]))
    r["planned_cases"] += 1
write("case-duplicated", edited(passing, duplicate), 2, "appears twice")


def violations_zero(r):
    for c in r["cases"]:
        if c["support"]["violations"] > 0:
            c["support"]["violations"] = 0
write("violations-zero-beside-tokens", edited(failing, violations_zero), 2, "support.violations = 0")


def floors_zero(r):
    r["evidence"]["min_judged_cases"] = 0
    r["evidence"]["min_draws"] = 0
write("evidence-floors-zero", edited(passing, floors_zero), 2, "at least 1")


def status_pass(r):
    for c in r["cases"]:
        c["status"], c["reason"] = "pass", ""
    r["verdict"] = "pass"
write("failing-statuses-set-to-pass", edited(failing, status_pass), 1, "VERDICT: FAIL")
write("failing-gof-statuses-set-to-pass", edited(failing_gof, status_pass), 1, "VERDICT: FAIL")


def cap_undeclared(r):
    r["max_draws_override"] = None
write("max-draws-undeclared", edited(capped, cap_undeclared), 2, "declares no --max-draws")
def not_allowed(r):  # the run's --allow-underpowered taken away: the gate's own default judges it
    r["evidence"]["allow_underpowered"] = False
write("underpowered", edited(capped, not_allowed), 1, "underpowered")


def row_edited(r):
    case(r, "topk")["params"]["top_k"] = 6
write("case-params-edited", edited(passing, row_edited), 2, "its parameters")


def skipped(r):
    c = case(r, "topk")
    c["status"] = "skipped"
    r["evidence"]["allow_skipped"] = True
write("judged-case-relabelled-skipped", edited(failing, skipped), 2, "skipped")

# merge: two shards, one holding a count of -5 (read as 2^64 - 5 before), one count past 2^64 over both.
def shard_negative(s):
    s["shard"]["evidence"][0]["histogram"][0][1] = -5
bad = [edited(shards[0], shard_negative), shards[1]]
write("merge-shard-count-negative", bad, 2, "whole number")
write("merge-untouched", shards, 0, "VERDICT: PASS")


def edit(name, report, code, text):  # an issue 44 edit: in this folder only
    write(name, report, code, text, seed=False)


# merge: an agreement check that fails in one shard (the exact sampler's agreement draws of case flat, in the shard
# holding its draw 0, edited to disagree at draw 123: what a sampler whose Sample and CountDraws differ writes) is
# judged a failure; the same shard with that evidence nulled must not hide it (issue 44), nor a histogram holding 5
# draws its pieces never made.
def flat_evidence(s):
    return next(e for e in s["shard"]["evidence"] if e["case"] == "flat")


def disagree(s):
    a = flat_evidence(s)["agreement"]
    sampled = dict(a["sampled"])
    first, second = sorted(sampled)[:2]
    sampled[first] -= 1
    sampled[second] = sampled.get(second, 0) + 1
    a["sampled"] = [[t, n] for t, n in sorted(sampled.items())]
    a["first_difference"], a["fast_token"], a["sampled_token"] = 123, first, second
holder = next(k for k, s in enumerate(shards)
              if any(e["case"] == "flat" and any(p[0] == 0 for p in e["pieces"]) for e in s["shard"]["evidence"]))


def with_shard(fn):
    return [edited(s, fn) if k == holder else s for k, s in enumerate(shards)]
failing_shards = with_shard(disagree)
write("merge-agreement-disagrees", failing_shards, 1, "through CountDraws and token")


def agreement_null(s):
    flat_evidence(s)["agreement"] = None
edit("merge-agreement-null", [edited(s, agreement_null) if k == holder else s for k, s in enumerate(failing_shards)],
      2, "has no agreement evidence for its first draws")


def five_more(s):
    flat_evidence(s)["histogram"][0][1] += 5
edit("merge-histogram-five-more", with_shard(five_more), 2, "(a shard's counts are the draws it made)")

# Replay reports (issue 44) of this folder's replay suite (replay-suite.json): the reference named as both sides (a
# pass that stores both sides' checks), and three trainers with a planted fault (samplecheck replay --list): no
# renormalization over the kept set (every kept logprob off), no label guard (a boundary label dropped to -inf: a
# silent drop), ties cut at k (tokens of the tie group missing beyond the numerics margin). Each edit below is one the
# replay checks' Recheck (checks_replay.cpp) or the aggregate's recomputation (report_check.cpp,
# CheckReplayAggregate) refuses; before them (dbbe2c0) the gate passed it.
def replay(name, *args, expect):
    run("replay", "--suite", "replay-suite.json", *args, "--report", f"{tmp}/{name}.json", expect=expect)
    return load(name)
r_pass = replay("replay-pass", "--engine", "exact", "--trainer", "exact", expect=0)
r_renorm = replay("replay-renorm", "--trainer", "fault:no-renormalization", expect=1)
r_guard = replay("replay-guard", "--trainer", "fault:no-label-guard", expect=1)
r_ties = replay("replay-ties", "--trainer", "fault:ties-cut-at-k", expect=1)
write("replay-untouched-pass", r_pass, 0, "VERDICT: PASS")
write("replay-untouched-fail-renorm", r_renorm, 1, "VERDICT: FAIL")
write("replay-untouched-fail-guard", r_guard, 1, "VERDICT: FAIL")
write("replay-untouched-fail-ties", r_ties, 1, "VERDICT: FAIL")
# A distance verdict on a report that stores no distance: refused, never the vacuous pass it was.
expected.append("replay-untouched-pass.json,--max-tv=0.01 2 a replay report's checks are exact")

rows = lambda r: [c for c in r["cases"] if c["name"] != "aggregate"]
aggregate = lambda r: next(c for c in r["cases"] if c["name"] == "aggregate")


def replay_status_pass(r):
    for c in r["cases"]:
        c["status"], c["reason"] = "pass", ""
    r["verdict"] = "pass"
edit("replay-failing-statuses-set-to-pass", edited(r_renorm, replay_status_pass), 1, "VERDICT: FAIL")


def replay_violations_zero(r):  # ... every trainer's violations 0 beside its logprob_violations, the bias hidden
    replay_status_pass(r)  # (every outcome the gate judged before dbbe2c0 then passes: exit 0 there)
    for c in rows(r):
        c["replay_trainer"]["violations"] = 0
    aggregate(r)["replay_aggregate"]["same_logits"]["mean_ratio"] = 1.0
edit("replay-violations-zero-beside-logprob-violations", edited(r_renorm, replay_violations_zero), 2,
      "replay_trainer.violations = 0 but nan + beyond_margin + logprob_violations = 0 + 0 + 8")


def replay_counts_zero(r):  # ... and its logprob_violations too: the worst token's numbers say otherwise
    replay_violations_zero(r)
    for c in rows(r):
        c["replay_trainer"]["logprob_violations"] = 0
edit("replay-logprob-violations-zeroed", edited(r_renorm, replay_counts_zero), 2, "but logprob_violations = 0")


def replay_nan_added(r):  # a trainer that answered NaNs, its violations left at 0
    rows(r)[0]["replay_trainer"]["nan"] = 3
edit("replay-trainer-nan-beside-no-violations", edited(r_pass, replay_nan_added), 2,
      "replay_trainer.violations = 0 but nan + beyond_margin + logprob_violations = 3 + 0 + 0")


def replay_nan_zeroed(r):  # the NaN count of that trainer zeroed again, its violations still 3
    rows(r)[0]["replay_trainer"]["violations"] = 3
edit("replay-trainer-nan-zeroed", edited(r_pass, replay_nan_zeroed), 2,
      "replay_trainer.violations = 3 but nan + beyond_margin + logprob_violations = 0 + 0 + 0")


def ties_row(r):
    return next(c for c in r["cases"] if c["name"] == "ties")


def missing_deleted(r):  # the trainer's missing tokens taken out of its list
    ties_row(r)["replay_trainer"]["missing"] = []
edit("replay-missing-tokens-deleted", edited(r_ties, missing_deleted), 2,
      "replay_trainer: beyond_margin = 4, numeric_drift = 0 but its missing and extra tokens list 0 beyond")


def beyond_zeroed(r):  # ... or its beyond-margin count zeroed with its violations
    t = ties_row(r)["replay_trainer"]
    t["beyond_margin"], t["violations"] = 0, t["violations"] - t["beyond_margin"]
edit("replay-beyond-margin-zeroed", edited(r_ties, beyond_zeroed), 2,
      "replay_trainer: beyond_margin = 0, numeric_drift = 0 but its missing and extra tokens list 4 beyond")


def trainer_kept(r):  # the trainer's kept set said to be the reference's
    t = ties_row(r)["replay_trainer"]
    t["kept"] = t["reference_kept"]
edit("replay-trainer-kept-edited", edited(r_ties, trainer_kept), 2, "replay_trainer.kept = 15 but the reference keeps")


def agreement_kept(r):  # the two sides' kept sets said to be the same, the causes zeroed
    a = ties_row(r)["replay_agreement"]
    a["trainer_kept"] = a["shared"] = a["engine_kept"]
    a["by_cause"]["beyond"], a["disagreements"] = 0, []
edit("replay-agreement-kept-sets-equal", edited(r_ties, agreement_kept), 2,
      "replay_agreement's trainer keeps 15 tokens, replay_trainer.kept says 11")


def cause_zeroed(r):  # the beyond-margin disagreements counted as none, the list kept
    ties_row(r)["replay_agreement"]["by_cause"]["beyond"] = 0
edit("replay-agreement-cause-zeroed", edited(r_ties, cause_zeroed), 2,
      "replay_agreement.by_cause.beyond = 0 but 4 disagreement(s) of that cause are listed")


def worst_edited(r):  # the worst logprob edited to the exact one
    t = rows(r)[0]["replay_trainer"]
    t["worst_logprob"] = t["worst_expected"]
edit("replay-worst-logprob-edited", edited(r_renorm, worst_edited), 2,
      "is off by 0 at tolerance")


def rollout_mean(r):  # a row's rollout mean ratio edited to 1, its sum left
    rows(r)[0]["replay_agreement"]["rollout"]["mean_ratio"] = 1.0
edit("replay-rollout-mean-edited", edited(r_renorm, rollout_mean), 2, "rollout.mean_ratio = 1 but ratio_sum / tokens")


def silent_drop_flipped(r):  # every silent drop relabelled as none (the rows' only failure: exit 0 before dbbe2c0)
    for c in rows(r):
        if c["replay_label"] and c["replay_label"]["silent_drop"]:
            c["replay_label"]["silent_drop"] = False
edit("replay-label-silent-drop-flipped", edited(r_guard, silent_drop_flipped), 2,
      "replay_label.silent_drop = false but the trainer logprob is \"-inf\"")


def guard_event_flipped(r):  # a label-guard event relabelled as none
    c = next(c for c in rows(r) if c["replay_label"] and c["replay_label"]["guard_event"])
    c["replay_label"]["guard_event"] = False
edit("replay-label-guard-event-flipped", edited(r_pass, guard_event_flipped), 2,
      "replay_label.guard_event = false but the label is outside the trainer's exact kept set")


def aggregate_failed_zero(r):  # the aggregate's failed rows dropped from its count
    a = aggregate(r)["replay_aggregate"]
    a["failed_rows"] = 0
edit("replay-aggregate-failed-rows-dropped", edited(r_renorm, aggregate_failed_zero), 2,
      "replay_aggregate.failed_rows = 0, its rows give 4")


def aggregate_rows_dropped(r):  # the failing rows dropped from the report, the aggregate left
    r["cases"] = [c for c in r["cases"] if c["status"] != "fail" or c["name"] == "aggregate"]
    r["planned_cases"] = len(r["cases"])
edit("replay-failing-rows-dropped", edited(r_renorm, aggregate_rows_dropped), 2,
     "2 row cases, replay suite tamper-replay plans 6")


def mean_half_bound_widened(r):  # the mean ratio 0.5, its bound widened to 0.6 in the report alone (a pass before)
    a = aggregate(r)
    a["replay_aggregate"]["same_logits"]["mean_ratio"] = 0.5
    a["replay_aggregate"]["max_ratio_bias"] = 0.6
edit("replay-mean-ratio-half-bound-widened", edited(r_pass, mean_half_bound_widened), 2,
      "the aggregate's max_ratio_bias 0.6 is not replay suite tamper-replay's 0.01, and the run's command line gives no")


def mean_one(r):  # the aggregate's mean ratio edited to 1 (the bias hidden), its rows left
    aggregate(r)["replay_aggregate"]["same_logits"]["mean_ratio"] = 1.0
edit("replay-aggregate-mean-ratio-edited", edited(r_renorm, mean_one), 2,
      "replay_aggregate.same_logits.mean_ratio = 1.0, its rows give")

with open(os.path.join(out, "expected.txt"), "w") as f:
    f.write("# <file>[,<gate option>...] <exit code> <text>: written by make_corpus.py; a JSON array is merged, an "
            "object gated\n")
    f.write("\n".join(expected) + "\n")
for name in os.listdir(tmp):
    os.remove(os.path.join(tmp, name))
os.rmdir(tmp)
