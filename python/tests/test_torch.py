"""The torch and numpy sides: what the callables get (tensors on the device, int64 columns holding u64 seeds),
replicated rows gathered on the device, the result checks on tensors, the Philox uniform vectorized, and the draw
helpers' contract (draw i of a COUNT is the SAMPLE draw at offset + i; a row's draw does not depend on its batch).
Skipped without torch (numpy tests without numpy)."""
import math
import os
import subprocess
import sys

import pytest

from conftest import exchange
from samplecheck import protocol as P
from samplecheck import Sampler, philox

torch = pytest.importorskip("torch")
from samplecheck import draws  # noqa: E402

SEED_HIGH = (1 << 63) + 12345  # a u64 seed the int64 column holds as a negative number
ROWS = [[0.3, -1.0, 2.0, 0.5, 0.0, 1.5], [1.0, 1.0, 1.0, -2.0, 0.0, 3.0]]


def softmax_race(logits, params):
    probs = torch.softmax(logits.double(), dim=-1)
    return draws.race(probs, params)


def tsampler(fn, **kw):
    return Sampler(fn, tensors="torch", device="cpu", **kw)


def test_the_callable_gets_float32_rows_and_64_bit_columns_with_u64_seeds():
    seen = {}

    def sample(logits, params):
        seen.update(dtype=logits.dtype, shape=tuple(logits.shape), t=params.temperature.dtype,
                    k=params.top_k.dtype, seed=params.seed.tolist(), seed0=params[0].seed, row=params.row.tolist())
        return torch.zeros(len(params), dtype=torch.int64)

    params = [(0.5, 3, 0.9, 0.0, SEED_HIGH, 1), (1.0, -1, 1.0, 0.1, 4, 2)]
    (_, answer), _ = exchange(tsampler(sample), P.encode_sample(ROWS, params))
    assert answer == ("TOKENS", [0, 0])
    assert seen == dict(dtype=torch.float32, shape=(2, 6), t=torch.float64, k=torch.int64,
                        seed=[SEED_HIGH - (1 << 64), 4], seed0=SEED_HIGH, row=[0, 1])


@pytest.mark.parametrize("result, expected", [
    (lambda n: torch.zeros((n, 1), dtype=torch.int64), "returned shape (2, 1); expected (2,): one token per row "
                                                        "(drop the last dimension: .squeeze(-1))"),
    (lambda n: torch.zeros(n), "returned dtype torch.float32; expected an integer dtype"),
    (lambda n: torch.full((n,), float("nan")), "returned dtype torch.float32; expected an integer dtype"),
    (lambda n: torch.zeros(n, dtype=torch.bool), "returned dtype torch.bool; expected an integer dtype"),
    (lambda n: torch.tensor([0, 6]), "returned token 6 for row 1; allowed 0..5 (vocab 6)"),
])
def test_a_wrong_tensor_is_an_error_naming_it(result, expected):
    (_, answer), _ = exchange(tsampler(lambda x, p: result(len(p))), P.encode_sample(ROWS, [P.PARAMS.unpack(
        P.PARAMS.pack(1.0, -1, 1.0, 0.0, 1, 0))] * 2))
    assert answer[0] == "ERROR" and answer[1] == P.ERR_FAILED and expected in answer[2], answer


def test_sample_replicated_gathers_the_rows_on_the_device_and_draws_as_sample_does():
    seen = []

    def sample(logits, params):
        seen.append((tuple(logits.shape), params.row.tolist()))
        return softmax_race(logits, params)

    replicas = 4
    params = [(1.0, -1, 1.0, 0.0, SEED_HIGH, 10 * k + r) for k in range(replicas) for r in range(2)]
    (_, together), _ = exchange(tsampler(sample), P.encode_sample_replicated(ROWS, replicas, params))
    assert seen == [((8, 6), [0, 1] * replicas)]
    (_, alone), _ = exchange(tsampler(softmax_race), P.encode_sample([ROWS[i % 2] for i in range(8)], params))
    assert together == alone


@pytest.mark.parametrize("step", [draws.race, draws.windowed_race, draws.windowed_multinomial, draws.multinomial])
def test_count_draw_i_is_the_sample_draw_at_offset_plus_i(step):
    def sample(logits, params):
        return step(torch.softmax(logits.double(), dim=-1), params)

    p, n = (1.0, -1, 1.0, 0.0, SEED_HIGH, 29), 100
    (_, counted), _ = exchange(tsampler(sample, lanes=16), P.encode_count(ROWS[0], p, n))
    offsets = [p[:5] + (p[5] + i,) for i in range(n)]
    (_, sampled), _ = exchange(tsampler(sample, lanes=16), P.encode_sample([ROWS[0]] * n, offsets))
    histogram = [0] * 6
    for t in sampled[1]:
        histogram[t] += 1
    assert counted == ("HISTOGRAM", 0, histogram)


@pytest.mark.parametrize("sample_step, count_step", [(draws.windowed_race, draws.race_step),
                                                     (draws.windowed_multinomial, draws.multinomial_step)])
def test_count_windows_processes_the_row_once_and_draws_what_the_windowed_sample_draws(sample_step, count_step):
    def probs_of(logits):
        return torch.softmax(logits.double(), dim=-1)

    processed = []

    def count(logits, params, n):
        processed.append(len(logits))
        return draws.count_windows(count_step, probs_of(logits), params, n)

    p, n = (1.0, -1, 1.0, 0.0, SEED_HIGH, 29), 100
    fast = Sampler(lambda x, q: sample_step(probs_of(x), q), count=count, tensors="torch", device="cpu", lanes=16)
    (_, counted), _ = exchange(fast, P.encode_count(ROWS[0], p, n))
    (_, replicated), _ = exchange(tsampler(lambda x, q: sample_step(probs_of(x), q), lanes=16),
                                  P.encode_count(ROWS[0], p, n))
    assert counted == replicated and counted[1] == 0 and sum(counted[2]) == n and processed == [1]


@pytest.mark.parametrize("step", [draws.race, draws.windowed_race, draws.windowed_multinomial, draws.multinomial])
def test_a_rows_draw_does_not_depend_on_the_batch_around_it(step):
    def sample(logits, params):
        return step(torch.softmax(logits.double(), dim=-1), params)

    params = [(1.0, -1, 1.0, 0.0, 5, 3), (1.0, -1, 1.0, 0.0, 6, 40)]
    (_, both), _ = exchange(tsampler(sample, lanes=8), P.encode_sample(ROWS, params))
    (_, second), _ = exchange(tsampler(sample, lanes=8), P.encode_sample([ROWS[1]], [params[1]]))
    assert both[1][1] == second[1][0]


def test_windowed_multinomial_leaves_the_rows_not_asked_for_at_minus_one():
    from samplecheck.tensors import BatchParams, TorchBackend
    params = BatchParams.of_rows(TorchBackend("cpu"), [(1.0, -1, 1.0, 0.0, 1, i) for i in range(3)], [0, 1, 2], 4)
    tokens = draws.windowed_multinomial(torch.full((3, 4), 0.25), params, only={1})
    assert tokens[0] == -1 and tokens[2] == -1 and 0 <= tokens[1] < 4


def test_the_draws_are_statistically_the_distribution():
    """Race and multinomial helpers over 4000 draws of a 3-token row: Pearson X^2 (2 dof) below 18.4, the 1e-4 upper
    quantile (false-alarm rate 1e-4 per helper; fixed seed, so deterministic). Power: a helper drawing uniformly
    instead has an expected X^2 of 4000 * 0.148 = 593 (noncentral, power ~1); one that swaps the 0.3 and 0.2 tokens,
    4000 * 0.0833 = 333."""
    probs_row = [0.5, 0.3, 0.2]

    def expected_chi2(counts, n):
        return sum((c - n * q) ** 2 / (n * q) for c, q in zip(counts, probs_row))

    for step in (draws.race, draws.windowed_race, draws.windowed_multinomial, draws.multinomial):
        def sample(logits, params, step=step):
            return step(torch.tensor([probs_row] * len(params), dtype=torch.float64), params)
        (_, (_, invalid, counts)), _ = exchange(tsampler(sample), P.encode_count([0.0] * 3, (1.0, -1, 1.0, 0.0, 9, 0),
                                                                                  4000))
        assert invalid == 0 and expected_chi2(counts, 4000) < 18.4, (step.__name__, counts)


def test_philox_uniforms_on_torch_and_numpy_equal_the_pure_python_ones():
    seeds = [0, 1, SEED_HIGH, (1 << 64) - 1, 0xDEADBEEF12345678]
    offsets = [0, (1 << 64) - 1, 77, 1 << 40, 3]
    want = [philox.uniform(s, o) for s, o in zip(seeds, offsets)]
    signed = [v - (1 << 64) if v >= (1 << 63) else v for v in seeds]
    signed_offsets = [v - (1 << 64) if v >= (1 << 63) else v for v in offsets]
    assert philox.uniforms(torch.tensor(signed), torch.tensor(signed_offsets)).tolist() == want
    np = pytest.importorskip("numpy")
    assert philox.uniforms(np.array(seeds, dtype=np.uint64), np.array(offsets, dtype=np.uint64)).tolist() == want
    assert philox.uniform(7, 0) == pytest.approx(0.5, abs=0.5) and 0 < min(want) and max(want) < 1


def test_philox_inverse_cdf_reproduces_the_pure_python_inverse_cdf():
    def sample(logits, params):
        probs = torch.softmax(logits.double(), dim=-1)
        return draws.inverse_cdf(probs, draws.philox_uniforms(params))

    params = [(1.0, -1, 1.0, 0.0, SEED_HIGH, i) for i in range(40)]
    (_, got), _ = exchange(tsampler(sample), P.encode_sample([ROWS[0]] * 40, params))
    m = max(ROWS[0])
    w = [math.exp(x - m) for x in ROWS[0]]
    cdf = [sum(w[:i + 1]) / sum(w) for i in range(6)]
    want = [next((t for t, c in enumerate(cdf) if c > philox.uniform(SEED_HIGH, i)), 5) for i in range(40)]
    assert got == ("TOKENS", want)


def test_logprobs_tensor_is_the_processed_distribution():
    def logprobs(logits, params):
        return torch.log_softmax(logits.double(), dim=-1)
    (_, answer), _ = exchange(Sampler(logprobs=logprobs, tensors="torch", device="cpu"),
                              P.encode_processed(ROWS[0], (1.0, -1, 1.0, 0.0, 0, 0)))
    want = torch.softmax(torch.tensor(ROWS[0]).double(), dim=-1).tolist()
    assert answer[1] == pytest.approx(want, rel=1e-6)


def test_numpy_arrays_in_and_out():
    np = pytest.importorskip("numpy")
    seen = {}

    def sample(logits, params):
        seen.update(kind=type(logits).__name__, dtype=str(logits.dtype), seed=params.seed.tolist())
        return np.argmax(logits, axis=-1)

    (_, answer), _ = exchange(Sampler(sample, tensors="numpy"),
                              P.encode_sample(ROWS, [(1.0, -1, 1.0, 0.0, SEED_HIGH, 0)] * 2))
    assert answer == ("TOKENS", [2, 5])
    assert seen == dict(kind="ndarray", dtype="float32", seed=[SEED_HIGH - (1 << 64)] * 2)
    (_, answer), _ = exchange(Sampler(lambda x, p: np.zeros(2), tensors="numpy"),
                              P.encode_sample(ROWS, [(1.0, -1, 1.0, 0.0, 0, 0)] * 2))
    assert "returned dtype float64; expected an integer dtype" in answer[2]


_FAKE_TRANSFORMERS = {
    "__init__.py": "__version__ = '0.0-fake'\n"
                   "class PretrainedConfig:\n    def __init__(self, **kw): pass\n"
                   "class GenerationConfig:\n    def __init__(self, **kw): self.__dict__.update(kw)\n",
    "generation/__init__.py": "",
    "generation/logits_process.py":
        "import torch\n"
        "class LogitsProcessorList(list):\n"
        "    def __call__(self, ids, s):\n        for p in self: s = p(ids, s)\n        return s\n"
        "class TemperatureLogitsWarper:\n    def __init__(self, t): self.t = t\n"
        "    def __call__(self, ids, s): return s / self.t\n"
        "class TopKLogitsWarper:\n    def __init__(self, top_k): self.k = top_k\n"
        "    def __call__(self, ids, s):\n"
        "        kth = torch.topk(s, min(self.k, s.shape[-1])).values[..., -1:]\n"
        "        return s.masked_fill(s < kth, float('-inf'))\n"
        "class TopPLogitsWarper:\n    def __init__(self, top_p): self.p = top_p\n"
        "    def __call__(self, ids, s): return s\n"
        "class MinPLogitsWarper:\n    def __init__(self, min_p): self.p = min_p\n"
        "    def __call__(self, ids, s): return s\n",
    "generation/utils.py":
        "class GenerationMixin:\n"
        "    def _get_logits_processor(self, **kw):\n"
        "        # TemperatureLogitsWarper( TopKLogitsWarper( TopPLogitsWarper( MinPLogitsWarper(\n"
        "        raise NotImplementedError('a stand-in')\n",
}


def test_the_transformers_client_on_a_stand_in_transformers_counts_as_it_samples(tmp_path):
    """The plumbing of examples/python/transformers_client.py (the warpers once per distinct row, generate()'s
    multinomial step per window, greedy and unsamplable rows) on a stand-in `transformers` of four toy warpers: the
    real one is not installed here (the GPU machine has it)."""
    for name, text in _FAKE_TRANSFORMERS.items():
        path = tmp_path / "transformers" / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    client = os.path.join(os.path.dirname(__file__), "..", "..", "examples", "python", "transformers_client.py")
    p, n = (0.7, 3, 1.0, 0.0, SEED_HIGH, 5), 64
    requests = (P.encode_hello() + P.encode_count(ROWS[0], p, n) +
                P.encode_sample([ROWS[0]] * n, [p[:5] + (p[5] + i,) for i in range(n)]) +
                P.encode_sample([ROWS[1], [float("nan")] * 6], [(0.0, -1, 1.0, 0.0, 1, 0), p]) + P.encode_bye())
    env = dict(os.environ, PYTHONPATH=str(tmp_path))
    done = subprocess.run([sys.executable, client, "--device", "cpu"], input=requests, stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, env=env, timeout=120)
    assert done.returncode == 0, done.stderr.decode()
    import io
    out = io.BytesIO(done.stdout)
    hello, counted, sampled, special = [P.decode_answer(*P.read_frame(out)) for _ in range(4)]
    assert hello[2] == "transformers-0.0-fake-warpers@cpu" and hello[3] == "hf"
    histogram = [0] * 6
    for t in sampled[1]:
        histogram[t] += 1
    assert counted == ("HISTOGRAM", 0, histogram)
    assert sum(histogram[t] for t in (2, 5, 3)) == n  # top-3 of ROWS[0]: tokens 2, 5, 3
    assert special == ("TOKENS", [5, -1])  # greedy: argmax; a NaN row: -1
