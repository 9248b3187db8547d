#!/usr/bin/env python3
"""Reference client of the samplecheck process protocol (docs/process-protocol.md), Python standard library only.

It serves a pure-Python sampler of the `vllm` profile (docs/semantics.md §1.2) that draws with the same Philox
uniform as samplecheck's exact sampler, so its draws match `--sampler exact` token for token (up to double vs
long double rounding at CDF boundaries). It is a protocol reference, not a fast sampler: use small vocabularies.

    samplecheck run --suite smoke --sampler "process:python3 examples/python/samplecheck_client.py"
    samplecheck run --suite smoke --sampler "process:python3 examples/python/samplecheck_client.py --bug no-renorm"
    samplecheck run --suite spec-smoke --verifier "process:python3 examples/python/samplecheck_client.py"

It is also a speculative-decoding chain verifier (VERIFY, docs/speculative.md): it verifies exactly as the
reference's VerifyChain, with the same Philox discipline (the coin of position j from words 2, 3 and the draw
uniform from words 0, 1 of the block at counter offset + j - 1) or the scripted uniform stream the harness sends.
`--bug coin-edge` accepts iff u q(x) <= p(x), the coin-edge bug class, to show a failing verifier.

To check your own sampler, subclass Sampler (sample_row, and optionally processed) and call serve(YourSampler()).
Never print to stdout: it carries the protocol. Debug output goes to stderr.
"""
import math
import struct
import sys
from array import array
from bisect import bisect_right

MAGIC = 0x4B484353  # the bytes b"SCHK"
PROTOCOL_VERSION = 1

HELLO, SAMPLE, TOKENS, PROCESSED, DISTRIBUTION, COUNT, HISTOGRAM, ERROR, BYE, VERIFY, VERIFIED = range(1, 12)
CAP_PROCESSED, CAP_COUNT, CAP_NONDETERMINISTIC, CAP_VERIFY, CAP_VERIFY_SCRIPTED = 1, 2, 4, 8, 16
DRAFT_PROBABILITIES, DRAFT_LOGITS, DRAFT_ONE_HOT = 0, 1, 2
MAX_DRAFT = 16
ERR_INVALID_ARGUMENT, ERR_UNSUPPORTED, ERR_FAILED, ERR_INVALID_ROW = 1, 2, 3, 4

PARAMS = struct.Struct("<dqddQQ")  # temperature, top_k, top_p, min_p, seed, offset: 48 bytes
INVALID_TOKEN = -1


def replica_lanes(vocab, on_cuda):
    """L(V) for the engine clients (torch_client.py, transformers_client.py): copies of a row per engine step when
    draws are counted over replicated rows; a power of two with L * V <= 2^24 elements on cuda (2^16 on the cpu), at
    most 65536. A function of V and the device only. (2^27 on cuda was tried on an H100 on 2026-11-26: the smoke
    suite took 61 s instead of 24 s, every SAMPLE step drawing 8x the lanes.)"""
    budget = (1 << 24) if on_cuda else (1 << 16)
    lanes = 1
    while lanes * 2 <= 65536 and lanes * 2 * vocab <= budget:
        lanes *= 2
    return lanes


class SamplerError(Exception):
    """Raised by a sampler to answer ERROR with a code (ERR_*) and a message."""

    def __init__(self, code, message):
        super().__init__(message)
        self.code = code


class Params:
    __slots__ = ("temperature", "top_k", "top_p", "min_p", "seed", "offset")

    def __init__(self, temperature, top_k, top_p, min_p, seed, offset):
        self.temperature, self.top_k, self.top_p = temperature, top_k, top_p
        self.min_p, self.seed, self.offset = min_p, seed, offset


# ---- Philox4x32-10 and the uniform of a draw (reference/philox.h) ----
_M32 = 0xFFFFFFFF


def philox4x32_10(c0, c1, c2, c3, k0, k1):
    for _ in range(10):
        p0 = 0xD2511F53 * c0
        p1 = 0xCD9E8D57 * c2
        c0, c1, c2, c3 = ((p1 >> 32) ^ c1 ^ k0), p1 & _M32, ((p0 >> 32) ^ c3 ^ k1), p0 & _M32
        k0 = (k0 + 0x9E3779B9) & _M32
        k1 = (k1 + 0xBB67AE85) & _M32
    return c0, c1, c2, c3


def uniform_for_draw(seed, offset):
    """u in (0, 1): ((block[0] << 32 | block[1]) >> 12) + 0.5, times 2^-52."""
    b0, b1, _, _ = philox4x32_10(offset & _M32, offset >> 32, 0, 0, seed & _M32, seed >> 32)
    return (((b0 << 32 | b1) >> 12) + 0.5) * 2.0 ** -52


def spec_uniforms(seed, counter):
    """(draw uniform, coin) of one block: words 0, 1 and words 2, 3 (reference/speculative.h)."""
    b0, b1, b2, b3 = philox4x32_10(counter & _M32, counter >> 32, 0, 0, seed & _M32, seed >> 32)
    return (((b0 << 32 | b1) >> 12) + 0.5) * 2.0 ** -52, (((b2 << 32 | b3) >> 12) + 0.5) * 2.0 ** -52


class VerifyRequest:
    """One request of a VERIFY: target rows (g + 1 sequences of vocab floats), the draft form and rows, the target's
    and the draft's Params, `trials` trials of g draft tokens each, and an optional scripted stream."""
    __slots__ = ("vocab", "g", "form", "params", "draft_params", "trials", "draft_tokens", "uniforms", "target",
                 "draft")


# ---- The sampler interface and the vllm-profile sampler ----
class Sampler:
    """What serve() calls. Override sample_row (or sample_batch for a vectorized sampler); processed and count are
    optional: set the CAP_PROCESSED / CAP_COUNT bits of `capabilities` when you implement them. Raise SamplerError
    to answer ERROR; any other exception is answered as ERROR code ERR_FAILED and serving goes on."""

    name = "python"
    profile = ""
    capabilities = 0

    def validate(self, params):
        """Raise SamplerError(ERR_INVALID_ARGUMENT, ...) for parameters the sampler's semantics reject."""

    def sample_row(self, row, params):
        """One token for one row (a sequence of floats); INVALID_TOKEN for a row that cannot be sampled."""
        raise NotImplementedError

    def sample_batch(self, logits, rows, vocab, params):
        """One token per row; logits is an array('f') of rows * vocab values, params a list of Params."""
        return [self.sample_row(logits[r * vocab:(r + 1) * vocab], params[r]) for r in range(rows)]

    def processed(self, row, params):
        """[(token, probability), ...] ascending by token, or None for a row that cannot be sampled."""
        raise SamplerError(ERR_UNSUPPORTED, "processed distribution not implemented")

    def verify(self, request):
        """Chain verification (set CAP_VERIFY): a list of request.trials (accepted, [emitted tokens]) pairs, trial i
        with the draft tokens request.draft_tokens[i g:(i + 1) g] and offset params.offset + i (g + 1)."""
        raise SamplerError(ERR_UNSUPPORTED, "VERIFY not implemented")

    def count(self, row, params, draws):
        """(histogram list of len(row), invalid draws) for draws with offsets params.offset + i. The default draws
        from processed() by inverse CDF with the Philox uniform."""
        histogram, invalid = [0] * len(row), 0
        dist = self.processed(row, params)
        if dist is None:
            return histogram, draws
        tokens = [t for t, _ in dist]
        cdf, running = [], 0.0
        for _, prob in dist:
            running += prob
            cdf.append(running)
        last = len(cdf) - 1
        for i in range(draws):
            j = bisect_right(cdf, uniform_for_draw(params.seed, params.offset + i))
            histogram[tokens[min(j, last)]] += 1
        return histogram, invalid


class VllmSampler(Sampler):
    """vLLM v1: greedy T < 1e-5; min-p on the full softmax; top-k with ties kept; strict top-p on the
    distribution renormalized after min-p and top-k, ties cut by position (lowest id first); inverse CDF draw."""

    name = "python-vllm"
    profile = "vllm"
    capabilities = CAP_PROCESSED | CAP_COUNT | CAP_VERIFY | CAP_VERIFY_SCRIPTED

    def __init__(self, bug=None):
        if bug not in (None, "no-renorm", "coin-edge"):
            raise ValueError("unknown bug %r (known: no-renorm, coin-edge)" % bug)
        self.bug = bug
        if bug:
            self.name = "python-vllm-bug-" + bug
        self._cache = {}  # (row bytes, params) -> processed distribution, for the rows of a batch's trials

    def validate(self, p):
        def bad(msg):
            raise SamplerError(ERR_INVALID_ARGUMENT, msg + " for profile vllm")

        if not (0.0 <= p.temperature <= 2.0):
            bad("temperature = %r is outside [0, 2]" % p.temperature)
        if p.top_k < -1:
            bad("top_k = %d is below -1" % p.top_k)
        if not (0.0 < p.top_p <= 1.0):
            bad("top_p = %r is outside (0, 1]" % p.top_p)
        if not (0.0 <= p.min_p <= 1.0):
            bad("min_p = %r is outside [0, 1]" % p.min_p)

    def processed(self, row, p):
        if any(math.isnan(x) for x in row) or all(x == -math.inf for x in row):
            return None
        if p.temperature < 1e-5:  # greedy on the raw logits, lowest id on ties
            best = max(range(len(row)), key=lambda i: (row[i], -i))
            return [(best, 1.0)]
        if any(x == math.inf for x in row):  # +inf logits share the mass
            w = [1.0 if x == math.inf else 0.0 for x in row]
        else:
            x_max = max(row) / p.temperature
            w = [math.exp(x / p.temperature - x_max) for x in row]
        full_sum = math.fsum(w)
        alive = [i for i in range(len(row)) if w[i] > 0.0 and w[i] >= p.min_p]  # max w is 1
        alive.sort(key=lambda i: (-w[i], i))
        if 0 < p.top_k < len(alive):
            kth = w[alive[p.top_k - 1]]
            keep = p.top_k
            while keep < len(alive) and w[alive[keep]] == kth:
                keep += 1
            del alive[keep:]
        denom = full_sum if self.bug == "no-renorm" else math.fsum(w[i] for i in alive)
        # top_p = 1 disables top-p: a float cumulative sum can reach 1.0 before the deepest tail tokens are
        # added, which would silently drop them (samplecheck's kept-set-complete property found that here).
        keep = len(alive)
        if p.top_p < 1.0:
            mass_above, keep = 0.0, 0
            while keep < len(alive) and mass_above < p.top_p:
                mass_above += w[alive[keep]] / denom
                keep += 1
        kept = sorted(alive[:keep])
        kept_sum = math.fsum(w[i] for i in kept)
        return [(i, w[i] / kept_sum) for i in kept]

    def sample_row(self, row, p):
        dist = self.processed(row, p)
        if dist is None:
            return INVALID_TOKEN
        return draw(dist, uniform_for_draw(p.seed, p.offset))

    def _processed_cached(self, row, p):
        key = (row.tobytes(), p.temperature, p.top_k, p.top_p, p.min_p)
        dist = self._cache.get(key)
        if dist is None and key not in self._cache:
            if len(self._cache) > 256:
                self._cache.clear()
            dist = self._cache[key] = self.processed(row, p)
        return dist

    def verify(self, q):
        """VerifyChain of reference/speculative.h: accept x_j iff u_j q_j(x_j) < p_j(x_j); on the first rejection a
        draw from normalize(max(0, p_j - q_j)) (p_j when that is empty); all accepted: a bonus draw from p_{g+1};
        greedy targets accept iff x_j is the greedy token and emit it on a rejection."""
        g, vocab = q.g, q.vocab
        self.validate(q.params)
        if q.form == DRAFT_LOGITS:
            self.validate(q.draft_params)
        targets = [self._processed_cached(q.target[j * vocab:(j + 1) * vocab], q.params) for j in range(g + 1)]
        if any(t is None for t in targets):  # a target row that cannot be sampled: nothing is verified
            return [(0, [INVALID_TOKEN])] * q.trials
        greedy = q.params.temperature < 1e-5
        drafts, residuals = [], []
        for j in range(g if q.form != DRAFT_ONE_HOT else 0):
            row = q.draft[j * vocab:(j + 1) * vocab]
            if q.form == DRAFT_PROBABILITIES:
                if any(not math.isfinite(v) or v < 0.0 for v in row):
                    raise SamplerError(ERR_INVALID_ARGUMENT, "draft row %d has a value that is not finite and >= 0" % j)
                total = math.fsum(row)
                if abs(total - 1.0) > 1e-3:
                    raise SamplerError(ERR_INVALID_ARGUMENT, "draft row %d sums to %r, not 1 (tolerance 1e-3)" %
                                       (j, total))
                qd = {t: v / total for t, v in enumerate(row) if v > 0.0}
            else:
                dist = self._processed_cached(row, q.draft_params)
                if dist is None:
                    raise SamplerError(ERR_INVALID_ARGUMENT, "draft row %d cannot be sampled" % j)
                qd = dict(dist)
            drafts.append(qd)
            residuals.append(residual(targets[j], qd))
        probs = [dict(t) for t in targets]
        out, stride = [], g + 1
        scripted = q.uniforms
        for i in range(q.trials):
            xs = q.draft_tokens[i * g:(i + 1) * g]
            offset = q.params.offset + i * stride
            emitted = []
            for j in range(g + 1):
                if scripted:
                    coin, d = scripted[2 * j], scripted[2 * j + 1]
                else:
                    d, coin = spec_uniforms(q.params.seed, offset + j)
                if j == g:
                    emitted.append(draw(targets[g], d))
                    break
                x = xs[j]
                qx = 1.0 if q.form == DRAFT_ONE_HOT else drafts[j].get(x, 0.0)
                if not qx > 0.0:
                    raise SamplerError(ERR_INVALID_ARGUMENT, "trial %d: draft token %d at position %d has draft "
                                       "probability 0" % (i, x, j + 1))
                px = probs[j].get(x, 0.0)
                if greedy:
                    accept = x == targets[j][0][0]
                elif self.bug == "coin-edge":
                    accept = coin * qx <= px
                else:
                    accept = coin * qx < px
                if accept:
                    emitted.append(x)
                    continue
                if greedy:
                    emitted.append(targets[j][0][0])
                elif q.form == DRAFT_ONE_HOT:
                    emitted.append(draw(residual(targets[j], {x: 1.0}), d))
                else:
                    emitted.append(draw(residuals[j], d))
                break
            out.append((len(emitted) - 1, emitted))
        return out


def residual(p, qd):
    """normalize(max(0, p - q)) as [(token, probability)] ascending; p itself when p = q (never drawn then)."""
    diff = [(t, pt - qd.get(t, 0.0)) for t, pt in p]
    diff = [(t, v) for t, v in diff if v > 0.0]
    mass = math.fsum(v for _, v in diff)
    if not mass > 0.0:
        return p
    return [(t, v / mass) for t, v in diff]


def draw(dist, u):
    """The first token (ascending id) whose inclusive cumulative probability exceeds u."""
    cdf = 0.0
    for token, prob in dist:
        cdf += prob
        if cdf > u:
            return token
    return dist[-1][0]


# ---- The protocol ----
def _read_exact(stream, n):
    chunks, left = [], n
    while left:
        chunk = stream.read(left)
        if not chunk:
            return None
        chunks.append(chunk)
        left -= len(chunk)
    return b"".join(chunks)


def _frame(msg_type, payload=b""):
    return struct.pack("<II", 4 + len(payload), msg_type) + payload


def _string(text):
    data = text.encode("utf-8")
    return struct.pack("<I", len(data)) + data


def _floats(data):
    values = array("f")
    values.frombytes(data)
    if sys.byteorder != "little":
        values.byteswap()
    return values


def _params(payload, at, count):
    return [Params(*PARAMS.unpack_from(payload, at + i * PARAMS.size)) for i in range(count)]


def _handle(sampler, msg_type, payload):
    if msg_type == SAMPLE:
        rows, vocab = struct.unpack_from("<QQ", payload, 0)
        params = _params(payload, 16, rows)
        logits = _floats(payload[16 + rows * PARAMS.size:])
        for p in params:  # every row validated before anything is drawn
            sampler.validate(p)
        tokens = [int(t) for t in sampler.sample_batch(logits, rows, vocab, params)]
        return _frame(TOKENS, struct.pack("<Q%di" % rows, rows, *tokens))
    if msg_type == PROCESSED:
        (vocab,) = struct.unpack_from("<Q", payload, 0)
        (p,) = _params(payload, 8, 1)
        sampler.validate(p)
        dist = sampler.processed(_floats(payload[8 + PARAMS.size:]), p)
        if dist is None:
            raise SamplerError(ERR_INVALID_ROW, "the row has a NaN or every logit is -inf")
        probs = [0.0] * vocab
        for token, prob in dist:
            probs[int(token)] = float(prob)
        return _frame(DISTRIBUTION, struct.pack("<Q%dd" % vocab, vocab, *probs))
    if msg_type == COUNT:
        (vocab,) = struct.unpack_from("<Q", payload, 0)
        (p,) = _params(payload, 8, 1)
        (draws,) = struct.unpack_from("<Q", payload, 8 + PARAMS.size)
        sampler.validate(p)
        histogram, invalid = sampler.count(_floats(payload[16 + PARAMS.size:]), p, draws)
        histogram = [int(c) for c in histogram]
        return _frame(HISTOGRAM, struct.pack("<QQ%dQ" % vocab, vocab, invalid, *histogram))
    if msg_type == VERIFY:
        return _frame(VERIFIED, _verify(sampler, payload))
    raise SamplerError(ERR_UNSUPPORTED, "message type %d is not supported by this client" % msg_type)


def _verify(sampler, payload):
    """VERIFY: u64 requests, then per request u64 vocab | u32 g | u32 form | params | draft params | u64 trials |
    u32 uniforms | trials x g x i32 draft tokens | uniforms x f64 | (g + 1) x vocab x f32 target |
    (form != one-hot) g x vocab x f32 draft. VERIFIED: u64 requests, then per request u64 trials and per trial
    i32 accepted | (g + 1) x i32 tokens (slots past accepted + 1 are -1)."""
    (count,) = struct.unpack_from("<Q", payload, 0)
    at, requests = 8, []
    for _ in range(count):
        q = VerifyRequest()
        q.vocab, q.g, q.form = struct.unpack_from("<QII", payload, at)
        at += 16
        q.params, q.draft_params = _params(payload, at, 2)
        at += 2 * PARAMS.size
        q.trials, n_uniforms = struct.unpack_from("<QI", payload, at)
        at += 12
        if q.g > MAX_DRAFT or q.form > DRAFT_ONE_HOT or q.vocab < 1:
            raise SamplerError(ERR_INVALID_ARGUMENT, "VERIFY request with g %d, form %d, vocab %d" %
                               (q.g, q.form, q.vocab))
        q.draft_tokens = struct.unpack_from("<%di" % (q.trials * q.g), payload, at)
        at += 4 * q.trials * q.g
        q.uniforms = struct.unpack_from("<%dd" % n_uniforms, payload, at)
        at += 8 * n_uniforms
        if q.uniforms and (len(q.uniforms) != 2 * (q.g + 1) or not all(0.0 <= u < 1.0 for u in q.uniforms)):
            raise SamplerError(ERR_INVALID_ARGUMENT, "scripted stream of %d values, need 2 (g + 1) = %d in [0, 1)" %
                               (len(q.uniforms), 2 * (q.g + 1)))
        n = (q.g + 1) * q.vocab
        q.target = _floats(payload[at:at + 4 * n])
        at += 4 * n
        n = 0 if q.form == DRAFT_ONE_HOT else q.g * q.vocab
        q.draft = _floats(payload[at:at + 4 * n])
        at += 4 * n
        requests.append(q)
    answer = [struct.pack("<Q", count)]
    for q in requests:
        answer.append(struct.pack("<Q", q.trials))
        for accepted, emitted in sampler.verify(q):
            tokens = list(emitted) + [INVALID_TOKEN] * (q.g + 1 - len(emitted))
            answer.append(struct.pack("<i%di" % (q.g + 1), accepted, *tokens))
    return b"".join(answer)


def serve(sampler, stdin=None, stdout=None):
    """Answers requests until BYE or end of input. Returns the process exit code."""
    stdin = stdin or sys.stdin.buffer
    stdout = stdout or sys.stdout.buffer
    while True:
        header = _read_exact(stdin, 8)
        if header is None:
            return 0
        length, msg_type = struct.unpack("<II", header)
        payload = _read_exact(stdin, length - 4)
        if payload is None:
            print("samplecheck_client: input ended inside a message", file=sys.stderr)
            return 1
        if msg_type == BYE:
            return 0
        if msg_type == HELLO:
            magic, version = struct.unpack_from("<II", payload, 0)
            if magic != MAGIC:
                print("samplecheck_client: bad magic 0x%08x" % magic, file=sys.stderr)
                return 1
            answer = _frame(HELLO, struct.pack("<III", MAGIC, PROTOCOL_VERSION, sampler.capabilities) +
                            _string(sampler.name) + _string(sampler.profile))
        else:
            try:
                answer = _handle(sampler, msg_type, payload)
            except SamplerError as e:
                answer = _frame(ERROR, struct.pack("<I", e.code) + _string(str(e)))
            except Exception as e:  # a bug in the sampler: report it, keep serving
                answer = _frame(ERROR, struct.pack("<I", ERR_FAILED) + _string("%s: %s" % (type(e).__name__, e)))
        stdout.write(answer)
        stdout.flush()


def main(argv):
    bug = None
    args = list(argv[1:])
    while args:
        arg = args.pop(0)
        if arg == "--bug" and args:
            bug = args.pop(0)
        else:
            print("usage: samplecheck_client.py [--bug no-renorm|coin-edge]", file=sys.stderr)
            return 2
    return serve(VllmSampler(bug))


if __name__ == "__main__":
    sys.exit(main(sys.argv))
