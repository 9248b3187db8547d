#!/usr/bin/env python3
"""Writes the tampered-report corpus of tests/gate/tampered (and the seed corpus of fuzz/corpus/report_gate).

    make_corpus.py <samplecheck> <out dir> [<fuzz corpus dir>]

Runs the suite of this folder (suite.json: small rows, a batch of two) with the exact sampler (a passing report),
with a mutant (a failing one), capped by --max-draws, and as two shards; then edits those reports each way issue 33
found a gate could be fooled, and writes every edit beside expected.txt: "<file> <exit code of gate / merge>
<text the message must hold>". tests/tools/integrity_test.sh (scenario tampered_reports) gates every file and checks
both. The runs are deterministic (fixed seeds), so the files are reproducible; they are kept in the repository so
that a change of samplecheck that breaks them is seen.
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


def write(name, report, code, text):
    body = json.dumps(report, separators=(",", ":"), sort_keys=True) + "\n"
    for folder in filter(None, [out, fuzz]):
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

with open(os.path.join(out, "expected.txt"), "w") as f:
    f.write("# <file> <exit code> <text>: written by make_corpus.py; a JSON array is merged, an object gated\n")
    f.write("\n".join(expected) + "\n")
for name in os.listdir(tmp):
    os.remove(os.path.join(tmp, name))
os.rmdir(tmp)
