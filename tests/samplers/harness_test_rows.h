// Rows and parameter sets shared by the harness sampler tests.
#pragma once

#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "samplecheck/reference/params.h"

namespace samplecheck::harness::testing {

// vocab fp32 logits ~ N(0, sigma^2), reproducible from seed.
inline std::vector<float> GaussianRow(int64_t vocab, uint32_t seed, float sigma = 2.0f) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.0f, sigma);
  std::vector<float> row(static_cast<size_t>(vocab));
  for (float& x : row) x = normal(rng);
  return row;
}

inline SamplingParams Params(double temperature, int64_t top_k, double top_p, double min_p, uint64_t seed = 7,
                             uint64_t offset = 0) {
  return {temperature, top_k, top_p, min_p, seed, offset};
}

// Every filter alone and combined, disabled and sentinel values, greedy temperatures (all valid under vllm).
inline std::vector<SamplingParams> VllmParamGrid() {
  return {
      Params(1.0, -1, 1.0, 0.0),  Params(0.7, -1, 1.0, 0.0),   Params(0.0, -1, 1.0, 0.0),
      Params(5e-6, 5, 0.5, 0.0),  Params(1.0, 5, 1.0, 0.0),    Params(1.0, 1, 1.0, 0.0),
      Params(1.0, 0, 1.0, 0.0),   Params(1.0, -1, 0.9, 0.0),   Params(1.0, -1, 0.3, 0.0),
      Params(1.0, -1, 1.0, 0.1),  Params(0.8, 10, 0.8, 0.05),  Params(1.3, 40, 0.95, 0.02),
      Params(2.0, 3, 0.6, 0.3),   Params(0.5, 1000, 1.0, 1.0),
  };
}

inline std::string Describe(const SamplingParams& p) {
  std::ostringstream out;
  out << "{T=" << p.temperature << ", top_k=" << p.top_k << ", top_p=" << p.top_p << ", min_p=" << p.min_p
      << ", seed=" << p.seed << ", offset=" << p.offset << "}";
  return out.str();
}

inline constexpr float kNegInf = -std::numeric_limits<float>::infinity();

}  // namespace samplecheck::harness::testing
