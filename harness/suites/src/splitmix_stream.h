// Inside the campaign library: the harness's splitmix64 stream, for what must be the same on every platform
// (generated cases, corner designs): no std:: distributions, whose output differs between standard libraries.
#pragma once

#include <cstdint>

#include "samplecheck/core/splitmix.h"
#include "samplecheck/suites/row_source.h"

namespace samplecheck::harness {

class SplitMixStream {
 public:
  explicit SplitMixStream(uint64_t seed) : state_(seed) {}
  uint64_t Next() {
    state_ += 0x9E3779B97F4A7C15ULL;
    return SplitMix64(state_);
  }
  double Uniform() { return (static_cast<double>(Next() >> 11) + 0.5) * 0x1.0p-53; }  // in (0, 1)
  double Between(double lo, double hi) { return lo + (hi - lo) * Uniform(); }
  bool Chance(double p) { return Uniform() < p; }
  uint64_t Below(uint64_t n) { return n == 0 ? 0 : Next() % n; }

 private:
  uint64_t state_;
};

}  // namespace samplecheck::harness
