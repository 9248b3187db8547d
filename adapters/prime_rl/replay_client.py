"""The two sides of prime-rl's replay (PR #2601) behind `samplecheck replay` (docs/replay.md): vLLM's processed
logprobs as the engine, prime-rl's ``apply_top_k_top_p`` replay as the trainer, each a process client of the replay
message (LOGPROBS_BATCH, docs/process-protocol.md) through ``samplecheck.serve``.

    samplecheck replay --suite replay-standard \\
        --engine  "process:exec python3 adapters/prime_rl/replay_client.py vllm --path pytorch" \\
        --trainer "process:exec python3 adapters/prime_rl/replay_client.py prime-rl"

vllm:      ``VllmV1(path=...).processed_logprobs`` (adapters/vllm: vLLM's own sampler files; ``--path pytorch``,
           ``triton`` (GPU) or ``dispatch``: Triton from 8 rows on CUDA), the batch in one call, as the engine
           batches a step. The path that ran is logged to stderr per call. Judged as ``vllm-triton`` where the
           Triton path can run (``triton``; ``dispatch`` on CUDA), else ``vllm`` (``judged_profile``).
prime-rl:  ``PrimeRlReplay.processed_logprobs`` with the rows' labels (its label guard; the rows it guarded are
           reported back). prime-rl has no min-p: a row with min_p > 0 is refused (unsupported: the campaign skips
           it); T <= 0 is refused (the PR rejects it at config time).

The engine trees come from ``--src`` or the adapters' environment variables (SAMPLECHECK_VLLM_SRC,
SAMPLECHECK_PRIME_RL_SRC). torch on ``--device`` (default cuda when available).
"""
import argparse
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE.parent.parent / "python"), str(HERE), str(HERE.parent / "vllm")]

import samplecheck  # noqa: E402
from samplecheck import SamplerError  # noqa: E402


def _columns(params):
    return (params.host("temperature"), params.host("top_k"), params.host("top_p"), params.host("min_p"))


def vllm_side(args):
    import vllm_adapter as va
    engine = va.VllmV1(args.src, path=args.path, device=args.device)

    def logprobs(logits, params):
        t, k, p, m = _columns(params)
        try:
            out = engine.processed_logprobs(logits.float(), t, k, p, m)
        except ValueError as e:  # vLLM's own SamplingParams validation (front end)
            raise SamplerError(samplecheck.ERR_INVALID_ARGUMENT, str(e))
        print(f"vllm: {len(params)} rows through the {engine.last_path or 'no'} top-k/top-p path", file=sys.stderr)
        return out

    return samplecheck.Sampler(logprobs=logprobs, name=engine.name, profile=judged_profile(args.path, engine),
                               tensors="torch", device=args.device)


def judged_profile(path, engine):
    """The profile the vLLM side is judged as. One run has one profile, and the dispatcher takes Triton for a batch
    of >= 8 rows on CUDA when Triton loads (topk_topp_sampler.py:345-360): its top-k keeps exactly k, the tie group
    at the k-th logit trimmed, which `vllm` (ties kept) fails as beyond the margin. `vllm-triton` judges both of the
    dispatcher's paths: the PyTorch path's extra tied members are margin-0 tie decisions there (replay-standard on
    the PyTorch path judged as vllm-triton gives the same 141 pass, 2 fail as judged as vllm; docs/conformance.md,
    "RL replay"). The PyTorch path alone (and the dispatcher on CPU, which never reaches Triton) stays `vllm`."""
    import vllm_adapter as va
    reaches_triton = path == "triton" or (path == "dispatch" and engine.device.type == "cuda" and
                                          va.triton_available())
    return "vllm-triton" if reaches_triton else "vllm"


def prime_rl_side(args):
    import prime_rl_adapter as pa
    trainer = pa.PrimeRlReplay(args.src, device=args.device)

    def validate(p):
        if p.min_p != 0:
            raise SamplerError(samplecheck.ERR_UNSUPPORTED,
                               f"prime-rl has no min-p (min_p = {p.min_p}): a min-p rollout cannot be replayed")
        if not p.temperature > 0:
            raise SamplerError(samplecheck.ERR_INVALID_ARGUMENT,
                               f"temperature = {p.temperature}: prime-rl trains on T > 0 only")
        if not 0 < p.top_p <= 1:
            raise SamplerError(samplecheck.ERR_INVALID_ARGUMENT, f"top_p = {p.top_p} is outside (0, 1]")

    def logprobs(logits, params):
        t, k, p, m = _columns(params)
        labels = None
        if hasattr(params, "label"):
            # A row without a label (-1) gets its argmax, which every truncation keeps: the guard is a no-op there.
            argmax = logits.float().argmax(dim=-1).tolist()
            labels = [a if lab < 0 else lab for lab, a in zip(params.host("label"), argmax)]
        out = trainer.processed_logprobs(logits, t, k, p, m, labels=labels)
        return out, (trainer.last_guarded if labels is not None else [False] * len(params))

    return samplecheck.Sampler(logprobs=logprobs, validate=validate, name=trainer.name, profile="vllm",
                               tensors="torch", device=args.device, labels=True)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("side", choices=["vllm", "prime-rl"])
    parser.add_argument("--src", help="the engine's source tree (default: its SAMPLECHECK_*_SRC variable)")
    parser.add_argument("--path", default="pytorch", choices=["pytorch", "triton", "dispatch"],
                        help="vllm: the top-k/top-p path")
    parser.add_argument("--device", default=None, help="torch device (default: cuda when available, else cpu)")
    args = parser.parse_args(argv)
    if args.device is None:
        import torch
        args.device = "cuda" if torch.cuda.is_available() else "cpu"
    try:
        sampler = vllm_side(args) if args.side == "vllm" else prime_rl_side(args)
    except Exception as e:  # a tree that does not load: the HELLO is answered with the reason
        return samplecheck.cannot_serve(f"{args.side}: {type(e).__name__}: {e}")
    return samplecheck.serve(sampler)


if __name__ == "__main__":
    sys.exit(main())
