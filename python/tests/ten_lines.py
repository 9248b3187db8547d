"""The ten-line sampler of docs/python.md and the README: vLLM's order (temperature, min-p, top-k with ties kept,
top-p on the renormalized mass, ties by position) in torch, float64, drawn by the exponential race on a
torch.Generator per (seed, offset). renormalize=False is the planted bug: top-p reads the mass left by top-k and
min-p without renormalizing it, so it keeps too many tokens."""
import torch
from samplecheck import draws


def sample(logits, params, renormalize=True):
    t = params.temperature
    probs = torch.softmax(logits.double() / t.clamp(min=1e-5)[:, None], dim=-1)
    s, i = probs.sort(dim=-1, descending=True, stable=True)                         # one sort: ties by position
    k = torch.where(params.top_k > 0, params.top_k.clamp(max=logits.shape[1]), logits.shape[1])
    s[(s < params.min_p[:, None] * s[:, :1]) | (s < s.gather(1, k[:, None] - 1))] = 0   # min-p; top-k, ties kept
    if renormalize:
        s = s / s.sum(-1, keepdim=True)
    s[(s.cumsum(-1) - s >= params.top_p[:, None]) & (params.top_p < 1)[:, None]] = 0   # top-p
    tokens = torch.where(t < 1e-5, logits.argmax(-1), draws.race(probs.scatter(1, i, s), params))
    return torch.where(draws.invalid_rows(logits), torch.full_like(tokens, -1), tokens)


def sample_without_renormalizing(logits, params):
    return sample(logits, params, renormalize=False)


def replay(logits, params, guard=True):
    """The ten lines as a trainer's replay (docs/replay.md): the processed logprobs of the same order, -inf outside
    the kept set. With the rows' labels (Sampler(labels=True)) and guard, a label outside the kept set is restored
    and the row renormalized over kept + {label} (prime-rl's label guard); guard=False is the planted bug."""
    t = params.temperature
    lp = torch.log_softmax(logits.double() / t.clamp(min=1e-5)[:, None], dim=-1)
    s, i = lp.exp().sort(dim=-1, descending=True, stable=True)
    k = torch.where(params.top_k > 0, params.top_k.clamp(max=logits.shape[1]), logits.shape[1])
    s[(s < params.min_p[:, None] * s[:, :1]) | (s < s.gather(1, k[:, None] - 1))] = 0
    s = s / s.sum(-1, keepdim=True)
    s[(s.cumsum(-1) - s >= params.top_p[:, None]) & (params.top_p < 1)[:, None]] = 0
    kept = torch.zeros_like(s, dtype=torch.bool).scatter(1, i, s > 0)
    labels = params.label if guard and hasattr(params, "label") else torch.full_like(params.top_k, -1)
    guarded = (labels >= 0) & ~kept.gather(1, labels.clamp(min=0)[:, None])[:, 0]
    kept[guarded, labels[guarded]] = True
    out = torch.where(kept, lp - lp.masked_fill(~kept, -torch.inf).logsumexp(-1, keepdim=True), -torch.inf)
    return out.float(), guarded


def replay_without_label_guard(logits, params):
    return replay(logits, params, guard=False)
