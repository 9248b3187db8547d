// The exact CPU sampler: inverse CDF in ascending token-id order, checked deterministically with scripted
// uniforms u_i = (i + 1/2) / M (counts must equal M * p within +-1, docs/statistics.md 5.9), and the seeded
// counting loop.
#include "samplecheck/reference/exact_sampler.h"

#include <gtest/gtest.h>

#include <cmath>
#include <numeric>
#include <random>
#include <vector>

#include "samplecheck/reference/philox.h"
#include "test_rows.h"

namespace samplecheck {
namespace {

using testing::Params;

ProcessedDistribution Dist(const std::vector<float>& row, const SamplingParams& params, const char* profile) {
  Result<ProcessedDistribution> result = ComputeDistribution(LogitsView::Fp32(row), params, *FindProfile(profile));
  EXPECT_TRUE(result.ok());
  return *result;
}

TEST(InverseCdfDraw, ScriptedUniformsGiveCountsWithinOneOfExpectation) {
  std::mt19937 rng(9);
  std::normal_distribution<float> normal(0.0f, 2.0f);
  std::vector<float> row(700);
  for (float& x : row) x = normal(rng);
  for (const SamplingParams& params : {Params(1, -1, 1, 0), Params(0.7, 100, 0.9, 0.01)}) {
    const ProcessedDistribution dist = Dist(row, params, "vllm");
    const uint64_t draws = 1'000'000;
    std::vector<uint64_t> counts(row.size(), 0);
    for (uint64_t i = 0; i < draws; ++i) {
      const int32_t token = InverseCdfDraw(dist, (static_cast<double>(i) + 0.5) / static_cast<double>(draws));
      ASSERT_TRUE(dist.IsKept(token));
      ++counts[token];
    }
    for (size_t i = 0; i < dist.kept.size(); ++i) {
      const double expected = static_cast<double>(dist.prob[i]) * static_cast<double>(draws);
      EXPECT_NEAR(static_cast<double>(counts[dist.kept[i]]), expected, 1.0 + 1e-6) << "token " << dist.kept[i];
    }
  }
}

TEST(InverseCdfDraw, PicksTheFirstTokenWhoseCumulativeExceedsU) {
  const ProcessedDistribution dist = Dist({0.0f, 0.0f, 0.0f, 0.0f}, {}, "hf");  // 0.25 each, exact
  EXPECT_EQ(InverseCdfDraw(dist, 1e-300), 0);
  EXPECT_EQ(InverseCdfDraw(dist, 0.2499999), 0);
  EXPECT_EQ(InverseCdfDraw(dist, 0.25), 1);  // inclusive CDF 0.25 does not exceed 0.25
  EXPECT_EQ(InverseCdfDraw(dist, 0.75), 3);
  EXPECT_EQ(InverseCdfDraw(dist, std::nextafter(1.0, 0.0)), 3);
  const ProcessedDistribution single = Dist({1.0f, -1e30f}, {}, "hf");
  EXPECT_EQ(InverseCdfDraw(single, 0.9999), 0);
}

TEST(ExactCountDraws, CountsOnlyKeptTokensAndIsReproducible) {
  std::mt19937 rng(4);
  std::normal_distribution<float> normal(0.0f, 1.5f);
  std::vector<float> row(3000);
  for (float& x : row) x = normal(rng);
  SamplingParams params = Params(0.9, 40, 0.8, 0.02);
  params.seed = 1234;
  params.offset = 1ull << 33;
  std::vector<uint64_t> first(row.size(), 0), second(row.size(), 0);
  ASSERT_TRUE(ExactCountDraws(LogitsView::Fp32(row), params, *FindProfile("vllm"), 200000, first).ok());
  ASSERT_TRUE(ExactCountDraws(LogitsView::Fp32(row), params, *FindProfile("vllm"), 200000, second).ok());
  EXPECT_EQ(first, second);
  EXPECT_EQ(std::accumulate(first.begin(), first.end(), uint64_t{0}), 200000u);
  const ProcessedDistribution dist = Dist(row, params, "vllm");
  for (size_t t = 0; t < row.size(); ++t) {
    if (!dist.IsKept(static_cast<int32_t>(t))) {
      EXPECT_EQ(first[t], 0u) << "token " << t;
    }
  }
  // Draw i uses offset + i: the first draw equals a direct inverse-CDF draw at that uniform.
  std::vector<uint64_t> one(row.size(), 0);
  ASSERT_TRUE(ExactCountDraws(LogitsView::Fp32(row), params, *FindProfile("vllm"), 1, one).ok());
  EXPECT_EQ(one[InverseCdfDraw(dist, UniformForDraw(params.seed, params.offset))], 1u);
}

TEST(ExactCountDraws, ReportsBadInputs) {
  const std::vector<float> row = {1.0f, 2.0f, 3.0f};
  std::vector<uint64_t> small(2, 0);
  EXPECT_FALSE(ExactCountDraws(LogitsView::Fp32(row), {}, *FindProfile("vllm"), 10, small).ok());
  const std::vector<float> bad = {1.0f, std::nanf("")};
  std::vector<uint64_t> histogram(2, 0);
  const Status status = ExactCountDraws(LogitsView::Fp32(bad), {}, *FindProfile("vllm"), 10, histogram);
  ASSERT_FALSE(status.ok());
  EXPECT_EQ(status.error().code, ErrorCode::kInvalidRow);
}

}  // namespace
}  // namespace samplecheck
