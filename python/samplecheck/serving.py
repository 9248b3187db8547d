"""serve(): plain Python callables behind the samplecheck process protocol (docs/process-protocol.md, docs/python.md).

    def sample(logits, params):          # logits [rows, vocab] float32; params: per-row columns (BatchParams)
        ...                              # -> one integer token per row, -1 for a row that cannot be sampled
    samplecheck.serve(sample, name="my-engine", profile="vllm")      # device="auto": cuda when torch sees a GPU

Every message type is one entry of Sampler.HANDLERS; the capability bits follow from the callables given. A callable
that raises, or returns the wrong shape, dtype or a token out of range, is answered with an ERROR naming it (the
traceback's last line for an exception; the whole traceback goes to stderr) and serving goes on.
"""
import inspect
import math
import os
import sys
import traceback

from . import protocol as P
from .protocol import SamplerError
from .tensors import TENSOR_KINDS, BatchParams, SamplingParams, as_int, tally, check_device, described, float_matrix, \
    int_list, lanes_for, make_backend, matrix_f32, tokens_in_range

_U64_MASK = (1 << 64) - 1


class VerifyCall:
    """One chain request of a VERIFY, for the verify callable (docs/speculative.md): `target` [(g + 1), vocab] and
    `draft` [g, vocab] (None for the one-hot form) float32 in the call's array kind, `draft_tokens` [trials, g]
    integers, `form` (DRAFT_PROBABILITIES, DRAFT_LOGITS, DRAFT_ONE_HOT), `params` and `draft_params`
    (SamplingParams: trial i uses (params.seed, params.offset + i (g + 1))), `uniforms` (the scripted stream, a
    tuple of 2 (g + 1) floats, or () for Philox), `vocab`, `g`, `trials`."""
    __slots__ = ("vocab", "g", "form", "params", "draft_params", "trials", "draft_tokens", "uniforms", "target",
                 "draft")

    def __repr__(self):
        return "VerifyCall(vocab=%d, g=%d, form=%d, trials=%d)" % (self.vocab, self.g, self.form, self.trials)


def _last_line(e, limit=400):
    """The traceback's last line ("ValueError: boom"; the first line of a message of several), at most `limit`
    characters."""
    line = traceback.format_exception_only(type(e), e)[-1].strip().splitlines()[0]
    return line if len(line) <= limit else line[:limit - 3] + "..."


def _where(e):
    frames = traceback.extract_tb(e.__traceback__)
    if not frames:
        return ""
    f = frames[-1]
    return " (at %s:%d, in %s)" % (os.path.basename(f.filename), f.lineno, f.name)


class Sampler:
    """A sampler, verifier and/or processed-distribution source made of callables:

    sample(logits, params) -> tokens       logits [rows, vocab] float32, params BatchParams; one int per row in
                                           [0, vocab), or -1 for a row that cannot be sampled. Also answers COUNT
                                           (replicated rows, `params.lanes` at a time; draw i of a COUNT is the
                                           SAMPLE draw at offset + i) and SAMPLE_REPLICATED (rows gathered on the
                                           device), unless count= is given or count=False.
    logprobs(logits, params) -> [rows, vocab] processed log-probabilities (-inf outside the kept set): PROCESSED
                                           (one row) and LOGPROBS_BATCH (a batch in one call, bf16 rows as bf16
                                           torch tensors, `params.dtype` "fp32" or "bf16"; the replay campaign,
                                           docs/replay.md). With labels=True, LOGPROBS_BATCH brings `params.label`
                                           (one token per row, -1: none) and logprobs may return (logprobs,
                                           guarded): guarded[r] true where the row's label guard restored it
    count(logits, params, draws) -> (histogram, invalid)   an own COUNT of one row (logits [1, vocab]): draw i at
                                           offset + i; histogram of vocab counts, invalid draws (-1)
    verify(call) -> (accepted, tokens)     VerifyCall; accepted [trials] in 0..g, tokens [trials, <= g + 1] (slots
                                           0..accepted are read; shorter rows are padded with -1)
    validate(p)                            raise SamplerError(ERR_INVALID_ARGUMENT, ...) for parameters the
                                           sampler's semantics reject; called for every row before any draw

    name and profile are the HELLO's (reports show `process:<name>`); tensors "torch" | "numpy" | "python" | "auto"
    and device choose what the callables get (device "auto": cuda when torch sees a GPU, else cpu; another device
    that is not usable here, "cuda" on a machine without one, is a ValueError at construction naming it and what
    is available, and serve() answers the HELLO with it: samplecheck says "cannot serve"); nondeterministic sets
    the capability bit 4 (same seed and offset may give other tokens); verify_scripted says verify honours
    call.uniforms (bit 16); lanes overrides L(V) (a function of the vocabulary: calls per window of a COUNT); labels
    says logprobs takes LOGPROBS_BATCH's labels (bit 128: a trainer with a label guard); count_distributional says
    the count callable draws the sampler's distribution on another of its paths (an engine's unseeded production
    draw), not the tokens sample gives at the same seeds and offsets (bit 512: samplecheck then judges the counting
    path's agreement with sample as two samples, and keeps the seeded checks on sample)."""

    def __init__(self, sample=None, *, verify=None, logprobs=None, count=None, validate=None, name="python",
                 profile="", tensors="auto", device="auto", nondeterministic=False, verify_scripted=False, lanes=None,
                 labels=False, count_distributional=False):
        if sample is None and verify is None and logprobs is None and not callable(count):
            raise ValueError("samplecheck.Sampler needs at least one of sample, verify, logprobs, count")
        for label, fn in (("sample", sample), ("verify", verify), ("logprobs", logprobs), ("validate", validate)):
            if fn is not None and not callable(fn):
                raise TypeError("%s=%r is not callable" % (label, fn))
        if count is not None and count is not False and not callable(count):
            raise TypeError("count=%r: give a callable, or False to leave COUNT to the harness" % (count,))
        if count_distributional and not callable(count):
            raise ValueError("count_distributional=True needs a count callable (its draws are what it describes)")
        if tensors not in TENSOR_KINDS:
            raise ValueError("tensors=%r: use %s" % (tensors, ", ".join(repr(k) for k in TENSOR_KINDS)))
        check_device(tensors, device)
        self.sample, self.verify, self.logprobs, self.validate = sample, verify, logprobs, validate
        self.count = count
        self.name, self.profile = name, profile
        self.tensors, self.device = tensors, device
        self.nondeterministic, self.verify_scripted = nondeterministic, verify_scripted
        self.lanes = lanes
        self.labels = labels
        self.count_distributional = bool(count_distributional)
        self._backend = None

    @property
    def backend(self):
        if self._backend is None:
            self._backend = make_backend(self.tensors, self.device)
        return self._backend

    @property
    def capabilities(self):
        caps = 0
        if self.logprobs is not None:
            caps |= P.CAP_PROCESSED | P.CAP_LOGPROBS_BATCH | (P.CAP_LOGPROBS_LABELS if self.labels else 0)
        if callable(self.count) or (self.sample is not None and self.count is None):
            caps |= P.CAP_COUNT
        if self.nondeterministic:
            caps |= P.CAP_NONDETERMINISTIC
        if self.count_distributional:
            caps |= P.CAP_COUNT_DISTRIBUTIONAL
        if self.verify is not None:
            caps |= P.CAP_VERIFY | (P.CAP_VERIFY_SCRIPTED if self.verify_scripted else 0)
        if self.sample is not None:
            caps |= P.CAP_SAMPLE_REPLICATED | P.CAP_SAMPLE_STEPS
        return caps

    def lanes_for(self, vocab):
        if self.lanes is not None:
            return max(1, int(self.lanes(vocab) if callable(self.lanes) else self.lanes))
        return lanes_for(vocab, self.backend.on_cuda)

    # ---- calling the user's functions ----
    @staticmethod
    def _call(what, fn, *args):
        try:
            return fn(*args)
        except SamplerError:
            raise
        except Exception as e:  # a bug in the callable: its traceback on stderr, its last line in the ERROR
            traceback.print_exc(file=sys.stderr)
            raise SamplerError(P.ERR_FAILED, "%s raised %s%s" % (what, _last_line(e), _where(e)))

    def _validate(self, tuples):
        if self.validate is not None:
            for t in tuples:
                self._call("validate()", self.validate, SamplingParams(*t))

    def _need(self, fn, message_type, what):
        if fn is None:
            raise SamplerError(P.ERR_UNSUPPORTED, "%s is not served: no %s callable was given to samplecheck.serve" %
                               (P.MESSAGE_NAMES[message_type], what))

    def _sample(self, logits, params, vocab, name_row):
        """tokens of one call of sample() over the call rows (checked: shape, dtype, range)."""
        result = self._call("sample()", self.sample, logits, params)
        return tokens_in_range(int_list(result, len(params), "sample()"), vocab, "sample()", name_row)

    def _params(self, tuples, rows, vocab):
        return BatchParams.of_rows(self.backend, tuples, rows, self.lanes_for(vocab))

    # ---- the messages: one handler each ----
    def _on_sample(self, payload):
        self._need(self.sample, P.SAMPLE, "sample")
        rows, vocab, tuples, data = P.decode_sample(payload)
        self._validate(tuples)
        logits = self.backend.logits(data, rows, vocab)
        return P.encode_tokens(self._sample(logits, self._params(tuples, range(rows), vocab), vocab, None))

    def _on_sample_replicated(self, payload):
        self._need(self.sample, P.SAMPLE_REPLICATED, "sample")
        rows, vocab, replicas, tuples, data = P.decode_sample_replicated(payload)
        self._validate(tuples)
        logits = self.backend.logits(data, rows, vocab)  # each distinct row sent to the device once
        index = [r for _ in range(replicas) for r in range(rows)]
        calls = self.backend.replicate(logits, index)
        tokens = self._sample(calls, self._params(tuples, index, vocab), vocab,
                              lambda i: "call row %d (replica %d of row %d)" % (i, i // rows, i % rows))
        return P.encode_tokens(tokens)

    def _on_sample_steps(self, payload):
        """SAMPLE_STEPS: one sample() call per step, as SAMPLE messages one after the other would make them (step s
        at every offset + s), the rows sent to the device once and copied afresh for each call (a sampler may change
        its logits in place), the tokens step by step."""
        self._need(self.sample, P.SAMPLE_STEPS, "sample")
        rows, vocab, steps, tuples, data = P.decode_sample_steps(payload)
        self._validate(tuples)
        logits = self.backend.logits(data, rows, vocab)
        index = list(range(rows))
        if self.backend.name == "torch":
            index = self.backend.torch.arange(rows, dtype=self.backend.torch.int64, device=self.backend.device)
        lanes = self.lanes_for(vocab)
        tokens = []
        for step in range(steps):
            at = [t[:5] + ((t[5] + step) & _U64_MASK,) for t in tuples]
            calls = ([row[:] for row in logits] if self.backend.name == "python" else
                     self.backend.replicate(logits, index))
            tokens += self._sample(calls, BatchParams.of_rows(self.backend, at, range(rows), lanes), vocab,
                                   lambda i, s=step: "row %d of step %d" % (i, s))
        return P.encode_tokens(tokens)

    def _on_processed(self, payload):
        self._need(self.logprobs, P.PROCESSED, "logprobs")
        vocab, t, data = P.decode_processed(payload)
        self._validate([t])
        logits = self.backend.logits(data, 1, vocab)
        params = self._params([t], [0], vocab)
        (row,) = float_matrix(self._call("logprobs()", self.logprobs, logits, params), 1, vocab, "logprobs()")
        probabilities = [_exp(v) for v in row]
        if not any(probabilities):
            raise SamplerError(P.ERR_INVALID_ROW, "logprobs() returned -inf for every token: the row cannot be "
                               "sampled")
        return P.encode_distribution(probabilities)

    def _on_logprobs_batch(self, payload):
        self._need(self.logprobs, P.LOGPROBS_BATCH, "logprobs")
        rows, vocab, dtype, tuples, labels, data = P.decode_logprobs_batch(payload)
        self._validate(tuples)
        logits = self.backend.logits(data, rows, vocab)
        if dtype == P.DTYPE_BF16 and self.backend.name == "torch":
            logits = logits.to(self.backend.torch.bfloat16)  # exact: the rows hold bf16 values
        params = self._params(tuples, range(rows), vocab)
        params.dtype = "bf16" if dtype == P.DTYPE_BF16 else "fp32"
        if labels is not None:
            params.add_column("label", labels)
        result = self._call("logprobs()", self.logprobs, logits, params)
        guarded = [False] * rows
        if isinstance(result, tuple):
            result, flags = result
            guarded = [bool(g) for g in (flags.tolist() if hasattr(flags, "tolist") else flags)]
            if len(guarded) != rows:
                raise SamplerError(P.ERR_FAILED, "logprobs() returned %d guard flags for %d rows" % (len(guarded), rows))
        return P.encode_logprobs(rows, vocab, guarded, matrix_f32(result, rows, vocab, "logprobs()"))

    def _on_count(self, payload):
        vocab, t, draws, data = P.decode_count(payload)
        self._validate([t])
        if callable(self.count):
            logits = self.backend.logits(data, 1, vocab)
            result = self._call("count()", self.count, logits, self._params([t], [0], vocab), draws)
            try:
                histogram, invalid_given = result
            except (TypeError, ValueError):
                raise SamplerError(P.ERR_FAILED, "count() returned %r; expected (histogram of vocab counts, "
                                   "invalid draws)" % (type(result).__name__,))
            invalid = as_int(invalid_given)
            if invalid is None:
                raise SamplerError(P.ERR_FAILED, "count() returned %s invalid draws; expected an int (a count: an "
                                   "integer, never a float, which is not truncated)" % described(invalid_given))
            packed = _histogram_bytes(histogram, vocab, invalid)
            if packed is not None:  # a tensor or array of counts: checked and packed without a list of V ints
                return P.encode_histogram_bytes(vocab, invalid, packed)
            try:
                given = list(histogram)
            except TypeError:
                raise SamplerError(P.ERR_FAILED, "count() returned a histogram of %s; expected vocab counts" %
                                   type(histogram).__name__)
            histogram = [as_int(c) for c in given]
            if None in histogram:
                t = histogram.index(None)
                raise SamplerError(P.ERR_FAILED, "count() returned %s as the count of token %d; expected an int (a "
                                   "count: an integer, never a float, which is not truncated)" %
                                   (described(given[t]), t))
            if len(histogram) != vocab or min(histogram + [invalid]) < 0:
                raise SamplerError(P.ERR_FAILED, "count() returned a histogram of %d counts (smallest %d) and %d "
                                   "invalid draws; expected %d counts >= 0" %
                                   (len(histogram), min(histogram or [0]), invalid, vocab))
            return P.encode_histogram(histogram, invalid)
        self._need(self.sample if self.count is None else None, P.COUNT, "sample or count")
        return P.encode_histogram(*self._count_by_replication(vocab, t, draws, data))

    def _count_by_replication(self, vocab, t, draws, data):
        """COUNT through sample() on copies of the row: draw i is the call row with offset + i, `lanes` call rows
        a call, the calls aligned to multiples of `lanes` of the offset (one window each)."""
        logits = self.backend.logits(data, 1, vocab)
        lanes = self.lanes_for(vocab)
        histogram, invalid = [0] * vocab, 0
        offset, done = t[5], 0
        while done < draws:
            start = (offset + done) & _U64_MASK
            take = min(draws - done, lanes - start % lanes)
            params = BatchParams.of_draws(self.backend, t, start, take, lanes)
            tokens = self._sample(self.backend.replicate(logits, [0] * take), params, vocab,
                                  lambda i, s=start: "the draw at offset %d" % ((s + i) & _U64_MASK))
            invalid += tally(histogram, tokens)
            done += take
        return histogram, invalid

    def _on_verify(self, payload):
        self._need(self.verify, P.VERIFY, "verify")
        answers = []
        for q in P.decode_verify(payload):
            call = self._verify_call(q)
            result = self._call("verify()", self.verify, call)
            answers.append((q.g, _verified_trials(result, q.trials, q.g)))
        return P.encode_verified(answers)

    def _verify_call(self, q):
        b = self.backend
        call = VerifyCall()
        call.vocab, call.g, call.form, call.trials, call.uniforms = q.vocab, q.g, q.form, q.trials, tuple(q.uniforms)
        call.params, call.draft_params = SamplingParams(*q.params), SamplingParams(*q.draft_params)
        call.target = b.logits(q.target, q.g + 1, q.vocab)
        call.draft = b.logits(q.draft, q.g, q.vocab) if q.form != P.DRAFT_ONE_HOT else None
        call.draft_tokens = b.int_matrix(q.draft_tokens, q.trials, q.g)
        return call

    HANDLERS = {P.SAMPLE: _on_sample, P.SAMPLE_REPLICATED: _on_sample_replicated, P.SAMPLE_STEPS: _on_sample_steps,
                P.PROCESSED: _on_processed,
                P.COUNT: _on_count, P.VERIFY: _on_verify, P.LOGPROBS_BATCH: _on_logprobs_batch}

    def handle(self, msg_type, payload):
        """The answer frame to one request (an ERROR frame when it cannot be served)."""
        handler = self.HANDLERS.get(msg_type)
        try:
            if handler is None:
                raise SamplerError(P.ERR_UNSUPPORTED, "message type %d (%s) is not supported by this client" %
                                   (msg_type, P.MESSAGE_NAMES.get(msg_type, "unknown")))
            return handler(self, payload)
        except SamplerError as e:
            return P.encode_error(e.code, str(e))
        except Exception as e:  # a bug here or a malformed request: named, and serving goes on
            traceback.print_exc(file=sys.stderr)
            return P.encode_error(P.ERR_FAILED, "samplecheck.serve failed on %s: %s%s" %
                                  (P.MESSAGE_NAMES.get(msg_type, msg_type), _last_line(e), _where(e)))

    def serve(self, stdin=None, stdout=None):
        """Answers requests until BYE or end of input; returns the exit code (0, or 1 on a broken stream)."""
        return serve_streams(self, stdin, stdout)


def _histogram_bytes(histogram, vocab, invalid):
    """A count() histogram given as a torch tensor or numpy array, as little-endian u64 bytes (None for a list):
    shape (vocab,), an integer dtype, every count and the invalid draws >= 0, else an ERROR naming it."""
    shape = getattr(histogram, "shape", None)
    if shape is None:
        return None
    if type(histogram).__module__.startswith("torch"):
        if histogram.is_floating_point() or histogram.is_complex() or str(histogram.dtype) == "torch.bool":
            raise SamplerError(P.ERR_FAILED, "count() returned a histogram of dtype %s; expected integers" %
                               histogram.dtype)
        histogram = histogram.detach().cpu().long()
        try:
            array = histogram.numpy()
        except (ImportError, RuntimeError):  # torch without numpy
            return None
    else:
        array = histogram
        if array.dtype.kind not in "iu":
            raise SamplerError(P.ERR_FAILED, "count() returned a histogram of dtype %s; expected integers" %
                               array.dtype)
    if tuple(int(d) for d in array.shape) != (vocab,) or invalid < 0 or (vocab and int(array.min()) < 0):
        raise SamplerError(P.ERR_FAILED, "count() returned a histogram of shape %s (smallest %s) and %d invalid "
                           "draws; expected %d counts >= 0" % (tuple(array.shape), array.min() if vocab else "-",
                                                               invalid, vocab))
    return array.astype("<u8").tobytes()


def _exp(v):
    return 0.0 if v == -math.inf else math.exp(v)


def _verified_trials(result, trials, g):
    """verify()'s (accepted, tokens) as [(accepted, [tokens])...], checked for count and integer values."""
    try:
        accepted, tokens = result
    except (TypeError, ValueError):
        raise SamplerError(P.ERR_FAILED, "verify() returned %s; expected (accepted [trials], tokens [trials, g + 1])"
                           % type(result).__name__)
    accepted = int_list(accepted, trials, "verify() accepted")
    rows = tokens.tolist() if hasattr(tokens, "tolist") else [list(r) for r in tokens]
    if len(rows) != trials or any(len(r) > g + 1 for r in rows):
        raise SamplerError(P.ERR_FAILED, "verify() returned %d token rows of lengths %s; expected %d rows of at most "
                           "g + 1 = %d" % (len(rows), sorted({len(r) for r in rows}), trials, g + 1))
    out = []
    for i, (a, row) in enumerate(zip(accepted, rows)):
        if not all(type(v) is int for v in row):  # the usual lists of ints pass at once; anything else is checked
            row = int_list(row, len(row), "verify() tokens of trial %d" % i)
        if min(row + [a]) < -(1 << 31) or max(row + [a]) >= (1 << 31):
            v = next(v for v in [a] + row if not -(1 << 31) <= v < (1 << 31))
            raise SamplerError(P.ERR_FAILED, "verify() returned %d in trial %d: not an int32" % (v, i))
        out.append((a, row))
    return out


def _protocol_streams(stdin, stdout):
    """The streams serve() speaks on. With none given: stdin and a duplicate of stdout, and fd 1 (and sys.stdout)
    pointed at stderr, so a print() in the served code (or one still in the buffer) cannot break the protocol."""
    if stdin is not None and stdout is not None:
        return stdin, stdout, None
    proto = os.fdopen(os.dup(1), "wb")
    saved = os.dup(1)
    os.dup2(2, 1)
    sys.stdout.flush()  # what an earlier print() left in the buffer goes to stderr too
    old_stdout, sys.stdout = sys.stdout, sys.stderr
    if stdin is None and os.isatty(0):
        print("samplecheck.serve: this program speaks the samplecheck process protocol on stdin/stdout; run it as\n"
              "  samplecheck run --suite smoke --sampler 'process:%s %s'" % (sys.executable, " ".join(sys.argv)),
              file=sys.stderr)

    def restore():
        os.dup2(saved, 1)
        os.close(saved)
        sys.stdout = old_stdout
    return stdin or sys.stdin.buffer, stdout or proto, restore


def serve_streams(sampler, stdin=None, stdout=None):
    stdin, stdout, restore = _protocol_streams(stdin, stdout)
    try:
        while True:
            try:
                msg_type, payload = P.read_frame(stdin)
            except P.ProtocolError as e:
                print("samplecheck.serve: %s" % e, file=sys.stderr)
                return 1
            if msg_type is None or msg_type == P.BYE:
                return 0
            if msg_type == P.HELLO:
                try:
                    version = P.decode_hello(payload)
                except P.ProtocolError as e:
                    print("samplecheck.serve: %s" % e, file=sys.stderr)
                    return 1
                if version != P.VERSION:
                    answer = P.encode_error(P.ERR_UNSUPPORTED, "protocol version %d; this client speaks %d" %
                                            (version, P.VERSION))
                else:
                    answer = P.encode_hello_answer(sampler.capabilities, sampler.name, sampler.profile)
            else:
                answer = sampler.handle(msg_type, payload)
            try:
                stdout.write(answer)
                stdout.flush()
            except (BrokenPipeError, ConnectionError, ValueError):
                return 1
    finally:
        if restore is not None:
            restore()


def serve(sample=None, *, verify=None, logprobs=None, count=None, validate=None, name="python", profile="",
          tensors="auto", device="auto", nondeterministic=False, verify_scripted=False, lanes=None, labels=False,
          count_distributional=False, stdin=None, stdout=None):
    """Serves a sampler made of callables (the options are Sampler's) on stdin/stdout, or `stdin=`/`stdout=` binary
    streams, until BYE; returns the exit code. `sample` may also be a Sampler (then no other option is given). An
    option that cannot serve here (device="cuda" without a GPU) answers the HELLO with ERROR (cannot_serve): exit 1,
    and samplecheck reports "cannot serve: device='cuda': ..." at start."""
    options = dict(verify=verify, logprobs=logprobs, count=count, validate=validate, name=name, profile=profile,
                   tensors=tensors, device=device, nondeterministic=nondeterministic,
                   verify_scripted=verify_scripted, lanes=lanes, labels=labels,
                   count_distributional=count_distributional)
    if isinstance(sample, Sampler):
        given = sorted(k for k, v in options.items() if v is not _SERVE_DEFAULTS[k] and
                       not (type(v) is type(_SERVE_DEFAULTS[k]) and v == _SERVE_DEFAULTS[k]))
        if given:
            raise TypeError("serve(Sampler, ...) takes no sampler options: %s" % ", ".join(given))
        return serve_streams(sample, stdin, stdout)
    try:
        sampler = Sampler(sample, **options)
    except ValueError as e:  # a device or tensors value that cannot serve here: said at the HELLO, not per request
        return cannot_serve(str(e), P.ERR_INVALID_ARGUMENT, stdin, stdout)
    return serve_streams(sampler, stdin, stdout)


_SERVE_DEFAULTS = {k: v.default for k, v in inspect.signature(serve).parameters.items()
                   if k not in ("sample", "stdin", "stdout")}


def cannot_serve(message, code=P.ERR_FAILED, stdin=None, stdout=None):
    """Answers the harness's HELLO with ERROR (a model that does not load, a missing dependency): samplecheck then
    reports "process sampler '<command>' cannot serve: <message>" and makes no sampler. Returns the exit code 1."""
    stdin = stdin or sys.stdin.buffer
    stdout = stdout or sys.stdout.buffer
    print("samplecheck.serve: cannot serve: %s" % message, file=sys.stderr)
    try:
        msg_type, _ = P.read_frame(stdin)
        if msg_type == P.HELLO:
            stdout.write(P.encode_error(code, message))
            stdout.flush()
    except (P.ProtocolError, BrokenPipeError, ConnectionError):
        pass
    return 1


__all__ = ["Sampler", "VerifyCall", "serve", "cannot_serve", "serve_streams"]
