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


def old_sample(sampler, logits, t, k, p, m, seeds, offsets):
    """The per-row path before issue 41: each row checked, a fresh generator seeded with request_seed(seed, offset),
    one call of the engine's function a row."""
    x = logits.float()
    rows = x.shape[0]
    t, k, p, m = ta.es.sampling_params(rows, t, k, p, m)
    s, o = ta.es.u64_list(seeds, rows, "seeds"), ta.es.u64_list(offsets, rows, "offsets")
    out = torch.empty(rows, dtype=torch.long)
    for r in range(rows):
        gen = torch.Generator().manual_seed(ta.es.request_seed(s[r], o[r]))
        out[r] = sampler.sample_group(x[r:r + 1], t[r], k[r], p[r], gen)[0]
    return out


def u64_column(values):
    return torch.tensor([ta.es.as_int64(v) for v in values])


@pytest.mark.parametrize("k", [1, 3, -1])
def test_fast_path_gives_the_per_row_paths_tokens(sampler, k):
    """Issue 41: one request's parameters given once (scalars) and the offsets as the int64 column of their u64 bits
    (what engine_serve hands the engine) draw the tokens the per-row path drew at the same (seed, offset) rows."""
    logits = torch.randn(1, 300, generator=torch.Generator().manual_seed(9)).expand(40, 300)
    offsets = [2 ** 64 - 20 + i for i in range(20)] + list(range(20))
    fast = sampler.sample(logits, 0.9, k, 1.0, 0.0, 12345, u64_column(offsets))
    assert torch.equal(fast, old_sample(sampler, logits, 0.9, k, 1.0, 0.0, [12345] * 40, offsets))
    mixed_t = [0.5, 1.3] * 20
    assert torch.equal(sampler.sample(logits, mixed_t, k, 1.0, 0.0, u64_column([3] * 40), u64_column(offsets)),
                       old_sample(sampler, logits, mixed_t, k, 1.0, 0.0, [3] * 40, offsets))


@pytest.mark.parametrize("seeding", ["request", "window"])
def test_count_through_engine_serve_is_the_bincount_of_the_sampled_draws(sampler, seeding):
    """COUNT of the real engine function (engine_serve's device count: chunks of B rows, or windows) equals the
    bincount of the same draws sampled one by one through SAMPLE at offset + i."""
    import serve as trt_serve   # adapters/trtllm/serve.py (its window seeding's generator), on engine_serve
    serve = trt_serve.serve
    from samplecheck.tensors import BatchParams, make_backend
    window = trt_serve._Window(sampler)
    engine = serve.Engine(adapter=sampler, sample=window.sample if seeding == "window" else sampler.sample,
                          check=sampler.check, seeding=seeding, seed_window=window.seed)
    c = serve.Client(engine, batch=16)
    backend = make_backend("torch", "cpu")
    row = torch.randn(1, 200, generator=torch.Generator().manual_seed(2))
    t = (1.0, 20, 1.0, 0.0, 77, 30)
    histogram, invalid = c.count(row, BatchParams.of_rows(backend, [t], [0], 8), 45)
    one_by_one = [int(c.sample(row, BatchParams.of_rows(backend, [t[:5] + (30 + i,)], [0], 8))[0]) for i in range(45)]
    assert invalid == 0 and histogram.tolist() == torch.bincount(torch.tensor(one_by_one), minlength=200).tolist()
