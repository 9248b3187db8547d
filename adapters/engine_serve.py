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
               A COUNT is one call over L(V) replicated rows (serve's own replication).
      window   the engine's batch-wide draw (an unseeded request: the process's generator, or one generator per
               strategy group): the call rows are grouped by (row, parameters, seed, window = offset // L), and each
               group is ONE engine call over L copies of its row, after the engine's generator is seeded from
               (seed, window); the draw at offset o is lane o % L of that call (the scheme of
               samplecheck.draws.windowed_race, with the engine doing the step). A COUNT window is exactly one
               such call; a row's token does not depend on the other rows of a request, so samplecheck's agreement
               and batch-invariance checks hold for a correct engine.
    Either way every draw is the engine's own per-step draw on an engine batch; nothing here draws a token.
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
ROWS = ("guard", "raw")
_U64 = (1 << 64) - 1


@dataclass
class Engine:
    """What serve needs of an adapter object.

    sample(x [rows, V] fp32, t, k, p, m, seeds, offsets) -> [rows] tokens; the per-row lists are Python scalars,
        seeds/offsets unsigned (request seeding), or seeds None in window seeding (the engine draws from the
        generator ``seed_window`` just seeded).
    seed_window(seed, window): seed the generator the engine's batch-wide draw uses (window seeding only).
    check(t, k, p, m, vocab): raise ValueError for parameters the engine rejects (one row).
    processed_logprobs(x [rows, V], t, k, p, m) -> [rows, V] log-probabilities (PROCESSED), or None.
    verify(target [B, g+1, V], draft_tokens [B, g], draft, t, k, p, m, seeds, offsets) -> (accepted [B],
        tokens [B, g+1]), or None; draft_form: "probs" | "logits" (the draft's distribution as logits whose
        softmax is q) | "none" (the engine verifies without draft probabilities: one-hot drafts only) |
        "ignored" (the engine's rule never reads q, e.g. accept iff the draft equals the target's own draw).
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
    ap.add_argument("--describe", action="store_true", help="print the name, loaded files and stubs, then exit")


def default_device(requested):
    import torch
    return requested or ("cuda" if torch.cuda.is_available() else "cpu")


def _invalid_mask(x):
    return draws.invalid_rows(x)


def _unique_params(params, rows):
    """The distinct (t, k, p, m) tuples of the call rows ``rows``."""
    cols = [params.host(c) for c in ("temperature", "top_k", "top_p", "min_p")]
    return {(cols[0][r], cols[1][r], cols[2][r], cols[3][r]) for r in rows}


class Client:
    """The callables of samplecheck.serve for one Engine."""

    def __init__(self, engine: Engine, rows: str = "guard"):
        if rows not in ROWS:
            raise ValueError(f"rows must be one of {', '.join(ROWS)}, got {rows!r}")
        self.engine, self.rows = engine, rows

    # -- validation ----------------------------------------------------------------------------------------------------
    def _check(self, params, rows, vocab):
        for t, k, p, m in sorted(_unique_params(params, rows)):
            try:
                self.engine.check(t, k, p, m, vocab)
            except ValueError as exc:
                raise samplecheck.SamplerError(
                    samplecheck.ERR_INVALID_ARGUMENT,
                    f"{exc} (temperature {t}, top_k {k}, top_p {p}, min_p {m})") from None

    # -- SAMPLE, SAMPLE_REPLICATED and COUNT (serve replicates the row for COUNT) --------------------------------------
    def sample(self, logits, params):
        import torch
        n, vocab = logits.shape
        bad = _invalid_mask(logits) if self.rows == "guard" else torch.zeros(n, dtype=torch.bool,
                                                                             device=logits.device)
        good = [r for r, b in enumerate(bad.tolist()) if not b]
        out = torch.full((n,), -1, dtype=torch.int64, device=logits.device)
        if not good:
            return out
        self._check(params, good, vocab)
        if self.engine.seeding == "request":
            x = logits if len(good) == n else logits.index_select(
                0, torch.tensor(good, dtype=torch.int64, device=logits.device))
            cols = {c: [params.host(c)[r] for r in good]
                    for c in ("temperature", "top_k", "top_p", "min_p", "seed", "offset")}
            tokens = self.engine.sample(x.contiguous(), cols["temperature"], cols["top_k"], cols["top_p"],
                                        cols["min_p"], cols["seed"], cols["offset"])
            out[torch.tensor(good, dtype=torch.int64, device=logits.device)] = torch.as_tensor(
                tokens, device=logits.device).long()
            return out
        return self._sample_windows(logits, params, good, out)

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
                    logits.index_select(0, index).contiguous(), [t] * lanes, [k] * lanes, [p] * lanes, [m] * lanes,
                    None, None), device=device).long()
                lane = torch.tensor(list(placed), dtype=torch.int64, device=device)
                out[torch.tensor(list(placed.values()), dtype=torch.int64, device=device)] = tokens.index_select(
                    0, lane)
        return out

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


def serve(engine: Engine, name: str, profile: str, device: str, rows: str = "guard", lanes=None) -> int:
    client = Client(engine, rows)
    return samplecheck.serve(
        client.sample, logprobs=client.logprobs if engine.processed_logprobs is not None else None,
        verify=client.verify if engine.verify is not None else None, name=name, profile=profile, tensors="torch",
        device=device, nondeterministic=engine.nondeterministic, lanes=lanes)


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
    if args.describe:
        print(name)
        print(engine.adapter.tree.describe())
        print(f"seeding {engine.seeding}; rows {args.rows}; device {args.device}")
        return 0
    return serve(engine, name, args.profile, args.device, args.rows, args.lanes)


def seed_global(seed: int, window: int) -> None:
    """Seed the process's generators (CPU and every CUDA device: torch.manual_seed) for the window (seed, window)."""
    import torch
    torch.manual_seed(draws.generator_seed(seed, window))


def suffix(seeding: str, rows: str) -> str:
    """The sampler-name tail that says what of the run is this module's: the seeding, and raw rows."""
    return f"+seeding={seeding}" + ("+rows=raw" if rows == "raw" else "")

