"""The usual per-draw patterns of an engine's sampler, on torch (imported when a function is called): the draw at
(seed, offset) of a row must be a function of the row, its parameters, its seed and its offset, so that COUNT (the
row replicated) and SAMPLE draw alike and every campaign is reproducible.

  generator(seed, offset, device)       a torch.Generator seeded from (seed, offset)
  exponential(params, vocab, device)    per-row Exp(1) noise, row r from generator(seed_r, offset_r)
  race(probs, params)                   the exponential race argmax(probs / q) (vLLM's random_sample) on that noise
  multinomial(probs, params)            torch.multinomial(probs_r, 1) on generator(seed_r, offset_r), per row
  windowed_race(probs, params)          the race as an engine step over params.lanes copies of a row: the draw at
                                        (seed, offset g) is lane g % L of the step on generator(seed, g // L), the
                                        noise of a step shared by every row of that (seed, window): one [L, V]
                                        draw per window instead of L generators
  windowed_multinomial(probs, params)   the same for torch.multinomial over L copies (transformers' generate())
  count_windows(step, probs, params, n) a COUNT of one processed row by those steps (race_step, multinomial_step),
                                        the filters run once: the count callable of an engine whose filters are
                                        costly per row (serve's own COUNT calls sample() on L copies a window)
  philox_uniforms(params)               samplecheck's Philox uniform of each row's (seed, offset), on the device
  inverse_cdf(probs, u)                 the first token whose cumulative probability exceeds u (ascending ids):
                                        with philox_uniforms, `--sampler exact`'s token for float64 probabilities
  invalid_rows(logits)                  rows that cannot be sampled: a NaN, or every logit -inf (their token is -1)

`params` is the BatchParams serve() passes; each helper returns int64 tokens on the device of `probs`.
"""
from . import philox

_MIX_SEED, _MIX_OFFSET = 0x9E3779B97F4A7C15, 0xBF58476D1CE4E5B9
_U64 = (1 << 64) - 1


def generator_seed(seed, offset):
    """The 63-bit torch seed of (seed, offset) (any injective-enough mix works; this is the one the example clients
    have always used)."""
    return ((seed & _U64) * _MIX_SEED + (offset & _U64) * _MIX_OFFSET) & ((1 << 63) - 1)


def generator(seed, offset, device="cpu"):
    import torch
    g = torch.Generator(device=device)
    g.manual_seed(generator_seed(seed, offset))
    return g


def _device(x):
    return x.device


def exponential(params, vocab, device="cpu", dtype=None):
    """[rows, vocab] Exp(1) noise, row r drawn from generator(seed_r, offset_r)."""
    import torch
    dtype = dtype or torch.float32
    noise = torch.empty((len(params), vocab), dtype=dtype, device=device)
    for r, p in enumerate(params):
        noise[r].exponential_(generator=generator(p.seed, p.offset, device))
    return noise


def race(probs, params):
    """argmax(probs / q), q ~ Exp(1) per row from generator(seed, offset): vLLM's random_sample."""
    q = exponential(params, probs.shape[-1], _device(probs), probs.dtype)
    return probs.div(q).argmax(dim=-1)


def multinomial(probs, params):
    """torch.multinomial(probs_r, 1) per row on generator(seed_r, offset_r)."""
    import torch
    out = torch.empty(len(params), dtype=torch.int64, device=_device(probs))
    for r, p in enumerate(params):
        out[r] = torch.multinomial(probs[r], 1, generator=generator(p.seed, p.offset, _device(probs)))[0]
    return out


def _groups(params, keys, only=None):
    """{(the host columns `keys`..., window): [call rows]} with window = offset // params.lanes: the call rows that
    share one engine step."""
    groups = {}
    lanes = params.lanes
    columns = [params.host(k) for k in keys] + [[o // lanes for o in params.host("offset")]]
    for r, key in enumerate(zip(*columns)):
        if only is None or r in only:
            groups.setdefault(key, []).append(r)
    return groups


def _lane_of(params, rows, device):
    import torch
    offsets, lanes = params.host("offset"), params.lanes
    return torch.tensor([offsets[r] % lanes for r in rows], dtype=torch.int64, device=device)


def windowed_race(probs, params):
    """The exponential race as an engine step over L = params.lanes copies of a row: the noise of the window
    (seed, offset // L) is one [L, V] draw on generator(seed, window), shared by every row of that seed and window
    (as the requests of one batch share the engine's noise), and the draw at offset g takes lane g % L."""
    import torch
    lanes, vocab, device = params.lanes, probs.shape[-1], _device(probs)
    groups = _groups(params, ("seed",))
    if len(groups) == 1 and len(params) == lanes:  # a whole window (a COUNT's call): the block is the noise
        ((seed, window),) = groups
        noise = torch.empty((lanes, vocab), dtype=probs.dtype, device=device)
        noise.exponential_(generator=generator(seed, window, device))
        return probs.div(noise.index_select(0, _lane_of(params, range(lanes), device))).argmax(dim=-1)
    noise = torch.empty((len(params), vocab), dtype=probs.dtype, device=device)
    for (seed, window), rows in groups.items():
        block = torch.empty((lanes, vocab), dtype=probs.dtype, device=device)
        block.exponential_(generator=generator(seed, window, device))
        index = torch.tensor(rows, dtype=torch.int64, device=device)
        noise.index_copy_(0, index, block.index_select(0, _lane_of(params, rows, device)))
    return probs.div(noise).argmax(dim=-1)


def race_step(copies, g):
    """One step of the exponential race over [L, V] copies of a row on generator g: windowed_race's step."""
    import torch
    noise = torch.empty(copies.shape, dtype=copies.dtype, device=copies.device).exponential_(generator=g)
    return copies.div(noise).argmax(dim=-1)


def multinomial_step(copies, g):
    """One step of torch.multinomial(copies, 1) on generator g: windowed_multinomial's step."""
    import torch
    return torch.multinomial(copies.contiguous(), 1, generator=g)[:, 0]


def count_windows(step, probs, params, draws):
    """A COUNT of one processed row (probs [1, V] or [V]) through engine steps over params.lanes copies, the row
    processed once (serve's own COUNT calls sample() on the copies, which repeats the filters every window): window
    after window from params[0].offset, step(copies [L, V], generator(seed, window)) -> [L] tokens, the lanes a window
    needs counted. Draw i is the draw of windowed_race (race_step) or windowed_multinomial (multinomial_step) at
    offset + i. Returns (histogram list, 0)."""
    import torch
    row = probs.reshape(-1)
    lanes, p = params.lanes, params[0]
    copies = row.unsqueeze(0).expand(lanes, row.numel())
    histogram = torch.zeros(row.numel(), dtype=torch.int64, device=row.device)
    g, remaining = p.offset, draws
    while remaining > 0:
        lo = g % lanes
        take = min(remaining, lanes - lo)
        tokens = step(copies, generator(p.seed, g // lanes, row.device))
        histogram += torch.bincount(tokens[lo:lo + take], minlength=row.numel())
        g = (g + take) % (1 << 64)
        remaining -= take
    return histogram.tolist(), 0


def windowed_multinomial(probs, params, only=None):
    """torch.multinomial(copies, 1) as an engine step over L = params.lanes copies of the row on generator(seed,
    offset // L), the draw at offset g lane g % L; one step per distinct (row, filters, seed, window). `only`: the
    call rows to draw (a set of indices; the others get -1), e.g. to leave out greedy or unsamplable rows."""
    import torch
    lanes, device = params.lanes, _device(probs)
    out = torch.full((len(params),), -1, dtype=torch.int64, device=device)
    keys = ("row", "temperature", "top_k", "top_p", "min_p", "seed")
    for key, rows in _groups(params, keys, only).items():
        seed, window = key[-2:]
        step = multinomial_step(probs[rows[0]].unsqueeze(0).expand(lanes, probs.shape[-1]),
                                generator(seed, window, device))
        out.index_copy_(0, torch.tensor(rows, dtype=torch.int64, device=device),
                        step.index_select(0, _lane_of(params, rows, device)))
    return out


def philox_uniforms(params):
    """samplecheck's Philox uniform of each row's (seed, offset), float64 on the params' device."""
    return philox.uniforms(params.seed, params.offset)


def inverse_cdf(probs, u):
    """The first token (ascending id) whose inclusive cumulative probability exceeds u, per row; the last token of
    positive probability when rounding leaves u above the total."""
    import torch
    cdf = probs.to(torch.float64).cumsum(dim=-1)
    token = (cdf <= u.to(torch.float64).unsqueeze(-1)).sum(dim=-1)
    last = probs.shape[-1] - 1 - (probs.flip(-1) > 0).to(torch.int64).argmax(dim=-1)
    return torch.minimum(token, last)


def invalid_rows(logits):
    """Rows that cannot be sampled: a NaN logit, or every logit -inf."""
    import torch
    return torch.isnan(logits).any(dim=-1) | torch.isneginf(logits).all(dim=-1)
