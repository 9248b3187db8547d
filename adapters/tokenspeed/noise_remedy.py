#!/usr/bin/env python3
"""A diagnostic, not an adapter: copy a TokenSpeed tree and give its Gumbel route 64-bit noise, to tell the deep-tail
under-draw of the many-tail case (docs/conformance.md, TokenSpeed many-tail) from the rest of the sampler.

    python3 adapters/tokenspeed/noise_remedy.py SRC DST
    samplecheck run --suite adapters/suites/many-tail.suite.json --profile vllm-triton \\
        --sampler "process:python3 adapters/tokenspeed/serve.py --src DST --backend triton"

gumbel.py draws g = -log(-log(u)) in fp32 from u = max(tl.rand(...), 1e-7) (gumbel.py:71-72 and 149-150 at
f4d8ec6e): u < 1 - 2^-24 in fp32, so g <= 16.6 and a token more than about 16.6 logits below the row's best is never
drawn. The copy computes g = -log(-log(1 - u)) in fp64 with u >= 2^-32 (1 - u has the same law as u; its small
values keep their precision), so g reaches 21.5 (tl.rand's smallest nonzero 2^-31). The loaded files differ from the
manifest, so every report names the sampler ``tokenspeed@<commit>+modified``. Nothing else changes.
"""
import re
import shutil
import sys
from pathlib import Path

GUMBEL = "tokenspeed-kernel/python/tokenspeed_kernel/ops/sampling/triton/gumbel.py"
DRAW = re.compile(r"uniform = tl\.maximum\(tl\.rand\((\w+), (\w+)\), 1\.0e-7\)\n(\s+)gumbel = -tl\.log\(-tl\.log\(uniform\)\)")


def remedy(text: str) -> tuple[str, int]:
    return DRAW.subn(lambda m: (f"uniform = tl.maximum(tl.rand({m[1]}, {m[2]}).to(tl.float64), 2.3283064365386963e-10)\n"
                                f"{m[3]}gumbel = (-tl.log(-tl.log(1.0 - uniform))).to(tl.float32)"), text)


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        print("usage: noise_remedy.py SRC DST (DST must not exist)", file=sys.stderr)
        return 2
    src, dst = Path(argv[0]), Path(argv[1])
    if not (src / GUMBEL).is_file():
        print(f"noise_remedy.py: {src} has no {GUMBEL}: not a TokenSpeed tree", file=sys.stderr)
        return 2
    if dst.exists():
        print(f"noise_remedy.py: {dst} exists; give a new folder", file=sys.stderr)
        return 2
    text, n = remedy((src / GUMBEL).read_text())
    if n != 2:
        print(f"noise_remedy.py: expected the two fp32 Gumbel draws of gumbel.py at f4d8ec6e, found {n}: another "
              "commit; patch it by hand", file=sys.stderr)
        return 1
    shutil.copytree(src, dst, ignore=shutil.ignore_patterns(".git"))
    (dst / GUMBEL).write_text(text)
    print(f"{dst}: {GUMBEL}: {n} Gumbel draws now fp64 (-log(-log(1 - u)), u >= 2^-32)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
