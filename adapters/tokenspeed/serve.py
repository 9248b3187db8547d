#!/usr/bin/env python3
"""TokenSpeed's Triton sampling backends as a samplecheck process client (adapters/engine_serve.py; README.md here).

    samplecheck run --suite smoke --profile tokenspeed --allow-skipped \
        --sampler "process:python3 adapters/tokenspeed/serve.py --src DIR --backend triton_full"
    samplecheck run --suite spec-smoke --profile tokenspeed \
        --verifier "process:python3 adapters/tokenspeed/serve.py --src DIR --verifier"

--src (or $SAMPLECHECK_TOKENSPEED_SRC) is a TokenSpeed tree. GPU only (triton, CUDA). Every call is one step of the
engine's backend over the call's rows (``prepare_step`` then ``sample``): the route (gumbel, top_k, top_k_top_p,
top_p, generic, greedy) is the one the engine picks for that batch, so a batch case and the same rows alone may take
different routes. Request seeding: the request's ``seed`` = seed, its position (``valid_cache_lengths``, int32) =
offset (< 2^31). ``--verifier``: TokenSpeed's chain verification (each target position sampled by the route's kernel,
a draft accepted iff it equals that token: the draft's probabilities are not read).
"""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
import engine_serve as serve  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
import tokenspeed_adapter as ta  # noqa: E402


def options(ap):
    ap.add_argument("--backend", choices=ta.BACKENDS, default="triton",
                    help="triton (ignores min-p: base.py:108-110) or triton_full (applies it)")
    ap.add_argument("--verifier", action="store_true", help="also serve VERIFY (TokenSpeed's verify)")
    ap.add_argument("--position-stride", type=int, default=1, metavar="N",
                    help="a diagnostic: offset o is position N * o (N a power of two), so that no draw's position "
                         "is another's rejection attempt (offset + attempt); named in the sampler's name")


def build(args):
    adapter = ta.TokenSpeedTriton(args.src, backend=args.backend, device=args.device,
                                  position_stride=args.position_stride)

    def check(t, k, p, m, vocab):
        adapter._params(1, vocab, t, k, p, m, [0])          # the engine's SamplingParams.verify

    def verify(target, drafts, draft, t, k, p, m, seeds, offsets):
        return adapter.verify(target, drafts, t, k, p, m, seeds, offsets)

    engine = serve.Engine(adapter=adapter, sample=adapter.sample, check=check, seeding="request",
                          verify=verify if args.verifier else None, draft_form="ignored", fixed_shape=True)
    return engine, adapter.name + serve.suffix("request", args.rows)


if __name__ == "__main__":
    sys.exit(serve.main("tokenspeed/serve.py", ta.ENV_VAR, build, options, seedings=("request",)))
