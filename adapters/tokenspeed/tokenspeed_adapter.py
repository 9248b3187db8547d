"""TokenSpeed's Triton sampling backends (PR #280), loaded from a TokenSpeed source tree. GPU only (Triton).

    python3 adapters/tokenspeed/tokenspeed_adapter.py --src ~/src/tokenspeed --describe
    SAMPLECHECK_TOKENSPEED_SRC=~/src/tokenspeed ...

``TokenSpeedTriton(backend="triton" | "triton_full")`` constructs the engine's own backend object
(python/tokenspeed/runtime/sampling/backends/triton.py ``TritonSamplingBackend`` or triton_full.py
``TritonFullSamplingBackend``), one per batch shape, kept as the engine keeps its own, and drives it as the model
executor does: ``prepare_step`` (a new request id for each pool slot whose (T, k, p, min_p, seed) changed since the
shape's last step, so ``_reset_slot`` writes the row's temperature, top_k, top_p, min_p and seed into the pools; a
slot whose key held keeps its request, the same request at another position; and
``_select_sample_route`` picks the route for the batch), then ``sample`` / ``verify``. The routes are the engine's
(triton.py:336-357, triton_full.py:254-330):

  no filter in the batch        -> Gumbel (``gumbel_sample_from_pools_compact`` for V <= 32768, else the two-stage
                                   ``gumbel_sample_from_pools``); with min-p in the batch (triton_full) the min-p
                                   kernels ``gumbel_sample_min_p_from_pools[_parallel]``
  every row top-k finite        -> ``gumbel_sample_top_k_top_p_from_pools`` (pad 64 when every top_k <= 64, else 128)
  every row top-k disabled,
  some top_p < 1                -> ``gumbel_sample_top_p_parallel_from_pools`` (rejection with 3 attempts sampling,
                                   4 verifying, then a repair kernel)
  finite and disabled top-k
  mixed                         -> ``gumbel_sample_from_pools_generic``

``route_of(params)`` names the route a batch takes (the engine's ``_select_sample_route``); compose batches to
select each. ``last_route`` is the route of the last call.

Seeding: SamplingParams.seed = samplecheck's seed (as int64), the position (``valid_cache_lengths`` of the row's
pool slot, int32) = offset: the kernels draw ``tl.rand(tl.randint(seed, position + spec_pos), token)``
(gumbel.py:69-72). An offset of 2^30 or more (the spec suites' trials) keeps its low 30 bits as the position and
folds the rest into the seed (``engine_key``): the GPU run of 18abd63 refused every such trial.

``--position-stride N`` (a diagnostic, named in the sampler's name): offset o becomes position N * o, so that the
positions a rejection loop keys its later attempts with (``offset + attempt``: generic.py:182-183, topp.py:91-92 and
297-298) are no other draw's position; a run that passes with a stride and fails without one has measured that the
engine's draws at adjacent positions share noise (docs/conformance.md, TokenSpeed finding 1).

Parameters go through TokenSpeed's own ``SamplingParams`` (sampling_params.py, loaded): ``__post_init__`` turns
T < 1e-6 into greedy (T = 1, top_k = 1) and top_k = -1 into 1 << 30; ``verify(vocab)`` raises ``ValueError`` for
values it rejects (top_p in (0, 1], min_p in [0, 1], top_k = -1 or 1..127: the fused kernel's limit). A batch whose
every top_k <= 1 is all greedy (model_executor.py:935) and goes to ``cute_argmax``. The "triton" backend has no
min-p: it takes min_p and ignores it, as the engine does ("the backend silently applies only what it supports",
base.py:108-110; ``SamplingParams.requested_features`` is called nowhere at f4d8ec6e), so min-p cases judged
against it fail by design of the engine, not of the adapter; "triton_full" applies min-p.

Stubs (``__samplecheck_stub__``): ``tokenspeed_kernel._triton`` (stock ``triton`` and ``triton.language`` instead of
the vendored ``tokenspeed_triton``), ``tokenspeed_kernel.ops.sampling.cute_dsl`` (``argmax`` = ``torch.argmax``:
the greedy route is judged through this stub, not TokenSpeed's CuTe kernel), ``msgspec`` (``Struct``: keyword
construction and ``__post_init__``, no wire format), ``tokenspeed.runtime.sampling.registry`` (``register_backend``
does nothing), ``tokenspeed.runtime.sampling.utils`` (``nan_guard_logits``: the engine's no-op for
enable_nan_detection = False, utils.py:50-51), ``tokenspeed.runtime.utils.nvtx`` (``nvtx_range`` a no-op
decorator), ``tokenspeed.runtime.utils.pdl`` (``pdl_enabled`` False). The kernel files
(tokenspeed-kernel/.../ops/sampling/triton/*.py) and backends/base.py load unchanged.
"""
from __future__ import annotations

import collections
import itertools
import sys
import types
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # adapters/, only while importing the helper
import engine_source as es  # noqa: E402

sys.path.pop(0)

ENV_VAR = "SAMPLECHECK_TOKENSPEED_SRC"
KERNEL_DIR = "tokenspeed-kernel/python/tokenspeed_kernel/ops/sampling/triton"
KERNEL_FILES = ["common", "generic", "gumbel", "logprobs", "min_p", "penalties", "probability", "topk_topp", "topp",
                "verify"]
F_BASE = "python/tokenspeed/runtime/sampling/backends/base.py"
F_TRITON = "python/tokenspeed/runtime/sampling/backends/triton.py"
F_TRITON_FULL = "python/tokenspeed/runtime/sampling/backends/triton_full.py"
F_PARAMS = "python/tokenspeed/runtime/sampling/sampling_params.py"
BACKENDS = ("triton", "triton_full")
ROUTE_NAMES = {0: "generic", 1: "gumbel", 2: "top_k", 3: "top_k_top_p", 4: "top_p"}


def _modname(relpath: str) -> str:
    for prefix in ("tokenspeed-kernel/python/", "python/"):
        if relpath.startswith(prefix):
            relpath = relpath[len(prefix):]
    return relpath[:-3].replace("/", ".").removesuffix(".__init__")


class _Struct:
    """Stub of ``msgspec.Struct``: keyword construction over the class defaults, then ``__post_init__``."""

    def __init_subclass__(cls, **options):
        super().__init_subclass__()

    def __init__(self, **fields):
        for key, value in fields.items():
            setattr(self, key, value)
        post = getattr(self, "__post_init__", None)
        if post is not None:
            post()


def _nvtx_range(*args, **kwargs):
    return lambda fn: fn


KEPT_BACKENDS = 4    # backend objects kept, one per batch shape (rows, vocab, tokens per request)
POSITION_BITS = 30   # positions < 2^30: position + draft slot stays inside TokenSpeed's int32 valid_cache_lengths


def engine_key(seed: int, offset: int, stride: int = 1) -> tuple[int, int]:
    """(request seed as int64, position) for samplecheck's (seed, offset): TokenSpeed keys its noise by the request
    seed and an int32 position (``valid_cache_lengths``, plus the draft slot in verify): ``engine_source.position_key``
    with 30 bits (an offset of 2^30 or more folds its high bits into the seed). ``stride`` (a power of two, a
    diagnostic: ``--position-stride``) spaces consecutive offsets ``stride`` positions apart, the positions staying
    below 2^30."""
    if stride < 1 or stride & (stride - 1):
        raise ValueError(f"position stride must be a power of two >= 1, got {stride}")
    shift = stride.bit_length() - 1
    seed64, position = es.position_key(seed, offset, POSITION_BITS - shift)
    return seed64, position * stride


def engine_key_columns(seed, offsets, stride: int = 1):
    """``engine_key`` of every row at once, for one request seed (a Python int) and the int64 tensor of the offsets'
    u64 bits (engine_serve's column): (request seeds: one int64 Python int when the rows share it, else a list;
    positions: an int64 tensor on the offsets' device). Equal to ``engine_key`` row by row (tested without a tree)."""
    import torch
    engine_key(0, 0, stride)
    shift = stride.bit_length() - 1
    bits = POSITION_BITS - shift
    o = offsets.long()
    high = (o >> bits) & ((1 << (64 - bits)) - 1)
    positions = (o & ((1 << bits) - 1)) * stride
    seed64 = es.as_int64(seed)
    if not bool((high != 0).any()):
        return seed64, positions
    base = torch.full_like(o, seed64)
    seeds = torch.where(high == 0, base, es.request_seeds(base, high)).tolist()
    return (seeds[0] if len(set(seeds)) == 1 else seeds), positions


def request_ids(slot_keys: list, slot_ids: list, keys: list, fresh) -> list:
    """The request id of each pool slot for a step whose rows have ``keys``: the slot's last id where the key is
    the one it held (the same request, at another position), else ``fresh()`` (a new request). Updates the slots."""
    for r, key in enumerate(keys):
        if slot_ids[r] is None or slot_keys[r] != key:
            slot_keys[r], slot_ids[r] = key, fresh()
    return list(slot_ids[:len(keys)])


class TokenSpeedTriton:
    _ids = itertools.count()

    def __init__(self, src=None, backend="triton", device="cuda", position_stride=1):
        engine_key(0, 0, position_stride)                    # a bad stride is refused before the tree is read
        self.position_stride = position_stride
        if backend not in BACKENDS:
            raise ValueError(f"backend must be one of {', '.join(BACKENDS)}, got {backend!r}")
        self.device = torch.device(device)
        if self.device.type != "cuda" or not torch.cuda.is_available() or not es.triton_importable():
            raise es.EngineSourceError("TokenSpeed's sampling backends are Triton: they need triton and a CUDA device")
        kernel_paths = [f"{KERNEL_DIR}/{name}.py" for name in ["__init__"] + KERNEL_FILES]
        needed = kernel_paths + [F_BASE, F_TRITON, F_PARAMS] + ([F_TRITON_FULL] if backend == "triton_full" else [])
        self.tree = es.EngineTree("tokenspeed", es.find_tree(src, ENV_VAR, "tokenspeed", needed))
        self.backend_name = backend
        import triton
        import triton.language as tl
        s = es.stub_module
        stubs = {
            "tokenspeed_kernel._triton": s("tokenspeed_kernel._triton", triton=triton, tl=tl),
            "tokenspeed_kernel.ops.sampling.cute_dsl": s("tokenspeed_kernel.ops.sampling.cute_dsl",
                                                         argmax=lambda logits: torch.argmax(logits, dim=-1)),
            "msgspec": s("msgspec", Struct=_Struct),
            "tokenspeed.runtime.sampling.registry": s("tokenspeed.runtime.sampling.registry",
                                                      register_backend=lambda name, cls: None),
            "tokenspeed.runtime.sampling.utils": s("tokenspeed.runtime.sampling.utils",
                                                   nan_guard_logits=self._nan_guard),
            "tokenspeed.runtime.utils.nvtx": s("tokenspeed.runtime.utils.nvtx", nvtx_range=_nvtx_range),
            "tokenspeed.runtime.utils.pdl": s("tokenspeed.runtime.utils.pdl", pdl_enabled=lambda: False),
        }
        parents = es.stub_packages(list(stubs) + [_modname(F_BASE), _modname(f"{KERNEL_DIR}/__init__.py")])
        for name, module in parents.items():
            stubs.setdefault(name, module)
        self.tree.stubs = sorted(stubs)
        with es.isolated_modules(stubs):
            self.kernels = self.tree.load(f"{KERNEL_DIR}/__init__.py", _modname(f"{KERNEL_DIR}/__init__.py"),
                                          package=True)
            for name in KERNEL_FILES:     # imported by the package's __init__ through its relative imports
                self.tree.record(f"{KERNEL_DIR}/{name}.py")
            self.params_mod = self.tree.load(F_PARAMS, _modname(F_PARAMS))
            self.base = self.tree.load(F_BASE, _modname(F_BASE))
            self.triton_mod = self.tree.load(F_TRITON, _modname(F_TRITON))
            self.full_mod = self.tree.load(F_TRITON_FULL, _modname(F_TRITON_FULL)) if backend == "triton_full" else None
        self.last_route = None
        self._backends = collections.OrderedDict()
        self._params_kept = {}
        self.name = f"{self.tree.label()}:runtime/sampling/backends/{backend}.py@{self.device.type}" + (
            f"+position-stride={position_stride}" if position_stride != 1 else "")

    @staticmethod
    def _nan_guard(logits, enable_nan_detection):
        if enable_nan_detection:
            raise NotImplementedError("nan_guard_logits with detection on is not driven by the adapter")
        return logits

    def _params(self, rows, vocab, temperature, top_k, top_p, min_p, seeds, offsets=None):
        """The rows' SamplingParams (one object per distinct (T, k, p, min_p, request seed): rows that share them
        share it, as replicated rows of one request do), each verified by the engine's ``verify(vocab)``; with
        ``offsets``, also each row's position and the rows' keys (what makes a slot's request the same across
        steps). The request seed and position are ``engine_key(seed, offset)``."""
        if (all(es.uniform(v) for v in (temperature, top_k, top_p, min_p, seeds)) and es.is_tensor(offsets)):
            # One request's draws at many positions (a COUNT chunk, a replicated row): one SamplingParams, verified
            # once, the positions as one device tensor.
            seed64, positions = engine_key_columns(int(seeds) & ((1 << 64) - 1), offsets, self.position_stride)
            if not isinstance(seed64, list):
                key = (float(temperature), int(top_k), float(top_p), float(min_p), seed64)
                sp = self._params_kept.get((key, vocab))
                if sp is None:
                    sp = self._one_params(key, vocab, 0)
                    self._params_kept[(key, vocab)] = sp
                    while len(self._params_kept) > 64:
                        self._params_kept.pop(next(iter(self._params_kept)))
                return [sp] * rows, [key] * rows, positions
        t, k, p, m = es.sampling_params(rows, temperature, top_k, top_p, min_p)
        s = es.u64_list(seeds, rows, "seeds")
        o = es.u64_list(offsets, rows, "offsets") if offsets is not None else [0] * rows
        made, out, keys, positions = {}, [], [], []
        for r in range(rows):
            seed64, position = engine_key(es.as_int64(s[r]), o[r], self.position_stride)
            key = (t[r], k[r], p[r], m[r], seed64)
            sp = made.get(key)
            if sp is None:
                sp = made[key] = self._one_params(key, vocab, r)
            out.append(sp)
            keys.append(key)
            positions.append(position)
        return out, keys, positions

    def _one_params(self, key, vocab, row):
        """The engine's SamplingParams of one (T, k, p, min_p, request seed), through its ``verify(vocab)``."""
        t, k, p, m, seed64 = key
        sp = self.params_mod.SamplingParams(temperature=t, top_k=k, top_p=p, min_p=m, seed=seed64)
        try:
            sp.verify(vocab)
        except ValueError as exc:
            raise ValueError(f"row {row}: {exc}") from None
        return sp

    def route_of(self, params) -> str:
        """The route ``_select_sample_route`` (triton.py:336-357) picks for a list of SamplingParams."""
        return ROUTE_NAMES[self.triton_mod.TritonSamplingBackend._select_sample_route(params)]

    def _backend(self, rows, vocab, tokens_per_req):
        """The engine's backend object for batches of ``rows`` requests of ``vocab`` tokens, built once per shape
        and kept (the last ``KEPT_BACKENDS`` shapes), as the engine keeps one for its life; with it, the request
        key each pool slot last held and that request's id."""
        shape = (rows, vocab, tokens_per_req)
        kept = self._backends.pop(shape, None)
        if kept is None:
            config = self.base.SamplingBackendConfig(max_bs=rows, max_draft_tokens_per_req=tokens_per_req,
                                                     max_req_pool_size=rows, vocab_size=vocab, device=self.device)
            cls = self.full_mod.TritonFullSamplingBackend if self.full_mod else self.triton_mod.TritonSamplingBackend
            pool = torch.arange(1, rows + 1, dtype=torch.int64, device=self.device)
            kept = (cls(config), [None] * rows, [None] * rows,
                    types.SimpleNamespace(pool=pool, pool_list=list(range(1, rows + 1)), uniform=None,
                                          lengths=torch.zeros(rows + 1, dtype=torch.int32, device=self.device)))
        self._backends[shape] = kept                          # most recently used last
        while len(self._backends) > KEPT_BACKENDS:
            self._backends.popitem(last=False)
        return kept

    def _step(self, rows, vocab, params, keys, positions, tokens_per_req):
        """One engine step over the rows: row r is the request in pool slot r + 1 (slot 0 is the capture/warm-up
        row). A slot whose key (T, k, p, min_p, request seed) is the one it held in the backend's last step keeps
        its request id: the same request at another position, whose slot ``prepare_step`` leaves as it is
        (base.py:195-203); any other key is a new request, whose slot ``_reset_slot`` writes. Per-request state the
        engine keeps across steps is unread here (penalties are off: the token counts a continuing request
        accumulates change no logit), so a new request per row would draw the same tokens, at ten CUDA writes a
        row per step (the H100 runs of 2026-11-27: 4.4e3 draws/s on triton_full, identify never finished)."""
        backend, slot_keys, slot_ids, kept = self._backend(rows, vocab, tokens_per_req)
        same = keys.count(keys[0]) == len(keys)
        if same and kept.uniform == keys[0]:
            ids = list(slot_ids[:rows])          # every slot holds this request already: no key to compare a row
        else:
            ids = request_ids(slot_keys, slot_ids, keys, lambda: f"samplecheck-{next(self._ids)}")
            kept.uniform = keys[0] if same else None
        backend.prepare_step(ids, kept.pool_list, params, num_tokens_per_req=tokens_per_req)
        lengths = kept.lengths
        lengths[1:] = (positions.to(self.device, torch.int32) if es.is_tensor(positions) else
                       torch.tensor(positions, dtype=torch.int32))
        info = types.SimpleNamespace(vocab_mask=None, is_all_greedy=all(sp.top_k <= 1 for sp in (params[:1] if same else params)),
                                     valid_cache_lengths=lengths, req_pool_indices=kept.pool)
        self.last_route = "greedy" if info.is_all_greedy else ROUTE_NAMES[backend._sample_route]
        if self.full_mod and backend._full_has_min_p and not info.is_all_greedy:
            self.last_route += "+min_p"
        return backend, info

    def sample(self, logits, temperature, top_k, top_p, min_p, seeds, offsets):
        x = es.logits_2d(logits, self.device).contiguous()
        rows, vocab = x.shape
        params, keys, positions = self._params(rows, vocab, temperature, top_k, top_p, min_p, seeds, offsets)
        backend, info = self._step(rows, vocab, params, keys, positions, 1)
        sampled, _ = backend.sample(types.SimpleNamespace(next_token_logits=x), info)
        return sampled.long()

    def verify(self, target_logits, draft_tokens, temperature, top_k, top_p, min_p, seeds, offsets):
        """TokenSpeed's chain verification (backend ``verify``): every target row sampled with the route's kernel
        (row j at position offset + j), a draft accepted iff it equals the target's token at its position
        (verify.py:46-68). target_logits [B, g+1, V], draft_tokens [B, g]. Returns (accepted [B], tokens [B, g+1])
        with slots 0..accepted read."""
        target = torch.as_tensor(target_logits).to(self.device, torch.float32)
        rows, g1, vocab = target.shape
        params, keys, positions = self._params(rows, vocab, temperature, top_k, top_p, min_p, seeds, offsets)
        backend, info = self._step(rows, vocab, params, keys, positions, g1)
        candidates = torch.zeros(rows, g1, dtype=torch.int32, device=self.device)
        candidates[:, 1:] = torch.as_tensor(draft_tokens).to(self.device, torch.int32).reshape(rows, g1 - 1)
        out = types.SimpleNamespace(next_token_logits=target.reshape(rows * g1, vocab).contiguous())
        predict, accept_length = backend.verify(out, info, candidates)
        accepted = accept_length.long() - 1
        tokens = predict.long().reshape(rows, g1).clone()
        tokens[torch.arange(g1, device=self.device)[None, :] > accepted[:, None]] = -1
        return accepted, tokens



def main(argv=None):
    def options(ap):
        ap.add_argument("--backend", choices=BACKENDS, default="triton")
    return es.run_cli("tokenspeed_adapter", "Load TokenSpeed's Triton sampling backends and say what loaded.",
                      ENV_VAR, lambda args: TokenSpeedTriton(args.src, backend=args.backend), options, argv)

if __name__ == "__main__":
    sys.exit(main())
