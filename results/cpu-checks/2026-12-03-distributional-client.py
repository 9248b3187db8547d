"""A correct sampler (python/tests/ten_lines.py, vllm profile) whose COUNT draws the same distribution from other
seeds (seed ^ K): what an engine's unseeded production path looks like to the harness (protocol bit 512).
--mutant: COUNT draws from the planted twin that does not renormalize (a wrong distribution on the count path)."""
import sys
import torch
sys.path[:0] = ["/work/main/python", "/work/main/python/tests"]
import samplecheck
from samplecheck.tensors import BatchParams
import ten_lines

MUTANT = "--mutant" in sys.argv
K = 0x9E3779B97F4A7C15


def make():
    sampler = None

    def count(logits, params, n):
        # The processed distribution of the row (ten_lines.replay, the same order), drawn by torch.multinomial on a
        # generator of another seed: the same law, other tokens. The mutant ignores the temperature on this path.
        p = params[0]
        if MUTANT:
            p = p._replace(temperature=1.0)
        one = BatchParams.of_draws(sampler.backend, tuple(p), p.offset, 1, None)
        lp = ten_lines.replay(logits, one, guard=False)
        lp = (lp[0] if isinstance(lp, tuple) else lp).reshape(-1)
        if not torch.isfinite(lp).any():
            return [0] * logits.shape[1], n
        if p.temperature < 1e-5:  # greedy: the argmax alone, as ten_lines.sample
            hist = [0] * logits.shape[1]
            hist[int(logits[0].argmax())] = n
            return hist, 0
        g = torch.Generator().manual_seed((p.seed ^ K ^ (p.offset * 0x2545F4914F6CDD1D)) % (1 << 63))
        tok = torch.multinomial(lp.exp(), n, replacement=True, generator=g)
        return torch.bincount(tok, minlength=logits.shape[1]).tolist(), 0

    sampler = samplecheck.Sampler(ten_lines.sample, count=count, name="ten-lines+counts=other-seeds" +
                                  ("+mutant" if MUTANT else ""), profile="vllm", tensors="torch", device="cpu",
                                  count_distributional=True)
    return sampler


make().serve()
