"""pytest plugin (entry point pytest11 when installed; else `-p samplecheck.pytest_plugin` or
`pytest_plugins = ["samplecheck.pytest_plugin"]` in a conftest.py).

    def test_my_sampler(samplecheck_check):
        samplecheck_check(my_sample, suite="smoke", profile="vllm")     # fails naming every failing case

    def test_my_trainer(samplecheck_replay):
        samplecheck_replay(trainer=samplecheck.Sampler(logprobs=my_replay, labels=True), suite="replay-smoke")

`samplecheck_check(...)` takes check()'s arguments, `samplecheck_replay(...)` check_replay()'s; each writes the
reports under the test's tmp_path, fails the test with CheckResult.summary() (each failing case and its reason, the
report paths) unless the verdict is pass, and returns the CheckResult. Options: --samplecheck-bin PATH (else
$SAMPLECHECK_BIN, PATH, ...), --samplecheck-max-draws N (a cap for every check() of the session, e.g. a quick CI
run). A plain `assert samplecheck.check(...).passed` also
names the failing cases: pytest shows the CheckResult's repr.
"""
import pytest

from .checking import check, check_replay


def pytest_addoption(parser):
    group = parser.getgroup("samplecheck")
    group.addoption("--samplecheck-bin", default=None, help="the samplecheck program (default: $SAMPLECHECK_BIN, "
                    "next to the package, PATH, the clone's build trees)")
    group.addoption("--samplecheck-max-draws", type=int, default=None,
                    help="cap the draws of every case of every samplecheck check (--max-draws)")


def _reports_under(tmp_path, counter, kwargs, config):
    counter[0] += 1
    kwargs.setdefault("report_dir", str(tmp_path / ("samplecheck-%d" % counter[0])))
    kwargs.setdefault("bin", config.getoption("--samplecheck-bin"))
    return kwargs


def _passed_or_fail(result):
    if not result.passed:
        pytest.fail(result.summary(), pytrace=False)
    return result


@pytest.fixture
def samplecheck_check(request, tmp_path):
    """check() that fails the test with the failing cases named unless the verdict is pass."""
    config = request.config
    counter = [0]

    def run(sampler=None, suite=None, profile=None, **kwargs):
        _reports_under(tmp_path, counter, kwargs, config)
        cap = config.getoption("--samplecheck-max-draws")
        if cap is not None and kwargs.get("max_draws") is None:
            kwargs["max_draws"] = cap
        return _passed_or_fail(check(sampler, suite, profile, **kwargs))

    return run


@pytest.fixture
def samplecheck_replay(request, tmp_path):
    """check_replay() that fails the test with the failing rows named unless the verdict is pass."""
    config = request.config
    counter = [0]

    def run(engine=None, trainer=None, suite="replay-smoke", profile=None, **kwargs):
        _reports_under(tmp_path, counter, kwargs, config)
        return _passed_or_fail(check_replay(engine, trainer, suite, profile, **kwargs))

    return run
