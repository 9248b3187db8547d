#!/usr/bin/env python3
"""A RE-IMPLEMENTATION of vLLM v1's PyTorch sampling path on real PyTorch kernels, behind the samplecheck process
protocol. It is not vLLM: the filters and the draw are written here after vllm/v1/sample/sampler.py,
ops/topk_topp_sampler.py (apply_top_k_top_p_pytorch) and random_sample, with torch's own softmax, sort, cumsum,
exponential_ and argmax doing the arithmetic. Its name in every report is "torch-vllm-reimpl@<device>" (with
--use-vllm, vLLM's own apply_top_k_top_p replaces the filters here: "torch-vllm-ops@<device>").

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
race), one call over the whole [batch, V] step, as vLLM does for the requests of a batch without their own generator.
Draws are counted through that per-step path on replicated rows (copies of a row in one step are independent
draws, as the requests of one batch are):
  lanes L(V) = the largest power of two with L * V <= 2^24 on cuda (2^16 on the cpu), at most 65536, a function of
  V and the device only (samplecheck_client.replica_lanes); the draw at (seed, offset g) is lane g % L of one step over L copies of the row, the noise
  of that step drawn by a torch.Generator seeded from (seed, g // L) (a window).
SAMPLE draws every row that way (one step per distinct (seed, window); the noise of a window does not depend on the
row), COUNT steps window after window and bincounts the lanes it needs, so draw i of COUNT is the SAMPLE draw at
offset + i, token for token (samplecheck's agreement check for a deterministic sampler). It never uses
torch.multinomial(probs, N, replacement=True): that is another kernel than the engine's per-step draw (and on an
H100 it failed the standard suite's goodness of fit on 4 tail-heavy cases: docs/conformance.md). --count-path
multinomial-replacement keeps that path to reproduce the finding (COUNT then no longer equals SAMPLE: the
agreement check fails, as it should); --count-path multinomial-1 draws each step as torch.multinomial(probs, 1) over
the L copies instead of the race, in SAMPLE and COUNT alike.
"""
import argparse
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import samplecheck_client as sc  # noqa: E402

_SAMPLING_EPS = 1e-5


def _seed_generator(g, seed, offset):
    # Any injective-enough mix works: (seed, offset) -> one 63-bit seed.
    g.manual_seed((seed * 0x9E3779B97F4A7C15 + offset * 0xBF58476D1CE4E5B9) & ((1 << 63) - 1))
    return g


def _generator(device, seed, offset):
    return _seed_generator(torch.Generator(device=device), seed, offset)


def lanes_for(vocab, device):
    """L(V): copies of a row per step (samplecheck_client.replica_lanes)."""
    return sc.replica_lanes(vocab, device.type == "cuda")


class TorchVllmSampler(sc.VllmSampler):
    capabilities = sc.CAP_PROCESSED | sc.CAP_COUNT

    def __init__(self, device, use_vllm, count_path="race"):
        super().__init__()
        self.name = "torch-vllm-" + ("ops" if use_vllm else "reimpl") + "@" + device
        if count_path != "race":
            self.name += "+count=" + count_path
        self.device = torch.device(device)
        self.count_path = count_path
        self.apply_top_k_top_p = None
        if use_vllm:
            from vllm.v1.sample.ops.topk_topp_sampler import apply_top_k_top_p  # the engine's own function
            self.apply_top_k_top_p = apply_top_k_top_p

    # ---- the processed distribution of a batch, as vLLM computes it (fp32 on the device) ----
    def _probs(self, logits, params):
        rows = logits.shape[0]
        t = torch.tensor([p.temperature for p in params], dtype=torch.float32, device=self.device)
        k = torch.tensor([p.top_k for p in params], dtype=torch.int64, device=self.device)
        top_p = torch.tensor([p.top_p for p in params], dtype=torch.float32, device=self.device)
        min_p = torch.tensor([p.min_p for p in params], dtype=torch.float32, device=self.device)
        greedy = t < _SAMPLING_EPS
        greedy_tokens = logits.argmax(dim=-1)
        x = logits / torch.where(greedy, torch.ones_like(t), t).unsqueeze(1)
        # min-p on the full distribution
        p = torch.softmax(x, dim=-1)
        x = x.masked_fill(p < min_p.unsqueeze(1) * p.amax(dim=-1, keepdim=True), float("-inf"))
        # top-k (0 and -1 disable: vLLM maps them to vocab)
        vocab = x.shape[1]
        k = torch.where(k <= 0, torch.full_like(k, vocab), k.clamp(max=vocab))
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
        invalid = torch.isnan(logits).any(dim=-1) | torch.isneginf(logits).all(dim=-1)
        return probs, invalid

    def _tensor(self, values, rows, vocab):
        return torch.frombuffer(values, dtype=torch.float32).reshape(rows, vocab).to(self.device)

    @staticmethod
    def _race(probs, q):
        """vLLM's random_sample: probs.div_(q).argmax(dim=-1), q ~ Exponential(1) (the exponential race)."""
        return probs.div(q).argmax(dim=-1)

    def _step(self, probs_row, seed, window, lanes, noise=None):
        """One engine step over `lanes` copies of the row, its randomness from a generator seeded from
        (seed, window): the token of every lane. `noise` reuses the race's exponentials of that (seed, window)."""
        g = _generator(self.device, seed, window)
        copies = probs_row.unsqueeze(0).expand(lanes, probs_row.numel())
        if self.count_path == "multinomial-1":
            return torch.multinomial(copies.contiguous(), 1, generator=g)[:, 0], None
        if noise is None:
            noise = torch.empty((lanes, probs_row.numel()), dtype=probs_row.dtype,
                                device=self.device).exponential_(generator=g)
        return self._race(copies, noise), noise

    def sample_batch(self, logits, rows, vocab, params):
        probs, invalid = self._probs(self._tensor(logits, rows, vocab), params)
        lanes = lanes_for(vocab, self.device)
        tokens = [sc.INVALID_TOKEN] * rows
        # Rows in (seed, window) order: the race's noise of a window is drawn once and reused by every row in it.
        order = sorted((r for r in range(rows) if not invalid[r]),
                       key=lambda r: (params[r].seed, params[r].offset // lanes))
        key, noise = None, None
        for r in order:
            p = params[r]
            window = p.offset // lanes
            if (p.seed, window) != key:
                key, noise = (p.seed, window), None
            step, noise = self._step(probs[r], p.seed, window, lanes, noise)
            tokens[r] = int(step[p.offset % lanes])
        return tokens

    def processed(self, row, params):
        probs, invalid = self._probs(self._tensor(row, 1, len(row)), [params])
        if invalid[0]:
            return None
        dense = probs[0].double().cpu()
        dense = dense / dense.sum()
        nz = dense.nonzero().flatten().tolist()
        return [(t, float(dense[t])) for t in nz]

    def count(self, row, params, draws):
        """Draw i is the SAMPLE draw at offset + i: window after window, one engine step over L(V) copies of the row
        (noise from the window's generator, the exponential race over the whole step), the lanes it needs counted."""
        probs, invalid = self._probs(self._tensor(row, 1, len(row)), [params])
        vocab = len(row)
        if invalid[0]:
            return [0] * vocab, draws
        if self.count_path == "multinomial-replacement":  # not the engine's path: kept to reproduce the finding
            g = _generator(self.device, params.seed, params.offset)
            samples = torch.multinomial(probs[0], draws, replacement=True, generator=g)
            return torch.bincount(samples, minlength=vocab).cpu().tolist(), 0
        histogram = torch.zeros(vocab, dtype=torch.int64, device=self.device)
        lanes = lanes_for(vocab, self.device)
        g, remaining = params.offset, draws
        while remaining > 0:
            lo = g % lanes
            take = min(remaining, lanes - lo)
            step, _ = self._step(probs[0], params.seed, g // lanes, lanes)
            histogram += torch.bincount(step[lo:lo + take], minlength=vocab)
            g += take
            remaining -= take
        return histogram.cpu().tolist(), 0


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    parser.add_argument("--use-vllm", action="store_true", help="use vllm's apply_top_k_top_p for top-k/top-p")
    parser.add_argument("--count-path", choices=("race", "multinomial-1", "multinomial-replacement"), default="race",
                        help="how COUNT draws: race (default, vLLM's per-step exponential race over replicated rows), "
                             "multinomial-1 (multinomial(probs, 1) per replicated row), multinomial-replacement "
                             "(one multinomial(probs, N, replacement=True): not the engine's path)")
    args = parser.parse_args()
    return sc.serve(TorchVllmSampler(args.device, args.use_vllm, args.count_path))


if __name__ == "__main__":
    sys.exit(main())
