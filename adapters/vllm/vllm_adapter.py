"""vLLM's own sampler files, loaded from a vLLM source tree the user supplies, behind plain functions.

    python3 adapters/vllm/vllm_adapter.py --src ~/src/vllm --describe      # what loads, from which commit
    SAMPLECHECK_VLLM_SRC=~/src/vllm python3 -c "..."                        # the environment variable instead

The tree is the root of a vLLM checkout (v0.26.0 = 568afb3a is the commit this project judged; scripts/engine-sources
copies just the needed files out of a clone). Nothing is fetched or installed; vLLM itself need not be installed.

Paths (each one an object with ``sample``, and ``processed_logprobs`` / ``verify`` where the engine has them):

  VllmV1(path=...)       the v1 sampler: vllm/v1/sample/sampler.py ``Sampler.sample`` (greedy snapshot, temperature,
                         min-p through ``MinPLogitsProcessor`` of logits_processor/builtin.py, then
                         ``TopKTopPSampler`` of ops/topk_topp_sampler.py: top-k/top-p and ``random_sample`` /
                         ``forward_cpu``'s exponential race with one ``torch.Generator`` per request).
                         path="pytorch": ``apply_top_k_top_p_pytorch``; path="triton": ``apply_top_k_top_p_triton``
                         (ops/topk_topp_triton.py, GPU); path="dispatch": the engine's own ``apply_top_k_top_p``, which
                         in v0.26 takes Triton for batches of >= 8 rows on CUDA when Triton is present and PyTorch
                         otherwise (topk_topp_sampler.py:345-360). ``last_path`` says which one the last call took.
  VllmV1.verify          v1 spec decoding: ``RejectionSampler.forward``'s calls (bonus token through the Sampler,
                         ``apply_sampling_constraints``, ``rejection_sample`` of sample/rejection_sampler.py). GPU.
  VllmMrv2(path=...)     Model Runner V2: worker/gpu/sample/states.py ``SamplingStates`` (temperature and min-p
                         kernels), v1's ``apply_top_k_top_p`` (same path choices), worker/gpu/sample/gumbel.py
                         ``gumbel_sample`` keyed by (request seed, position). GPU (Triton).
  VllmMrv2.verify        worker/gpu/spec_decode/rejection_sampler.py's calls: ``apply_sampling_params`` then
                         rejection_sampler_utils.py ``rejection_sample``. GPU.

Seeding (adapters/engine_source.py): v1 draws use ``torch.Generator(device).manual_seed(request_seed(seed,
offset))`` per row, as vLLM does for a request with that seed (gpu_model_runner.py:1258-1259); MRV2 takes seed as
the request seed and offset as the position (its Gumbel noise is ``tl.randint(seed, pos)``, gumbel.py:138-139; an
offset of 2^62 or more folds its high bits into the seed, ``_mrv2_keys``).

Front end. With ``front_end=True`` (the default) the parameters first pass vLLM's ``SamplingParams`` rules, which
are not in the sampler files: temperature in (0, 0.01) is raised to 0.01 (sampling_params.py:450-459), temperature
< 1e-5 means greedy with top_p = 1, top_k = 0, min_p = 0 (492-496), and the validation of ``_verify_args``
(temperature finite in [0, 2], top_p in (0, 1], top_k >= -1, min_p in [0, 1]) raises ``ValueError`` naming the
value; a verifier (a speculative config) also refuses min_p > 1e-5 (``_validate_spec_decode``, 870-882).
Then the batch is built as ``InputBatch`` does (gpu_input_batch.py:383-399, 919-922): greedy rows store
temperature 0, top_k outside (0, V) becomes V, and top_k / top_p are ``None`` when no row uses them.
``front_end=False`` hands the values to the sampler as they are.

Stubs (only what the loaded files import; each is ``__samplecheck_stub__``): ``vllm`` (package; ``SamplingParams``
a plain class) and ``vllm.sampling_params`` (the same class: MRV2's states.py imports it from there), ``vllm.envs``
(VLLM_USE_FLASHINFER_SAMPLER = False: the engine then takes ``forward_native`` on CUDA, as it does without
FlashInfer and always with per-request generators), ``vllm.logger`` (a logging logger with ``*_once``),
``vllm.platforms`` (a platform that answers cpu or cuda from ``device``; x86), ``vllm.platforms.interface``,
``vllm._aiter_ops`` (aiter disabled), ``vllm.config.model`` (LogprobsMode), ``vllm.triton_utils`` (stock triton, or
placeholders without it), ``vllm.utils.torch_utils`` (PIN_MEMORY False), ``vllm.utils.math_utils`` and
``vllm.utils.platform_utils`` (next_power_of_2, cdiv, num_compute_units), ``vllm.v1.outputs``,
``vllm.v1.sample.metadata`` (the sampler reads its fields from a namespace), ``vllm.v1.sample.ops.logprobs`` and
``ops.penalties`` (never called: no logprob gathering, no penalties), and for the verifiers
``vllm.v1.spec_decode.*``, ``vllm.v1.worker.gpu.buffer_utils`` (``UvaBackedTensor``: a numpy array and its device
copy). On torch < 2.0 (no ``torch.compile``) a no-op ``torch.compile`` exists while topk_topp_sampler.py loads: it
decorates ``compiled_random_sample`` (line 337), the draw of unseeded requests (window seeding); on torch 2.x it is
the engine's compiled function.
"""
from __future__ import annotations

import enum
import logging
import math
import sys
import types
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # adapters/, only while importing the helper
import engine_source as es  # noqa: E402

sys.path.pop(0)

ENV_VAR = "SAMPLECHECK_VLLM_SRC"
SAMPLING_EPS = 1e-5   # vllm/sampling_params.py:27 (_SAMPLING_EPS), sample/sampler.py:17
MAX_TEMP = 1e-2       # vllm/sampling_params.py:28 (_MAX_TEMP)

F_SAMPLER = "vllm/v1/sample/sampler.py"
F_TOPK_TOPP = "vllm/v1/sample/ops/topk_topp_sampler.py"
F_TRITON = "vllm/v1/sample/ops/topk_topp_triton.py"
F_BUILTIN = "vllm/v1/sample/logits_processor/builtin.py"
F_INTERFACE = "vllm/v1/sample/logits_processor/interface.py"
F_BAD_WORDS = "vllm/v1/sample/ops/bad_words.py"
F_REJECTION = "vllm/v1/sample/rejection_sampler.py"
F_MRV2_GUMBEL = "vllm/v1/worker/gpu/sample/gumbel.py"
F_MRV2_MIN_P = "vllm/v1/worker/gpu/sample/min_p.py"
F_MRV2_STATES = "vllm/v1/worker/gpu/sample/states.py"
F_MRV2_REJECTION = "vllm/v1/worker/gpu/spec_decode/rejection_sampler_utils.py"

PATHS = ("pytorch", "triton", "dispatch")
KEPT_PROCESSORS = 8   # min-p processors kept for uniform batches, one per (rows, min_p)


def triton_available() -> bool:
    """Stock triton importable and a CUDA device present (what the Triton paths need)."""
    return torch.cuda.is_available() and es.triton_importable()


# ---- stubs ---------------------------------------------------------------------------------------------------------
class _OnceLogger(logging.LoggerAdapter):
    def info_once(self, msg, *args, **kwargs):
        self.debug(msg, *args)

    def warning_once(self, msg, *args, **kwargs):
        self.debug(msg, *args)

    def debug_once(self, msg, *args, **kwargs):
        self.debug(msg, *args)


class _CpuArch(enum.Enum):
    X86 = "x86"
    ARM = "arm"
    POWERPC = "powerpc"
    RISCV = "riscv"
    S390X = "s390x"
    OTHER = "other"


class _Platform:
    """Answers the questions the sampler files ask of ``current_platform`` for one device type."""

    def __init__(self, device: torch.device):
        self.device_type = device.type
        self.simple_compile_backend = "inductor"

    def is_cpu(self):
        return self.device_type == "cpu"

    def is_cuda(self):
        return self.device_type == "cuda"

    def is_cuda_alike(self):
        return self.device_type == "cuda"

    def is_rocm(self):
        return False

    def is_xpu(self):
        return False

    def get_cpu_architecture(self):
        return _CpuArch.X86

    def get_device_capability(self, device_id=0):
        major, minor = torch.cuda.get_device_capability(device_id)
        return types.SimpleNamespace(major=major, minor=minor, as_version_str=lambda: f"{major}.{minor}")

    def num_compute_units(self, device_id=0):
        return torch.cuda.get_device_properties(device_id).multi_processor_count


def _triton_modules(device: torch.device):
    """(HAS_TRITON, triton, tl, tldevice): stock triton for a CUDA device, else placeholders whose decorators return
    the function (a CPU run never reaches a Triton kernel, as in a vLLM CPU build)."""
    if device.type == "cuda" and triton_available():
        import triton
        import triton.language as tl
        import triton.language.extra.libdevice as tldevice
        return True, triton, tl, tldevice

    def decorator(*args, **kwargs):
        if args and callable(args[0]):
            return args[0]
        return lambda f: f

    tl = types.SimpleNamespace(constexpr=None, dtype=None, int64=None, int32=None, uint32=None, uint64=None,
                               float32=None, float64=None)
    triton = types.SimpleNamespace(jit=decorator, autotune=decorator, heuristics=decorator, Config=decorator,
                                   cdiv=lambda a, b: -(a // -b), language=tl,
                                   next_power_of_2=lambda n: 1 if n < 1 else 1 << (n - 1).bit_length())
    return False, triton, tl, tl


class _SamplingParamsStub:
    """``vllm.SamplingParams`` as the loaded files use it: a holder of the fields they read."""

    def __init__(self, **fields):
        self.__dict__.update(fields)


def _not_driven(what):
    def fail(*args, **kwargs):
        raise NotImplementedError(f"{what} is a samplecheck stub: the adapter never drives it")
    return fail


def _not_driven_class(what):
    """A class (the files use these in annotations such as ``X | None``) that cannot be instantiated."""
    return type(what, (), {"__init__": _not_driven(what)})


def _stubs(device: torch.device, with_verifiers: bool) -> dict[str, types.ModuleType]:
    has_triton, triton, tl, tldevice = _triton_modules(device)
    s = es.stub_module
    names = {
        "vllm": s("vllm", package=True, SamplingParams=_SamplingParamsStub),
        "vllm.sampling_params": s("vllm.sampling_params", SamplingParams=_SamplingParamsStub),
        "vllm.envs": s("vllm.envs", VLLM_USE_FLASHINFER_SAMPLER=False, VLLM_XPU_USE_SAMPLER_KERNEL=False,
                       VLLM_BATCH_INVARIANT=False, VLLM_COMPUTE_NANS_IN_LOGITS=False, is_set=lambda name: False),
        "vllm.logger": s("vllm.logger", init_logger=lambda name: _OnceLogger(logging.getLogger(name), {})),
        "vllm._aiter_ops": s("vllm._aiter_ops", rocm_aiter_ops=types.SimpleNamespace(is_enabled=lambda: False)),
        "vllm.platforms": s("vllm.platforms", package=True, current_platform=_Platform(device), CpuArchEnum=_CpuArch),
        "vllm.platforms.interface": s("vllm.platforms.interface", DeviceCapability=types.SimpleNamespace),
        "vllm.config": s("vllm.config", package=True, SpeculativeConfig=object, VllmConfig=object),
        "vllm.config.model": s("vllm.config.model", LogprobsMode=str,
                               PROCESSED_LOGPROBS_MODES=("processed_logits", "processed_logprobs")),
        "vllm.triton_utils": s("vllm.triton_utils", HAS_TRITON=has_triton, triton=triton, tl=tl, tldevice=tldevice),
        "vllm.utils": s("vllm.utils", package=True),
        "vllm.utils.torch_utils": s("vllm.utils.torch_utils", PIN_MEMORY=False,
                                    async_tensor_h2d=lambda data, dtype, device, pin_memory: torch.tensor(
                                        data, dtype=dtype, device=device)),
        "vllm.utils.math_utils": s("vllm.utils.math_utils", cdiv=lambda a, b: -(a // -b),
                                   next_power_of_2=lambda n: 1 if n < 1 else 1 << (n - 1).bit_length()),
        "vllm.utils.platform_utils": s("vllm.utils.platform_utils", num_compute_units=lambda device_id=0:
                                       torch.cuda.get_device_properties(device_id).multi_processor_count),
        "vllm.v1.outputs": s("vllm.v1.outputs", **{n: _not_driven_class(n) for n in (
            "LogprobsTensors", "LogprobsLists", "SamplerOutput")}),
        "vllm.v1.sample.metadata": s("vllm.v1.sample.metadata", SamplingMetadata=types.SimpleNamespace),
        "vllm.v1.sample.ops.logprobs": s("vllm.v1.sample.ops.logprobs",
                                         batched_count_greater_than=_not_driven("batched_count_greater_than")),
        "vllm.v1.sample.ops.penalties": s("vllm.v1.sample.ops.penalties",
                                          apply_all_penalties=_not_driven("apply_all_penalties")),
    }
    if with_verifiers:
        names.update({
            "vllm.v1.spec_decode.metadata": s("vllm.v1.spec_decode.metadata", SpecDecodeMetadata=object),
            "vllm.v1.spec_decode.utils": s("vllm.v1.spec_decode.utils", unconditional_to_conditional_rates=_not_driven(
                "unconditional_to_conditional_rates")),
            "vllm.v1.worker.gpu.buffer_utils": s("vllm.v1.worker.gpu.buffer_utils", UvaBackedTensor=_UvaBackedTensor),
        })
    pkgs = es.stub_packages(list(names) + [F_SAMPLER[:-3].replace("/", "."), F_MRV2_GUMBEL[:-3].replace("/", "."),
                                           F_MRV2_REJECTION[:-3].replace("/", ".")])
    for name, module in pkgs.items():
        names.setdefault(name, module)
    return names


class _UvaBackedTensor:
    """Stub of vllm.v1.worker.gpu.buffer_utils.UvaBackedTensor: ``.np`` (host, source of truth) and ``.gpu`` (its
    device copy, refreshed by ``copy_to_uva``), which is all SamplingStates uses."""

    device = torch.device("cpu")

    def __init__(self, size, dtype, max_concurrency=None):
        self.cpu = torch.zeros(size, dtype=dtype)
        self.np = self.cpu.numpy()
        self.gpu = self.cpu.to(self.device)

    def copy_to_uva(self, n=None):
        src = self.cpu if n is None else self.cpu[:n]
        self.gpu = src.to(self.device)
        return self.gpu


def _module_name(relpath: str) -> str:
    return relpath[:-3].replace("/", ".")


# ---- the parameters, as vLLM's front end and InputBatch hand them to the sampler -----------------------------------
class _Batch:
    """Per-row parameters after vLLM's SamplingParams and InputBatch rules (see the module docstring)."""

    def __init__(self, rows, vocab, temperature, top_k, top_p, min_p, front_end):
        self.rows, self.vocab = rows, vocab
        self.uniform = all(es.uniform(v) for v in (temperature, top_k, top_p, min_p))
        if self.uniform:   # every row the same request parameters: the rules once, the columns by replication
            one = _Batch(1, vocab, [float(temperature)], [int(top_k)], [float(top_p)], [float(min_p)], front_end)
            self.greedy = one.greedy * rows
            self.temperature, self.top_k = one.temperature * rows, one.top_k * rows
            self.top_p, self.min_p = one.top_p * rows, one.min_p * rows
            self.uses_top_k, self.uses_top_p = one.uses_top_k, one.uses_top_p
            self.row = (one.greedy[0], one.temperature[0], one.top_k[0], one.top_p[0], one.min_p[0])
            return
        t, k, p, m = es.sampling_params(rows, temperature, top_k, top_p, min_p)
        if front_end:
            for r in range(rows):
                _validate(r, t[r], k[r], p[r], m[r])
                if 0 < t[r] < MAX_TEMP:        # sampling_params.py:451-459
                    t[r] = MAX_TEMP
                if t[r] < SAMPLING_EPS:        # sampling_params.py:492-496
                    p[r], k[r], m[r] = 1.0, 0, 0.0
        self.greedy = [tr < SAMPLING_EPS for tr in t]                       # SamplingType.GREEDY
        self.temperature = [0.0 if g else tr for g, tr in zip(self.greedy, t)]  # gpu_input_batch.py:384-389
        self.top_k = [kr if 0 < kr < vocab else vocab for kr in k]          # gpu_input_batch.py:395-399
        self.top_p = p
        self.min_p = m
        self.uses_top_k = any(0 < kr < vocab for kr in k)
        self.uses_top_p = any(pr < 1 for pr in p)                           # gpu_input_batch.py:393-394


def _validate_spec_decode(min_p):
    """vllm/sampling_params.py _validate_spec_decode (870-882): with a speculative config the front end refuses any
    request with min_p > _SAMPLING_EPS ("not yet supported with speculative decoding"). Behind it, v1's
    RejectionSampler applies no argmax-invariant processor, min-p included, to the drafted rows (rejection_sampler.py
    291-348): only the bonus token would honour it (upstream vllm-project/vllm#42744)."""
    for row, m in enumerate(min_p):
        if m > SAMPLING_EPS:
            raise ValueError(f"row {row}: min_p = {m} with speculative decoding: vLLM's SamplingParams refuses "
                             f"min_p > {SAMPLING_EPS} when a speculative config is set (sampling_params.py:870-882); "
                             "--no-front-end hands it to the rejection sampler as it is")


def _validate(row, t, k, p, m):
    """vllm/sampling_params.py _verify_args (the sampling fields), with the engine's messages."""
    if not math.isfinite(t):
        raise ValueError(f"row {row}: temperature must be a finite number, got {t}.")
    if t < 0.0:
        raise ValueError(f"row {row}: temperature must be non-negative, got {t}.")
    if t > 2.0:
        raise ValueError(f"row {row}: temperature must be in [0, 2], got {t}.")
    if not 0.0 < p <= 1.0:
        raise ValueError(f"row {row}: top_p must be in (0, 1], got {p}.")
    if k < -1:
        raise ValueError(f"row {row}: top_k must be 0 (disable), or at least 1, got {k}.")
    if not 0.0 <= m <= 1.0:
        raise ValueError(f"row {row}: min_p must be in [0, 1], got {m}.")


# ---- v1 ------------------------------------------------------------------------------------------------------------
class VllmV1:
    """vLLM v1 ``Sampler.sample`` with a pinned (or the engine's own) top-k/top-p path."""

    def __init__(self, src=None, path="dispatch", device="cpu", use_fp64_gumbel=False, front_end=True,
                 with_verifier=False):
        if path not in PATHS:
            raise ValueError(f"path must be one of {', '.join(PATHS)}, got {path!r}")
        self.device = torch.device(device)
        if self.device.type not in ("cpu", "cuda"):
            raise ValueError(f"device must be cpu or cuda, got {device!r}")
        if path == "triton" and not triton_available():
            raise es.EngineSourceError("path 'triton' needs triton and a CUDA device (ops/topk_topp_triton.py)")
        needed = [F_SAMPLER, F_TOPK_TOPP, F_BUILTIN, F_INTERFACE, F_BAD_WORDS]
        has_triton = self.device.type == "cuda" and triton_available()
        if has_triton:
            needed.append(F_TRITON)
        if with_verifier:
            needed.append(F_REJECTION)
        self.tree = es.EngineTree("vllm", es.find_tree(src, ENV_VAR, "vllm", needed))
        self.path, self.front_end, self.use_fp64_gumbel = path, front_end, use_fp64_gumbel
        stubs = _stubs(self.device, with_verifier)
        self.tree.stubs = sorted(stubs)
        with es.no_torch_compile(), es.isolated_modules(stubs):
            self.tree.load(F_INTERFACE, _module_name(F_INTERFACE))
            self.builtin = self.tree.load(F_BUILTIN, _module_name(F_BUILTIN))
            self.tree.load(F_BAD_WORDS, _module_name(F_BAD_WORDS))
            if has_triton:
                self.triton_ops = self.tree.load(F_TRITON, _module_name(F_TRITON))
            self.ops = self.tree.load(F_TOPK_TOPP, _module_name(F_TOPK_TOPP))
            self.sampler_mod = self.tree.load(F_SAMPLER, _module_name(F_SAMPLER))
            self.rejection = self.tree.load(F_REJECTION, _module_name(F_REJECTION)) if with_verifier else None
        self.last_path = None
        self._pin_path()
        self._generators, self._min_p_kept = [], {}
        self.name = f"{self.tree.label()}:v1/sample/sampler.py+ops/topk_topp_sampler.py:{path}@{self.device.type}"

    def _pin_path(self):
        """Record which top-k/top-p function runs; pin it unless path == 'dispatch'. Only this instance's private
        copy of topk_topp_sampler.py is touched (its module globals), the functions themselves are the engine's."""
        ops = self.ops
        engine_pytorch = ops.apply_top_k_top_p_pytorch
        engine_triton = getattr(ops, "apply_top_k_top_p_triton", None)
        engine_dispatch = ops.apply_top_k_top_p

        def pytorch(logits, k, p, allow_cpu_sync=False):
            self.last_path = "pytorch"
            return engine_pytorch(logits, k, p, allow_cpu_sync=allow_cpu_sync)

        def triton_path(logits, k, p, *args, **kwargs):
            self.last_path = "triton"
            return engine_triton(logits, k, p, *args, **kwargs)

        ops.apply_top_k_top_p_pytorch = pytorch
        if engine_triton is not None:
            ops.apply_top_k_top_p_triton = triton_path
        if self.path == "pytorch":
            # As the dispatcher calls it on this platform (topk_topp_sampler.py:351-360).
            ops.apply_top_k_top_p = lambda logits, k, p: (
                logits if k is None and p is None else pytorch(logits, k, p, allow_cpu_sync=self.device.type == "cpu"))
        elif self.path == "triton":
            ops.apply_top_k_top_p = lambda logits, k, p: (
                logits if k is None and p is None else triton_path(logits, k, p))
        else:
            ops.apply_top_k_top_p = engine_dispatch
        if self.rejection is not None:   # rejection_sampler.py imported the dispatcher by name
            self.rejection.apply_top_k_top_p = ops.apply_top_k_top_p

    # -- the batch ----------------------------------------------------------------------------------------------------
    def _min_p_processor(self, batch: _Batch):
        """The engine's ``MinPLogitsProcessor`` holding the batch's min_p values. For a uniform batch one is kept
        per (rows, min_p), as the engine keeps its processor across steps: ``update_state`` with the same added
        requests leaves the same state, and ``apply`` only reads it (builtin.py), so a kept processor filters as a
        fresh one does, without the per-request ``update_state`` loop of every call."""
        key = (batch.rows, batch.min_p[0]) if batch.uniform else None
        kept = self._min_p_kept.get(key) if key is not None else None
        if kept is not None:
            return kept
        rows = batch.rows
        min_p_proc = self.builtin.MinPLogitsProcessor(
            types.SimpleNamespace(scheduler_config=types.SimpleNamespace(max_num_seqs=rows)), self.device, False)
        added = [(r, _SamplingParamsStub(min_p=batch.min_p[r]), None, []) for r in range(rows)]
        min_p_proc.update_state(types.SimpleNamespace(batch_size=rows, removed=[], added=added, moved=[]))
        if key is not None:
            self._min_p_kept[key] = min_p_proc
            while len(self._min_p_kept) > KEPT_PROCESSORS:
                self._min_p_kept.pop(next(iter(self._min_p_kept)))
        return min_p_proc

    def _generator(self, r):
        """The r-th generator of a pool kept across calls: ``manual_seed`` resets a generator's state, so a kept
        generator seeded with s draws what ``torch.Generator(device).manual_seed(s)`` (vLLM's per-request generator,
        gpu_model_runner.py:1258-1259) draws."""
        while len(self._generators) <= r:
            self._generators.append(torch.Generator(device=self.device))
        return self._generators[r]

    def _column(self, batch: _Batch, values, index, dtype):
        if batch.uniform:
            return torch.full((batch.rows,), batch.row[index], dtype=dtype, device=self.device)
        return torch.tensor(values, dtype=dtype, device=self.device)

    def _metadata(self, batch: _Batch, seeds, offsets, num_logprobs):
        rows = batch.rows
        min_p_proc = self._min_p_processor(batch)
        generators = {}
        if seeds is not None:
            request = es.request_seed_list(seeds, offsets, rows)     # every row's request seed at once
            if batch.uniform:
                if not batch.greedy[0]:
                    generators = {r: self._generator(r).manual_seed(request[r]) for r in range(rows)}
            else:
                generators = {r: self._generator(r).manual_seed(request[r]) for r in range(rows)
                              if not batch.greedy[r]}
        return types.SimpleNamespace(
            temperature=self._column(batch, batch.temperature, 1, torch.float32),
            all_greedy=all(batch.greedy), all_random=not any(batch.greedy),
            top_k=self._column(batch, batch.top_k, 2, torch.int32) if batch.uses_top_k else None,
            top_p=self._column(batch, batch.top_p, 3, torch.float32) if batch.uses_top_p else None,
            generators=generators, max_num_logprobs=num_logprobs, logprob_token_ids=None,
            logitsprocs=types.SimpleNamespace(argmax_invariant=[min_p_proc], non_argmax_invariant=[]))

    def _logits(self, logits):
        # Sampler.forward, sampler.py:96: the sampler works on fp32 logits (a copy: the engine updates in place).
        return es.logits_2d(logits, self.device).clone()

    def sample(self, logits, temperature, top_k, top_p, min_p, seeds, offsets):
        """One token per row: ``Sampler.sample`` (sampler.py:243-302) on a batch of these rows."""
        x = self._logits(logits)
        batch = _Batch(x.shape[0], x.shape[1], temperature, top_k, top_p, min_p, self.front_end)
        sampler = self.sampler_mod.Sampler("raw_logprobs", self.use_fp64_gumbel)
        self.last_path = None
        tokens, _ = sampler.sample(x, self._metadata(batch, seeds, offsets, None))
        return tokens.long()

    def processed_logprobs(self, logits, temperature, top_k, top_p, min_p):
        """[rows, vocab] fp32: what vLLM returns with ``logprobs_mode="processed_logprobs"`` (forward_native /
        forward_cpu: ``log_softmax`` of the logits after temperature, min-p, top-k and top-p, topk_topp_sampler.py
        136-140, 189-193). Rows with T < 1e-5 in a mixed batch are scaled by 1 (sampler.py:235-237)."""
        x = self._logits(logits)
        batch = _Batch(x.shape[0], x.shape[1], temperature, top_k, top_p, min_p, self.front_end)
        sampler = self.sampler_mod.Sampler("processed_logprobs", self.use_fp64_gumbel)
        self.last_path = None
        metadata = self._metadata(batch, [0] * batch.rows, [0] * batch.rows, -1)
        _, processed = sampler.sample(x, metadata)
        return processed

    def verify(self, target_logits, draft_tokens, draft_probs, temperature, top_k, top_p, min_p, seeds, offsets):
        """v1 spec decoding for B chain requests of g drafts: ``RejectionSampler.forward``'s calls
        (rejection_sampler.py:127-190): the bonus token from target row g through ``Sampler``, then
        ``apply_sampling_constraints`` (temperature, top-k, top-p: min-p, an argmax-invariant processor, is not
        applied to the drafted rows, 291-340) and ``rejection_sample``. target_logits [B, g+1, V]; draft_tokens
        [B, g]; draft_probs [B, g, V] or None (drafts without probabilities, as n-gram / EAGLE proposers give).
        Returns (accepted [B], tokens [B, g+1]): slots 0..accepted hold the accepted drafts then the recovered or
        bonus token, the rest -1."""
        if self.rejection is None:
            raise es.EngineSourceError("construct VllmV1(with_verifier=True) to load sample/rejection_sampler.py")
        target = torch.as_tensor(target_logits).to(self.device, torch.float32)
        rows, g1, vocab = target.shape
        g = g1 - 1
        drafts = torch.as_tensor(draft_tokens).to(self.device, torch.int32).reshape(rows, g)
        batch = _Batch(rows, vocab, temperature, top_k, top_p, min_p, self.front_end)
        if self.front_end:
            _validate_spec_decode(batch.min_p)
        metadata = self._metadata(batch, seeds, offsets, None)
        sampler = self.sampler_mod.Sampler("raw_logprobs", self.use_fp64_gumbel)
        bonus, _ = sampler.sample(target[:, g, :].clone(), metadata)             # rejection_sampler.py:135-149
        target_rows = target[:, :g, :].reshape(rows * g, vocab).clone()
        cu = torch.arange(1, rows + 1, device=self.device, dtype=torch.int32) * g
        target_rows = self.rejection.apply_sampling_constraints(target_rows, cu, metadata)
        probs = None
        if draft_probs is not None:
            probs = torch.as_tensor(draft_probs).to(self.device, torch.float32).reshape(rows * g, vocab).contiguous()
        out = self.rejection.rejection_sample(
            drafts.reshape(-1).contiguous(), [g] * rows, g, cu, probs, target_rows,
            bonus.to(torch.int32).reshape(rows, 1).contiguous(), metadata, use_fp64_gumbel=self.use_fp64_gumbel)
        out = out.long()
        accepted = (out != -1).sum(dim=1) - 1
        return accepted, out


# ---- Model Runner V2 -----------------------------------------------------------------------------------------------
def load_mrv2_files(v1: "VllmV1", with_verifier: bool):
    """(gumbel, states, rejection_sampler_utils or None): Model Runner V2's files from v1's tree, with v1's stubs for
    v1's device (placeholders for triton on the CPU: the files load, their kernels do not run) and v1's own
    topk_topp_sampler.py copy (states.py imports ``apply_top_k_top_p`` from it)."""
    tree = v1.tree
    needed = [F_MRV2_GUMBEL, F_MRV2_MIN_P, F_MRV2_STATES] + ([F_MRV2_REJECTION] if with_verifier else [])
    es.find_tree(tree.root, ENV_VAR, "vllm", needed)
    stubs = _stubs(v1.device, True)
    stubs[_module_name(F_TOPK_TOPP)] = v1.ops
    with es.isolated_modules(stubs):
        gumbel = tree.load(F_MRV2_GUMBEL, _module_name(F_MRV2_GUMBEL))
        tree.load(F_MRV2_MIN_P, _module_name(F_MRV2_MIN_P))
        states = tree.load(F_MRV2_STATES, _module_name(F_MRV2_STATES))
        rejection = tree.load(F_MRV2_REJECTION, _module_name(F_MRV2_REJECTION)) if with_verifier else None
    return gumbel, states, rejection


MRV2_POSITION_BITS = 62   # MRV2's positions are int64 (gumbel.py:138-139); a trial adds its draft slots to them


def _mrv2_keys(seeds, offsets, rows):
    """Per row (request seed, position) for MRV2's ``tl.randint(seed, pos)``: ``engine_source.position_key`` with
    62 bits, so that a samplecheck offset of 2^63 or more (valid: offsets are u64) reaches the engine as an int64
    position instead of raising "Overflow when unpacking long long" (H100 run of 13a4b57, support-containment)."""
    s = es.per_row(seeds, rows, "seeds", int)
    o = es.per_row(offsets, rows, "offsets", int)
    return [es.position_key(s[r], o[r], MRV2_POSITION_BITS) for r in range(rows)]


def _mrv2_key_columns(seeds, offsets, rows, device):
    """``_mrv2_keys`` of every row at once when the offsets are engine_serve's int64 column of u64 bits: (request
    seed: one Python int when every row has the same, else a list; positions: an int64 tensor on ``device``). The
    same keys as ``_mrv2_keys`` row by row (tested): position = the low 62 bits, the seed folded with the high bits
    where they are not zero."""
    if not es.is_tensor(offsets):
        keys = _mrv2_keys(seeds, offsets, rows)
        seed_list = [k[0] for k in keys]
        seed = seed_list[0] if len(set(seed_list)) == 1 else seed_list
        return seed, torch.tensor([k[1] for k in keys], dtype=torch.int64, device=device)
    o = offsets.to(device)
    high = (o >> MRV2_POSITION_BITS) & ((1 << (64 - MRV2_POSITION_BITS)) - 1)
    positions = o & ((1 << MRV2_POSITION_BITS) - 1)
    folded = bool((high != 0).any())
    if es.uniform(seeds) and not folded:
        return es.as_int64(seeds), positions
    base = seeds.to(device) if es.is_tensor(seeds) else torch.full_like(o, es.as_int64(seeds))
    seed_rows = torch.where(high == 0, base, es.request_seeds(base, high)) if folded else base
    seed_list = seed_rows.tolist()
    return (seed_list[0] if len(set(seed_list)) == 1 else seed_list), positions


KEPT_STATES = 8   # Model Runner V2 SamplingStates kept for uniform batches, one per (rows, V, parameters, seed)


class VllmMrv2:
    """Model Runner V2: SamplingStates (temperature, min-p), v1's top-k/top-p, Gumbel keyed by (seed, position)."""

    def __init__(self, src=None, path="dispatch", device="cuda", use_fp64_gumbel=False, front_end=True,
                 with_verifier=False):
        if not triton_available():
            raise es.EngineSourceError("Model Runner V2's sampler is Triton: it needs triton and a CUDA device")
        self.v1 = VllmV1(src, path=path, device=device, use_fp64_gumbel=use_fp64_gumbel, front_end=front_end)
        self.device, self.front_end, self.use_fp64_gumbel = self.v1.device, front_end, use_fp64_gumbel
        tree = self.v1.tree
        _UvaBackedTensor.device = self.device
        self.gumbel, self.states_mod, self.rejection = load_mrv2_files(self.v1, with_verifier)
        self.path = path
        self._states_kept, self._mappings = {}, {}
        self.name = f"{tree.label()}:v1/worker/gpu/sample/gumbel.py:mrv2:{path}@{self.device.type}"

    @property
    def last_path(self):
        return self.v1.last_path

    def _states(self, rows, vocab, temperature, top_k, top_p, min_p, seeds):
        """The engine's ``SamplingStates`` of the rows' requests. When every row has the same parameters and seed
        (a COUNT chunk, a replicated row: the positions alone differ), the states are built once per (rows, V,
        parameters, seed) and kept, as the engine keeps a request's state across steps: ``apply_temperature``,
        ``apply_min_p`` and ``get_top_k_top_p`` read them (states.py), so a kept one gives what a fresh one does,
        without ``add_request``'s work a row each call."""
        key = None
        if all(es.uniform(v) for v in (temperature, top_k, top_p, min_p, seeds)):
            key = (rows, vocab, float(temperature), int(top_k), float(top_p), float(min_p), int(seeds))
            kept = self._states_kept.get(key)
            if kept is not None:
                return kept
        states = self._build_states(rows, vocab, temperature, top_k, top_p, min_p, seeds)
        if key is not None:
            self._states_kept[key] = states
            while len(self._states_kept) > KEPT_STATES:
                self._states_kept.pop(next(iter(self._states_kept)))
        return states

    def _build_states(self, rows, vocab, temperature, top_k, top_p, min_p, seeds):
        t, k, p, m = es.sampling_params(rows, temperature, top_k, top_p, min_p)
        s = es.per_row(seeds, rows, "seeds", int)
        states = self.states_mod.SamplingStates(rows, vocab)
        for r in range(rows):
            if self.front_end:
                _validate(r, t[r], k[r], p[r], m[r])
                if 0 < t[r] < MAX_TEMP:
                    t[r] = MAX_TEMP
                if t[r] < SAMPLING_EPS:
                    t[r], p[r], k[r], m[r] = 0.0, 1.0, 0, 0.0
            # SamplingStates.add_request (states.py:40-60) maps top_k <= 0 or > V to V, and takes the seed as given.
            states.add_request(r, _SamplingParamsStub(temperature=t[r], top_k=k[r], top_p=p[r], min_p=m[r],
                                                      seed=es.as_int64(s[r]), logprobs=None))
        states.apply_staged_writes()
        return states

    def _processed(self, states, logits, mapping, mapping_np):
        # Sampler.apply_sampling_params (worker/gpu/sample/sampler.py:172-228): temperature, then min-p, in place.
        states.apply_temperature(logits, mapping, mapping_np)
        states.apply_min_p(logits, mapping, mapping_np)
        return logits

    def sample(self, logits, temperature, top_k, top_p, min_p, seeds, offsets):
        """Sampler.sample of Model Runner V2 (worker/gpu/sample/sampler.py:230-268) without FlashInfer."""
        x = self.v1._logits(logits)
        rows, vocab = x.shape
        seed, pos = _mrv2_key_columns(seeds, offsets, rows, self.device)
        states = self._states(rows, vocab, temperature, top_k, top_p, min_p, seed)
        mapping, mapping_np = self._mapping(rows)
        x = self._processed(states, x, mapping, mapping_np)
        top_k_t, top_p_t = states.get_top_k_top_p(mapping, mapping_np)
        self.v1.last_path = None
        x = self.v1.ops.apply_top_k_top_p(x, top_k_t, top_p_t)
        return self.gumbel.gumbel_sample(x, mapping, states.temperature.gpu, states.seeds.gpu, pos,
                                         apply_temperature=False, use_fp64=self.use_fp64_gumbel).long()

    def _mapping(self, rows):
        """The identity request mapping of a batch of ``rows`` (device tensor and its numpy copy), made once a size."""
        kept = self._mappings.get(rows)
        if kept is None:
            mapping = torch.arange(rows, device=self.device, dtype=torch.int32)
            kept = self._mappings[rows] = (mapping, mapping.cpu().numpy())
        return kept

    def processed_logprobs(self, logits, temperature, top_k, top_p, min_p):
        """[rows, vocab]: log_softmax of ``apply_sampling_params``' output, what MRV2 returns in processed_logprobs
        mode (sampler.py:94-111 hands the processed logits to compute_topk_scores)."""
        x = self.v1._logits(logits)
        rows, vocab = x.shape
        states = self._states(rows, vocab, temperature, top_k, top_p, min_p, [0] * rows)
        mapping = torch.arange(rows, device=self.device, dtype=torch.int32)
        mapping_np = mapping.cpu().numpy()
        x = self._processed(states, x, mapping, mapping_np)
        top_k_t, top_p_t = states.get_top_k_top_p(mapping, mapping_np)
        x = self.v1.ops.apply_top_k_top_p(x, top_k_t, top_p_t)
        return x.log_softmax(dim=-1, dtype=torch.float32)

    def verify(self, target_logits, draft_tokens, draft_logits, temperature, top_k, top_p, min_p, seeds, offsets):
        """MRV2 ``RejectionSampler.__call__`` (worker/gpu/spec_decode/rejection_sampler.py:139-168): every target row
        through ``apply_sampling_params`` (temperature, min-p, top-k, top-p), then ``rejection_sample`` with the
        coins and resampling keyed by (seed, position): trial position of row j = offset + j. draft_logits
        [B, g, V] or None (one-hot drafts). Returns (accepted [B], tokens [B, g+1]) as VllmV1.verify."""
        if self.rejection is None:
            raise es.EngineSourceError("construct VllmMrv2(with_verifier=True) to load rejection_sampler_utils.py")
        target = torch.as_tensor(target_logits).to(self.device, torch.float32)
        rows, g1, vocab = target.shape
        g = g1 - 1
        if self.front_end:
            _validate_spec_decode(_Batch(rows, vocab, temperature, top_k, top_p, min_p, True).min_p)
        keys = _mrv2_keys(seeds, offsets, rows)
        states = self._states(rows, vocab, temperature, top_k, top_p, min_p, [k[0] for k in keys])
        idx = torch.arange(rows, device=self.device, dtype=torch.int32)
        expanded = idx.repeat_interleave(g1)
        x = target.reshape(rows * g1, vocab).clone()
        x = self._processed(states, x, expanded, idx.cpu().numpy())
        top_k_t, top_p_t = states.get_top_k_top_p(expanded, idx.cpu().numpy())
        x = self.v1.ops.apply_top_k_top_p(x, top_k_t, top_p_t)
        # draft_sampled[start + j + 1] is draft j (rejection_sampler_utils.py:531); row 0's entry is not read.
        drafts = torch.as_tensor(draft_tokens).to(self.device, torch.int64).reshape(rows, g)
        draft_sampled = torch.zeros(rows, g1, dtype=torch.int64, device=self.device)
        draft_sampled[:, 1:] = drafts
        offs = torch.tensor([k[1] for k in keys], dtype=torch.int64, device=self.device)
        local = torch.arange(g1, device=self.device, dtype=torch.int64)
        pos = (offs[:, None] + local[None, :]).reshape(-1)
        cu = torch.arange(rows + 1, device=self.device, dtype=torch.int32) * g1
        dl = None if draft_logits is None else torch.as_tensor(draft_logits).to(self.device, torch.float32).contiguous()
        sampled, num_sampled = self.rejection.rejection_sample(
            x, dl, draft_sampled.reshape(-1), cu, pos, idx, expanded, local.repeat(rows).to(torch.int32),
            states.temperature.gpu, states.seeds.gpu, g, None, use_fp64=self.use_fp64_gumbel)
        accepted = num_sampled.long() - 1
        out = sampled.long().clone()
        slot = torch.arange(g1, device=self.device)[None, :]
        out[slot > accepted[:, None]] = -1
        return accepted, out



def main(argv=None):
    def options(ap):
        ap.add_argument("--path", choices=PATHS, default="dispatch")
        ap.add_argument("--device", default="cpu")
        ap.add_argument("--mrv2", action="store_true", help="Model Runner V2 instead of v1 (GPU)")

    def make(args):
        if args.mrv2:
            mrv2 = VllmMrv2(args.src, path=args.path, device=args.device)
            mrv2.tree = mrv2.v1.tree
            return mrv2
        return VllmV1(args.src, path=args.path, device=args.device)
    return es.run_cli("vllm_adapter", "Load vLLM's own sampler files and say what loaded.", ENV_VAR, make, options,
                      argv)

if __name__ == "__main__":
    sys.exit(main())
