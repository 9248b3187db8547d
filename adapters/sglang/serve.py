#!/usr/bin/env python3
"""SGLang's own torch-native sampler as a samplecheck process client (adapters/engine_serve.py; README.md here).

    samplecheck run --suite smoke --profile sglang-torch \
        --sampler "process:/usr/bin/python3 adapters/sglang/serve.py --src DIR --device cpu"
    samplecheck identify --sampler "process:python3 adapters/sglang/serve.py --src DIR --seeded --device cuda"

--src (or $SAMPLECHECK_SGLANG_SRC) is an SGLang tree. Unseeded (default, ``--seeding window``): the engine's
``Sampler.forward`` over L copies of a row in one call, ``torch.multinomial`` on the process's generator seeded per
(seed, offset // L) window: SGLang's draw for a batch of requests without a sampling seed. ``--seeded``: SGLang's
deterministic inference (``sampling_seed`` = seed, position = offset; the murmur3 hash of layers/utils/hash.py, a
Triton kernel: GPU), every call row in one call (``--seeding request``).
"""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
import engine_serve as serve  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
import sglang_adapter as sa  # noqa: E402


def options(ap):
    ap.add_argument("--seeded", action="store_true", help="deterministic inference: sampling_seed and positions "
                    "(needs triton and CUDA); implies --seeding request")


def build(args):
    seeding = "request" if args.seeded else args.seeding
    if not args.seeded and seeding == "request":
        raise ValueError("unseeded SGLang draws from the process's generator: --seeding window (or --seeded)")
    adapter = sa.SglangTorch(args.src, device=args.device, seeded=args.seeded, batch="whole")
    engine = serve.Engine(adapter=adapter, sample=adapter.sample, check=adapter.check, seeding=seeding,
                          seed_window=serve.seed_global)
    name = adapter.name.replace("unseeded,whole", "unseeded") + serve.suffix(seeding, args.rows)
    return engine, name


if __name__ == "__main__":
    sys.exit(serve.main("sglang/serve.py", sa.ENV_VAR, build, options, default_seeding="window"))
