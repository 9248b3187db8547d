#!/usr/bin/env python3
"""A RE-IMPLEMENTATION of vLLM v1's PyTorch sampling path on real PyTorch kernels, served by the samplecheck Python
package (python/samplecheck, docs/python.md). It is not vLLM: the filters and the draw are written here after
vllm/v1/sample/sampler.py, ops/topk_topp_sampler.py (apply_top_k_top_p_pytorch) and random_sample, with torch's own
softmax, sort, cumsum, exponential_ and argmax doing the arithmetic. Its name in every report is
"torch-vllm-reimpl@<device>" (with --use-vllm, vLLM's own apply_top_k_top_p replaces the filters here:
"torch-vllm-ops@<device>").

    samplecheck run --suite smoke --profile vllm \
        --sampler "process:/usr/bin/python3 examples/python/torch_client.py --device cpu"
    samplecheck run --suite standard --profile vllm \
        --sampler "process:python3 examples/python/torch_client.py --device cuda"

CI (ctest label engine) runs it on the CPU with Debian's python3-torch (installed for /usr/bin/python3).

What it computes, per row (the PyTorch path of vLLM v1):
  greedy snapshot argmax for T < 1e-5; logits / T; min-p on the softmax of the scaled logits (mask p < min_p * max p);
  top-k by the k-th largest logit (ties kept: mask logits < k-th); top-p on the softmax of the masked logits (sort
  ascending, mask cumsum <= 1 - p, keep the last); fp32 softmax; the draw.
The draw is vLLM's random_sample: q = empty_like(probs).exponential_(), token = argmax(probs / q) (the exponential
race), one call over the whole [batch, V] step, as vLLM does for the requests of a batch without their own generator:
samplecheck.draws.windowed_race. Lanes L(V) = the largest power of two with L * V <= 2^24 on cuda (2^16 on the cpu),
at most 65536 (samplecheck.lanes_for); the draw at (seed, offset g) is lane g % L of one step over L copies of the
row, the noise of that step drawn by a torch.Generator seeded from (seed, g // L) (a window) and shared by the rows
of that seed and window. COUNT processes the row once and steps window after window (samplecheck.draws.count_windows
with race_step), so draw i of COUNT is the SAMPLE draw at offset + i, token for token (samplecheck's agreement check
for a deterministic sampler). It never uses torch.multinomial(probs, N, replacement=True): that is another
kernel than the engine's per-step draw (and on an H100 it failed the standard suite's goodness of fit on 4
tail-heavy cases: docs/conformance.md). --count-path multinomial-replacement keeps that path to reproduce the
finding (COUNT then no longer equals SAMPLE: the agreement check fails, as it should); --count-path multinomial-1
draws each step as torch.multinomial(probs, 1) over the L copies instead of the race, in SAMPLE and COUNT alike.
"""
import argparse
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "python"))
import samplecheck  # noqa: E402
from samplecheck import draws  # noqa: E402
from samplecheck_client import VllmSampler  # noqa: E402  (the vllm profile's parameter rules)

try:
    import torch
except ImportError as e:  # answered to samplecheck's HELLO: "cannot serve: ..."
    sys.exit(samplecheck.cannot_serve("torch_client.py needs torch: %s" % e))

_SAMPLING_EPS = 1e-5


class TorchVllm:
    def __init__(self, use_vllm):
        self.apply_top_k_top_p = None
        if use_vllm:
            from vllm.v1.sample.ops.topk_topp_sampler import apply_top_k_top_p  # the engine's own function
            self.apply_top_k_top_p = apply_top_k_top_p

    def probs(self, logits, params):
        """The processed distribution of a batch, as vLLM computes it (fp32 on the device), and the rows that
        cannot be sampled."""
        t = params.temperature.float()
        greedy = t < _SAMPLING_EPS
        greedy_tokens = logits.argmax(dim=-1)
        x = logits / torch.where(greedy, torch.ones_like(t), t).unsqueeze(1)
        # min-p on the full distribution
        p = torch.softmax(x, dim=-1)
        x = x.masked_fill(p < params.min_p.float().unsqueeze(1) * p.amax(dim=-1, keepdim=True), float("-inf"))
        # top-k (0 and -1 disable: vLLM maps them to vocab)
        vocab = x.shape[1]
        k = params.top_k
        k = torch.where(k <= 0, torch.full_like(k, vocab), k.clamp(max=vocab))
        top_p = params.top_p.float()
        if self.apply_top_k_top_p is not None:
            x = self.apply_top_k_top_p(x, k, top_p)
        else:
            x_sorted, _ = x.sort(dim=-1, descending=True)
            kth = x_sorted.gather(1, (k - 1).unsqueeze(1))
            x = x.masked_fill(x < kth, float("-inf"))
            # top-p on the renormalized distribution: ascending cumsum, mask cumsum <= 1 - p, keep the last
            x_sorted, idx = x.sort(dim=-1, descending=False)
            cumsum = torch.softmax(x_sorted, dim=-1).cumsum(dim=-1)
            mask = cumsum <= (1 - top_p).unsqueeze(1)
            mask[:, -1] = False
            x = x.scatter(1, idx, x_sorted.masked_fill(mask, float("-inf")))
        probs = torch.softmax(x, dim=-1)
        one_hot = torch.nn.functional.one_hot(greedy_tokens, vocab).to(probs.dtype)
        probs = torch.where(greedy.unsqueeze(1), one_hot, probs)
        return probs, draws.invalid_rows(logits)

    def sample(self, logits, params, step=draws.windowed_race):
        probs, invalid = self.probs(logits, params)
        tokens = step(probs.masked_fill(invalid.unsqueeze(1), 1.0), params)
        return torch.where(invalid, torch.full_like(tokens, -1), tokens)

    def count(self, logits, params, n, step=draws.race_step):
        """The row processed once, then the windows' steps (draw i = sample()'s draw at offset + i)."""
        probs, invalid = self.probs(logits, params)
        if invalid[0]:
            return [0] * logits.shape[1], n
        return draws.count_windows(step, probs, params, n)

    def logprobs(self, logits, params):
        probs, invalid = self.probs(logits, params)
        if invalid[0]:
            raise samplecheck.SamplerError(samplecheck.ERR_INVALID_ROW, "the row has a NaN or every logit is -inf")
        dense = probs.double()
        return (dense / dense.sum(dim=-1, keepdim=True)).log()


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    parser.add_argument("--use-vllm", action="store_true", help="use vllm's apply_top_k_top_p for top-k/top-p")
    parser.add_argument("--count-path", choices=("race", "multinomial-1", "multinomial-replacement"), default="race",
                        help="how COUNT draws: race (default, vLLM's per-step exponential race over replicated rows), "
                             "multinomial-1 (multinomial(probs, 1) per replicated row), multinomial-replacement "
                             "(one multinomial(probs, N, replacement=True): not the engine's path)")
    args = parser.parse_args()
    engine = TorchVllm(args.use_vllm)
    name = "torch-vllm-" + ("ops" if args.use_vllm else "reimpl") + "@" + args.device
    sample, count = engine.sample, engine.count
    if args.count_path != "race":
        name += "+count=" + args.count_path
    if args.count_path == "multinomial-1":
        def sample(logits, params):
            return engine.sample(logits, params, draws.windowed_multinomial)

        def count(logits, params, n):
            return engine.count(logits, params, n, draws.multinomial_step)
    elif args.count_path == "multinomial-replacement":  # not the engine's path: kept to reproduce the finding
        def count(logits, params, n):
            probs, invalid = engine.probs(logits, params)
            if invalid[0]:
                return [0] * logits.shape[1], n
            g = draws.generator(params[0].seed, params[0].offset, logits.device)
            drawn = torch.multinomial(probs[0], n, replacement=True, generator=g)
            return torch.bincount(drawn, minlength=logits.shape[1]).tolist(), 0
    return samplecheck.serve(sample, logprobs=engine.logprobs, count=count, validate=VllmSampler().validate,
                             name=name, profile="vllm", tensors="torch", device=args.device)


if __name__ == "__main__":
    sys.exit(main())
