"""prime-rl's apply_top_k_top_p (PR #2601) through adapters/prime_rl/prime_rl_adapter.py. Skipped unless
SAMPLECHECK_PRIME_RL_SRC names a prime-rl tree; the comparison with vLLM also needs SAMPLECHECK_VLLM_SRC."""
import os
import re
import sys
from pathlib import Path

import pytest
import torch

import prime_rl_adapter as pa

SRC = os.environ.get(pa.ENV_VAR)
pytestmark = pytest.mark.skipif(not SRC, reason=f"{pa.ENV_VAR} is not set (no prime-rl source tree)")
ROW = torch.log(torch.tensor([[0.5, 0.3, 0.15, 0.05]]))


@pytest.fixture(scope="module")
def replay():
    return pa.PrimeRlReplay(SRC)


def test_name_says_the_commit_and_function(replay):
    assert re.fullmatch(r"prime_rl@[0-9a-f]{8}(\+modified)?:trainer/rl/loss\.py:apply_top_k_top_p@cpu", replay.name)


def test_top_k_and_top_p_keep_the_hand_computed_sets(replay):
    expected = torch.tensor([[0.625, 0.375, 0.0, 0.0]])
    assert torch.allclose(replay.processed_logprobs(ROW, 1.0, 2, 1.0).exp(), expected, atol=1e-6)
    assert torch.allclose(replay.processed_logprobs(ROW, 1.0, -1, 0.7).exp(), expected, atol=1e-6)


def test_label_guard_restores_the_label_and_renormalizes_over_it(replay):
    before = replay.label_guard_events
    got = replay.processed_logprobs(ROW, 1.0, 1, 1.0, labels=[2]).exp()
    assert torch.allclose(got, torch.tensor([[0.5 / 0.65, 0.0, 0.15 / 0.65, 0.0]]), atol=1e-6)
    assert replay.label_guard_events == before + 1
    replay.processed_logprobs(ROW, 1.0, 1, 1.0, labels=[0])      # the label is kept: no event
    assert replay.label_guard_events == before + 1


def test_refuses_min_p_and_nonpositive_temperature(replay):
    with pytest.raises(ValueError, match="no min-p"):
        replay.processed_logprobs(ROW, 1.0, -1, 1.0, 0.1)
    with pytest.raises(ValueError, match="temperature must be > 0"):
        replay.processed_logprobs(ROW, 0.0, -1, 1.0)


@pytest.mark.skipif(not os.environ.get("SAMPLECHECK_VLLM_SRC"), reason="SAMPLECHECK_VLLM_SRC is not set")
def test_kept_sets_and_logprobs_equal_vllm_pytorch_path_on_fp32_rows(replay):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "vllm"))
    import vllm_adapter as va
    sys.path.pop(0)
    vllm = va.VllmV1(os.environ["SAMPLECHECK_VLLM_SRC"], path="pytorch")
    logits = torch.randn(64, 1000, generator=torch.Generator().manual_seed(7)) * 3
    for t, k, p in [(1.0, 50, 1.0), (0.7, -1, 0.9), (1.3, 200, 0.8), (1.0, 5, 0.5)]:
        ours = replay.processed_logprobs(logits, t, k, p)
        theirs = vllm.processed_logprobs(logits, t, k, p, 0.0)
        assert torch.equal(ours.isfinite(), theirs.isfinite()), (t, k, p)
        assert torch.equal(ours[ours.isfinite()], theirs[theirs.isfinite()]), (t, k, p)
