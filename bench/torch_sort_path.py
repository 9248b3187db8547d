#!/usr/bin/env python3
"""The PyTorch sort-based sampling path as a second comparison column for docs/performance.md.

What vLLM v1's PyTorch fallback does, written here from its description: temperature, then top-k and top-p by one
descending-order sort of the logits (top-k masks below the k-th value; top-p masks the tokens whose cumulative
probability in ascending order stays <= 1 - p), min-p against the max probability, softmax, and an exponential
race (argmax of p / q with q ~ Exp(1)). Logits ~ N(0, 3^2) (fp32, or rounded to bf16), V = 128256 by default, hot L2
(the same tensor every call), CUDA events around each call, median / p10 / p90 of --iters calls after --warmup.

Prints the CSV of bench/sampler_compare.cu (kind,impl,dtype,batch,filter,median_us,p10_us,p90_us,floor_us) with
impl = torch-sort and floor_us empty (scripts/bench-report takes the floor from the same run's C++ benchmark).

  python3 bench/torch_sort_path.py [--vocab 128256] [--iters 100] [--warmup 10] [--batches 1,16,64,256]
"""
import argparse

import torch

FILTERS = [
    ("none", None, None, None),
    ("top-k 50", 50, None, None),
    ("top-p 0.9", None, 0.9, None),
    ("min-p 0.05", None, None, 0.05),
    ("top-k 50 + top-p 0.9", 50, 0.9, None),
]


def sample(logits, top_k, top_p, min_p, generator):
    logits = logits.float()  # temperature 1: the division is a no-op the engines skip
    if top_k is not None or top_p is not None:
        sorted_logits, order = logits.sort(dim=-1, descending=False)
        if top_k is not None:
            kth = sorted_logits[:, -top_k].unsqueeze(1)
            sorted_logits = sorted_logits.masked_fill(sorted_logits < kth, float("-inf"))
        if top_p is not None:
            cumulative = sorted_logits.softmax(dim=-1).cumsum(dim=-1)
            drop = cumulative <= 1.0 - top_p
            drop[:, -1] = False
            sorted_logits = sorted_logits.masked_fill(drop, float("-inf"))
        logits = torch.empty_like(logits).scatter_(-1, order, sorted_logits)
    probs = logits.softmax(dim=-1)
    if min_p is not None:
        cut = probs.amax(dim=-1, keepdim=True) * min_p
        probs = probs.masked_fill(probs < cut, 0.0)
    q = torch.empty_like(probs).exponential_(generator=generator)
    return probs.div_(q).argmax(dim=-1)


def time_calls(fn, iters, warmup):
    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(iters):
        a = torch.cuda.Event(enable_timing=True)
        b = torch.cuda.Event(enable_timing=True)
        a.record()
        fn()
        b.record()
        b.synchronize()
        times.append(a.elapsed_time(b) * 1e3)
    times.sort()
    pick = lambda q: times[min(len(times) - 1, int(q * len(times)))]
    return pick(0.5), pick(0.1), pick(0.9)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--vocab", type=int, default=128256)
    parser.add_argument("--iters", type=int, default=100)
    parser.add_argument("--warmup", type=int, default=10)
    parser.add_argument("--batches", default="1,16,64,256")
    args = parser.parse_args()
    batches = [int(b) for b in args.batches.split(",")]
    generator = torch.Generator(device="cuda").manual_seed(1234)
    print(f"# torch {torch.__version__}, {torch.cuda.get_device_name()}")
    print("kind,impl,dtype,batch,filter,median_us,p10_us,p90_us,floor_us")
    base = torch.randn(max(batches), args.vocab, device="cuda", generator=generator) * 3.0
    for dtype_name, dtype in (("fp32", torch.float32), ("bf16", torch.bfloat16)):
        for batch in batches:
            logits = base[:batch].to(dtype).contiguous()
            for name, k, p, m in FILTERS:
                median, p10, p90 = time_calls(lambda: sample(logits, k, p, m, generator), args.iters, args.warmup)
                print(f"sample,torch-sort,{dtype_name},{batch},{name},{median:.2f},{p10:.2f},{p90:.2f},", flush=True)


if __name__ == "__main__":
    main()
