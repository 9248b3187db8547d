#!/usr/bin/env python3
"""The reference client of the samplecheck process protocol, on the samplecheck Python package (python/samplecheck,
docs/python.md), standard library only.

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

The protocol (handshake, messages, errors) is samplecheck.serve's: this file is the sampler only.
"""
import math
import os
import sys
from bisect import bisect_right

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "python"))
import samplecheck  # noqa: E402
from samplecheck import philox  # noqa: E402
from samplecheck import DRAFT_LOGITS, DRAFT_ONE_HOT, DRAFT_PROBABILITIES, ERR_INVALID_ARGUMENT, ERR_INVALID_ROW, \
    INVALID_TOKEN, SamplerError  # noqa: E402


class VllmSampler:
    """vLLM v1: greedy T < 1e-5; min-p on the full softmax; top-k with ties kept; strict top-p on the
    distribution renormalized after min-p and top-k, ties cut by position (lowest id first); inverse CDF draw."""

    def __init__(self, bug=None):
        if bug not in (None, "no-renorm", "coin-edge"):
            raise ValueError("unknown bug %r (known: no-renorm, coin-edge)" % bug)
        self.bug = bug
        self.name = "python-vllm" + ("-bug-" + bug if bug else "")
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
        """[(token, probability), ...] ascending by token, or None for a row that cannot be sampled."""
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

    # ---- the callables samplecheck.serve calls (tensors="python": rows are array('f'), params SamplingParams) ----
    def sample(self, logits, params):
        # A replicated call (SAMPLE_REPLICATED) holds the same row object many times with other seeds: each distinct
        # (row, filter parameters) is processed once per call and drawn from by bisection of its CDF.
        tokens, tables = [], {}
        for row, p in zip(logits, params):
            key = (id(row), p.temperature, p.top_k, p.top_p, p.min_p)
            if key not in tables:
                dist = self.processed(row, p)
                tables[key] = None if dist is None else cdf_table(dist)
            table = tables[key]
            tokens.append(INVALID_TOKEN if table is None else draw_from_table(table, philox.uniform(p.seed, p.offset)))
        return tokens

    def logprobs(self, logits, params):
        dist = self.processed(logits[0], params[0])
        if dist is None:
            raise SamplerError(ERR_INVALID_ROW, "the row has a NaN or every logit is -inf")
        out = [-math.inf] * len(logits[0])
        for token, prob in dist:
            out[token] = math.log(prob)
        return [out]

    def count(self, logits, params, draws):
        """Draws offset .. offset + draws - 1 by inverse CDF with the Philox uniform, as sample() draws them."""
        row, p = logits[0], params[0]
        histogram = [0] * len(row)
        dist = self.processed(row, p)
        if dist is None:
            return histogram, draws
        table = cdf_table(dist)
        for i in range(draws):
            histogram[draw_from_table(table, philox.uniform(p.seed, (p.offset + i) & ((1 << 64) - 1)))] += 1
        return histogram, 0

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
        g = q.g
        self.validate(q.params)
        if q.form == DRAFT_LOGITS:
            self.validate(q.draft_params)
        targets = [self._processed_cached(q.target[j], q.params) for j in range(g + 1)]
        if any(t is None for t in targets):  # a target row that cannot be sampled: nothing is verified
            return [0] * q.trials, [[INVALID_TOKEN]] * q.trials
        greedy = q.params.temperature < 1e-5
        drafts, residuals = [], []
        for j in range(g if q.form != DRAFT_ONE_HOT else 0):
            row = q.draft[j]
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
        accepted, tokens = [], []
        scripted = q.uniforms
        for i in range(q.trials):
            xs = q.draft_tokens[i]
            offset = q.params.offset + i * (g + 1)
            emitted = []
            for j in range(g + 1):
                if scripted:
                    coin, d = scripted[2 * j], scripted[2 * j + 1]
                else:
                    d, coin = philox.spec_uniforms(q.params.seed, offset + j)
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
            accepted.append(len(emitted) - 1)
            tokens.append(emitted)
        return accepted, tokens

    def sampler(self):
        return samplecheck.Sampler(self.sample, logprobs=self.logprobs, count=self.count, verify=self.verify,
                                   validate=self.validate, name=self.name, profile="vllm", tensors="python",
                                   verify_scripted=True)


def residual(p, qd):
    """normalize(max(0, p - q)) as [(token, probability)] ascending; p itself when p = q (never drawn then)."""
    diff = [(t, pt - qd.get(t, 0.0)) for t, pt in p]
    diff = [(t, v) for t, v in diff if v > 0.0]
    mass = math.fsum(v for _, v in diff)
    if not mass > 0.0:
        return p
    return [(t, v / mass) for t, v in diff]


def cdf_table(dist):
    """(tokens, inclusive cumulative probabilities) of [(token, probability)] ascending, summed as draw() sums."""
    tokens, cdf, running = [], [], 0.0
    for token, prob in dist:
        running += prob
        tokens.append(token)
        cdf.append(running)
    return tokens, cdf


def draw_from_table(table, u):
    """draw() on a cdf_table: the first token whose inclusive cumulative probability exceeds u, else the last."""
    tokens, cdf = table
    return tokens[min(bisect_right(cdf, u), len(tokens) - 1)]


def draw(dist, u):
    """The first token (ascending id) whose inclusive cumulative probability exceeds u."""
    cdf = 0.0
    for token, prob in dist:
        cdf += prob
        if cdf > u:
            return token
    return dist[-1][0]


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
    return samplecheck.serve(VllmSampler(bug).sampler())


if __name__ == "__main__":
    sys.exit(main(sys.argv))
