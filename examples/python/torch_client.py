#!/usr/bin/env python3
"""A PyTorch sampler behind the samplecheck process protocol: the vLLM v1 PyTorch sampling path, vectorized.

Needs torch (not run in CI: CI has no PyPI). The protocol code comes from samplecheck_client.py beside this file.

    samplecheck run --suite standard --profile vllm \\
        --sampler "process:python3 examples/python/torch_client.py --device cuda"
    # check vLLM's own top-k/top-p function when vllm is installed:
    samplecheck run --suite standard --profile vllm \\
        --sampler "process:python3 examples/python/torch_client.py --device cuda --use-vllm"

What it computes, per row (vllm/v1/sample/sampler.py and ops/topk_topp_sampler.py, PyTorch path):
  greedy snapshot argmax for T < 1e-5; logits / T; min-p on the softmax of the scaled logits (mask p < min_p * max p);
  top-k by the k-th largest logit (ties kept: mask logits < k-th); top-p on the softmax of the masked logits (sort
  ascending, mask cumsum <= 1 - p, keep the last); fp32 softmax; draw.
The draw is torch.multinomial with a torch.Generator seeded from (seed, offset): it does not reproduce samplecheck's
Philox stream, so campaigns judge it statistically (chi-square), which is the point. COUNT draws N samples of one row
in one multinomial call on the device, so millions of draws cost one transfer.
"""
import argparse
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import samplecheck_client as sc  # noqa: E402

_SAMPLING_EPS = 1e-5


def _generator(device, seed, offset):
    g = torch.Generator(device=device)
    # Any injective-enough mix works: (seed, offset) -> one 63-bit seed.
    g.manual_seed((seed * 0x9E3779B97F4A7C15 + offset * 0xBF58476D1CE4E5B9) & ((1 << 63) - 1))
    return g


class TorchVllmSampler(sc.VllmSampler):
    capabilities = sc.CAP_PROCESSED | sc.CAP_COUNT

    def __init__(self, device, use_vllm):
        super().__init__()
        self.name = "torch-vllm" + ("-ops" if use_vllm else "") + "@" + device
        self.device = torch.device(device)
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

    def sample_batch(self, logits, rows, vocab, params):
        probs, invalid = self._probs(self._tensor(logits, rows, vocab), params)
        tokens = []
        for r, p in enumerate(params):
            if invalid[r]:
                tokens.append(sc.INVALID_TOKEN)
                continue
            g = _generator(self.device, p.seed, p.offset)
            tokens.append(int(torch.multinomial(probs[r], 1, generator=g)))
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
        probs, invalid = self._probs(self._tensor(row, 1, len(row)), [params])
        if invalid[0]:
            return [0] * len(row), draws
        g = _generator(self.device, params.seed, params.offset)
        samples = torch.multinomial(probs[0], draws, replacement=True, generator=g)
        return torch.bincount(samples, minlength=len(row)).cpu().tolist(), 0


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    parser.add_argument("--use-vllm", action="store_true", help="use vllm's apply_top_k_top_p for top-k/top-p")
    args = parser.parse_args()
    return sc.serve(TorchVllmSampler(args.device, args.use_vllm))


if __name__ == "__main__":
    sys.exit(main())
