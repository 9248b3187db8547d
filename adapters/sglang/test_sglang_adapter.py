"""SGLang's torch-native sampler through adapters/sglang/sglang_adapter.py. Skipped unless SAMPLECHECK_SGLANG_SRC
names an SGLang tree; the seeded tests also need triton and a CUDA device.

Kept sets are read from draws at fixed seeds (deterministic): a kept token of probability >= 2/9 is missed by 3000
draws with probability < (7/9)^3000 ~ 1e-327; frequency bounds are 5 binomial standard deviations."""
import math
import os
import re
from collections import Counter

import pytest
import torch

import sglang_adapter as sa

SRC = os.environ.get(sa.ENV_VAR)
pytestmark = pytest.mark.skipif(not SRC, reason=f"{sa.ENV_VAR} is not set (no SGLang source tree)")
N = 3000


@pytest.fixture(scope="module")
def sampler():
    return sa.SglangTorch(SRC)


def draws(sampler, row, t=1.0, k=-1, p=1.0, m=0.0, n=N):
    return Counter(sampler.sample(row.repeat(n, 1), t, k, p, m, list(range(n)), [0] * n).tolist())


def test_name_says_engine_commit_and_mode(sampler):
    assert re.fullmatch(r"sglang@[0-9a-f]{8}(\+modified)?:srt/layers/sampler\.py:pytorch:unseeded,per-row@cpu",
                        sampler.name)


def test_top_p_keeps_a_token_whose_mass_above_equals_top_p(sampler):
    # Four equal logits (exact quarters): the third token has mass above exactly 0.5; SGLang's `>` keeps it.
    assert len(draws(sampler, torch.zeros(1, 4), p=0.5)) == 3


def test_top_k_keeps_exactly_k_of_a_tie_group(sampler):
    assert len(draws(sampler, torch.zeros(1, 4), k=2)) == 2


def test_top_p_and_min_p_see_the_full_distribution(sampler):
    # V4: top-p on the full p keeps {0, 1, 2} (mass above token 2 is 0.7 <= 0.75); min-p 0.3 * 0.4 = 0.12 keeps 0.2.
    counts = draws(sampler, torch.log(torch.tensor([[0.4, 0.3, 0.2, 0.1]])), p=0.75, m=0.3)
    assert set(counts) == {0, 1, 2}
    share = counts[0] / N
    assert abs(share - 4 / 9) < 5 * math.sqrt((4 / 9) * (5 / 9) / N)


def test_temperature_below_1e_6_is_greedy(sampler):
    logits = torch.tensor([[0.1, 2.0, 1.0], [3.0, 0.0, 1.0]])
    assert sampler.sample(logits, 1e-7, -1, 1.0, 0.0, [1, 2], [0, 0]).tolist() == [1, 0]


def test_per_row_draws_are_deterministic(sampler):
    logits = torch.randn(4, 40, generator=torch.Generator().manual_seed(1))
    a = sampler.sample(logits, 0.7, 10, 0.9, 0.0, [5, 6, 7, 8], [0, 1, 2, 3])
    b = sampler.sample(logits, 0.7, 10, 0.9, 0.0, [5, 6, 7, 8], [0, 1, 2, 3])
    assert torch.equal(a, b)


def test_sampling_params_rejections_are_value_errors(sampler):
    for kwargs, text in [({"k": 0}, "top_k must be -1 (disable) or at least 1"),
                         ({"p": 0.0}, "top_p must be in (0, 1]"), ({"m": -0.1}, "min_p must be in [0, 1]")]:
        with pytest.raises(ValueError, match=re.escape(text)):
            draws(sampler, torch.zeros(1, 4), n=1, **kwargs)


@pytest.mark.skipif(not (torch.cuda.is_available() and sa.es.triton_importable()), reason="needs triton and CUDA")
def test_seeded_draws_depend_on_seed_and_position_only():
    seeded = sa.SglangTorch(SRC, device="cuda", seeded=True)
    logits = torch.randn(5, 1000, generator=torch.Generator().manual_seed(2))
    seeds, offsets = [1, 2, 3, 4, 5], [7, 8, 9, 10, 11]
    whole = seeded.sample(logits, 1.0, 20, 0.9, 0.0, seeds, offsets)
    alone = torch.cat([seeded.sample(logits[i:i + 1], 1.0, 20, 0.9, 0.0, seeds[i], offsets[i]) for i in range(5)])
    assert torch.equal(whole.cpu(), alone.cpu())


def test_check_takes_no_seed_in_either_mode(sampler):
    """engine_serve calls check(t, k, p, m, vocab) before every draw; seeded, it raised TypeError on the seeds it is
    not given (every seeded COUNT of the GPU run of 18abd63 failed so). Without triton the seeded adapter cannot be
    built: its check is the same method on a seeded instance's state."""
    sampler.check(0.7, 10, 0.9, 0.1, 100)
    seeded = object.__new__(sa.SglangTorch)
    seeded.__dict__.update(sampler.__dict__, seeded=True)
    seeded.check(0.7, 10, 0.9, 0.0, 100)
    with pytest.raises(ValueError, match=re.escape("top_p must be in (0, 1]")):
        seeded.check(0.7, 10, 0.0, 0.0, 100)


def test_seeded_refuses_min_p_as_the_engine_asserts(sampler):
    """Seeded, a batch with a min_p > 0 row trips SGLang's own assert (sampler.py:476-479): 30 of the 38 seeded
    smoke cases of the GPU run of 2026-11-27 failed on it or on the import below. The adapter says so before the
    draw, as a ValueError naming the row (an invalid argument for samplecheck), like TensorRT-LLM's vanilla path."""
    seeded = object.__new__(sa.SglangTorch)
    seeded.__dict__.update(sampler.__dict__, seeded=True)
    with pytest.raises(ValueError, match=r"row 0: SGLang's seeded path has no min-p \(got min_p = 0.1\).*476-479"):
        seeded.check(0.7, 10, 0.9, 0.1, 100)
    sampler.check(0.7, 10, 0.9, 0.1, 100)          # unseeded: min-p is drawn (top_k_top_p_min_p_..., no seed)
    seeded.check(0.0, -1, 1.0, 0.1, 100)           # greedy (T = 0, top_k 1): torch.argmax, no assert (111-113)
    seeded.check(0.7, 1, 0.9, 0.1, 100)
    with pytest.raises(ValueError, match=r"row 0: SGLang's seeded path has no min-p"):   # need_min_p is batch-wide
        seeded._params(2, 100, [0.0, 0.7], [-1, 10], [1.0, 0.9], [0.1, 0.0])


def test_the_engines_modules_import_by_name_while_it_draws(monkeypatch):
    """torch.compile (torch 2.x) traces SGLang's compiled multinomial_with_seed at its first call and imports the
    module of every function it inlines by name (murmur_hash32: sglang.srt.layers.utils.hash): outside the load the
    engine's modules were gone, and every seeded draw of the GPU run of 2026-11-27 raised "No module named
    'sglang.srt'". Here the filter function the draw reaches does that import itself (CPU, no triton needed)."""
    import importlib
    fresh = sa.SglangTorch(SRC)
    mod = fresh.sampler_mod
    original = mod.top_k_top_p_min_p_sampling_from_probs_torch
    seen = []

    def importing(*args, **kwargs):
        seen.append(importlib.import_module(mod.__name__) is mod and
                    importlib.import_module("sglang.srt.layers.utils.hash").murmur_hash32 is mod.murmur_hash32)
        return original(*args, **kwargs)
    monkeypatch.setattr(mod, "top_k_top_p_min_p_sampling_from_probs_torch", importing)
    fresh.sample(torch.randn(2, 50), 1.0, 5, 0.9, 0.0, [1, 2], [0, 0])
    assert seen == [True, True]                   # per-row batching: one call a row
    assert mod.__name__ not in __import__("sys").modules


@pytest.mark.parametrize("params", [(1.0, -1, 1.0, 0.0), (0.7, 20, 0.9, 0.0), (1.0, -1, 1.0, 0.2), (0.0, -1, 1.0, 0.0)])
def test_fast_path_gives_the_per_row_paths_tokens(params):
    """Issue 41: one request's parameters given once (scalars) make one SamplingParams and the batch's columns on the
    device; the whole-batch draw on the process's generator (engine_serve's window seeding) gives the tokens of the
    per-row lists at the same generator state."""
    whole = sa.SglangTorch(SRC, batch="whole")
    logits = torch.randn(1, 400, generator=torch.Generator().manual_seed(3)).expand(64, 400).contiguous()
    torch.manual_seed(11)
    fast = whole.sample(logits, *params, None, None)
    torch.manual_seed(11)
    assert torch.equal(fast, whole.sample(logits, *([v] * 64 for v in params), None, None))


@pytest.mark.skipif(not (torch.cuda.is_available() and sa.es.triton_importable()), reason="needs triton and CUDA")
def test_seeded_fast_path_gives_the_per_row_paths_tokens():
    seeded = sa.SglangTorch(SRC, device="cuda", seeded=True)
    logits = torch.randn(1, 4000, generator=torch.Generator().manual_seed(3)).expand(256, 4000).contiguous()
    offsets = [2 ** 63 - 128 + i for i in range(256)]
    column = torch.tensor([sa.es.as_int64(v) for v in offsets], device="cuda")
    fast = seeded.sample(logits, 0.8, 30, 0.9, 0.0, 5, column)
    assert torch.equal(fast, seeded.sample(logits, [0.8] * 256, [30] * 256, [0.9] * 256, [0.0] * 256, [5] * 256,
                                           offsets))
