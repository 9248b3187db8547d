"""prime-rl's trainer-side replay of vLLM's truncation (PR #2601, head a12741df), loaded from a prime-rl tree.

    python3 adapters/prime_rl/prime_rl_adapter.py --src ~/src/prime-rl --describe
    SAMPLECHECK_PRIME_RL_SRC=~/src/prime-rl ...

``PrimeRlReplay.processed_logprobs(logits, temperature, top_k, top_p, labels=None)`` returns [rows, vocab]: the
log-softmax of ``apply_top_k_top_p(logits / T, top_k, top_p, labels)``, the computation of
src/prime_rl/trainer/rl/train.py:448-453 (``scaled_logits = logits / temperatures``, then ``apply_top_k_top_p``,
then ``selective_log_softmax``, which gathers the label's entry of ``log_softmax``; the adapter returns the whole
row so that the kept set and every kept logprob can be judged). With ``labels`` (one token per row) the label
guard runs: the label's logit is restored after masking (loss.py:73, 90-91), before the log-softmax, so a label
outside the kept set gets a finite logprob and every kept token's logprob is renormalized over kept + {label}
(``label_guard_events`` counts those rows; ``last_guarded`` says which rows of the last call).

prime-rl takes one scalar (T, top_k, top_p) per micro batch (loss.py:50-55, train.py:425-429); per-row parameters
are grouped and each group is one call. It has no min-p: a row with min_p > 0 raises ``ValueError``. Temperature
must be > 0 (the PR rejects T <= 0 at config time). ``temperatures`` is fp32 (train.py:429): bf16 logits are
promoted to fp32 by the division, as in the trainer.

Loading: loss.py imports beartype, jaxtyping and prime-rl's config package, so the adapter compiles only the
function ``apply_top_k_top_p`` (loss.py:50-93) out of the file (``EngineTree.extract``: the file's own text and
line numbers; the function has no decorators and uses only ``torch`` and ``Tensor``). No stubs.
"""
from __future__ import annotations

import math
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # adapters/, only while importing the helper
import engine_source as es  # noqa: E402

sys.path.pop(0)

ENV_VAR = "SAMPLECHECK_PRIME_RL_SRC"
F_LOSS = "src/prime_rl/trainer/rl/loss.py"


class PrimeRlReplay:
    def __init__(self, src=None, device="cpu"):
        self.device = torch.device(device)
        self.tree = es.EngineTree("prime_rl", es.find_tree(src, ENV_VAR, "prime-rl", [F_LOSS]))
        namespace = {"torch": torch, "Tensor": torch.Tensor}
        self.apply_top_k_top_p = self.tree.extract(F_LOSS, ["apply_top_k_top_p"], namespace)["apply_top_k_top_p"]
        self.name = f"{self.tree.label()}:trainer/rl/loss.py:apply_top_k_top_p@{self.device.type}"
        self.label_guard_events = 0
        self.last_guarded = []  # per row of the last call: its label was outside the kept set (the guard restored it)

    def processed_logprobs(self, logits, temperature, top_k, top_p, min_p=0.0, labels=None):
        x = es.logits_2d(logits, self.device, keep_dtype=True)
        rows = x.shape[0]
        t, k, p, m = es.sampling_params(rows, temperature, top_k, top_p, min_p)
        lab = None
        if labels is not None:
            lab = torch.as_tensor(labels).to(self.device, torch.int64).reshape(rows)
        for r in range(rows):
            if m[r] != 0.0:
                raise ValueError(f"row {r}: prime-rl has no min-p (got min_p = {m[r]}); only top_k and top_p replay")
            if not (math.isfinite(t[r]) and t[r] > 0):
                raise ValueError(f"row {r}: temperature must be > 0 for prime-rl training rollouts, got {t[r]}")
            if not 0.0 < p[r] <= 1.0:
                raise ValueError(f"row {r}: top_p must be in (0, 1], got {p[r]}")
        out = torch.empty(x.shape, dtype=torch.float32, device=self.device)
        self.last_guarded = [False] * rows
        groups: dict[tuple, list[int]] = {}
        for r in range(rows):
            groups.setdefault((t[r], k[r], p[r]), []).append(r)
        for (tg, kg, pg), members in groups.items():
            idx = torch.tensor(members, device=self.device)
            temps = torch.full((len(members),), tg, dtype=torch.float32, device=self.device)  # train.py:429
            scaled = x[idx] / temps.unsqueeze(-1)                                            # train.py:449
            group_labels = lab[idx] if lab is not None else None
            masked = self.apply_top_k_top_p(scaled, kg, pg, labels=group_labels)             # train.py:452
            if group_labels is not None:
                plain = self.apply_top_k_top_p(scaled, kg, pg, labels=None)
                outside = plain.gather(-1, group_labels.unsqueeze(-1)).squeeze(-1) == float("-inf")
                self.label_guard_events += int(outside.sum())
                for r, o in zip(members, outside.tolist()):
                    self.last_guarded[r] = bool(o)
            out[idx] = masked.log_softmax(dim=-1).to(torch.float32)   # loss.py:46 (selective_log_softmax)
        return out



def main(argv=None):
    return es.run_cli("prime_rl_adapter", "Load prime-rl's apply_top_k_top_p and say what loaded.",
                      ENV_VAR, lambda args: PrimeRlReplay(args.src), argv=argv)


if __name__ == "__main__":
    sys.exit(main())
