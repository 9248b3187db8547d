"""TensorRT-LLM's top_k_top_p_sampling_batch through adapters/trtllm/trtllm_adapter.py. Skipped unless
SAMPLECHECK_TRTLLM_SRC names a TensorRT-LLM tree. The top-p branch scatters with the int32 index that
``searchsorted(out_int32=True)`` returns, which torch < 2 refuses: those tests need torch 2.x."""
import math
import os
import re

import pytest
import torch

import trtllm_adapter as ta

SRC = os.environ.get(ta.ENV_VAR)
pytestmark = pytest.mark.skipif(not SRC, reason=f"{ta.ENV_VAR} is not set (no TensorRT-LLM source tree)")
needs_torch2 = pytest.mark.skipif(int(torch.__version__.split(".")[0]) < 2,
                                  reason="the top-p branch scatters with an int32 index (torch >= 2)")
ROW = torch.log(torch.tensor([[0.5, 0.3, 0.15, 0.05]]))


@pytest.fixture(scope="module")
def sampler():
    return ta.TrtllmVanilla(SRC)


def test_name_says_the_commit_and_function(sampler):
    assert re.fullmatch(r"trtllm@[0-9a-f]{8}(\+modified)?:(sampler/ops/vanilla|sampling_utils)\.py:"
                        r"top_k_top_p_sampling_batch@cpu", sampler.name)


def test_top_k_keeps_ties_and_renormalizes(sampler):
    assert torch.allclose(sampler.processed_probs(ROW, 1.0, 2, 1.0), torch.tensor([[0.625, 0.375, 0, 0]]), atol=1e-6)
    assert torch.allclose(sampler.processed_probs(torch.zeros(1, 4), 1.0, 2, 1.0), torch.full((1, 4), 0.25))


@needs_torch2
def test_top_p_keeps_through_the_first_cumsum_reaching_p(sampler):
    # Exclusive cumsum < p: with p = 0.8 token 1 (mass above 0.5) is kept, token 2 (0.8) is not.
    assert torch.allclose(sampler.processed_probs(ROW, 1.0, -1, 0.8), torch.tensor([[0.625, 0.375, 0, 0]]), atol=1e-6)
    # Equal logits (exact quarters), p = 0.5: the cumsum reaches 0.5 at the second token, so two are kept.
    assert (sampler.processed_probs(torch.zeros(1, 4), 1.0, -1, 0.5) > 0).sum().item() == 2


def test_greedy_rows_take_the_argmax(sampler):
    logits = torch.tensor([[0.1, 2.0, 1.0]] * 3)
    tokens = sampler.sample(logits, [0.0, 1.0, 1.0], [-1, 1, -1], [1.0, 1.0, 0.0], 0.0, [1, 2, 3], [0, 0, 0])
    assert tokens.tolist() == [1, 1, 1]


def test_draws_follow_the_top_k_distribution(sampler):
    n = 3000
    tokens = sampler.sample(ROW.repeat(n, 1), 1.0, 2, 1.0, 0.0, list(range(n)), [0] * n)
    assert set(tokens.tolist()) <= {0, 1}
    assert abs((tokens == 0).float().mean().item() - 0.625) < 5 * math.sqrt(0.625 * 0.375 / n)


def test_min_p_is_refused_on_the_vanilla_path(sampler):
    with pytest.raises(ValueError, match="no min-p"):
        sampler.sample(ROW, 1.0, -1, 1.0, 0.1, [1], [0])
