// The reference for one large row: ComputeDistribution on a 262,144-token row of N(0, 1) logits, with no filters
// and with top-k 50 + top-p 0.9 + min-p 0.05 (profile vllm), plus the exact sampler's draw rate. The bar:
// well under 50 ms per row on the development machine.
//
//   build-ref/bench/reference_bench --benchmark_filter=Distribution
#include <benchmark/benchmark.h>

#include <random>
#include <vector>

#include "samplecheck/reference/distribution.h"
#include "samplecheck/reference/exact_sampler.h"

namespace {

using samplecheck::ComputeDistribution;
using samplecheck::FindProfile;
using samplecheck::LogitsView;
using samplecheck::SamplingParams;

std::vector<float> GaussianRow(int64_t vocab, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<float> row(static_cast<size_t>(vocab));
  for (float& x : row) x = normal(rng);
  return row;
}

SamplingParams Filters(bool on) {
  SamplingParams params;
  if (on) {
    params.top_k = 50;
    params.top_p = 0.9;
    params.min_p = 0.05;
  }
  return params;
}

// state.range(0): vocab; state.range(1): 1 = top-k 50 + top-p 0.9 + min-p 0.05, 0 = no filter.
void BM_Distribution(benchmark::State& state) {
  const std::vector<float> row = GaussianRow(state.range(0), 1);
  const SamplingParams params = Filters(state.range(1) != 0);
  const samplecheck::Profile& profile = *FindProfile("vllm");
  for (auto _ : state) {
    auto result = ComputeDistribution(LogitsView::Fp32(row), params, profile);
    benchmark::DoNotOptimize(result);
    if (!result.ok()) state.SkipWithError("ComputeDistribution failed");
  }
  state.SetItemsProcessed(state.iterations() * state.range(0));  // tokens per second
}
BENCHMARK(BM_Distribution)
    ->ArgNames({"vocab", "filters"})
    ->Args({262144, 0})
    ->Args({262144, 1})
    ->Args({1048576, 0})
    ->Args({1048576, 1})
    ->Unit(benchmark::kMillisecond);

// Draws per second of ExactCountDraws at V = 128,256 (no filter: every token kept).
void BM_ExactDraws(benchmark::State& state) {
  const std::vector<float> row = GaussianRow(128256, 2);
  std::vector<uint64_t> histogram(row.size());
  SamplingParams params;
  const uint64_t draws = static_cast<uint64_t>(state.range(0));
  for (auto _ : state) {
    const auto status =
        samplecheck::ExactCountDraws(LogitsView::Fp32(row), params, *FindProfile("vllm"), draws, histogram);
    if (!status.ok()) state.SkipWithError("ExactCountDraws failed");
    params.offset += draws;
  }
  state.SetItemsProcessed(state.iterations() * state.range(0));
}
BENCHMARK(BM_ExactDraws)->Arg(1 << 22)->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
