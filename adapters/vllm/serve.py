#!/usr/bin/env python3
"""vLLM's own sampler files as a samplecheck process client (adapters/engine_serve.py; adapters/vllm/README.md).

    samplecheck run --suite smoke --profile vllm \
        --sampler "process:/usr/bin/python3 adapters/vllm/serve.py --src DIR --path pytorch --device cpu"
    samplecheck identify --sampler "process:python3 adapters/vllm/serve.py --src DIR --path dispatch"
    samplecheck run --suite spec-smoke --profile vllm \
        --verifier "process:python3 adapters/vllm/serve.py --src DIR --verifier --device cuda"
    python3 adapters/vllm/serve.py --src DIR --describe          # the name, the files loaded, the stubs

--src (or $SAMPLECHECK_VLLM_SRC) is a vLLM tree (scripts/engine-sources lays one out from your clone).
v1 (default): ``Sampler.sample`` of vllm/v1/sample/sampler.py with the top-k/top-p path ``--path`` (pytorch,
triton, or dispatch: the engine's own choice by batch size). ``--seeding request`` (default): each call row is a
request with its own ``torch.Generator`` seeded from (seed, offset), vLLM's per-request generator; ``--seeding
window``: unseeded requests, the engine's batch-wide ``exponential_`` on the process's generator, seeded per
(seed, offset // L) window. ``--mrv2``: Model Runner V2 (Triton; request seeding: seed = the request seed, offset =
the position). ``--count-seeding window`` (v1, request seeding): SAMPLE keeps the per-request generators, COUNT
draws the unseeded requests' path (engine_serve.py). ``--verifier``: also answer VERIFY with the rejection sampler of the same runner (v1
rejection_sampler.py, or MRV2's rejection_sampler_utils.py). ``--no-front-end`` hands the parameters to the sampler
without the SamplingParams rewrites (the 0.01 temperature floor, greedy's reset of the filters; README "Front end");
its validation still refuses what SamplingParams refuses.
"""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
import engine_serve as serve  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
import vllm_adapter as va  # noqa: E402


def options(ap):
    ap.add_argument("--path", choices=va.PATHS, default="dispatch", help="v1 top-k/top-p path (default dispatch)")
    ap.add_argument("--mrv2", action="store_true", help="Model Runner V2 (Triton, GPU)")
    ap.add_argument("--verifier", action="store_true", help="also serve VERIFY (the runner's rejection sampler)")
    ap.add_argument("--no-front-end", action="store_true",
                    help="skip the SamplingParams rewrites (the 0.01 floor); its validation stays")
    ap.add_argument("--fp64-gumbel", action="store_true", help="use_fp64_gumbel=True")


def check(t, k, p, m, vocab):
    """SamplingParams._verify_args' ranges (the adapter's transcription, README "Front end"): also without the front
    end's floor, since every request reaching the sampler passed them."""
    va._validate(0, t, k, p, m)


def build(args):
    front_end = not args.no_front_end
    if args.mrv2:
        if args.seeding != "request" or args.count_seeding != "same":
            raise ValueError("Model Runner V2 keys its noise by (request seed, position): --seeding request and "
                             "--count-seeding same only")
        adapter = va.VllmMrv2(args.src, path=args.path, device=args.device, use_fp64_gumbel=args.fp64_gumbel,
                              front_end=front_end, with_verifier=args.verifier)
        adapter.tree = adapter.v1.tree
        draft_form = "logits"          # rejection_sample takes the drafter's logits (softmax = q)
    else:
        adapter = va.VllmV1(args.src, path=args.path, device=args.device, use_fp64_gumbel=args.fp64_gumbel,
                            front_end=front_end, with_verifier=args.verifier)
        draft_form = "probs"           # rejection_sample takes draft_probs (None: one-hot / n-gram drafts)
    engine = serve.Engine(
        adapter=adapter, sample=adapter.sample,
        check=check,
        seeding=args.seeding, seed_window=serve.seed_global,
        processed_logprobs=adapter.processed_logprobs,
        verify=adapter.verify if args.verifier else None, draft_form=draft_form)
    name = adapter.name + serve.suffix(args.seeding, args.rows) + ("" if front_end else "+no-front-end")
    return engine, name


if __name__ == "__main__":
    sys.exit(serve.main("vllm/serve.py", va.ENV_VAR, build, options))
