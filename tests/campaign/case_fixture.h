// A campaign case prepared and drawn by the exact sampler, for the tests of the campaign and its check families.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "samplecheck/campaign/campaign.h"
#include "samplecheck/reference/exact_sampler.h"
#include "samplecheck/reference/logits.h"
#include "samplecheck/reference/profile.h"

namespace samplecheck::harness::testing {

// PrepareCase of one row spec (JSON) under vllm with exactly `draws` draws, alpha per test 1e-6, TV 1e-2.
inline PreparedCase PrepareTestCase(const std::string& row_json, const SamplingParams& params, uint64_t draws) {
  CaseSpec spec;
  spec.name = "unit";
  auto row = ParseRowSpec(nlohmann::json::parse(row_json));
  EXPECT_TRUE(row.ok()) << (row.ok() ? "" : row.error().message);
  if (row.ok()) spec.row = *row;
  spec.params = params;
  CaseBudget budget;
  budget.alpha_per_test = 1e-6;
  budget.tv = 1e-2;
  budget.min_draws = draws;
  budget.max_draws = draws;
  auto pc = PrepareCase(spec, *FindProfile("vllm"), 42, 42, budget);
  EXPECT_TRUE(pc.ok()) << (pc.ok() ? "" : pc.error().message);
  return pc.ok() ? *pc : PreparedCase{};
}

// The exact sampler's histogram of the prepared case's draws.
inline std::vector<uint64_t> ExactHistogram(const PreparedCase& pc) {
  std::vector<uint64_t> histogram(pc.row.size(), 0);
  EXPECT_TRUE(ExactCountDraws(LogitsView::Fp32(pc.row), pc.result.params, *FindProfile("vllm"), pc.result.draws,
                              histogram)
                  .ok());
  return histogram;
}

// `n` tokens drawn from p0 (std::mt19937_64 of `seed`): a correct sampler's stream, independent of any other seed's.
inline std::vector<int32_t> Stream(const std::vector<double>& p0, size_t n, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::discrete_distribution<int32_t> d(p0.begin(), p0.end());
  std::vector<int32_t> out(n);
  for (int32_t& t : out) t = d(rng);
  return out;
}

// A top-k case (k = 50 of V = 1000) drawn `draws` times by the exact sampler (fixed seeds).
struct DrawnCase {
  PreparedCase pc;
  std::vector<uint64_t> histogram;
};
inline DrawnCase Drawn(uint64_t draws = 200000) {
  SamplingParams params;
  params.top_k = 50;
  DrawnCase d{PrepareTestCase(R"({"kind":"gaussian","vocab":1000,"sigma":2})", params, draws), {}};
  d.histogram = ExactHistogram(d.pc);
  return d;
}

}  // namespace samplecheck::harness::testing
