"""replay_client.py, the two sides of prime-rl's replay for `samplecheck replay`: through a fake harness (the
prime-rl side guards a label outside its kept set and says so, refuses min-p as unsupported; the vLLM side answers a
batch), and, when the samplecheck program is found ($SAMPLECHECK_BIN or build/cpu), the comparison of
docs/conformance.md on replay-smoke. Skipped unless SAMPLECHECK_PRIME_RL_SRC and SAMPLECHECK_VLLM_SRC name trees."""
import math
import os
import subprocess
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
sys.path[:0] = [str(ROOT / "python"), str(ROOT / "python" / "tests")]

from conftest import exchange  # noqa: E402
from samplecheck import protocol as P  # noqa: E402

import replay_client as rc  # noqa: E402

pytestmark = pytest.mark.skipif(not (os.environ.get("SAMPLECHECK_PRIME_RL_SRC") and
                                     os.environ.get("SAMPLECHECK_VLLM_SRC")),
                                reason="SAMPLECHECK_PRIME_RL_SRC and SAMPLECHECK_VLLM_SRC name no trees")
ROW = [math.log(v) for v in (0.5, 0.3, 0.15, 0.05)]
TOP_K_1 = (1.0, 1, 1.0, 0.0, 1, 0)


def side(name):
    return getattr(rc, name.replace("-", "_") + "_side")(rc.argparse.Namespace(src=None, path="pytorch", device="cpu"))


def test_prime_rl_guards_the_label_and_says_so():
    (hello, answer), _ = exchange(side("prime-rl"), P.encode_logprobs_batch([ROW, ROW], [TOP_K_1] * 2, labels=[2, 0]))
    assert hello[1] & P.CAP_LOGPROBS_BATCH and hello[1] & P.CAP_LOGPROBS_LABELS
    assert answer[0] == "LOGPROBS" and answer[1] == [1, 0]
    assert [math.exp(v) for v in answer[2][0]] == pytest.approx([0.5 / 0.65, 0.0, 0.15 / 0.65, 0.0], abs=1e-6)
    assert answer[2][1] == [0.0, -math.inf, -math.inf, -math.inf]


def test_prime_rl_refuses_min_p_as_unsupported():
    (_, answer), _ = exchange(side("prime-rl"), P.encode_logprobs_batch([ROW], [(1.0, -1, 1.0, 0.1, 1, 0)]))
    assert answer[0] == "ERROR" and answer[1] == P.ERR_UNSUPPORTED and "no min-p" in answer[2]


def test_vllm_answers_a_batch_without_labels():
    (hello, answer), _ = exchange(side("vllm"), P.encode_logprobs_batch([ROW] * 3, [TOP_K_1] * 3))
    assert not hello[1] & P.CAP_LOGPROBS_LABELS
    assert answer[0] == "LOGPROBS" and answer[2] == [[0.0, -math.inf, -math.inf, -math.inf]] * 3


def test_the_dispatcher_is_judged_as_vllm_triton_where_it_reaches_triton(monkeypatch):
    # vLLM's dispatcher takes Triton (top-k keeps exactly k) from 8 rows on CUDA; judged as vllm (ties kept) it failed
    # 19 rows of the H100 run (jitter-topk-boundary, batch-8, mixed-batch-16) that the Triton path passes.
    import torch
    import vllm_adapter as va

    class Engine:  # VllmV1 without the tree: what vllm_side reads of it
        def __init__(self, src=None, path="dispatch", device="cpu"):
            self.device, self.name, self.last_path = torch.device(device), f"vllm:{path}", None

    monkeypatch.setattr(va, "VllmV1", Engine)
    monkeypatch.setattr(va, "triton_available", lambda: True)

    def profile(path, device):
        return rc.vllm_side(rc.argparse.Namespace(src=None, path=path, device=device)).profile

    assert profile("dispatch", "cuda") == "vllm-triton"
    assert profile("triton", "cuda") == "vllm-triton"
    assert profile("dispatch", "cpu") == "vllm"  # a CPU dispatcher never reaches the Triton kernel
    assert profile("pytorch", "cuda") == "vllm"
    monkeypatch.setattr(va, "triton_available", lambda: False)
    assert profile("dispatch", "cuda") == "vllm"


def _samplecheck():
    for candidate in (os.environ.get("SAMPLECHECK_BIN"), ROOT / "build" / "cpu" / "tools" / "samplecheck"):
        if candidate and Path(candidate).is_file():
            return str(candidate)
    pytest.skip("no samplecheck program ($SAMPLECHECK_BIN, build/cpu)")


def test_vllm_pytorch_path_against_prime_rl_on_replay_smoke():
    client = f"process:exec {sys.executable} {HERE / 'replay_client.py'}"
    done = subprocess.run([_samplecheck(), "replay", "--suite", "replay-smoke", "--quiet", "--allow-skipped",
                           "--engine", f"{client} vllm --path pytorch --device cpu",
                           "--trainer", f"{client} prime-rl --device cpu"], capture_output=True, text=True)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "74 pass, 0 fail, 1 skipped" in done.stdout and "0 beyond" in done.stdout, done.stdout


# The two disagreements of docs/conformance.md ("RL replay"), each on its reduced row; a new vLLM or prime-rl that
# changes them fails here.
TIE_ROW = [1.36719, -2.84375, 1.67969, 1.88281, -1.24219, -2.95312, -2.09375, 4.65625, 1.40625, 4.65625, 1.91406,
           6.5625, 0.36523, 4.59375, -0.13477, -2.45312, 2.35938, -1.125, 0.00381, 1.21875, 0.3418, 2.60938, 0.94531,
           4.34375, -8.375, -0.05396, 0.83984, 3.15625, 1.875, 1.09375, 2.23438, 4.375, 1.375, 0.28711, -1.625,
           -2.84375, 0.70312, -4.78125, -2.1875, 1.74219, 0.91016, -2.125, -2.60938, 0.94922, 4.5, 2.32812, 1.89844,
           2.875, -2.15625, -1.45312, 2.0, 0.55469, -2.0625, 4.6875, 5.5625, -1.21875, -0.16895, -2.57812, -2.57812,
           -0.83984, 0.29883, -3.57812, -4.09375, 6.0]


def _both():
    import prime_rl_adapter as pa
    import vllm_adapter as va
    return va.VllmV1(path="pytorch"), pa.PrimeRlReplay()


def test_finding_the_tie_at_the_top_p_boundary_is_cut_by_another_member():
    import torch
    vllm, prime = _both()
    x = torch.tensor([TIE_ROW]).to(torch.bfloat16).float()  # bf16 values: tokens 7 and 9 tie at 4.65625
    ours, theirs = vllm.processed_logprobs(x, 1.0, 8, 0.8, 0.0), prime.processed_logprobs(x, 1.0, 8, 0.8)
    assert ours[0].isfinite().nonzero().flatten().tolist() == [7, 11, 53, 54, 63]
    assert theirs[0].isfinite().nonzero().flatten().tolist() == [9, 11, 53, 54, 63]
    assert ours[0, 7] == theirs[0, 9]  # the same mass: every shared logprob is equal


def test_finding_vllm_raises_a_temperature_below_0_01_and_prime_rl_does_not():
    import torch
    vllm, prime = _both()
    x = torch.tensor([[0.0, -0.01, -0.02]])
    at_floor = prime.processed_logprobs(x, 0.01, -1, 1.0)
    assert torch.equal(vllm.processed_logprobs(x, 0.005, -1, 1.0, 0.0), at_floor)
    assert not torch.allclose(prime.processed_logprobs(x, 0.005, -1, 1.0), at_floor, atol=1e-3)


# The Triton path's own finding (docs/conformance.md, "RL replay", H100): its top-p pivot search (topk_topp_triton.py
# 681-747) bisects the probability range for at most 18 iterations and, when no probe lands between the boundary
# token and its neighbour, cuts at the last interval's midpoint: the nucleus falls short of p. On the GPU only.
def _triton():
    try:
        import vllm_adapter as va
        return va.triton_available()
    except Exception:  # noqa: BLE001 (no torch with CUDA here)
        return False


def _triton_and_prime_rl(rows):
    import torch
    import prime_rl_adapter as pa
    import vllm_adapter as va
    if not _triton():
        pytest.skip("vLLM's Triton path needs triton and a CUDA device")
    return va.VllmV1(path="triton", device="cuda"), pa.PrimeRlReplay(device="cuda"), torch.tensor(rows, device="cuda")


def test_finding_triton_top_p_never_keeps_the_least_probable_group():
    # p = (0.636, 0.182, 0.182), top_p 0.92: the nucleus needs all three. The search's lower bound is the least
    # probability itself and it keeps probs > pivot, so the minimum's group is never kept (campaign row gen/18).
    vllm, prime, x = _triton_and_prime_rl([[0.0, -1.25, -1.25]] * 8)
    ours, theirs = vllm.processed_logprobs(x, 1.0, -1, 0.92, 0.0), prime.processed_logprobs(x, 1.0, -1, 0.92)
    assert ours[0].isfinite().nonzero().flatten().tolist() == [0]
    assert theirs[0].isfinite().nonzero().flatten().tolist() == [0, 1, 2]


def test_finding_triton_top_p_stops_short_of_p_on_a_dense_tail():
    # zipf(V = 32000, s = 1.1), top_p 0.9 (campaign row topp-32k): neighbours in the nucleus' tail are 2.7e-9 apart,
    # 18 halvings of [outlier prob, max prob] resolve 4e-7: Triton keeps 5205 tokens of mass 0.89976, the PyTorch path
    # and prime-rl 5226 (mass >= 0.9).
    import torch
    row = (-1.1 * torch.arange(1, 32001, dtype=torch.float64).log()).float().tolist()
    vllm, prime, x = _triton_and_prime_rl([row] * 8)
    ours, theirs = vllm.processed_logprobs(x, 1.0, -1, 0.9, 0.0), prime.processed_logprobs(x, 1.0, -1, 0.9)
    kept, replayed = ours[0].isfinite(), theirs[0].isfinite()
    assert int(replayed.sum()) == 5226 and int(kept.sum()) < 5226 and not (kept & ~replayed).any()
    mass = x[0].log_softmax(-1)[kept].exp().sum().item()
    assert mass < 0.9 - 1e-4, mass
