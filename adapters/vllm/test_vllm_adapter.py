"""vLLM's own sampler files through adapters/vllm/vllm_adapter.py. Skipped unless SAMPLECHECK_VLLM_SRC names a vLLM
tree (scripts/engine-sources lays one out); the Triton and verifier tests also need triton and a CUDA device.

Draw tests use fixed seeds, so they are deterministic; their bounds are 5 binomial standard deviations (a correct
sampler fails one with probability < 6e-7 over the seeds one could pick)."""
import math
import os
import re

import pytest
import torch

import vllm_adapter as va

SRC = os.environ.get(va.ENV_VAR)
pytestmark = pytest.mark.skipif(not SRC, reason=f"{va.ENV_VAR} is not set (no vLLM source tree)")
needs_gpu = pytest.mark.skipif(not va.triton_available(), reason="needs triton and a CUDA device")

ROW = torch.log(torch.tensor([[0.5, 0.3, 0.15, 0.05]]))


def probs(sampler, logits, t=1.0, k=-1, p=1.0, m=0.0):
    return sampler.processed_logprobs(logits, t, k, p, m).exp().cpu()


@pytest.fixture(scope="module")
def pytorch_path():
    return va.VllmV1(SRC, path="pytorch")


def test_name_says_engine_commit_files_and_path(pytorch_path):
    assert re.fullmatch(r"vllm@[0-9a-f]{8}(\+modified)?:v1/sample/sampler\.py\+ops/topk_topp_sampler\.py:pytorch@cpu",
                        pytorch_path.name)
    loaded = {f.path for f in pytorch_path.tree.loaded}
    assert {va.F_SAMPLER, va.F_TOPK_TOPP, va.F_BUILTIN} <= loaded


def test_top_k_top_p_min_p_keep_the_hand_computed_sets(pytorch_path):
    expected = torch.tensor([[0.625, 0.375, 0.0, 0.0]])
    assert torch.allclose(probs(pytorch_path, ROW, k=2), expected, atol=1e-6)
    assert torch.allclose(probs(pytorch_path, ROW, p=0.7), expected, atol=1e-6)      # mass above token 2 is 0.8
    assert torch.allclose(probs(pytorch_path, ROW, m=0.35), expected, atol=1e-6)     # 0.15 < 0.35 * 0.5


def test_min_p_runs_before_top_p_on_the_full_distribution(pytorch_path):
    # V4 of the field guide: min-p first keeps {0, 1} (vLLM, TensorRT-LLM); top-p first would keep {0, 1, 2}.
    row = torch.log(torch.tensor([[0.4, 0.3, 0.2, 0.1]]))
    assert torch.allclose(probs(pytorch_path, row, p=0.75, m=0.3), torch.tensor([[4 / 7, 3 / 7, 0, 0]]), atol=1e-6)


def test_pytorch_top_k_keeps_the_whole_tie_group(pytorch_path):
    flat = torch.zeros(1, 4)
    assert torch.allclose(probs(pytorch_path, flat, k=2), torch.full((1, 4), 0.25), atol=1e-7)


def test_top_p_is_strict_on_an_exact_boundary(pytorch_path):
    # Four equal logits: mass above the third token is exactly 0.5 = top_p, so a strict rule drops it.
    kept = (probs(pytorch_path, torch.zeros(1, 4), p=0.5) > 0).sum().item()
    assert kept == 2


def test_front_end_raises_small_temperatures_to_0_01(pytorch_path):
    row = torch.tensor([[0.0, -0.05]])
    assert torch.allclose(probs(pytorch_path, row, t=0.001), probs(pytorch_path, row, t=0.01), atol=1e-7)
    raw = va.VllmV1(SRC, path="pytorch", front_end=False)
    assert probs(raw, row, t=0.001)[0, 1] < 1e-20


def test_front_end_rejects_what_sampling_params_rejects(pytorch_path):
    for kwargs, text in [({"p": 0.0}, "top_p must be in (0, 1]"), ({"t": 2.5}, "temperature must be in [0, 2]"),
                         ({"k": -2}, "top_k"), ({"m": 1.5}, "min_p")]:
        with pytest.raises(ValueError, match=re.escape(text)):
            probs(pytorch_path, ROW, **kwargs)


def test_draws_stay_in_the_kept_set_at_the_kept_frequencies(pytorch_path):
    n = 4000
    tokens = pytorch_path.sample(ROW.repeat(n, 1), 1.0, 2, 1.0, 0.0, list(range(n)), [0] * n)
    assert set(tokens.tolist()) <= {0, 1}
    share = (tokens == 0).float().mean().item()
    assert abs(share - 0.625) < 5 * math.sqrt(0.625 * 0.375 / n)


def test_same_seed_and_offset_give_the_same_token_in_any_batch(pytorch_path):
    logits = torch.randn(6, 50, generator=torch.Generator().manual_seed(3))
    seeds, offsets = [11, 12, 13, 14, 15, 16], [0, 1, 2, 3, 4, 5]
    whole = pytorch_path.sample(logits, 0.8, 20, 0.9, 0.0, seeds, offsets)
    alone = torch.cat([pytorch_path.sample(logits[i:i + 1], 0.8, 20, 0.9, 0.0, seeds[i], offsets[i]) for i in range(6)])
    assert torch.equal(whole, alone)


def test_finding_cpu_sampler_drops_the_seeds_of_a_batch_holding_a_greedy_row(pytorch_path):
    # The vLLM CPU finding of docs/conformance.md, pinned (fails when vLLM changes it): forward_cpu
    # (topk_topp_sampler.py:195-196) draws every row from the process's generator (compiled_random_sample) as soon as
    # one row of the batch has no generator of its own; a greedy request (T = 0) never has one
    # (sampling_params.py:701-706). The seeded row's token then depends on the batch and on the process's state.
    # On CUDA forward_native's random_sample (464-468) keeps the per-request generators.
    row = torch.zeros(1, 64)
    alone = [int(pytorch_path.sample(row, 1.0, -1, 1.0, 0.0, 5, o)[0]) for o in range(16)]
    assert alone == [int(pytorch_path.sample(row, 1.0, -1, 1.0, 0.0, 5, o)[0]) for o in range(16)]

    def in_batch(process_seed):
        torch.manual_seed(process_seed)
        return [int(pytorch_path.sample(torch.cat([row, row]), [1.0, 0.0], -1, 1.0, 0.0, [5, 5], [o, o])[0])
                for o in range(16)]
    first = in_batch(0)
    assert first == in_batch(0)                                  # the process's generator decides...
    assert sum(a != b for a, b in zip(first, in_batch(1))) >= 12  # ...not the request's seed
    assert sum(a != b for a, b in zip(first, alone)) >= 12


def test_temperature_zero_is_the_argmax(pytorch_path):
    logits = torch.tensor([[0.1, 2.0, 2.0, -1.0], [3.0, 0.0, 1.0, 3.0]])
    assert pytorch_path.sample(logits, 0.0, -1, 1.0, 0.0, [1, 2], [0, 0]).tolist() == [1, 0]


def test_dispatcher_reports_the_path_it_took():
    device = "cuda" if va.triton_available() else "cpu"
    sampler = va.VllmV1(SRC, path="dispatch", device=device)
    logits = torch.randn(9, 64)
    sampler.sample(logits[:2], 1.0, 5, 0.9, 0.0, [1, 2], [0, 0])
    assert sampler.last_path == "pytorch"
    sampler.sample(logits, 1.0, 5, 0.9, 0.0, list(range(9)), [0] * 9)
    # v0.26: Triton for >= 8 rows on CUDA when triton is present (topk_topp_sampler.py:356), PyTorch otherwise.
    assert sampler.last_path == ("triton" if device == "cuda" else "pytorch")


@needs_gpu
def test_triton_top_k_keeps_exactly_k_of_a_tie_group():
    """The k-th logit's tie group cut by position (topk_topp_triton.py, "Duplicate logit handling", 841-852): the
    three tied maxima of [0, 0, 0, -1] at k = 2 keep two, where the PyTorch path keeps three (not yet run on a GPU:
    this row replaced the fully tied one below after the H100 run of 2026-11-27)."""
    sampler = va.VllmV1(SRC, path="triton", device="cuda")
    kept = probs(sampler, torch.tensor([[0.0, 0.0, 0.0, -1.0]]), k=2) > 0
    assert kept.sum().item() == 2 and not kept[0, 3]


@needs_gpu
def test_triton_top_k_keeps_a_fully_tied_row_whole():
    """Every finite logit tied (max == min): the whole-row pivot search (286-366) starts with an empty range and
    stops at once with k_pivot = the max logit (362-366), and the last pass skips masking when the pivot is not
    below the max logit (830-831): top-k keeps the whole row, as the PyTorch path's keep-ties rule does. The H100
    run of 2026-11-27 measured it (kept 4 of 4 at k = 2, where this test asserted 2); the vllm-triton profile now
    keeps such a row whole too (Profile::tied_row_unmasked; docs/semantics.md, vllm-triton)."""
    sampler = va.VllmV1(SRC, path="triton", device="cuda")
    flat = torch.zeros(1, 4)
    assert torch.allclose(probs(sampler, flat, k=2), torch.full((1, 4), 0.25), atol=1e-6)


@needs_gpu
def test_v1_verifier_accepts_every_draft_that_the_target_would_draw_surely():
    sampler = va.VllmV1(SRC, path="pytorch", device="cuda", with_verifier=True)
    target = torch.full((3, 4, 8), -30.0)
    drafts = torch.tensor([[1, 2, 3], [4, 5, 6], [7, 0, 1]])
    for b in range(3):
        for j in range(3):
            target[b, j, drafts[b, j]] = 10.0      # p(draft) ~ 1 - 7e-18
        target[b, 3, 2] = 10.0
    accepted, tokens = sampler.verify(target, drafts, None, 1.0, -1, 1.0, 0.0, [1, 2, 3], [0, 0, 0])
    assert accepted.tolist() == [3, 3, 3]
    assert tokens[:, :3].tolist() == drafts.tolist() and tokens[:, 3].tolist() == [2, 2, 2]


@needs_gpu
def test_mrv2_gumbel_is_keyed_by_seed_and_position_not_by_batch():
    sampler = va.VllmMrv2(SRC, path="pytorch", device="cuda")
    logits = torch.randn(5, 3000, generator=torch.Generator().manual_seed(5))
    seeds, offsets = [1, 2, 3, 4, 5], [10, 20, 30, 40, 50]
    whole = sampler.sample(logits, 1.0, 50, 0.9, 0.0, seeds, offsets)
    alone = torch.cat([sampler.sample(logits[i:i + 1], 1.0, 50, 0.9, 0.0, seeds[i], offsets[i]) for i in range(5)])
    assert torch.equal(whole.cpu(), alone.cpu())
    kept = sampler.processed_logprobs(logits, 1.0, 50, 0.9, 0.0).isfinite()
    assert bool(kept.cpu()[torch.arange(5), whole.cpu()].all())


def test_mrv2_and_its_verifier_files_load_with_their_stubs(pytorch_path):
    """Model Runner V2's files import what the stubs provide (on the CPU with placeholder triton: they load, their
    kernels need a GPU). The GPU run of 18abd63 stopped at ``No module named 'vllm.sampling_params'``."""
    gumbel, states, rejection = va.load_mrv2_files(pytorch_path, with_verifier=True)
    assert callable(gumbel.gumbel_sample) and callable(rejection.rejection_sample)
    va._UvaBackedTensor.device = torch.device("cpu")
    st = states.SamplingStates(2, 10)
    st.add_request(1, va._SamplingParamsStub(temperature=0.5, top_k=0, top_p=0.9, min_p=0.0, seed=-3, logprobs=None))
    st.apply_staged_writes()
    assert st.top_k.np.tolist() == [10, 10] and st.seeds.gpu.tolist()[1] == -3
    assert va.F_MRV2_REJECTION in {f.path for f in pytorch_path.tree.loaded}


def test_the_front_end_refuses_min_p_with_speculative_decoding():
    """vLLM refuses min_p > 1e-5 for a request when a speculative config is set (sampling_params.py:870-882), before
    the rejection sampler (which would apply min-p to the bonus row only: upstream #42744). The adapter's front end
    refuses it in verify, naming the row and those lines; --no-front-end (front_end=False) hands it on. A greedy row's
    min_p is dropped by the front end first (492-496), so it is not refused. No draw is needed: the refusal comes
    before any engine call, on the CPU too."""
    v1 = va.VllmV1(SRC, path="pytorch", device="cpu", with_verifier=True)
    target = torch.zeros(2, 3, 16)
    drafts = torch.zeros(2, 2, dtype=torch.int64)
    with pytest.raises(ValueError, match=r"row 1: min_p = 0.1 with speculative decoding.*sampling_params.py:870-882"):
        v1.verify(target, drafts, None, [1.0, 1.0], -1, 1.0, [0.0, 0.1], [1, 2], [0, 0])
    with pytest.raises(ValueError, match="sampling_params.py:870-882"):
        va._validate_spec_decode([0.0, 2e-5])
    va._validate_spec_decode([0.0, 1e-5])  # min_p <= _SAMPLING_EPS passes, as in the engine
    greedy = va._Batch(1, 16, [0.0], -1, 1.0, [0.5], True)
    va._validate_spec_decode(greedy.min_p)  # greedy: min_p set to 0 by the front end, then not refused


def test_mrv2_keys_take_every_u64_offset_as_an_int64_position():
    # no tree, no GPU: the (seed, position) MRV2's gumbel kernel gets for samplecheck's (seed, offset)
    keys = va._mrv2_keys([9, 9, 9], [0, 2 ** 63 - 15, 2 ** 64 - 1], 3)
    assert keys[0] == (9, 0)
    assert all(0 <= pos < 2 ** va.MRV2_POSITION_BITS and -2 ** 63 <= seed < 2 ** 63 for seed, pos in keys)
    assert len(set(keys)) == 3
    torch.tensor([pos for _, pos in keys], dtype=torch.int64)   # what raised "Overflow when unpacking long long"
    # below 2^62 the key is what the adapter handed MRV2 before the fold (the u64 seed as int64, the offset as the
    # position): every smoke, spec and property draw at such offsets is unchanged by it
    offsets = [0, 1, 5, 2 ** 31 + 3, 3465504385, 2 ** 62 - 1]
    seeds = [0, 7, 2 ** 63 + 11, 2 ** 64 - 1, 12345, 9]
    assert va._mrv2_keys(seeds, offsets, 6) == [(va.es.as_int64(s), o) for s, o in zip(seeds, offsets)]
