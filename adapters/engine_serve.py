"""Serving an engine adapter as a samplecheck process client (docs/process-protocol.md, docs/python.md).

    samplecheck run --suite smoke --profile vllm \
        --sampler "process:/usr/bin/python3 adapters/vllm/serve.py --src DIR --path pytorch"

Shared by adapters/{vllm,sglang,trtllm,tokenspeed}/serve.py. Each builds its adapter object (the engine's own files,
loaded by adapters/<engine>/<engine>_adapter.py) and hands it here with an ``Engine`` description; this module turns
it into ``samplecheck.serve(...)`` callables. What is this module's and not the engine's, so a report can be read:

  * the rows that cannot be sampled (a NaN logit, every logit -inf) are answered -1 without reaching the engine
    (``--rows guard``, the default; the protocol asks for -1). ``--rows raw`` hands them to the engine: whatever
    it draws is then judged;
  * parameter validation before any draw (``Engine.check``: the engine's own where the adapter loads it, e.g.
    SGLang's ``SamplingParams.verify``; else the adapter's transcription of the engine's rules, named in its
    README), a ``ValueError`` answered as ERROR 1 (invalid argument) naming the row and the value;
  * how a (seed, offset) pair reaches the engine's random numbers, one of two seedings:
      request  one engine call over every call row, each row a request seeded by its own (seed, offset) (vLLM v1's
               per-request ``torch.Generator``, MRV2's and TokenSpeed's (seed, position) keys, SGLang's seeded hash).
               A COUNT is engine calls of B copies of the row (``batch_rows``: from the free device memory,
               thousands of rows at V = 128k on a GPU; ``--batch-rows``), counted on the device (``Client.count``).
      window   the engine's batch-wide draw (an unseeded request: the process's generator, or one generator per
               strategy group): the call rows are grouped by (row, parameters, seed, window = offset // L), and each
               group is ONE engine call over L copies of its row, after the engine's generator is seeded from
               (seed, window); the draw at offset o is lane o % L of that call (the scheme of
               samplecheck.draws.windowed_race, with the engine doing the step). A COUNT window is exactly one
               such call; a row's token does not depend on the other rows of a request, so samplecheck's agreement
               and batch-invariance checks hold for a correct engine. A COUNT is one call a window, counted on the
               device.
    ``--count-seeding window`` (request seeding only): SAMPLE stays request-seeded, and a COUNT is drawn by the
    engine's unseeded production path, window-seeded as above over B lanes (``batch_rows``). Its tokens are then
    not SAMPLE's at the same (seed, offset), only its distribution (vLLM: the same sampler, its batch-wide draw in
    place of a per-request ``torch.Generator``); the HELLO says so (capability bit 512), samplecheck judges the
    agreement as two samples, and every seeded check stays on SAMPLE. The name says ``+counts=window``.
    Either way every draw is the engine's own per-step draw on an engine batch; nothing here draws a token. A batch
    whose rows share (t, k, p, m) reaches the engine with them as scalars (one parameter object, built once by the
    adapter), the seeds and offsets as int64 device columns of their u64 bits.
  * staged COUNT (``Engine.stage`` and ``Engine.draw``, where the engine is a composition of its own masking and
    drawing functions, e.g. TensorRT-LLM's ``top_k_top_p_sampling_batch``, whose ``probs`` go to its line-171
    ``torch.multinomial``): a window-seeded COUNT computes the row's masked distribution once, and its windows
    then go through the drawing function alone. Its first window is drawn both ways from the same seed; only when
    the staged tokens equal the whole sampler's, lane for lane, is the rest staged, else the COUNT is drawn whole
    and stderr says so. Every COUNT's first window is that check (a sample of every row and seed the campaign
    counts); the process's tally goes to stderr at exit. The name says ``+staged``; ``--no-stage`` draws whole.
  * VERIFY (``Engine.verify``): the trials of one chain request become one engine batch of B chains (the target rows
    replicated), trial i seeded by (seed, offset + i (g + 1)); the draft in the form the engine takes (``Engine.
    draft_form``: probabilities, logits, or none for one-hot drafts). A logits-form draft (samplecheck's form 1,
    processed under the draft's parameters) is turned into the engine's form through the engine's own processed
    distribution (``Engine.processed_logprobs`` under the draft parameters).
"""
from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Optional

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "python"))   # the samplecheck package of this checkout (docs/python.md)
import samplecheck  # noqa: E402
from samplecheck import draws  # noqa: E402

sys.path.pop(0)

SEEDINGS = ("request", "window")
COUNT_SEEDINGS = ("same", "window")
ROWS = ("guard", "raw")
_U64 = (1 << 64) - 1


@dataclass
class Engine:
    """What serve needs of an adapter object.

    sample(x [rows, V] fp32, t, k, p, m, seeds, offsets) -> [rows] tokens. t, k, p, m: one Python scalar each
        when every row shares them (COUNT, a replicated batch), else one value a row (device columns); seeds and
        offsets (request seeding): a Python int or the int64 device column of the u64 bits (``engine_source.
        u64_list`` gives the unsigned values, ``engine_source.request_seeds`` the per-request seeds at once); seeds
        None in window seeding (the engine draws from the generator ``seed_window`` just seeded).
    seed_window(seed, window): seed the generator the engine's batch-wide draw uses (window seeding only).
    check(t, k, p, m, vocab): raise ValueError for parameters the engine rejects (one row).
    processed_logprobs(x [rows, V], t, k, p, m) -> [rows, V] log-probabilities (PROCESSED), or None.
    verify(target [B, g+1, V], draft_tokens [B, g], draft, t, k, p, m, seeds, offsets) -> (accepted [B],
        tokens [B, g+1]), or None; draft_form: "probs" | "logits" (the draft's distribution as logits whose
        softmax is q) | "none" (the engine verifies without draft probabilities: one-hot drafts only) |
        "ignored" (the engine's rule never reads q, e.g. accept iff the draft equals the target's own draw).
    fixed_shape: COUNT always calls the engine with B rows (an engine that builds a backend per batch shape).
    stage(row [1, V], t, k, p, m) -> the engine's masked distribution of the row, ready for draw (None: this row is
        not staged, e.g. greedy); draw(state, lanes) -> [lanes] tokens, the engine's drawing function on ``lanes``
        copies of it with the generator ``seed_window`` just seeded. Both or neither (staged COUNT, above).
    """
    adapter: object
    sample: Callable
    check: Callable
    seeding: str = "request"
    seed_window: Optional[Callable] = None
    processed_logprobs: Optional[Callable] = None
    verify: Optional[Callable] = None
    draft_form: str = "probs"
    nondeterministic: bool = False
    fixed_shape: bool = False
    stage: Optional[Callable] = None
    draw: Optional[Callable] = None


def add_arguments(ap: argparse.ArgumentParser, env_var: str, default_seeding: str = "request",
                  seedings=SEEDINGS) -> None:
    ap.add_argument("--src", help=f"engine source tree (default: ${env_var})")
    ap.add_argument("--device", default=None, help="cpu or cuda (default: cuda when available)")
    ap.add_argument("--profile", default="", help="the profile the HELLO claims (reports only; the run's "
                    "--profile judges)")
    ap.add_argument("--rows", choices=ROWS, default="guard",
                    help="guard (default): rows with a NaN or every logit -inf are answered -1 without reaching "
                         "the engine; raw: they reach the engine")
    ap.add_argument("--seeding", choices=seedings, default=default_seeding,
                    help="how (seed, offset) reaches the engine's random numbers (adapters/engine_serve.py)")
    ap.add_argument("--lanes", type=int, default=None, help="L: replicated rows per engine call (default "
                    "samplecheck.lanes_for(V), up to 16384 on cuda). Window seeding draws a whole window of L lanes "
                    "for every (seed, window) a call touches: a call of rows at many seeds costs L draws a row, so "
                    "on cuda pass a small L (64)")
    ap.add_argument("--batch-rows", type=int, default=None, metavar="B",
                    help="rows of one engine call over replicated rows under request seeding (COUNT chunks; default "
                         "from the free device memory, engine_serve.batch_rows: thousands at V = 128k on a GPU). A "
                         "row's token does not depend on it")
    ap.add_argument("--count-seeding", choices=COUNT_SEEDINGS, default="same",
                    help="same (default): COUNT draws SAMPLE's tokens; window (with --seeding request): COUNT draws "
                         "the engine's unseeded production path, window-seeded over B lanes (its distribution, not "
                         "SAMPLE's tokens: capability bit 512; the name says +counts=window)")
    ap.add_argument("--no-stage", action="store_true",
                    help="draw every COUNT window through the whole sampler, never staged (the name then has no "
                         "+staged)")
    ap.add_argument("--describe", action="store_true", help="print the name, loaded files and stubs, then exit")


def default_device(requested):
    import torch
    return requested or ("cuda" if torch.cuda.is_available() else "cpu")


def _invalid_mask(x):
    return draws.invalid_rows(x)


def es_tensor(value) -> bool:
    return type(value).__module__.startswith("torch") and hasattr(value, "dim")


def torch_tensor(tokens, device):
    import torch
    return torch.as_tensor(tokens, device=device)


def _unique_params(params, rows):
    """The distinct (t, k, p, m) tuples of the call rows ``rows`` (None: every row). One pass of C-level zip/set over
    the host columns, no Python loop a row."""
    cols = [params.host(c) for c in ("temperature", "top_k", "top_p", "min_p")]
    if rows is None:
        return set(zip(*cols))
    return {(cols[0][r], cols[1][r], cols[2][r], cols[3][r]) for r in rows}


# Batch sizing of the engine calls over replicated rows (request seeding: COUNT chunks, and SAMPLE calls larger than
# one batch). A row's token under request seeding is a function of its logits, parameters, seed and offset, not of
# the batch, so the rows of a call are the device's to choose: as many as a quarter of the free device memory holds
# at BATCH_BYTES_PER_LOGIT bytes a logit (the fp32 row copy, a full sort's values and int64 indices, probabilities,
# noise: the sort-based paths' working set), a power of two, at most MAX_BATCH_ROWS and below 2^31 elements (int32
# element offsets in the kernels). On the CPU a call holds at most CPU_BATCH_ELEMENTS logits.
BATCH_BYTES_PER_LOGIT = 64
MAX_BATCH_ROWS = 16384
CPU_BATCH_ELEMENTS = 1 << 22


def batch_rows(vocab: int, device, requested=None) -> int:
    """B(V, device): the rows of one engine call over replicated rows (``--batch-rows`` overrides)."""
    if requested:
        return max(1, int(requested))
    import torch
    device = torch.device(device)
    vocab = max(1, int(vocab))
    if device.type == "cuda":
        free, _ = torch.cuda.mem_get_info(device)
        rows = min((free // 4) // (BATCH_BYTES_PER_LOGIT * vocab), ((1 << 31) - 1) // vocab)
    else:
        rows = CPU_BATCH_ELEMENTS // vocab
    rows = max(1, min(MAX_BATCH_ROWS, int(rows)))
    return 1 << (rows.bit_length() - 1)


def _offsets(start: int, count: int, device):
    """The offsets start, start + 1, ... (mod 2^64) of ``count`` draws as the int64 tensor of their u64 bits (int64
    addition wraps as u64 addition does)."""
    import torch
    return torch.arange(count, dtype=torch.int64, device=device) + es_int64(start)


def es_int64(value: int) -> int:
    value = int(value) & _U64
    return value - (1 << 64) if value >= (1 << 63) else value


class _Tally:
    """A COUNT's histogram on the device: bucket 0 the -1 draws, 1..V the tokens, V + 1 the tokens outside [-1, V)
    (an engine bug, reported after the count); one bincount a call, no host sync until the end."""

    def __init__(self, vocab, device):
        import torch
        self.vocab = vocab
        self.buckets = torch.zeros(vocab + 2, dtype=torch.int64, device=device)

    def add(self, tokens):
        import torch
        tokens = tokens.long()
        bad = (tokens < -1) | (tokens >= self.vocab)
        index = torch.where(bad, torch.full_like(tokens, self.vocab + 1), tokens + 1)
        self.buckets += torch.bincount(index, minlength=self.vocab + 2)

    def result(self, what):
        counts = self.buckets.cpu()
        if int(counts[-1]):
            raise samplecheck.SamplerError(
                samplecheck.ERR_FAILED, f"{what} returned {int(counts[-1])} tokens outside 0..{self.vocab - 1} "
                f"(vocab {self.vocab}) and -1")
        return counts[1:-1], int(counts[0])


class Client:
    """The callables of samplecheck.serve for one Engine."""

    def __init__(self, engine: Engine, rows: str = "guard", batch=None, count_seeding: str = "same",
                 stage: bool = True):
        if rows not in ROWS:
            raise ValueError(f"rows must be one of {', '.join(ROWS)}, got {rows!r}")
        if count_seeding not in COUNT_SEEDINGS:
            raise ValueError(f"count_seeding must be one of {', '.join(COUNT_SEEDINGS)}, got {count_seeding!r}")
        if count_seeding == "window":
            if engine.seeding != "request":
                raise ValueError("--count-seeding window is for --seeding request (window seeding already counts "
                                 "through the engine's batch-wide draw)")
            if engine.seed_window is None:
                raise ValueError("--count-seeding window: this engine path has no batch-wide (unseeded) draw to "
                                 "seed")
        if (engine.stage is None) != (engine.draw is None):
            raise ValueError("an Engine gives both stage and draw, or neither")
        self.engine, self.rows, self.batch = engine, rows, batch
        self.count_seeding = count_seeding
        self.count_windows = engine.seeding == "window" or count_seeding == "window"
        self.staged = stage and engine.stage is not None and self.count_windows
        self.stage_tally = {"counts": 0, "staged": 0, "whole": 0, "lanes_compared": 0}
        self._batch_rows = {}

    def batch_rows(self, vocab, device) -> int:
        """B for this vocabulary and device, decided once (the caching allocator's reserve would shrink a later
        reading of the free memory)."""
        key = (int(vocab), str(device))
        if key not in self._batch_rows:
            self._batch_rows[key] = batch_rows(vocab, device, self.batch)
        return self._batch_rows[key]

    # -- validation ----------------------------------------------------------------------------------------------------
    def _check(self, params, rows, vocab):
        """Every distinct (t, k, p, m) of the call rows through the engine's check; returns them (sorted)."""
        distinct = sorted(_unique_params(params, rows))
        for t, k, p, m in distinct:
            try:
                self.engine.check(t, k, p, m, vocab)
            except ValueError as exc:
                raise samplecheck.SamplerError(
                    samplecheck.ERR_INVALID_ARGUMENT,
                    f"{exc} (temperature {t}, top_k {k}, top_p {p}, min_p {m})") from None
        return distinct

    # -- SAMPLE and SAMPLE_REPLICATED ------------------------------------------------------------------------------------
    def sample(self, logits, params):
        """One token per call row. Request seeding: the rows in one engine call (calls of at most B rows when there
        are more), the parameters as one scalar each when every row shares them (a replicated batch: one parameter
        object, built once by the adapter) and as device columns otherwise, seeds and offsets as the int64 device
        columns of their u64 bits."""
        import torch
        n, vocab = logits.shape
        device = logits.device
        out = torch.full((n,), -1, dtype=torch.int64, device=device)
        if self.rows == "guard":
            bad = _invalid_mask(logits)
            good = torch.nonzero(~bad).reshape(-1) if bool(bad.any()) else None
        else:
            good = None
        if good is not None and good.numel() == 0:
            return out
        rows = None if good is None else good.tolist()
        distinct = self._check(params, rows, vocab)
        if self.engine.seeding != "request":
            return self._sample_windows(logits, params, range(n) if rows is None else rows, out)
        x = logits if good is None else logits.index_select(0, good)
        pick = (lambda c: c) if good is None else (lambda c: c.index_select(0, good))
        if len(distinct) == 1:
            t, k, p, m = distinct[0]
        else:
            t, k, p, m = (pick(c) for c in (params.temperature, params.top_k, params.top_p, params.min_p))
        seeds, offsets = pick(params.seed), pick(params.offset)
        rows_n = x.shape[0]
        step = self.batch_rows(vocab, device) if rows_n > self.batch_rows(vocab, device) else rows_n
        parts = []
        for lo in range(0, rows_n, step):
            hi = min(rows_n, lo + step)
            cut = (lambda c: c) if (lo, hi) == (0, rows_n) else (lambda c: c[lo:hi] if es_tensor(c) else c)
            parts.append(torch.as_tensor(self.engine.sample(
                x[lo:hi].contiguous(), cut(t), cut(k), cut(p), cut(m), cut(seeds), cut(offsets)),
                device=device).long())
        tokens = parts[0] if len(parts) == 1 else torch.cat(parts)
        if good is None:
            return tokens
        out[good] = tokens
        return out

    def _sample_windows(self, logits, params, good, out):
        """Window seeding: one engine call per (parameters, seed, window) and layer. Lane j of a call holds the call
        row whose offset is j modulo L (the other lanes a copy of one of the group's rows), so a row's token is a
        function of its logits, parameters, seed and offset: the noise of lane j depends on the window's seed and
        on j only, and every row of a call shares its parameters (the engine's batch flags). Rows of one group on
        the same lane (another row at the same seed and offset) go to further calls (layers)."""
        import torch
        lanes, device = params.lanes, logits.device
        keys = [params.host(c) for c in ("temperature", "top_k", "top_p", "min_p", "seed")]
        offsets = params.host("offset")
        groups = {}
        for r in good:
            key = tuple(col[r] for col in keys) + (offsets[r] // lanes,)
            groups.setdefault(key, {}).setdefault(offsets[r] % lanes, []).append(r)
        for (t, k, p, m, seed, window), by_lane in groups.items():
            filler = next(iter(by_lane.values()))[0]
            for layer in range(max(len(rows) for rows in by_lane.values())):
                placed = {lane: rows[layer] for lane, rows in by_lane.items() if len(rows) > layer}
                index = torch.tensor([placed.get(j, filler) for j in range(lanes)], dtype=torch.int64,
                                     device=device)
                self.engine.seed_window(seed, window)
                tokens = torch.as_tensor(self.engine.sample(
                    logits.index_select(0, index).contiguous(), t, k, p, m, None, None), device=device).long()
                lane = torch.tensor(list(placed), dtype=torch.int64, device=device)
                out[torch.tensor(list(placed.values()), dtype=torch.int64, device=device)] = tokens.index_select(
                    0, lane)
        return out

    # -- COUNT ---------------------------------------------------------------------------------------------------------
    def count(self, logits, params, draws):
        """COUNT: ``draws`` draws of one row, draw i at (seed, offset + i), counted on the device. Request seeding:
        engine calls of B copies of the row (``batch_rows``: thousands on a GPU), the row expanded on the device
        and the parameters passed once as scalars with the call's offsets as one int64 tensor; an engine with
        ``fixed_shape`` always gets B rows (the tail's extra draws are drawn and not counted), so it builds one
        backend per V. Window seeding: one engine call over L copies per window (seed, offset // L), as SAMPLE
        draws it. Either way every draw is the one SAMPLE gives at that (seed, offset), and the histogram is one
        bincount a call, read back once."""
        vocab, device = logits.shape[1], logits.device
        tally = _Tally(vocab, device)
        if self.rows == "guard" and bool(_invalid_mask(logits)[0]):
            return tally.result("count")[0], draws
        p = params[0]
        self._check(params, None, vocab)
        row = logits[0]
        if not self.count_windows:
            size = self.batch_rows(vocab, device)
            done = 0
            while done < draws:
                b = min(size, draws - done)
                n = size if self.engine.fixed_shape else b
                tokens = torch_tensor(self.engine.sample(
                    row.expand(n, vocab).contiguous(), p.temperature, p.top_k, p.top_p, p.min_p, p.seed,
                    _offsets(p.offset + done, n, device)), device)
                tally.add(tokens[:b])
                done += b
        else:
            # Window seeding: SAMPLE's lanes (its tokens); --count-seeding window: B lanes (its distribution).
            lanes = params.lanes if self.engine.seeding == "window" else self.batch_rows(vocab, device)
            self._count_windows(row, p, draws, lanes, tally)
        return tally.result("the engine's sample()")

    def _count_windows(self, row, p, draws, lanes, tally):
        """The COUNT's windows (seed, offset // lanes), each one engine call over ``lanes`` copies of the row, the
        draw at offset o lane o % lanes. Staged (``self.staged``): the row's masked distribution once
        (``Engine.stage``), its first window drawn whole and staged from the same seed, and only when the two agree
        lane for lane are the other windows drawn by ``Engine.draw`` alone."""
        import torch
        vocab, device = row.shape[0], row.device
        copies = row.expand(lanes, vocab).contiguous()
        state = None
        if self.staged:
            state = self.engine.stage(row.unsqueeze(0), p.temperature, p.top_k, p.top_p, p.min_p)
            self.stage_tally["counts"] += 1
        checked = state is None
        at, remaining = p.offset, draws
        while remaining > 0:
            lo = at % lanes
            take = min(remaining, lanes - lo)
            window = at // lanes
            self.engine.seed_window(p.seed, window)
            if checked and state is not None:
                tokens = torch_tensor(self.engine.draw(state, lanes), device)
            else:
                tokens = torch_tensor(self.engine.sample(copies, p.temperature, p.top_k, p.top_p, p.min_p, None,
                                                         None), device)
            if not checked:
                checked = True
                self.engine.seed_window(p.seed, window)
                staged = torch_tensor(self.engine.draw(state, lanes), device).long()
                self.stage_tally["lanes_compared"] += lanes
                differ = int((staged != tokens.long()).sum())
                if differ:
                    lane = int(torch.nonzero(staged != tokens.long())[0])
                    print(f"engine_serve: staged COUNT drawn whole: at seed {p.seed}, window {window} ({lanes} lanes, "
                          f"V = {vocab}, temperature {p.temperature}, top_k {p.top_k}, top_p {p.top_p}, min_p "
                          f"{p.min_p}) {differ} lanes differ, first lane {lane}: whole {int(tokens[lane])}, staged "
                          f"{int(staged[lane])}", file=sys.stderr, flush=True)
                    state = None
                    self.stage_tally["whole"] += 1
                else:
                    self.stage_tally["staged"] += 1
            tally.add(tokens[lo:lo + take])
            at = (at + take) & _U64
            remaining -= take

    def stage_summary(self) -> str:
        """One line: what staging did in this process (empty when it was off)."""
        if not self.staged:
            return ""
        t = self.stage_tally
        return (f"engine_serve: staged COUNT: {t['counts']} counts; {t['staged']} staged after their first window "
                f"matched the whole sampler lane for lane, {t['whole']} drawn whole after a difference, "
                f"{t['counts'] - t['staged'] - t['whole']} not staged (rows the engine does not stage: greedy); "
                f"{t['lanes_compared']} lanes compared")

    # -- PROCESSED -----------------------------------------------------------------------------------------------------
    def logprobs(self, logits, params):
        import torch
        if bool(_invalid_mask(logits)[0]):
            raise samplecheck.SamplerError(samplecheck.ERR_INVALID_ROW, "the row has a NaN or every logit is -inf")
        self._check(params, [0], logits.shape[1])
        p = params[0]
        out = self.engine.processed_logprobs(logits.contiguous(), p.temperature, p.top_k, p.top_p, p.min_p)
        return torch.as_tensor(out).double().cpu()

    # -- VERIFY --------------------------------------------------------------------------------------------------------
    def _draft_for_engine(self, call):
        """The draft in the engine's form, [g, V], or None."""
        import torch
        form = self.engine.draft_form
        if call.form == samplecheck.DRAFT_ONE_HOT or form == "ignored":
            return None
        if form == "none":
            raise samplecheck.SamplerError(samplecheck.ERR_UNSUPPORTED, "this verifier takes no draft "
                                           "probabilities: only one-hot drafts (spec suites' form 2)")
        if call.form == samplecheck.DRAFT_PROBABILITIES:
            q = call.draft.double()
            if not bool(torch.isfinite(q).all()) or bool((q < 0).any()):
                raise samplecheck.SamplerError(samplecheck.ERR_INVALID_ARGUMENT, "a draft row has a value that is "
                                               "not finite and >= 0")
            q = q / q.sum(dim=-1, keepdim=True)
        else:  # logits processed under the draft's parameters, by the engine's own processed distribution
            if self.engine.processed_logprobs is None:
                raise samplecheck.SamplerError(samplecheck.ERR_UNSUPPORTED, "logits-form drafts need the engine's "
                                               "processed distribution, which this engine path does not expose")
            dp = call.draft_params
            self._check_one(dp, call.vocab)
            q = torch.as_tensor(self.engine.processed_logprobs(
                call.draft.contiguous(), dp.temperature, dp.top_k, dp.top_p, dp.min_p)).double().exp()
        q = q.float()
        return q if form == "probs" else q.log()

    def _check_one(self, p, vocab):
        try:
            self.engine.check(p.temperature, p.top_k, p.top_p, p.min_p, vocab)
        except ValueError as exc:
            raise samplecheck.SamplerError(samplecheck.ERR_INVALID_ARGUMENT, str(exc)) from None

    def verify(self, call):
        import torch
        p, g, vocab = call.params, call.g, call.vocab
        self._check_one(p, vocab)
        target = call.target
        if self.rows == "guard" and bool(_invalid_mask(target).any()):
            return [0] * call.trials, [[-1]] * call.trials
        draft = self._draft_for_engine(call)
        chunk = max(1, samplecheck.lanes_for(vocab * (g + 1) * (2 if draft is not None else 1),
                                             target.device.type == "cuda"))
        tokens_all = torch.as_tensor(call.draft_tokens, device=target.device).long().reshape(call.trials, g)
        accepted, tokens = [], []
        for start in range(0, call.trials, chunk):
            b = min(chunk, call.trials - start)
            tgt = target.unsqueeze(0).expand(b, g + 1, vocab).contiguous()
            dr = None if draft is None else draft.unsqueeze(0).expand(b, g, vocab).contiguous()
            offsets = [(p.offset + (start + i) * (g + 1)) & _U64 for i in range(b)]
            acc, tok = self.engine.verify(tgt, tokens_all[start:start + b], dr, p.temperature, p.top_k, p.top_p,
                                          p.min_p, [p.seed] * b, offsets)
            accepted += torch.as_tensor(acc).long().tolist()
            tokens += torch.as_tensor(tok).long().tolist()
        return accepted, tokens


def serve(engine: Engine, name: str, profile: str, device: str, rows: str = "guard", lanes=None, batch=None,
          count_seeding: str = "same", stage: bool = True) -> int:
    client = Client(engine, rows, batch, count_seeding, stage)
    try:
        return samplecheck.serve(
            client.sample, count=client.count,
            logprobs=client.logprobs if engine.processed_logprobs is not None else None,
            verify=client.verify if engine.verify is not None else None, name=name, profile=profile,
            tensors="torch", device=device, nondeterministic=engine.nondeterministic, lanes=lanes,
            count_distributional=count_seeding == "window")
    finally:
        if client.stage_summary():
            print(client.stage_summary(), file=sys.stderr, flush=True)


def count_suffix(engine: Engine, count_seeding: str, stage: bool) -> str:
    """The sampler-name tail of the COUNT path: +counts=window (the unseeded production path draws the counts),
    +staged (masked once a row, then the drawing function)."""
    windows = engine.seeding == "window" or count_seeding == "window"
    return (("+counts=window" if count_seeding == "window" else "") +
            ("+staged" if stage and engine.stage is not None and windows else ""))


def main(prog: str, env_var: str, build, add_engine_arguments=None, default_seeding="request", seedings=SEEDINGS,
         argv=None) -> int:
    """The serve.py command line: build(args) -> (Engine, name); ``--describe`` prints what loaded and exits.
    An engine that cannot load answers samplecheck's HELLO with ERROR (samplecheck: "cannot serve: ..."), or, with
    --describe, prints the reason and exits 2."""
    ap = argparse.ArgumentParser(prog=prog, description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    add_arguments(ap, env_var, default_seeding, seedings)
    if add_engine_arguments is not None:
        add_engine_arguments(ap)
    args = ap.parse_args(argv)
    sys.path.insert(0, str(HERE))
    import engine_source as es
    sys.path.pop(0)
    args.device = default_device(args.device)
    try:
        engine, name = build(args)
    except (es.EngineSourceError, ValueError, ImportError) as exc:
        if args.describe:
            print(f"{prog}: {exc}", file=sys.stderr)
            return 2
        return samplecheck.cannot_serve(f"{prog}: {exc}")
    stage = not args.no_stage
    try:
        Client(engine, args.rows, args.batch_rows, args.count_seeding, stage)   # the options' consistency
    except ValueError as exc:
        if args.describe:
            print(f"{prog}: {exc}", file=sys.stderr)
            return 2
        return samplecheck.cannot_serve(f"{prog}: {exc}")
    name += count_suffix(engine, args.count_seeding, stage)
    if args.describe:
        print(name)
        print(engine.adapter.tree.describe())
        print(f"seeding {engine.seeding}; counts {args.count_seeding}; rows {args.rows}; device {args.device}")
        return 0
    return serve(engine, name, args.profile, args.device, args.rows, args.lanes, args.batch_rows,
                 args.count_seeding, stage)


def seed_global(seed: int, window: int) -> None:
    """Seed the process's generators (CPU and every CUDA device: torch.manual_seed) for the window (seed, window)."""
    import torch
    torch.manual_seed(draws.generator_seed(seed, window))


def suffix(seeding: str, rows: str) -> str:
    """The sampler-name tail that says what of the run is this module's: the seeding, and raw rows."""
    return f"+seeding={seeding}" + ("+rows=raw" if rows == "raw" else "")

