"""pytest plugin (entry point pytest11 when installed; else `-p samplecheck.pytest_plugin` or
`pytest_plugins = ["samplecheck.pytest_plugin"]` in a conftest.py).

    def test_my_sampler(samplecheck_check):
        samplecheck_check(my_sample, suite="smoke", profile="vllm")     # fails naming every failing case

`samplecheck_check(...)` takes check()'s arguments, writes the reports under the test's tmp_path, fails the test
with CheckResult.summary() (each failing case and its reason, the report paths) unless the verdict is pass, and
returns the CheckResult. Options: --samplecheck-bin PATH (else $SAMPLECHECK_BIN, PATH, ...), --samplecheck-max-draws
N (a cap for every check of the session, e.g. a quick CI run). A plain `assert samplecheck.check(...).passed` also
names the failing cases: pytest shows the CheckResult's repr.
"""
import pytest

from .checking import check


def pytest_addoption(parser):
    group = parser.getgroup("samplecheck")
    group.addoption("--samplecheck-bin", default=None, help="the samplecheck program (default: $SAMPLECHECK_BIN, "
                    "next to the package, PATH, the clone's build trees)")
    group.addoption("--samplecheck-max-draws", type=int, default=None,
                    help="cap the draws of every case of every samplecheck check (--max-draws)")


@pytest.fixture
def samplecheck_check(request, tmp_path):
    """check() that fails the test with the failing cases named unless the verdict is pass."""
    config = request.config
    counter = [0]

    def run(sampler=None, suite=None, profile=None, **kwargs):
        counter[0] += 1
        kwargs.setdefault("report_dir", str(tmp_path / ("samplecheck-%d" % counter[0])))
        kwargs.setdefault("bin", config.getoption("--samplecheck-bin"))
        cap = config.getoption("--samplecheck-max-draws")
        if cap is not None and kwargs.get("max_draws") is None:
            kwargs["max_draws"] = cap
        result = check(sampler, suite, profile, **kwargs)
        if not result.passed:
            pytest.fail(result.summary(), pytrace=False)
        return result

    return run
