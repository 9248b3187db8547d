// Helpers shared by the reference tests: rows from probabilities, sums, printing a case so a failure can be
// reproduced.
#pragma once

#include <cmath>
#include <sstream>
#include <string>
#include <vector>

#include "samplecheck/reference/distribution.h"

namespace samplecheck::testing {

// logits = fp32(log p): the softmax of the row is p up to fp32 rounding of the logs (relative ~1e-7).
inline std::vector<float> LogitsOf(const std::vector<double>& probs) {
  std::vector<float> logits;
  for (double p : probs) logits.push_back(static_cast<float>(std::log(p)));
  return logits;
}

// Neumaier-compensated long double sum.
inline long double CompensatedTotal(const std::vector<long double>& values) {
  long double sum = 0, compensation = 0;
  for (long double v : values) {
    const long double t = sum + v;
    compensation += std::fabs(sum) >= std::fabs(v) ? (sum - t) + v : (v - t) + sum;
    sum = t;
  }
  return sum + compensation;
}

inline std::string Describe(const SamplingParams& params, std::string_view profile) {
  std::ostringstream out;
  out.precision(17);
  out << "profile=" << profile << " temperature=" << params.temperature << " top_k=" << params.top_k
      << " top_p=" << params.top_p << " min_p=" << params.min_p;
  return out.str();
}

inline SamplingParams Params(double temperature, int64_t top_k, double top_p, double min_p) {
  SamplingParams params;
  params.temperature = temperature;
  params.top_k = top_k;
  params.top_p = top_p;
  params.min_p = min_p;
  return params;
}

}  // namespace samplecheck::testing
