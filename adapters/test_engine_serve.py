"""adapters/engine_serve.py without any engine tree: the serving rules on a stand-in engine (a torch exponential race
on the process's generator, or per-request generators), so they run in CI. Deterministic (fixed seeds)."""
import sys
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")

sys.path.insert(0, str(Path(__file__).resolve().parent))
import engine_serve as serve  # noqa: E402

from samplecheck import ERR_INVALID_ARGUMENT, SamplerError, VerifyCall  # noqa: E402
from samplecheck import DRAFT_LOGITS, DRAFT_ONE_HOT, DRAFT_PROBABILITIES  # noqa: E402
from samplecheck.tensors import BatchParams, SamplingParams, make_backend  # noqa: E402

BACKEND = make_backend("torch", "cpu")


class RaceEngine:
    """An engine's batch draw: softmax(x / T), then argmax(p / q) with q drawn for the whole batch on the process's
    generator (window seeding), or per row from its own generator (request seeding). Records its calls."""

    def __init__(self):
        self.calls = []

    def sample(self, x, t, k, p, m, seeds, offsets):
        self.calls.append((x.shape[0], seeds is None))
        probs = torch.softmax(x / torch.tensor(t)[:, None], dim=-1)
        if seeds is None:
            q = torch.empty_like(probs).exponential_()
        else:
            q = torch.stack([torch.empty(x.shape[1]).exponential_(generator=torch.Generator().manual_seed(
                serve.draws.generator_seed(s, o))) for s, o in zip(seeds, offsets)])
        return probs.div(q).argmax(dim=-1)

    @staticmethod
    def check(t, k, p, m, vocab):
        if t > 2:
            raise ValueError(f"temperature must be in [0, 2], got {t}")


def client(seeding, rows="guard"):
    engine = RaceEngine()
    return serve.Client(serve.Engine(adapter=engine, sample=engine.sample, check=engine.check, seeding=seeding,
                                     seed_window=serve.seed_global), rows), engine


def params(tuples, lanes, rows=None):
    return BatchParams.of_rows(BACKEND, tuples, rows if rows is not None else range(len(tuples)), lanes)


ROW_A = torch.tensor([[0.0, 0.5, 1.0, -1.0, 0.2]])
ROW_B = torch.tensor([[1.0, -2.0, 0.0, 0.3, 0.1]])


@pytest.mark.parametrize("seeding", serve.SEEDINGS)
def test_a_rows_token_does_not_depend_on_its_batch(seeding):
    c, engine = client(seeding)
    lanes = 8
    alone = [int(c.sample(ROW_A, params([(1.0, -1, 1.0, 0.0, 7, o)], lanes))[0]) for o in range(20)]
    # The same draws inside batches that mix another row, other parameters and other seeds, in another order.
    logits = torch.cat([ROW_B, ROW_A] * 20)
    tuples = []
    for o in range(20):
        tuples += [(0.7, -1, 1.0, 0.0, 7, o), (1.0, -1, 1.0, 0.0, 7, o)] if o % 2 else \
                  [(1.0, -1, 1.0, 0.0, 9, o), (1.0, -1, 1.0, 0.0, 7, o)]
    batch = c.sample(logits, params(tuples, lanes)).tolist()
    assert batch[1::2] == alone
    # A COUNT's window (the row replicated, offsets of one window) draws the same tokens.
    counted = c.sample(ROW_A.expand(lanes, 5), params([(1.0, -1, 1.0, 0.0, 7, o) for o in range(8)], lanes, [0] * 8))
    assert counted.tolist() == alone[:8]
    if seeding == "window":   # one engine call per (parameters, seed, window, layer): never one per draw
        assert all(rows == lanes and unseeded for rows, unseeded in engine.calls)


def test_window_seeding_draws_the_row_distribution():
    # 4000 draws of softmax([0, 0.5, 1, -1, 0.2]) through windows of 64: chi-square at 4 dof below 23.5
    # (p = 1e-4 under the null; fixed seed, so deterministic).
    c, _ = client("window")
    lanes = 64
    tokens = []
    for start in range(0, 4000, lanes):
        tokens += c.sample(ROW_A.expand(lanes, 5), params([(1.0, -1, 1.0, 0.0, 3, start + i) for i in range(lanes)],
                                                         lanes, [0] * lanes)).tolist()
    counts = torch.bincount(torch.tensor(tokens), minlength=5).double()
    expected = torch.softmax(ROW_A[0].double(), dim=0) * len(tokens)
    assert float(((counts - expected) ** 2 / expected).sum()) < 23.5


def test_unsamplable_rows_are_answered_minus_one_without_reaching_the_engine():
    c, engine = client("request")
    logits = torch.cat([ROW_A, torch.full((1, 5), float("nan")), torch.full((1, 5), float("-inf"))])
    out = c.sample(logits, params([(1.0, -1, 1.0, 0.0, 1, 0)] * 3, 8))
    assert out.tolist()[1:] == [-1, -1] and 0 <= out[0] < 5
    assert engine.calls == [(1, False)]
    raw, engine = client("request", rows="raw")
    raw.sample(logits, params([(1.0, -1, 1.0, 0.0, 1, 0)] * 3, 8))
    assert engine.calls == [(3, False)]


def test_rejected_parameters_are_an_invalid_argument_naming_the_value():
    c, engine = client("request")
    with pytest.raises(SamplerError) as err:
        c.sample(ROW_A, params([(2.5, -1, 1.0, 0.0, 1, 0)], 8))
    assert err.value.code == ERR_INVALID_ARGUMENT and "2.5" in str(err.value)
    assert engine.calls == []


class ChainEngine:
    """Records what a verify call hands the engine; accepts every draft, bonus token 0."""

    def __init__(self):
        self.seen = []

    def verify(self, target, drafts, draft, t, k, p, m, seeds, offsets):
        self.seen.append((tuple(target.shape), drafts.clone(), None if draft is None else draft.clone(),
                          list(seeds), list(offsets)))
        b, g = drafts.shape
        return torch.full((b,), g), torch.cat([drafts, torch.zeros(b, 1, dtype=torch.long)], dim=1)

    @staticmethod
    def processed_logprobs(x, t, k, p, m):
        return torch.log_softmax(x / t, dim=-1)


def verify_call(form, g=2, vocab=5, trials=3):
    call = VerifyCall()
    call.vocab, call.g, call.form, call.trials, call.uniforms = vocab, g, form, trials, ()
    call.params = SamplingParams(1.0, -1, 1.0, 0.0, 11, 100)
    call.draft_params = SamplingParams(0.5, -1, 1.0, 0.0, 0, 0)
    call.target = torch.zeros(g + 1, vocab)
    call.draft = None if form == DRAFT_ONE_HOT else torch.log(torch.tensor([[0.1, 0.2, 0.3, 0.2, 0.2]] * g))
    if form == DRAFT_PROBABILITIES:
        call.draft = call.draft.exp()
    call.draft_tokens = torch.tensor([[1, 2], [3, 4], [0, 1]])
    return call


@pytest.mark.parametrize("form", [DRAFT_PROBABILITIES, DRAFT_LOGITS, DRAFT_ONE_HOT])
@pytest.mark.parametrize("engine_form", ["probs", "logits"])
def test_verify_seeds_each_trial_and_hands_the_draft_in_the_engines_form(form, engine_form):
    chain = ChainEngine()
    c = serve.Client(serve.Engine(adapter=chain, sample=None, check=RaceEngine.check, verify=chain.verify,
                                  draft_form=engine_form, processed_logprobs=chain.processed_logprobs))
    accepted, tokens = c.verify(verify_call(form))
    assert accepted == [2, 2, 2] and tokens[1] == [3, 4, 0]
    shape, drafts, draft, seeds, offsets = chain.seen[0]
    assert shape == (3, 3, 5) and drafts.tolist() == [[1, 2], [3, 4], [0, 1]]
    assert seeds == [11] * 3 and offsets == [100, 103, 106]          # trial i at offset + i (g + 1)
    if form == DRAFT_ONE_HOT:
        assert draft is None
        return
    q = torch.tensor([0.1, 0.2, 0.3, 0.2, 0.2])
    if form == DRAFT_LOGITS:   # processed under the draft's parameters (T = 0.5) by the engine's own function
        q = torch.softmax(torch.log(q) / 0.5, dim=0)
    got = draft[0, 0] if engine_form == "probs" else torch.softmax(draft[0, 0], dim=0)
    assert torch.allclose(got, q, atol=1e-6)
