#!/usr/bin/env python3
"""HuggingFace transformers' own logits warpers, served by the samplecheck Python package (python/samplecheck,
docs/python.md), composed as generate() composes them for do_sample=True, judged under the `hf` profile.

Needs torch and transformers (the GPU machine has torch 2.11 and transformers 5.17; not run in CI here, where
transformers is not installed):

    samplecheck run --suite smoke --profile hf \\
        --sampler "process:python3 examples/python/transformers_client.py --device cuda"

What is transformers' own and what is written here:
  - the warpers are transformers' classes (transformers.generation.logits_process: TemperatureLogitsWarper,
    TopKLogitsWarper, TopPLogitsWarper, MinPLogitsWarper), built by transformers' own
    GenerationMixin._get_logits_processor from a GenerationConfig when that call works on this version (the client
    says which on stderr and in its name: "transformers-<version>-generate@<device>"); otherwise in the order this
    client reads from the installed _get_logits_processor source at start (printed on stderr), with the same
    conditions generate() applies (temperature only if T != 1, top-k only if top_k != 0, top-p only if top_p < 1,
    min-p only if min_p is set): "transformers-<version>-warpers@<device>".
  - the draw is generate()'s (_sample): softmax of the warped scores, then one torch.multinomial(probs,
    num_samples=1) over the whole [batch, V] step. Draws are counted through that per-step call on replicated rows
    (copies of a row in one step are independent draws, as the sequences of one batch are): lanes L(V) = the
    largest power of two with L * V <= 2^24 on cuda (2^16 on the cpu), at most 65536 (samplecheck.lanes_for); the
    draw at (seed, offset g) is lane g % L of one multinomial step over L copies of the row, on a torch.Generator
    seeded from (seed, g // L) (instead of generate()'s global RNG, so the sampler is deterministic):
    samplecheck.draws.windowed_multinomial. SAMPLE draws every row that way (one step per distinct row, parameters
    and window); COUNT runs the warpers once and steps window after window (samplecheck.draws.count_windows): draw i
    of COUNT is the SAMPLE draw at offset + i, token for token (samplecheck's agreement check).
    It never counts with torch.multinomial(probs, N, replacement=True), which is another kernel
    (docs/conformance.md).
    T = 0 is do_sample=False: argmax of the raw logits (the hf profile's greedy path).
  - The warpers run once per row: they are deterministic functions of the scores.
  - samplecheck's top_k = -1 (disabled) is passed to transformers as top_k = 0 (generate's "disabled"; its
    GenerationConfig default is 50, which is why it is always set explicitly).
"""
import argparse
import inspect
import os
import re
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "python"))
import samplecheck  # noqa: E402
from samplecheck import draws  # noqa: E402

try:
    import torch
    import transformers
    from transformers import GenerationConfig
    from transformers.generation import logits_process as lp
    from transformers.generation.utils import GenerationMixin as _GenerationMixin
except ImportError as e:  # answered to samplecheck's HELLO: "cannot serve: ..."
    sys.exit(samplecheck.cannot_serve("transformers_client.py needs torch and transformers: %s" % e))


def _warper_order_from_source():
    """The order in which the installed GenerationMixin._get_logits_processor appends the four warpers."""
    source = inspect.getsource(_GenerationMixin._get_logits_processor)
    found = []
    for name in ("TemperatureLogitsWarper", "TopKLogitsWarper", "TopPLogitsWarper", "MinPLogitsWarper"):
        m = re.search(name + r"\(", source)
        if m is None:
            raise RuntimeError("the installed _get_logits_processor does not build " + name)
        found.append((m.start(), name))
    return [name for _, name in sorted(found)]


def _config_class():
    # transformers 5 names it PreTrainedConfig (PretrainedConfig is the 4.x name, kept as an alias for a while).
    return getattr(transformers, "PreTrainedConfig", None) or getattr(transformers, "PretrainedConfig")


class _Probe(_GenerationMixin):
    """A stand-in model for GenerationMixin._get_logits_processor: a GenerationMixin (the method calls
    self._merge_criteria_processor_list) with the attributes it reads, a decoder-only model without special
    tokens."""

    def __init__(self, vocab):  # noqa: no super().__init__: GenerationMixin is a mixin without state
        self.config = _config_class()(vocab_size=vocab, is_encoder_decoder=False)
        self.generation_config = GenerationConfig()


class TransformersSampler:
    def __init__(self, device):
        self.device = torch.device(device)
        self.order = _warper_order_from_source()
        self.use_generate = self._generate_processor_works()
        self.name = "transformers-%s-%s@%s" % (transformers.__version__, "generate" if self.use_generate else "warpers",
                                               device)
        print("transformers %s: _get_logits_processor appends %s; warpers built by %s" %
              (transformers.__version__, " -> ".join(self.order),
               "GenerationMixin._get_logits_processor" if self.use_generate else "this client in that order"),
              file=sys.stderr)

    def _config(self, p):
        top_k = 0 if p.top_k <= 0 else p.top_k
        kwargs = dict(do_sample=True, temperature=p.temperature, top_k=top_k, top_p=p.top_p)
        if p.min_p > 0:
            kwargs["min_p"] = p.min_p
        return GenerationConfig(**kwargs)

    def _generate_processor_works(self):
        try:
            cfg = GenerationConfig(do_sample=True, temperature=0.5, top_k=3, top_p=0.9, min_p=0.1)
            procs = _Probe(8)._get_logits_processor(generation_config=cfg, input_ids_seq_length=1,
                                                    encoder_input_ids=torch.zeros((1, 1), dtype=torch.long),
                                                    prefix_allowed_tokens_fn=None,
                                                    logits_processor=lp.LogitsProcessorList())
            names = [type(x).__name__ for x in procs]
            return names == self.order
        except Exception as e:  # noqa: BLE001 - a version whose private signature differs
            print("transformers: GenerationMixin._get_logits_processor not usable here (%s: %s)" %
                  (type(e).__name__, e), file=sys.stderr)
            return False

    def _processors(self, p, vocab):
        if self.use_generate:
            return _Probe(vocab)._get_logits_processor(generation_config=self._config(p), input_ids_seq_length=1,
                                                       encoder_input_ids=torch.zeros((1, 1), dtype=torch.long),
                                                       prefix_allowed_tokens_fn=None,
                                                       logits_processor=lp.LogitsProcessorList())
        procs = lp.LogitsProcessorList()
        for name in self.order:
            if name == "TemperatureLogitsWarper" and p.temperature != 1.0:
                procs.append(lp.TemperatureLogitsWarper(p.temperature))
            elif name == "TopKLogitsWarper" and p.top_k > 0:
                procs.append(lp.TopKLogitsWarper(top_k=p.top_k))
            elif name == "TopPLogitsWarper" and p.top_p < 1.0:
                procs.append(lp.TopPLogitsWarper(top_p=p.top_p))
            elif name == "MinPLogitsWarper" and p.min_p > 0:
                procs.append(lp.MinPLogitsWarper(min_p=p.min_p))
        return procs

    def validate(self, p):
        def bad(message):
            raise samplecheck.SamplerError(samplecheck.ERR_INVALID_ARGUMENT, message + " for profile hf")
        if p.temperature != p.temperature or p.temperature < 0 or p.temperature == float("inf"):
            bad("temperature = %r is outside [0, inf)" % p.temperature)
        if p.top_k < -1:
            bad("top_k = %d is not -1 (disabled), 0 (disabled), or an integer >= 1" % p.top_k)
        if not (0.0 <= p.top_p <= 1.0):
            bad("top_p = %r is outside [0, 1] (0 = greedy)" % p.top_p)
        if not (0.0 <= p.min_p <= 1.0):
            bad("min_p = %r is outside [0, 1]" % p.min_p)

    def _probs(self, logits, p):
        """(probs, greedy token or None, invalid) of one row (a tensor on the device)."""
        if torch.isnan(logits).any() or torch.isneginf(logits).all():
            return None, None, True
        if p.temperature == 0:  # do_sample=False: generate's greedy search
            return None, int(logits.argmax()), False
        scores = self._processors(p, logits.numel())(torch.zeros((1, 1), dtype=torch.long, device=self.device),
                                                     logits.unsqueeze(0).clone())
        return torch.softmax(scores, dim=-1)[0], None, False

    def sample(self, logits, params):
        """The warpers once per distinct row and parameters (params.row names the row of a replicated call), then
        generate()'s multinomial step over the lanes of each window."""
        probs = torch.ones_like(logits)
        fixed, stochastic, done = {}, set(), {}
        rows = params.host("row")
        for r, p in enumerate(params):  # serve() validated every row before this call
            key = (rows[r],) + tuple(p[:4])
            if key not in done:
                done[key] = (r,) + self._probs(logits[r], p)
            first, pr, greedy, invalid = done[key]
            if invalid or greedy is not None:
                fixed[r] = -1 if invalid else greedy
            else:
                if first == r:
                    probs[r] = pr
                else:
                    probs[r] = probs[first]
                stochastic.add(r)
        tokens = draws.windowed_multinomial(probs, params, only=stochastic)
        for r, token in fixed.items():
            tokens[r] = token
        return tokens

    def count(self, logits, params, n):
        """The warpers once, then generate()'s step window after window (draw i = sample()'s draw at offset + i)."""
        probs, greedy, invalid = self._probs(logits[0], params[0])
        histogram = [0] * logits.shape[1]
        if invalid:
            return histogram, n
        if greedy is not None:
            histogram[greedy] = n
            return histogram, 0
        return draws.count_windows(draws.multinomial_step, probs, params, n)

    def logprobs(self, logits, params):
        probs, greedy, invalid = self._probs(logits[0], params[0])
        if invalid:
            raise samplecheck.SamplerError(samplecheck.ERR_INVALID_ROW, "the row has a NaN or every logit is -inf")
        if greedy is not None:
            out = torch.full((1, logits.shape[1]), float("-inf"), dtype=torch.float64)
            out[0, greedy] = 0.0
            return out
        dense = probs.double().cpu()
        return (dense / dense.sum()).log().unsqueeze(0)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    args = parser.parse_args()
    hf = TransformersSampler(args.device)
    return samplecheck.serve(hf.sample, logprobs=hf.logprobs, count=hf.count, validate=hf.validate, name=hf.name,
                             profile="hf", tensors="torch", device=args.device)


if __name__ == "__main__":
    sys.exit(main())
