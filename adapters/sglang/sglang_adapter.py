"""SGLang's own torch-native sampler (python/sglang/srt/layers/sampler.py), loaded from an SGLang source tree.

    python3 adapters/sglang/sglang_adapter.py --src ~/src/sglang --describe
    SAMPLECHECK_SGLANG_SRC=~/src/sglang ...

``SglangTorch(seeded=False)`` drives ``Sampler.forward`` with ``sampling_backend="pytorch"``: ``logits.div_(T)``,
softmax, then ``sampling_from_probs_torch`` (no filter in the batch) or ``top_k_top_p_min_p_sampling_from_probs_torch``
and ``torch.multinomial`` on the default generator. ``seeded=True`` is SGLang's deterministic inference
(``enable_deterministic_inference``: a ``sampling_seed`` per request): the same functions draw with
``multinomial_with_seed``, a float64 Gumbel of murmur3(seed, position, token) (layers/utils/hash.py, a Triton
kernel: GPU, torch >= 2.3 for the uint32/uint64 dtypes sampler.py:577 and hash.py use).

Parameters go through SGLang's own ``SamplingParams`` (sampling/sampling_params.py, loaded: it imports the standard
library only): ``__init__`` turns 0 <= T < 1e-6 into greedy (T = 1, top_k = 1) and top_k = -1 into TOP_K_ALL, and
``verify`` raises ``ValueError`` for values it rejects (top_p in (0, 1], min_p in [0, 1], top_k -1 or >= 1,
T >= 0). Seeded, min_p > 0 is refused as well (``ValueError`` before the draw) unless every row of the batch is
greedy: the engine asserts against it (sampler.py:476-479), so a sampling seeded batch with a min-p row never draws.
The batch flags are those of ``SamplingBatchInfo.from_schedule_batch`` (sampling_batch_info.py:171-179): all greedy
iff every top_k <= 1, need_top_p iff a top_p != 1, need_top_k iff a top_k != TOP_K_ALL, need_min_p iff a min_p > 0.

Seeding. Unseeded, the engine draws with the process's default generator: the adapter calls ``Sampler.forward``
once per row after ``torch.manual_seed(request_seed(seed, offset))`` (``batch="per-row"``, deterministic per row), or
once for the whole batch after seeding with the first row's pair (``batch="whole"``: the engine's batch composition,
but a row's token then depends on the other rows: nondeterministic in samplecheck's sense). Seeded, sampling_seed =
seed and position = offset, the whole batch in one call (the hash is per row, so tokens do not depend on the batch);
the engine's modules are back in ``sys.modules`` during each call (``es.engine_modules``), since torch.compile
imports ``sglang.srt.layers.utils.hash`` by name when it traces ``multinomial_with_seed``.

Stubs (only what sampler.py imports; ``__samplecheck_stub__``): ``sglang.srt.distributed`` (a TP group of one),
``sglang.srt.layers.dp_attention`` (DP attention off), ``sglang.srt.layers.logits_processor``
(``LogitsProcessorOutput``: a namespace), ``sglang.srt.layers.utils.logprob`` (not driven: no logprobs),
``sglang.srt.sampling.sampling_batch_info`` (the batch is a namespace with the fields sampler.py reads),
``sglang.srt.server_args`` (sampling_backend "pytorch", NaN detection off, no RL on-policy target, deterministic
inference = ``seeded``), ``sglang.srt.utils.common`` (is_cuda() and is_npu() False, so the FlashInfer / sgl_kernel /
torch_npu imports at sampler.py:26-37 are skipped; env flags False). Without triton, layers/utils/hash.py is not
loaded and ``sglang.srt.layers.utils.hash`` is a stub whose ``murmur_hash32`` refuses (seeded needs the GPU). On
torch < 2.0 a no-op ``torch.compile`` exists while sampler.py loads (it decorates ``multinomial_with_seed``,
line 554, which torch 1.13 cannot run anyway).
"""
from __future__ import annotations

import logging
import sys
import types
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # adapters/, only while importing the helper
import engine_source as es  # noqa: E402

sys.path.pop(0)

ENV_VAR = "SAMPLECHECK_SGLANG_SRC"
F_SAMPLER = "python/sglang/srt/layers/sampler.py"
F_HASH = "python/sglang/srt/layers/utils/hash.py"
F_PARAMS = "python/sglang/srt/sampling/sampling_params.py"
BATCH_MODES = ("per-row", "whole")
# The engine's own refusal, said before the draw: with a sampling seed, a batch that samples (not every row greedy)
# and has a min_p > 0 row trips top_k_top_p_min_p_sampling_from_probs_torch's assert (sampler.py:476-479 at
# 35591c7d); an all-greedy batch takes torch.argmax (111-113) and draws.
SEEDED_MIN_P = ("top_k_top_p_min_p_sampling_from_probs_torch asserts sampling_seed is None when a row of the batch "
                "has min_p > 0 (layers/sampler.py:476-479: \"With sampling seed, multinomial_with_seed will provide "
                "wrong results\")")


def _modname(relpath: str) -> str:
    return relpath[len("python/"):-3].replace("/", ".")


def _refuse(what):
    def refuse(*args, **kwargs):
        raise NotImplementedError(f"{what} is a samplecheck stub: the adapter never drives it")
    return refuse


class SglangTorch:
    def __init__(self, src=None, device="cpu", seeded=False, batch="per-row"):
        if batch not in BATCH_MODES:
            raise ValueError(f"batch must be one of {', '.join(BATCH_MODES)}, got {batch!r}")
        self.device = torch.device(device)
        self.seeded, self.batch = seeded, batch
        has_triton = self.device.type == "cuda" and es.triton_importable()
        if seeded and not has_triton:
            raise es.EngineSourceError("seeded SGLang draws hash with a Triton kernel (layers/utils/hash.py): they "
                                       "need triton and a CUDA device")
        needed = [F_SAMPLER, F_PARAMS] + ([F_HASH] if has_triton else [])
        self.tree = es.EngineTree("sglang", es.find_tree(src, ENV_VAR, "sglang", needed))
        server_args = types.SimpleNamespace(enable_nan_detection=False, rl_on_policy_target=None,
                                            enable_deterministic_inference=seeded, sampling_backend="pytorch")
        s = es.stub_module
        stubs = {
            "sglang.srt.distributed": s("sglang.srt.distributed",
                                        get_tp_group=lambda: types.SimpleNamespace(device_group=None)),
            "sglang.srt.layers.dp_attention": s(
                "sglang.srt.layers.dp_attention", is_dp_attention_enabled=lambda: False,
                get_attention_tp_group=lambda: types.SimpleNamespace(device_group=None)),
            "sglang.srt.layers.logits_processor": s("sglang.srt.layers.logits_processor",
                                                    LogitsProcessorOutput=types.SimpleNamespace),
            "sglang.srt.layers.utils.logprob": s("sglang.srt.layers.utils.logprob",
                                                 get_token_ids_logprobs=_refuse("get_token_ids_logprobs"),
                                                 get_top_logprobs=_refuse("get_top_logprobs")),
            "sglang.srt.sampling.sampling_batch_info": s("sglang.srt.sampling.sampling_batch_info",
                                                         SamplingBatchInfo=types.SimpleNamespace),
            "sglang.srt.server_args": s("sglang.srt.server_args", get_global_server_args=lambda: server_args),
            "sglang.srt.utils.common": s("sglang.srt.utils.common", crash_on_warnings=lambda: False,
                                         get_bool_env_var=lambda name, default="false": False,
                                         is_cuda=lambda: False, is_npu=lambda: False),
        }
        if not has_triton:
            stubs["sglang.srt.layers.utils.hash"] = s("sglang.srt.layers.utils.hash",
                                                      murmur_hash32=_refuse("murmur_hash32 (needs triton)"))
        for name, module in es.stub_packages(list(stubs) + [_modname(F_SAMPLER), _modname(F_HASH),
                                                            _modname(F_PARAMS)]).items():
            stubs.setdefault(name, module)
        self.tree.stubs = sorted(stubs)
        self._params_kept = {}
        with es.no_torch_compile(), es.isolated_modules(stubs) as self._modules:
            self.params_mod = self.tree.load(F_PARAMS, _modname(F_PARAMS))
            if has_triton:
                self.tree.load(F_HASH, _modname(F_HASH))
            self.sampler_mod = self.tree.load(F_SAMPLER, _modname(F_SAMPLER))
        logging.getLogger(self.sampler_mod.__name__).setLevel(logging.ERROR)
        mode = "seeded" if seeded else f"unseeded,{batch}"
        self.name = f"{self.tree.label()}:srt/layers/sampler.py:pytorch:{mode}@{self.device.type}"

    def _params(self, rows, vocab, temperature, top_k, top_p, min_p):
        """One SGLang ``SamplingParams`` a row, each passed through its own ``verify`` (ValueError naming the row).
        Parameters given once for every row (scalars) make one object, verified once and kept per (parameters, V)."""
        if all(es.uniform(v) for v in (temperature, top_k, top_p, min_p)):
            key = (float(temperature), int(top_k), float(top_p), float(min_p), vocab)
            sp = self._params_kept.get(key)
            if sp is None:
                (sp,) = self._params(1, vocab, [key[0]], [key[1]], [key[2]], [key[3]])
                self._params_kept[key] = sp
                while len(self._params_kept) > 64:
                    self._params_kept.pop(next(iter(self._params_kept)))
            return [sp] * rows
        t, k, p, m = es.sampling_params(rows, temperature, top_k, top_p, min_p)
        params, made = [], {}
        for r in range(rows):
            key = (t[r], k[r], p[r], m[r])
            sp = made.get(key)
            if sp is None:   # one SamplingParams per distinct parameter tuple (replicated rows share it)
                sp = made[key] = self.params_mod.SamplingParams(temperature=t[r], top_k=k[r], top_p=p[r],
                                                                min_p=m[r])
                try:
                    sp.verify(vocab)
                except ValueError as exc:
                    raise ValueError(f"row {r}: {exc}") from None
            params.append(sp)
        # Seeded, the engine asserts when the batch samples (not all greedy: sampler.py:111) and needs min-p.
        if self.seeded and not all(sp.top_k <= 1 for sp in params):
            for r, sp in enumerate(params):
                if sp.min_p > 0:
                    raise ValueError(f"row {r}: SGLang's seeded path has no min-p (got min_p = {sp.min_p}): "
                                     f"{SEEDED_MIN_P}")
        return params

    def _info(self, rows, vocab, temperature, top_k, top_p, min_p, seeds):
        """The ``SamplingBatchInfo`` fields sampler.py reads; ``seeds`` (one a row) when seeded, else None."""
        params = self._params(rows, vocab, temperature, top_k, top_p, min_p)
        top_k_all = self.params_mod.TOP_K_ALL
        dev = self.device
        seed_t = None
        if self.seeded:
            if es.is_tensor(seeds):
                seed_t = seeds.to(dev, torch.int64)
            elif es.uniform(seeds):
                seed_t = torch.full((rows,), es.as_int64(seeds), dtype=torch.int64, device=dev)
            else:
                seed_t = torch.tensor([es.as_int64(x) for x in es.per_row(seeds, rows, "seeds", int)],
                                      dtype=torch.int64, device=dev)
        if all(es.uniform(v) for v in (temperature, top_k, top_p, min_p)):
            sp = params[0]   # one request's parameters on every row: the batch's columns made on the device at once
            return types.SimpleNamespace(
                temperatures=torch.full((rows, 1), sp.temperature, dtype=torch.float, device=dev),
                top_ps=torch.full((rows,), sp.top_p, dtype=torch.float, device=dev),
                top_ks=torch.full((rows,), sp.top_k, dtype=torch.int32, device=dev),
                min_ps=torch.full((rows,), sp.min_p, dtype=torch.float, device=dev),
                is_all_greedy=sp.top_k <= 1, need_top_p_sampling=sp.top_p != 1.0,
                need_top_k_sampling=sp.top_k != top_k_all, need_min_p_sampling=sp.min_p > 0,
                sampling_seed=seed_t, has_custom_logit_processor=False, grammars=None, device=dev)
        return types.SimpleNamespace(
            temperatures=torch.tensor([sp.temperature for sp in params], dtype=torch.float, device=dev).view(-1, 1),
            top_ps=torch.tensor([sp.top_p for sp in params], dtype=torch.float, device=dev),
            top_ks=torch.tensor([sp.top_k for sp in params], dtype=torch.int32, device=dev),
            min_ps=torch.tensor([sp.min_p for sp in params], dtype=torch.float, device=dev),
            is_all_greedy=all(sp.top_k <= 1 for sp in params),
            need_top_p_sampling=any(sp.top_p != 1.0 for sp in params),
            need_top_k_sampling=any(sp.top_k != top_k_all for sp in params),
            need_min_p_sampling=any(sp.min_p > 0 for sp in params),
            sampling_seed=seed_t, has_custom_logit_processor=False, grammars=None, device=dev)

    def check(self, temperature, top_k, top_p, min_p, vocab):
        """SGLang's own SamplingParams.verify for one row's parameters (ValueError for what it rejects); no seed
        is involved (seeded, the batch's seeds come with the draw)."""
        self._params(1, vocab, temperature, top_k, top_p, min_p)

    def _forward(self, logits, info, positions):
        out = types.SimpleNamespace(next_token_logits=logits)
        with es.engine_modules(self._modules):   # torch.compile imports sglang.srt.layers.utils.hash by name
            return self.sampler_mod.Sampler().forward(out, info, False, [0] * logits.shape[0],
                                                      [None] * logits.shape[0], positions)

    def sample(self, logits, temperature, top_k, top_p, min_p, seeds, offsets):
        x = es.logits_2d(logits, self.device)
        rows, vocab = x.shape
        if self.seeded:
            info = self._info(rows, vocab, temperature, top_k, top_p, min_p,
                              seeds if es.is_tensor(seeds) or es.uniform(seeds) else es.u64_list(seeds, rows, "seeds"))
            if es.is_tensor(offsets):   # the u64 bits as int64, as the engine's positions tensor holds them
                positions = offsets.to(self.device, torch.int64)
            else:
                positions = torch.tensor([es.as_int64(v) for v in es.u64_list(offsets, rows, "offsets")],
                                         dtype=torch.int64, device=self.device)
            return self._forward(x.clone(), info, positions).long()
        positions = torch.zeros(rows, dtype=torch.int64, device=self.device)
        if seeds is None:
            # The caller has seeded the process's generator (adapters/engine_serve.py, window seeding): the whole
            # batch in one call, as the engine draws a batch of unseeded requests.
            return self._forward(x.clone(), self._info(rows, vocab, temperature, top_k, top_p, min_p, None),
                                 positions).long()
        t, k, p, m = es.sampling_params(rows, temperature, top_k, top_p, min_p)
        s = es.u64_list(seeds, rows, "seeds")
        o = es.u64_list(offsets, rows, "offsets")
        if self.batch == "whole":
            torch.manual_seed(es.request_seed(s[0], o[0]))
            return self._forward(x.clone(), self._info(rows, vocab, t, k, p, m, None), positions).long()
        tokens = []
        for r in range(rows):
            torch.manual_seed(es.request_seed(s[r], o[r]))
            info = self._info(1, vocab, t[r], k[r], p[r], m[r], None)
            tokens.append(self._forward(x[r:r + 1].clone(), info, positions[r:r + 1]).long())
        return torch.cat(tokens)



def main(argv=None):
    def options(ap):
        ap.add_argument("--device", default="cpu")
        ap.add_argument("--seeded", action="store_true")
    return es.run_cli("sglang_adapter", "Load SGLang's own torch-native sampler and say what loaded.", ENV_VAR,
                      lambda args: SglangTorch(args.src, device=args.device, seeded=args.seeded), options, argv)

if __name__ == "__main__":
    sys.exit(main())
