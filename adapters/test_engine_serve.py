"""adapters/engine_serve.py without any engine tree: the serving rules on a stand-in engine (a torch exponential race
on the process's generator, or per-request generators), so they run in CI. Deterministic (fixed seeds)."""
import sys
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")

sys.path.insert(0, str(Path(__file__).resolve().parent))
import engine_serve as serve  # noqa: E402
import engine_source as es  # noqa: E402

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
        n = x.shape[0]
        probs = torch.softmax(x / torch.tensor(es.per_row(t, n, "t", float))[:, None], dim=-1)
        if seeds is None:
            q = torch.empty_like(probs).exponential_()
        else:
            q = torch.stack([torch.empty(x.shape[1]).exponential_(generator=torch.Generator().manual_seed(
                serve.draws.generator_seed(s, o))) for s, o in zip(es.u64_list(seeds, n, "seeds"),
                                                                    es.u64_list(offsets, n, "offsets"))])
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


# -- the fast paths of issue 41: COUNT on the device, parameters once, batches sized to the device -------------------
import random  # noqa: E402

import samplecheck  # noqa: E402
from samplecheck import protocol as P  # noqa: E402


def old_count(c, row, t, draws, lanes):
    """COUNT as serve answered it before engine_serve had its own: sample() on copies of the row, one window of L
    offsets a call, tallied in Python (samplecheck.Sampler's replication)."""
    sampler = samplecheck.Sampler(c.sample, tensors="torch", device="cpu", lanes=lanes)
    return sampler._count_by_replication(row.shape[1], t, draws, bytearray(row.numpy().astype("<f4").tobytes()))


@pytest.mark.parametrize("seeding", serve.SEEDINGS)
@pytest.mark.parametrize("offset", [0, 5, 2 ** 64 - 7])
def test_count_is_the_bincount_of_the_draws_sampled_one_by_one(seeding, offset):
    c, engine = client(seeding)
    c.batch = 16                      # B = 16 rows a call: 50 draws are 4 calls, the last short
    lanes, draws, t = 8, 50, (1.0, -1, 1.0, 0.0, 7, offset)
    histogram, invalid = c.count(ROW_A, params([t], lanes), draws)
    one_by_one = [int(c.sample(ROW_A, params([t[:5] + ((offset + i) % 2 ** 64,)], lanes))[0]) for i in range(draws)]
    assert invalid == 0 and histogram.tolist() == torch.bincount(torch.tensor(one_by_one), minlength=5).tolist()
    assert (histogram.tolist(), invalid) == old_count(c, ROW_A, t, draws, lanes)
    if seeding == "request":          # thousands of rows a call on a GPU; here the batch, never one row a call
        assert [rows for rows, _ in engine.calls[:4]] == [16, 16, 16, 2]


def test_count_with_a_fixed_shape_always_calls_the_engine_with_b_rows():
    engine = RaceEngine()
    c = serve.Client(serve.Engine(adapter=engine, sample=engine.sample, check=engine.check, seeding="request",
                                  fixed_shape=True), batch=16)
    t = (1.0, -1, 1.0, 0.0, 3, 100)
    histogram, invalid = c.count(ROW_B, params([t], 8), 40)
    assert {rows for rows, _ in engine.calls} == {16} and len(engine.calls) == 3
    reference, _ = client("request")
    reference.batch = 40
    assert histogram.tolist() == reference.count(ROW_B, params([t], 8), 40)[0].tolist() and invalid == 0


def test_count_of_an_unsamplable_row_is_every_draw_invalid_without_the_engine():
    c, engine = client("request")
    histogram, invalid = c.count(torch.full((1, 5), float("nan")), params([(1.0, -1, 1.0, 0.0, 1, 0)], 8), 33)
    assert invalid == 33 and histogram.tolist() == [0] * 5 and engine.calls == []


def test_count_names_tokens_outside_the_vocabulary():
    bad = serve.Engine(adapter=None, sample=lambda x, *a: torch.full((x.shape[0],), 5), check=RaceEngine.check)
    with pytest.raises(SamplerError, match="returned 12 tokens outside 0..4"):
        serve.Client(bad).count(ROW_A, params([(1.0, -1, 1.0, 0.0, 1, 0)], 8), 12)


class Recorder(RaceEngine):
    """Records how the parameters reach the engine: scalars or columns."""

    def sample(self, x, t, k, p, m, seeds, offsets):
        self.kinds = [type(v).__name__ for v in (t, k, p, m, seeds, offsets)]
        return super().sample(x, t, k, p, m, seeds, offsets)


def test_a_batch_of_one_request_reaches_the_engine_as_scalars_and_a_mixed_one_as_columns():
    engine = Recorder()
    c = serve.Client(serve.Engine(adapter=engine, sample=engine.sample, check=engine.check, seeding="request"))
    logits = torch.cat([ROW_A] * 6)
    same = [(0.8, -1, 1.0, 0.0, 4, o) for o in range(6)]
    tokens = c.sample(logits, params(same, 8, [0] * 6))
    assert engine.kinds == ["float", "int", "float", "float", "Tensor", "Tensor"]
    mixed = same[:3] + [(1.0, -1, 1.0, 0.0, 4, o) for o in range(3, 6)]
    c.sample(logits, params(mixed, 8, [0] * 6))
    assert engine.kinds == ["Tensor"] * 6
    c.batch = 4                        # more rows than one batch: calls of B rows, the same tokens
    assert torch.equal(c.sample(logits, params(same, 8, [0] * 6)), tokens)


def test_the_vectorized_request_seeds_are_request_seed_row_by_row():
    rng = random.Random(4)
    seeds = [rng.getrandbits(64) for _ in range(500)] + [0, 2 ** 63, 2 ** 64 - 1, 2 ** 63 - 1]
    offsets = [rng.getrandbits(64) for _ in seeds[:-4]] + [2 ** 64 - 1, 0, 2 ** 63, 1]
    column = lambda values: torch.tensor([es.as_int64(v) for v in values])  # noqa: E731
    expected = [es.request_seed(s, o) for s, o in zip(seeds, offsets)]
    assert es.request_seeds(column(seeds), column(offsets)).tolist() == expected
    assert es.request_seed_list(column(seeds), column(offsets), len(seeds)) == expected
    assert es.request_seed_list(seeds[7], column(offsets), len(seeds)) == [es.request_seed(seeds[7], o)
                                                                            for o in offsets]
    assert es.u64_list(column(offsets), len(offsets), "offsets") == offsets


def test_batch_rows_are_a_power_of_two_sized_to_the_device():
    assert serve.batch_rows(32000, "cpu") == 128 and serve.batch_rows(128256, "cpu") == 32
    assert serve.batch_rows(10, "cpu") == serve.MAX_BATCH_ROWS and serve.batch_rows(10 ** 9, "cpu") == 1
    assert serve.batch_rows(32000, "cpu", requested=300) == 300


@pytest.mark.parametrize("seeding", serve.SEEDINGS)
def test_the_count_answer_is_the_same_histogram_frame_as_serves_replication(seeding):
    c, _ = client(seeding)
    c.batch = 32
    t = (1.0, -1, 1.0, 0.0, 11, 2 ** 63 - 20)
    payload = struct_count(ROW_A, t, 300)
    fast = samplecheck.Sampler(c.sample, count=c.count, tensors="torch", device="cpu", lanes=8)
    slow = samplecheck.Sampler(c.sample, tensors="torch", device="cpu", lanes=8)
    answer = fast.handle(P.COUNT, payload)
    assert answer == slow.handle(P.COUNT, payload) and answer[4:8] == P.HISTOGRAM.to_bytes(4, "little")


def struct_count(row, t, draws):
    import struct
    return bytearray(struct.pack("<Q", row.shape[1]) + P.PARAMS.pack(*t) + struct.pack("<Q", draws) +
            row.numpy().astype("<f4").tobytes())


# -- --count-seeding window and staged COUNT --------------------------------------------------------------------------
def test_count_seeding_window_counts_the_unseeded_path_and_sample_stays_seeded():
    engine = RaceEngine()
    c = serve.Client(serve.Engine(adapter=engine, sample=engine.sample, check=engine.check, seeding="request",
                                  seed_window=serve.seed_global), batch=16, count_seeding="window")
    t = (1.0, -1, 1.0, 0.0, 9, 5)
    histogram, invalid = c.count(ROW_A, params([t], 8), 40)
    # B = 16 lanes a window: offsets 5..44 are windows 0, 1 and 2 (lanes 5.., all, ..12), every call unseeded
    assert engine.calls == [(16, True)] * 3 and invalid == 0 and int(histogram.sum()) == 40
    again, _ = c.count(ROW_A, params([t], 8), 40)
    assert again.tolist() == histogram.tolist()          # a function of (seed, offset): reproducible
    engine.calls.clear()
    c.sample(ROW_A, params([t], 8))
    assert engine.calls == [(1, False)]                  # SAMPLE: the per-request generator
    # the distribution, not SAMPLE's tokens: 20000 counted draws against softmax(ROW_A) (chi-square, 4 dof; the
    # 0.999 quantile is 18.5, so a correct engine fails this one fixed-seed test with probability 1e-3)
    big, _ = c.count(ROW_A, params([(1.0, -1, 1.0, 0.0, 9, 0)], 8), 20000)
    expected = torch.softmax(ROW_A[0].double(), dim=0) * 20000
    assert float(((big.double() - expected) ** 2 / expected).sum()) < 18.5


def test_count_seeding_window_is_refused_where_it_cannot_mean_anything():
    engine = RaceEngine()
    with pytest.raises(ValueError, match="for --seeding request"):
        serve.Client(serve.Engine(adapter=engine, sample=engine.sample, check=engine.check, seeding="window",
                                  seed_window=serve.seed_global), count_seeding="window")
    with pytest.raises(ValueError, match="no batch-wide"):
        serve.Client(serve.Engine(adapter=engine, sample=engine.sample, check=engine.check, seeding="request"),
                     count_seeding="window")
    with pytest.raises(ValueError, match="count_seeding must be one of same, window"):
        serve.Client(serve.Engine(adapter=engine, sample=engine.sample, check=engine.check), count_seeding="all")


def test_the_hello_says_the_counts_are_distributional_only_when_they_are():
    c, _ = client("request")
    plain = samplecheck.Sampler(c.sample, count=c.count, tensors="torch", device="cpu")
    flagged = samplecheck.Sampler(c.sample, count=c.count, tensors="torch", device="cpu", count_distributional=True)
    assert not plain.capabilities & P.CAP_COUNT_DISTRIBUTIONAL
    assert flagged.capabilities & P.CAP_COUNT_DISTRIBUTIONAL and flagged.capabilities & P.CAP_COUNT
    with pytest.raises(ValueError, match="needs a count callable"):
        samplecheck.Sampler(c.sample, tensors="torch", device="cpu", count_distributional=True)


class StagedRace(RaceEngine):
    """A composition: the masked distribution (softmax(x / T)) once a row, then the race on the copies with the
    process's generator (what the whole sample does, so staged tokens equal whole ones); ``skew`` makes draw differ."""

    def __init__(self, skew=False):
        super().__init__()
        self.skew, self.draws = skew, 0

    def stage(self, row, t, k, p, m):
        return None if k == 1 else torch.softmax(row / t, dim=-1)      # top_k = 1: greedy, drawn whole

    def draw(self, probs, lanes):
        self.draws += 1
        q = torch.empty(lanes, probs.shape[1]).exponential_()
        tokens = probs.expand(lanes, -1).div(q).argmax(dim=-1)
        return (tokens + 1) % probs.shape[1] if self.skew else tokens


def staged_client(skew=False, stage=True):
    engine = StagedRace(skew)
    return serve.Client(serve.Engine(adapter=engine, sample=engine.sample, check=engine.check, seeding="window",
                                     seed_window=serve.seed_global, stage=engine.stage, draw=engine.draw),
                        stage=stage), engine


@pytest.mark.parametrize("offset", [0, 3])
def test_a_staged_count_is_the_whole_samplers_count_when_the_first_window_agrees(offset):
    c, engine = staged_client()
    t = (1.0, -1, 1.0, 0.0, 21, offset)
    histogram, invalid = c.count(ROW_A, params([t], 8), 60)
    whole, _ = staged_client(stage=False)[0].count(ROW_A, params([t], 8), 60)
    assert histogram.tolist() == whole.tolist() and invalid == 0
    # the first window twice (whole and staged), the others through draw alone
    assert len(engine.calls) == 1 and engine.draws == len(range(offset // 8, (offset + 59) // 8 + 1))
    assert c.stage_tally == {"counts": 1, "staged": 1, "whole": 0, "lanes_compared": 8}
    assert "1 staged after their first window matched" in c.stage_summary()


def test_a_staged_count_whose_first_window_differs_is_drawn_whole_and_says_so(capsys):
    c, engine = staged_client(skew=True)
    t = (1.0, -1, 1.0, 0.0, 21, 0)
    histogram, _ = c.count(ROW_A, params([t], 8), 60)
    whole, _ = staged_client(stage=False)[0].count(ROW_A, params([t], 8), 60)
    assert histogram.tolist() == whole.tolist() and engine.draws == 1 and len(engine.calls) == 8
    assert c.stage_tally["whole"] == 1 and "staged COUNT drawn whole: at seed 21, window 0" in capsys.readouterr().err


def test_greedy_rows_are_not_staged_and_the_name_says_what_counts():
    c, engine = staged_client()
    c.count(ROW_A, params([(1.0, 1, 1.0, 0.0, 2, 0)], 8), 20)
    assert engine.draws == 0 and c.stage_tally["counts"] == 1 and c.stage_tally["staged"] == 0
    e = c.engine
    assert serve.count_suffix(e, "same", True) == "+staged" and serve.count_suffix(e, "same", False) == ""
    plain = serve.Engine(adapter=None, sample=None, check=None, seeding="request", seed_window=serve.seed_global)
    assert serve.count_suffix(plain, "window", True) == "+counts=window"
    with pytest.raises(ValueError, match="both stage and draw"):
        serve.Client(serve.Engine(adapter=None, sample=None, check=None, stage=engine.stage))
