"""Issue 41's fast path of adapters/vllm: one request's parameters given once (scalars), the offsets as engine_serve's
int64 column of their u64 bits. Without a tree: the batch rules and MRV2's keys at once equal them row by row. With
SAMPLECHECK_VLLM_SRC (the v1 PyTorch path on the CPU): the tokens equal the per-row path's at the same (seed, offset)
rows, and COUNT through engine_serve is the bincount of the draws sampled one by one. MRV2 and Triton need a GPU."""
import itertools
import os
import random

import pytest
import torch

import vllm_adapter as va

SRC = os.environ.get(va.ENV_VAR)
needs_tree = pytest.mark.skipif(not SRC, reason=f"{va.ENV_VAR} is not set (no vLLM source tree)")
needs_gpu = pytest.mark.skipif(not (SRC and va.triton_available()), reason="needs a vLLM tree, triton and CUDA")


def u64_column(values):
    return torch.tensor([va.es.as_int64(v) for v in values])


@pytest.mark.parametrize("front_end", [True, False])
def test_a_uniform_batch_applies_the_front_end_rules_as_row_by_row(front_end):
    for t, k, p, m in itertools.product([0.0, 1e-6, 0.005, 0.7, 2.0], [-1, 0, 1, 5, 16, 40], [0.3, 1.0], [0.0, 0.2]):
        fast = va._Batch(7, 16, t, k, p, m, front_end)
        slow = va._Batch(7, 16, [t] * 7, [k] * 7, [p] * 7, [m] * 7, front_end)
        assert fast.uniform and not slow.uniform
        for field in ("greedy", "temperature", "top_k", "top_p", "min_p", "uses_top_k", "uses_top_p"):
            assert getattr(fast, field) == getattr(slow, field), (field, t, k, p, m)


def test_mrv2_keys_at_once_equal_the_keys_row_by_row():
    rng = random.Random(6)
    offsets = [rng.getrandbits(64) for _ in range(200)] + [0, 2 ** 62 - 1, 2 ** 62, 2 ** 63, 2 ** 64 - 1]
    for seed in (0, 9, 2 ** 63 + 5, 2 ** 64 - 1):
        keys = va._mrv2_keys(seed, offsets, len(offsets))
        seeds, positions = va._mrv2_key_columns(seed, u64_column(offsets), len(offsets), torch.device("cpu"))
        assert positions.tolist() == [k[1] for k in keys]
        assert seeds == [k[0] for k in keys]
        low = [o % 2 ** 62 for o in offsets[:50]]           # no fold: one seed for every row
        seed1, _ = va._mrv2_key_columns(seed, u64_column(low), 50, torch.device("cpu"))
        assert seed1 == va.es.as_int64(seed)


@pytest.fixture(scope="module")
def pytorch_path():
    return va.VllmV1(SRC, path="pytorch")


def old_sample(sampler, logits, t, k, p, m, seeds, offsets):
    """The adapter's per-row path: every parameter a list, seeds and offsets unsigned lists."""
    rows = logits.shape[0]
    t, k, p, m = va.es.sampling_params(rows, t, k, p, m)
    return sampler.sample(logits, t, k, p, m, va.es.u64_list(seeds, rows, "s"), va.es.u64_list(offsets, rows, "o"))


@needs_tree
@pytest.mark.parametrize("params", [(1.0, -1, 1.0, 0.0), (0.8, 20, 0.9, 0.0), (1.0, 5, 1.0, 0.1), (0.0, -1, 1.0, 0.0),
                                    (0.004, 50, 0.95, 0.05)])
def test_v1_fast_path_gives_the_per_row_paths_tokens(pytorch_path, params):
    logits = torch.randn(1, 500, generator=torch.Generator().manual_seed(4)).expand(64, 500).contiguous()
    offsets = [2 ** 64 - 32 + i for i in range(32)] + list(range(100, 132))
    fast = pytorch_path.sample(logits, *params, 987654321, u64_column(offsets))
    assert torch.equal(fast, old_sample(pytorch_path, logits, *params, [987654321] * 64, offsets))
    again = pytorch_path.sample(logits, *params, 987654321, u64_column(offsets))   # kept generators and processor
    assert torch.equal(again, fast)


@needs_tree
@pytest.mark.parametrize("seeding", ["request", "window"])
def test_v1_count_through_engine_serve_is_the_bincount_of_the_sampled_draws(pytorch_path, seeding):
    import serve as vllm_serve   # adapters/vllm/serve.py, on engine_serve
    serve = vllm_serve.serve
    from samplecheck.tensors import BatchParams, make_backend
    engine = serve.Engine(adapter=pytorch_path, sample=pytorch_path.sample, check=vllm_serve.check, seeding=seeding,
                          seed_window=serve.seed_global)
    c = serve.Client(engine, batch=16)
    backend = make_backend("torch", "cpu")
    row = torch.randn(1, 300, generator=torch.Generator().manual_seed(8))
    t = (0.9, 30, 0.95, 0.0, 5, 2 ** 63 - 10)
    histogram, invalid = c.count(row, BatchParams.of_rows(backend, [t], [0], 8), 40)
    one = [int(c.sample(row, BatchParams.of_rows(backend, [t[:5] + (t[5] + i,)], [0], 8))[0]) for i in range(40)]
    assert invalid == 0 and histogram.tolist() == torch.bincount(torch.tensor(one), minlength=300).tolist()


@needs_gpu
def test_mrv2_fast_path_gives_the_per_row_paths_tokens():
    sampler = va.VllmMrv2(SRC, path="pytorch", device="cuda")
    logits = torch.randn(1, 3000, generator=torch.Generator().manual_seed(5)).expand(256, 3000).contiguous()
    offsets = [2 ** 62 - 128 + i for i in range(256)]                    # the fold's boundary inside the batch
    fast = sampler.sample(logits, 0.9, 50, 0.9, 0.0, 31, u64_column(offsets).cuda())
    assert torch.equal(fast.cpu(), old_sample(sampler, logits, 0.9, 50, 0.9, 0.0, [31] * 256, offsets).cpu())
