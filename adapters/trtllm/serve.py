#!/usr/bin/env python3
"""TensorRT-LLM TorchSampler's pure-torch path as a samplecheck process client (adapters/engine_serve.py).

    samplecheck run --suite smoke --profile trtllm-torch \
        --sampler "process:/usr/bin/python3 adapters/trtllm/serve.py --src DIR --device cpu"

--src (or $SAMPLECHECK_TRTLLM_SRC) is a TensorRT-LLM tree. ``top_k_top_p_sampling_batch`` /
``greedy_search_sampling_batch`` of _torch/pyexecutor/sampler/ops/vanilla.py, called as TorchSampler calls them: one
call per strategy group (rows sharing T, top_k, top_p) with one ``torch.Generator``. ``--seeding window`` (default):
a group is L copies of a row, its generator seeded from (seed, offset // L), the draw at offset o lane o % L.
``--seeding request``: every row its own group and generator seeded from (seed, offset). Window-seeded COUNTs are
staged (``+staged``; ``--no-stage`` draws them whole): the function's ``probs`` for the row once, then its line-171
``torch.multinomial`` on the window's copies, each COUNT's first window checked token for token against the whole
function (adapters/engine_serve.py). min_p > 0 is refused
(ERROR 1: the vanilla path has no min-p); on torch < 2 the top-p branch fails inside the engine function (an int32
scatter index): run top-p on torch >= 2.
"""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
import engine_serve as serve  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
import trtllm_adapter as ta  # noqa: E402


def options(ap):
    ap.add_argument("--greedy-below", type=float, default=1e-4,
                    help="T <= this is greedy (GREEDY_TEMPERATURE_THRESHOLD, default 1e-4; 0: only T = 0)")


class _Window:
    """The generator of the current window (engine_serve's window seeding), handed to the strategy group's call."""

    def __init__(self, adapter):
        import torch
        self.adapter, self.generator = adapter, torch.Generator(device=adapter.device)

    def seed(self, seed, window):
        self.generator.manual_seed(serve.draws.generator_seed(seed, window))

    def sample(self, x, t, k, p, m, seeds, offsets):
        def first(v):   # every lane of a window shares its parameters (engine_serve passes them once)
            return v.reshape(-1)[0].item() if serve.es_tensor(v) else v[0] if isinstance(v, (list, tuple)) else v
        return self.adapter.sample_group(x, first(t), first(k), first(p), self.generator)

    def stage(self, row, t, k, p, m):
        """Staged COUNT (engine_serve): the ``probs`` that ``top_k_top_p_sampling_batch`` returns for the row alone
        (its masking, renormalization and softmax, once a row); None for a greedy row (drawn whole)."""
        return self.adapter.stage_probs(row, t, k, p, m)

    def draw(self, state, lanes):
        """The function's own draw (vanilla.py line 171, ``torch.multinomial(probs, num_samples=1,
        generator=generator)``) on ``lanes`` copies of the staged ``probs``, with the window's generator."""
        import torch
        if state.get("lanes") != lanes:
            state["copies"], state["lanes"] = state["probs"].expand(lanes, state["probs"].shape[1]).contiguous(), lanes
        return torch.multinomial(state["copies"], num_samples=1, generator=self.generator).squeeze(-1)


def build(args):
    adapter = ta.TrtllmVanilla(args.src, device=args.device, greedy_below=args.greedy_below)
    window = _Window(adapter)
    engine = serve.Engine(adapter=adapter, sample=window.sample if args.seeding == "window" else adapter.sample,
                          check=adapter.check, seeding=args.seeding, seed_window=window.seed,
                          processed_logprobs=lambda x, t, k, p, m: adapter.processed_probs(x, t, k, p).log(),
                          stage=window.stage, draw=window.draw)
    return engine, adapter.name + serve.suffix(args.seeding, args.rows)


if __name__ == "__main__":
    sys.exit(serve.main("trtllm/serve.py", ta.ENV_VAR, build, options, default_seeding="window"))
