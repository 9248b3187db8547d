"""The ten lines of docs/python.md (ten_lines.py) under the smoke suite, from pytest: the correct sampler passes, and
the one that does not renormalize after top-k fails with the failing cases named in pytest's assertion message, and
why the first one failed.
--max-draws 300 keeps each run under a minute on a 2-core CPU (the many-tail row, V = 131072, costs a sort a draw on the CPU); the
planted bug is a support violation (tokens top-p must drop), caught at any draw count: 72 draws of V4-minp-order,
20 of V5-joint and 9 of combined land outside the kept set at this seed and cap."""
import os

import pytest

pytest.importorskip("torch")
import samplecheck  # noqa: E402
import ten_lines  # noqa: E402

MAX_DRAWS = 300


def test_the_ten_line_sampler_passes_smoke(samplecheck_bin):
    result = samplecheck.check(samplecheck.Sampler(ten_lines.sample, name="ten-lines", tensors="torch", device="cpu"),
                               suite="smoke", profile="vllm", max_draws=MAX_DRAWS)
    assert result.passed, result.summary()
    assert len(result.cases) == 38
    # A capped check says so: its power, and the cap.
    assert result.capped.startswith("lowest power ") and result.capped.endswith("--max-draws %d" % MAX_DRAWS)
    assert repr(result).startswith("CheckResult(PASS: 38 cases (capped: lowest power "), repr(result)


def test_without_renormalizing_it_fails_smoke_naming_the_cases_and_why(samplecheck_bin, pytester):
    """pytest itself, on a test file as a user writes it: `assert samplecheck.check(...).passed` fails, and the
    assertion message pytest prints names the failing cases and the first one's reason (its support violations)."""
    here = os.path.dirname(os.path.abspath(__file__))
    pytester.syspathinsert(here)
    pytester.makepyfile(test_user_sampler="""
        import samplecheck, ten_lines

        def test_smoke():
            sampler = samplecheck.Sampler(ten_lines.sample_without_renormalizing, tensors="torch", device="cpu")
            assert samplecheck.check(sampler, suite="smoke", profile="vllm", max_draws=%d).passed
    """ % MAX_DRAWS)
    outcome = pytester.runpytest_inprocess("-p", "no:cacheprovider")
    outcome.assert_outcomes(failed=1)
    text = outcome.stdout.str()
    assert ("where False = CheckResult(FAIL: 3 of 38 cases failed: combined, V4-minp-order, V5-joint \u2014 "
            "combined: 9 support violation(s); row " in text), text
