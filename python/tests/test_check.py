"""check() and the pytest fixture through the samplecheck program (skipped when it is not built): the verdict, the
failing cases with their reasons, the report paths, and the protocol edge cases as samplecheck reports them (a
callable that raises, a wrong dtype, a token out of range, a call past the deadline, a verifier without the VERIFY
bit). The tiny suite (tests/tiny.json) keeps each run to about a second."""
import json
import math
import os
import stat
import subprocess
import sys
import time

import pytest

from conftest import TINY_SUITE, philox_softmax_draw
import samplecheck


def exact_softmax(logits, params):
    """The vllm profile on the tiny suite's rows (top-k with T = 1, or a temperature; no ties), drawn by inverse CDF
    with the Philox uniform: a correct sampler in pure Python."""
    out = []
    for row, p in zip(logits, params):
        x = [v / p.temperature for v in row]
        if p.top_k > 0:
            kth = sorted(x, reverse=True)[p.top_k - 1]
            x = [v if v >= kth else -math.inf for v in x]
        out.append(philox_softmax_draw(x, p))
    return out


def py(fn, **kw):
    return samplecheck.Sampler(fn, tensors="python", **kw)


def run_tiny(sampler, **kw):
    return samplecheck.check(sampler, suite=TINY_SUITE, profile="vllm", **kw)


def test_a_correct_sampler_passes_with_its_reports(samplecheck_bin, tmp_path):
    result = run_tiny(py(exact_softmax, name="exact-softmax"), report_dir=str(tmp_path))
    assert result.passed and result.verdict == "pass" and bool(result), result.summary()
    assert [c.name for c in result.cases] == ["tiny-topk", "tiny-full", "tiny-batch/b0", "tiny-batch/b1"]
    assert result.failing == [] and result.exit_code == 0
    assert result.report == str(tmp_path / "report.json") and result.html == str(tmp_path / "report.html")
    with open(result.report) as f:
        assert json.load(f)["sampler"]["name"] == "process:exact-softmax"
    assert "VERDICT: PASS" in result.output and "verify" == result.command[1]


def test_a_capped_check_passes_a_correct_sampler_and_says_so_unless_full_power_is_asked(samplecheck_bin):
    capped = run_tiny("exact", max_draws=40)
    assert capped.passed, capped.summary()
    assert "--allow-underpowered" in capped.command
    assert capped.capped.startswith("lowest power ") and capped.capped.endswith("--max-draws 40"), capped.capped
    assert "PASS: 4 cases (capped: lowest power " in repr(capped)
    full = run_tiny("exact", max_draws=40, full_power=True)
    assert not full.passed and full.exit_code == 1 and "--allow-underpowered" not in full.command
    assert any(p.startswith("underpowered") for p in full.problems), full.problems
    uncapped = run_tiny("exact")
    assert uncapped.passed and uncapped.capped == "" and "capped" not in repr(uncapped)


def test_a_wrong_sampler_fails_naming_the_case_and_its_reason(samplecheck_bin):
    def always_zero(logits, params):
        return [0] * len(params)

    result = run_tiny(py(always_zero))
    assert not result.passed and result.verdict == "fail" and result.exit_code == 1
    names = [c.name for c in result.failing]
    assert "tiny-topk" in names and all(c.status == "fail" for c in result.failing)
    assert "cases failed: tiny-topk" in repr(result) and "tiny-topk: fail (" in result.summary()
    # The headline (repr: pytest's assertion line) says why the first failing case failed, on one line.
    first = result.failing[0]
    assert first.reason and (" \u2014 %s: %s" % (first.name, first.reason[:40])) in repr(result), repr(result)
    with pytest.raises(AssertionError, match="tiny-topk: fail"):
        result.assert_passed()


def test_the_headline_is_one_line_with_the_first_reason_cut(tmp_path):
    reason = "token 7 drawn 3x outside the kept set\n" + "x" * 400
    report = tmp_path / "report.json"
    report.write_text(json.dumps({"verdict": "fail", "counts": {"cases": 2}, "verdict_problems": ["1 case(s) failed"],
                                  "cases": [{"name": "a", "status": "pass"},
                                            {"name": "b", "status": "fail", "reason": reason}]}))
    result = samplecheck.CheckResult(["samplecheck", "verify"], 1, "", "", str(report), None)
    line = repr(result)
    assert line.startswith("CheckResult(FAIL: 1 of 2 cases failed: b \u2014 b: token 7 drawn 3x outside the kept "
                           "set xxx"), line
    assert "\n" not in line and "x" * 200 not in line and "...; report " in line, line
    assert reason in result.failing[0].reason and "x" * 400 in result.summary()


def _recording_program(tmp_path):
    """A stand-in samplecheck that records its arguments and refuses to run (exit 2)."""
    argv_file = tmp_path / "argv.json"
    return _executable(tmp_path / "samplecheck", "#!%s\nimport json, sys\njson.dump(sys.argv[1:], open(%r, 'w'))\n"
                       "sys.exit(2)\n" % (sys.executable, str(argv_file))), argv_file


def test_case_passes_one_case_option_per_name(tmp_path):
    program, argv_file = _recording_program(tmp_path)
    for case, expected in (("tiny-topk", ["--case", "tiny-topk"]),
                           (["tiny-topk", "tiny-full"], ["--case", "tiny-topk", "--case", "tiny-full"]),
                           (None, [])):
        result = samplecheck.check("exact", suite=TINY_SUITE, case=case, bin=program)
        argv = json.loads(argv_file.read_text())
        assert [a for i, a in enumerate(argv) if a == "--case" or argv[i - 1] == "--case"] == expected, argv
        assert result.verdict == "error" and result.exit_code == 2
    with pytest.raises(TypeError, match="case="):
        samplecheck.check("exact", case=["tiny-topk", 3], bin=program)


def _lists_case(program):
    done = subprocess.run([program, "verify", "--help"], stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    return "--case" in done.stdout.decode("utf-8", "replace")


def test_case_runs_only_the_named_cases(samplecheck_bin):
    if not _lists_case(samplecheck_bin):
        pytest.skip("this samplecheck has no --case yet (samplecheck verify --help does not list it)")
    result = run_tiny("exact", case=["tiny-topk", "tiny-full"])
    assert result.passed, result.summary()
    assert [c.name for c in result.cases] == ["tiny-topk", "tiny-full"]


def test_a_served_callable_records_the_python_call_not_the_relay(samplecheck_bin, tmp_path):
    result = run_tiny(py(exact_softmax, name="exact-softmax"), max_draws=40, report_dir=str(tmp_path))
    assert result.passed, result.summary()
    with open(result.report) as f:
        recorded = json.load(f)["command_line"]
    assert recorded.startswith("samplecheck.check(samplecheck.Sampler(sample=test_check.exact_softmax, "
                               "name='exact-softmax', tensors='python'), suite="), recorded
    assert "max_draws=40" in recorded and "test_check.py:" in recorded, recorded
    assert "_relay.py" not in recorded and "socket" not in recorded, recorded
    assert ("samplecheck verify --suite %s --sampler \"<samplecheck.Sampler(sample=test_check.exact_softmax, "
            "name='exact-softmax', tensors='python'), served from Python>\" " % TINY_SUITE) in recorded, recorded
    assert "--max-draws 40" in recorded, recorded
    with open(result.html, encoding="utf-8") as f:
        assert "test_check.exact_softmax" in f.read()
    # A spec string needs no relay: the report records samplecheck's own command line.
    plain = run_tiny("exact")
    with open(plain.report) as f:
        assert json.load(f)["command_line"].startswith("samplecheck verify --suite "), plain.report


def test_a_callable_that_raises_fails_its_cases_with_the_tracebacks_last_line(samplecheck_bin):
    def broken(logits, params):
        return {}["no such key"]

    result = run_tiny(py(broken))
    assert result.verdict == "fail"
    reasons = " ".join(c.reason for c in result.failing)
    assert "sample() raised KeyError: 'no such key' (at test_check.py:" in reasons, reasons


@pytest.mark.parametrize("result, expected", [
    (lambda n: [0.5] * n, "returned 0.5 for row 0; expected an int"),
    (lambda n: [8] * n, "returned token 8 for "),
])
def test_a_wrong_result_fails_its_cases_naming_it(samplecheck_bin, result, expected):
    checked = run_tiny(py(lambda logits, params: result(len(params))))
    assert checked.verdict == "fail"
    assert any(expected in c.reason for c in checked.failing), checked.summary()


def test_float_tokens_and_counts_fail_their_cases_never_truncated(samplecheck_bin):
    """np.float32 tokens t + 0.75 (int() made them t: the check passed) and a histogram of non-integral counts fail
    their cases through samplecheck, the reason naming the value; the same sampler with integer scalars passes."""
    np = pytest.importorskip("numpy")
    shifted = run_tiny(py(lambda logits, params: [np.float32(t + 0.75) for t in exact_softmax(logits, params)]))
    assert shifted.verdict == "fail" and shifted.exit_code == 1, shifted.summary()
    reasons = " ".join(c.reason for c in shifted.failing)
    assert "(numpy.float32) for row 0; expected an int (a token id, or -1" in reasons, reasons
    assert len(shifted.failing) == len(shifted.cases)

    def halves(logits, params, draws):
        return [draws - 0.5, 0.5] + [0] * (len(logits[0]) - 2), 0

    counted = run_tiny(samplecheck.Sampler(exact_softmax, count=halves, tensors="python"))
    assert counted.verdict == "fail" and counted.exit_code == 1, counted.summary()
    reasons = " ".join(c.reason for c in counted.failing)
    assert "as the count of token 0; expected an int (a count: an integer, never a float" in reasons, reasons
    integers = run_tiny(py(lambda logits, params: [np.int64(t) for t in exact_softmax(logits, params)]))
    assert integers.passed, integers.summary()


def test_a_call_past_the_deadline_fails_its_case_and_samplecheck_goes_on(samplecheck_bin):
    """SAMPLECHECK_PROCESS_TIMEOUT_S = 1: a sampler that sleeps 3 s on its first call is killed (its relay process)
    and the case fails with the deadline named; later calls fail at once (the process is gone); check() returns."""
    calls = []

    def slow(logits, params):
        calls.append(len(params))
        if len(calls) == 1:
            time.sleep(3)
        return exact_softmax(logits, params)

    result = run_tiny(py(slow), timeout_s=1)
    assert result.verdict == "fail"
    assert any("did not answer in time" in c.reason for c in result.failing), result.summary()


def test_a_verifier_without_the_verify_bit_is_refused_at_start(samplecheck_bin):
    result = samplecheck.check(verifier=py(exact_softmax))
    assert result.verdict == "error" and result.exit_code == 2 and not result.passed
    assert "VERIFY capability bit (8)" in result.error, result.error
    assert "ERROR (exit 2)" in repr(result)


def test_a_spec_string_is_passed_as_it_is(samplecheck_bin):
    result = samplecheck.check("exact", suite=TINY_SUITE)
    assert result.passed and "--sampler" in result.command and "exact" in result.command


def test_the_fixture_fails_the_test_naming_the_failing_case(samplecheck_check):
    with pytest.raises(pytest.fail.Exception, match="tiny-topk: fail"):
        samplecheck_check(py(lambda x, p: [0] * len(p)), suite=TINY_SUITE, profile="vllm")
    assert samplecheck_check(py(exact_softmax), suite=TINY_SUITE, profile="vllm").passed


def _executable(path, text="#!/bin/sh\nexit 0\n"):
    path.write_text(text)
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return str(path)


def test_the_program_is_found_by_argument_variable_path_or_refused_by_name(tmp_path, monkeypatch):
    fake = _executable(tmp_path / "samplecheck")
    monkeypatch.delenv("SAMPLECHECK_BIN", raising=False)
    assert samplecheck.find_program(bin=fake) == fake
    monkeypatch.setenv("SAMPLECHECK_BIN", fake)
    assert samplecheck.find_program() == fake
    monkeypatch.setenv("SAMPLECHECK_BIN", str(tmp_path / "missing"))
    with pytest.raises(samplecheck.SamplecheckNotFound, match="SAMPLECHECK_BIN.*missing is not an executable"):
        samplecheck.find_program()
    monkeypatch.delenv("SAMPLECHECK_BIN")
    other = tmp_path / "on_path"
    other.mkdir()
    on_path = _executable(other / "samplecheck")
    monkeypatch.setenv("PATH", str(other))
    assert samplecheck.find_program() in (on_path, os.path.join(os.path.dirname(samplecheck.__file__), "bin",
                                                                "samplecheck"))
