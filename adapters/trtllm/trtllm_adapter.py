"""TensorRT-LLM TorchSampler's pure-torch path (``top_k_top_p_sampling_batch``), loaded from a TensorRT-LLM tree.

    python3 adapters/trtllm/trtllm_adapter.py --src ~/src/TensorRT-LLM --describe
    SAMPLECHECK_TRTLLM_SRC=~/src/TensorRT-LLM ...

``TrtllmVanilla.sample`` runs ``top_k_top_p_sampling_batch`` (tensorrt_llm/_torch/pyexecutor/sampler/ops/vanilla.py
in the 2026 layout; tensorrt_llm/_torch/pyexecutor/sampling_utils.py in older trees, found automatically):
``logits / max(T, 1e-5)``, top-k by the k-th logit (ties kept), top-p on the top-k-renormalized softmax keeping
through the first index whose cumsum reaches top_p and renormalizing by that cumsum, then ``torch.multinomial`` with
the request's ``torch.Generator``. Greedy rows go to ``greedy_search_sampling_batch`` (argmax).

Strategy (which function a row takes) follows the TorchSampler rules of the LLM API documentation (seed 002): greedy
when temperature = 0, top_k = 1 or top_p = 0; otherwise unset values default to top_k = 0 (= vocab), top_p = 1,
T = 1. samplecheck's top_k = -1 is TensorRT-LLM's top_k = 0 (disabled). The newest sampler files also treat
T <= 1e-4 as greedy (``GREEDY_TEMPERATURE_THRESHOLD``, docs/semantics.md ``trtllm-torch``); ``greedy_below`` sets
that threshold (default 1e-4; 0 reproduces the documented "temperature = 0" rule). The vanilla path has no min-p
(``top_k_top_p_sampling_batch`` takes none): a row with min_p > 0 raises ``ValueError``; TorchSampler applies min-p
only in its FlashInfer composition (adapters/trtllm/README.md).

The function asserts ``temperature > 0``, ``top_k > 1`` and ``top_p > 0`` (vanilla.py:120, 126, 128); the adapter routes
the rows those asserts reject to greedy, as the strategy resolution does before it.

Seeding: TorchSampler draws each strategy group with a ``torch.Generator``. The adapter calls the function once per
row with ``torch.Generator(device).manual_seed(request_seed(seed, offset))``, the engine's draw for a request
seeded that way, so a row's token does not depend on the batch.

Loading: the file imports ``tensorrt_llm._utils`` and ``tensorrt_llm.bindings.executor`` (the C++ bindings), so the
adapter compiles only the two functions out of it (``EngineTree.extract``: the file's own text and line numbers; they
use ``torch`` and ``Optional``). No stubs.
"""
from __future__ import annotations

import math
import sys
from pathlib import Path
from typing import Optional

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # adapters/, only while importing the helper
import engine_source as es  # noqa: E402

sys.path.pop(0)

ENV_VAR = "SAMPLECHECK_TRTLLM_SRC"
F_VANILLA = "tensorrt_llm/_torch/pyexecutor/sampler/ops/vanilla.py"
F_SAMPLING_UTILS = "tensorrt_llm/_torch/pyexecutor/sampling_utils.py"   # the same functions before the 2026 move
FUNCTIONS = ["top_k_top_p_sampling_batch", "greedy_search_sampling_batch"]


class TrtllmVanilla:
    def __init__(self, src=None, device="cpu", greedy_below=1e-4):
        self.device = torch.device(device)
        self.greedy_below = float(greedy_below)
        self._generators = []
        try:
            root = es.find_tree(src, ENV_VAR, "trtllm", [F_VANILLA])
            relpath = F_VANILLA
        except es.EngineSourceError:
            root = es.find_tree(src, ENV_VAR, "trtllm", [F_SAMPLING_UTILS])
            relpath = F_SAMPLING_UTILS
        self.tree = es.EngineTree("trtllm", root)
        fns = self.tree.extract(relpath, FUNCTIONS, {"torch": torch, "Optional": Optional})
        self.sampling_batch, self.greedy_batch = fns[FUNCTIONS[0]], fns[FUNCTIONS[1]]
        short = relpath.removeprefix("tensorrt_llm/_torch/pyexecutor/")
        self.name = f"{self.tree.label()}:{short}:top_k_top_p_sampling_batch@{self.device.type}"

    def _is_greedy(self, t, k, p):
        return t <= self.greedy_below or k == 1 or p == 0.0

    @staticmethod
    def check(t, k, p, m, vocab=None, row=0):
        """The adapter's rules (not the engine's code: the LLM API validates elsewhere): ValueError naming the value."""
        if m != 0.0:
            raise ValueError(f"row {row}: the vanilla path has no min-p (got min_p = {m})")
        if not (math.isfinite(t) and t >= 0):
            raise ValueError(f"row {row}: temperature must be finite and >= 0, got {t}")
        if not 0.0 <= p <= 1.0:
            raise ValueError(f"row {row}: top_p must be in [0, 1], got {p}")
        if k < -1:
            raise ValueError(f"row {row}: top_k must be >= 0 (0 = disabled; samplecheck's -1 too), got {k}")

    def sample_group(self, logits, temperature, top_k, top_p, generator):
        """One strategy group as TorchSampler draws it: every row shares (T, top_k, top_p), one call of
        ``top_k_top_p_sampling_batch`` (or ``greedy_search_sampling_batch``) over the rows with one generator."""
        x = es.logits_2d(logits, self.device)
        self.check(temperature, top_k, top_p, 0.0)
        if self._is_greedy(temperature, top_k, top_p):
            return self.greedy_batch(x, return_probs=False)[0]
        kr = None if top_k <= 0 or top_k >= x.shape[1] else top_k          # top_k = 0 (disabled) is the vocab
        return self.sampling_batch(x, temperature=temperature, top_k=kr, top_p=top_p, generator=generator)[0]

    def _generator(self, r):
        """The r-th generator of a pool kept across calls: ``manual_seed`` resets a generator's whole state, so a
        kept one seeded with s draws what ``torch.Generator(device).manual_seed(s)`` draws, without building one a
        row."""
        while len(self._generators) <= r:
            self._generators.append(torch.Generator(device=self.device))
        return self._generators[r]

    def sample(self, logits, temperature, top_k, top_p, min_p, seeds, offsets):
        """Each row its own strategy group with its own generator seeded from (seed, offset): one call of the
        engine's function a row (TorchSampler draws a group with one generator). Parameters shared by every row
        (scalars: a COUNT, a replicated batch) are checked and resolved once; the request seeds of every row are
        computed at once (``engine_source.request_seed_list``), the generators kept in a pool."""
        x = es.logits_2d(logits, self.device)
        rows, vocab = x.shape
        seeds_r = es.request_seed_list(seeds, offsets, rows)
        if all(es.uniform(v) for v in (temperature, top_k, top_p, min_p)):
            t, k, p = float(temperature), int(top_k), float(top_p)
            self.check(t, k, p, float(min_p))
            if self._is_greedy(t, k, p):
                return self.greedy_batch(x, return_probs=False)[0]
            kr = None if k <= 0 or k >= vocab else k
            parts = [self.sampling_batch(x[r:r + 1], temperature=t, top_k=kr, top_p=p,
                                         generator=self._generator(r).manual_seed(s))[0] for r, s in enumerate(seeds_r)]
            return torch.cat(parts)
        t, k, p, m = es.sampling_params(rows, temperature, top_k, top_p, min_p)
        tokens = torch.empty(rows, dtype=torch.long, device=self.device)
        for r in range(rows):
            self.check(t[r], k[r], p[r], m[r], row=r)
            tokens[r] = self.sample_group(x[r:r + 1], t[r], k[r], p[r], self._generator(r).manual_seed(seeds_r[r]))[0]
        return tokens

    def stage_probs(self, row, temperature, top_k, top_p, min_p):
        """A staged COUNT's state (adapters/engine_serve.py): the ``probs`` the function returns for the row alone
        (what its line-171 ``torch.multinomial`` draws from), or None for a greedy row."""
        x = es.logits_2d(row, self.device)
        t, k, p = float(temperature), int(top_k), float(top_p)
        self.check(t, k, p, float(min_p))
        if self._is_greedy(t, k, p):
            return None
        kr = None if k <= 0 or k >= x.shape[1] else k
        probs = self.sampling_batch(x[:1], temperature=t, top_k=kr, top_p=p,
                                    generator=torch.Generator(device=self.device))[1]
        return {"probs": probs, "copies": None, "lanes": None}

    def processed_probs(self, logits, temperature, top_k, top_p):
        """[rows, vocab]: the ``probs`` the function returns beside the token (what it draws from)."""
        x = es.logits_2d(logits, self.device)
        rows, vocab = x.shape
        t, k, p, _ = es.sampling_params(rows, temperature, top_k, top_p, 0.0)
        out = torch.empty_like(x)
        for r in range(rows):
            if self._is_greedy(t[r], k[r], p[r]):
                out[r] = self.greedy_batch(x[r:r + 1])[1][0]
                continue
            kr = None if k[r] <= 0 or k[r] >= vocab else k[r]
            out[r] = self.sampling_batch(x[r:r + 1], temperature=t[r], top_k=kr, top_p=p[r],
                                         generator=torch.Generator(device=self.device))[1][0]
        return out



def main(argv=None):
    return es.run_cli("trtllm_adapter", "Load TensorRT-LLM's vanilla sampling function and say what loaded.",
                      ENV_VAR, lambda args: TrtllmVanilla(args.src), argv=argv)


if __name__ == "__main__":
    sys.exit(main())
