"""samplecheck's Philox4x32-10 uniform (reference/include/samplecheck/reference/philox.h): the uniform of the draw at
(seed, offset) is block 0, 1 of Philox4x32-10 at counter (offset, 0) and key seed, ((w0 << 32 | w1) >> 12) + 0.5
times 2^-52, in (0, 1). A sampler that draws by inverse CDF in ascending token id with it reproduces
`--sampler exact` token for token. Pure Python for one draw; numpy or torch (on the device) for a column of seeds
and offsets.
"""
_M32 = 0xFFFFFFFF
_MUL0, _MUL1 = 0xD2511F53, 0xCD9E8D57
_KEY0, _KEY1 = 0x9E3779B9, 0xBB67AE85
_SCALE = 2.0 ** -52


def philox4x32_10(c0, c1, c2, c3, k0, k1):
    """The four output words of Philox4x32-10 (Python ints)."""
    for _ in range(10):
        p0 = _MUL0 * c0
        p1 = _MUL1 * c2
        c0, c1, c2, c3 = ((p1 >> 32) ^ c1 ^ k0), p1 & _M32, ((p0 >> 32) ^ c3 ^ k1), p0 & _M32
        k0 = (k0 + _KEY0) & _M32
        k1 = (k1 + _KEY1) & _M32
    return c0, c1, c2, c3


def _unit(hi, lo):
    return (((hi << 32 | lo) >> 12) + 0.5) * _SCALE


def uniform(seed, offset):
    """u in (0, 1) of the draw at (seed, offset) (u64 each)."""
    b0, b1, _, _ = philox4x32_10(offset & _M32, (offset >> 32) & _M32, 0, 0, seed & _M32, (seed >> 32) & _M32)
    return _unit(b0, b1)


def spec_uniforms(seed, counter):
    """(draw uniform, coin) of one block: words 0, 1 and words 2, 3 (reference/speculative.h)."""
    b0, b1, b2, b3 = philox4x32_10(counter & _M32, (counter >> 32) & _M32, 0, 0, seed & _M32, (seed >> 32) & _M32)
    return _unit(b0, b1), _unit(b2, b3)


def _mulhilo_torch(torch, a, m):
    """(hi, lo) 32-bit words of a * m for int64 tensors a in [0, 2^32) and a constant m < 2^32, in 16-bit limbs so
    that no product leaves int64."""
    a_lo, a_hi = a & 0xFFFF, a >> 16
    m_lo, m_hi = m & 0xFFFF, m >> 16
    ll = a_lo * m_lo
    lh = a_lo * m_hi
    hl = a_hi * m_lo
    hh = a_hi * m_hi
    mid = (ll >> 16) + (lh & 0xFFFF) + (hl & 0xFFFF)
    lo = (ll & 0xFFFF) | ((mid & 0xFFFF) << 16)
    hi = hh + (lh >> 16) + (hl >> 16) + (mid >> 16)
    return hi & _M32, lo


def uniforms(seeds, offsets):
    """The uniform of every (seed, offset) pair, as float64 of the input's kind: torch int64 tensors (u64 as the
    int64 of the same bits; the result on their device), numpy arrays (uint64 or int64), or sequences of ints (a
    list of floats)."""
    kind = type(seeds).__module__
    if kind.startswith("torch"):
        import torch
        s = seeds.to(torch.int64)
        o = offsets.to(torch.int64)
        c0, c1 = o & _M32, (o >> 32) & _M32
        c2 = torch.zeros_like(c0)
        c3 = torch.zeros_like(c0)
        k0, k1 = s & _M32, (s >> 32) & _M32
        for _ in range(10):
            h0, l0 = _mulhilo_torch(torch, c0, _MUL0)
            h1, l1 = _mulhilo_torch(torch, c2, _MUL1)
            c0, c1, c2, c3 = h1 ^ c1 ^ k0, l1, h0 ^ c3 ^ k1, l0
            k0 = (k0 + _KEY0) & _M32
            k1 = (k1 + _KEY1) & _M32
        return ((c0 << 20) | (c1 >> 12)).to(torch.float64).add_(0.5).mul_(_SCALE)
    if kind == "numpy":
        import numpy as np
        s = np.asarray(seeds).astype(np.uint64)
        o = np.asarray(offsets).astype(np.uint64)
        m32 = np.uint64(_M32)
        c0, c1 = o & m32, (o >> np.uint64(32)) & m32
        c2 = np.zeros_like(c0)
        c3 = np.zeros_like(c0)
        k0, k1 = s & m32, (s >> np.uint64(32)) & m32
        for _ in range(10):
            p0 = c0 * np.uint64(_MUL0)
            p1 = c2 * np.uint64(_MUL1)
            c0, c1, c2, c3 = (p1 >> np.uint64(32)) ^ c1 ^ k0, p1 & m32, (p0 >> np.uint64(32)) ^ c3 ^ k1, p0 & m32
            k0 = (k0 + np.uint64(_KEY0)) & m32
            k1 = (k1 + np.uint64(_KEY1)) & m32
        return (((c0 << np.uint64(20)) | (c1 >> np.uint64(12))).astype(np.float64) + 0.5) * _SCALE
    mask = (1 << 64) - 1
    return [uniform(s & mask, o & mask) for s, o in zip(seeds, offsets)]
