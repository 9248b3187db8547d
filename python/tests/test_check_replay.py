"""check_replay() and the samplecheck_replay fixture through `samplecheck replay` on replay-smoke (skipped when the
program is not built, or without torch): the ten lines as a trainer (ten_lines.replay, with the label guard) pass;
the same replay without the guard, or served without the rows' labels, fails replay-label on the rows whose boundary
label its kept set drops, and the failure names the row and why (a silent drop: trainer logprob -inf, importance
ratio 0). Each run is a few seconds (74 rows at V <= 4096)."""
import json

import pytest

pytest.importorskip("torch")
import samplecheck  # noqa: E402
import ten_lines  # noqa: E402

SILENT_DROP = "has trainer logprob -inf with no guard event: importance ratio 0"


def trainer(fn, **kw):
    return samplecheck.Sampler(logprobs=fn, labels=True, name=fn.__name__, **kw)


def test_a_trainer_with_its_label_guard_passes_replay_smoke(samplecheck_bin, tmp_path):
    result = samplecheck.check_replay(trainer=trainer(ten_lines.replay), suite="replay-smoke",
                                      report_dir=str(tmp_path))
    assert result.passed and result.verdict == "pass", result.summary()
    assert len(result.cases) == 75 and result.failing == []
    assert result.report == str(tmp_path / "report.json") and result.html == str(tmp_path / "report.html")
    with open(result.report) as f:
        report = json.load(f)
    assert report["sampler"]["name"] == "engine reference, trainer process:replay", report["sampler"]
    assert "label guard events" in result.output and "silent drops 0" in result.output, result.output
    assert repr(result).startswith("CheckResult(PASS: 75 cases; report "), repr(result)


@pytest.mark.parametrize("side", [
    trainer(ten_lines.replay_without_label_guard),  # takes the labels, restores none
    ten_lines.replay,                               # a plain callable: served without labels, so it cannot guard
])
def test_a_trainer_without_the_label_guard_fails_naming_the_silent_drops(samplecheck_bin, side):
    result = samplecheck.check_replay(trainer=side, suite="replay-smoke")
    assert result.verdict == "fail" and result.exit_code == 1 and not result
    assert len(result.failing) == 10 and all(c.status == "fail" for c in result.failing), result.summary()
    assert all(SILENT_DROP in c.reason for c in result.failing), result.summary()
    first = result.failing[0]
    assert ("FAIL: 10 of 75 cases failed: %s" % first.name) in repr(result)
    assert (" \u2014 %s: label " % first.name) in repr(result) and "\n" not in repr(result), repr(result)
    assert "silent drops 10" in result.output, result.output


def test_spec_strings_are_replay_sources_as_they_are(samplecheck_bin):
    planted = samplecheck.check_replay(trainer="fault:no-label-guard", suite="replay-smoke")
    assert planted.verdict == "fail" and "--trainer" in planted.command and "fault:no-label-guard" in planted.command
    assert all(SILENT_DROP in c.reason for c in planted.failing), planted.summary()
    # The ten lines as the engine against the reference trainer.
    engine = samplecheck.check_replay(engine=ten_lines.replay, trainer="exact", suite="replay-smoke")
    assert engine.passed, engine.summary()


def test_a_side_without_logprobs_is_refused_naming_it(samplecheck_bin):
    with pytest.raises(ValueError, match=r"engine=samplecheck.Sampler\(sample=ten_lines.sample\) has no logprobs"):
        samplecheck.check_replay(engine=samplecheck.Sampler(ten_lines.sample))


def test_the_fixture_fails_the_test_naming_the_row(samplecheck_bin, samplecheck_replay):
    with pytest.raises(pytest.fail.Exception, match="fail \\(label .* " + SILENT_DROP):
        samplecheck_replay(trainer=trainer(ten_lines.replay_without_label_guard))
    assert samplecheck_replay(trainer=trainer(ten_lines.replay)).passed
