// Multiple testing over many p-values (statistics.md 0, 4).
//   Holm-Bonferroni: family-wise error <= alpha under any dependence; the blocking gate of a CI run
//     (alpha 1e-4 split over ~100 tests). Uniformly more powerful than plain Bonferroni.
//   Benjamini-Hochberg: false discovery rate <= q for independent or positively dependent p-values; triage of
//     fuzz campaigns with thousands of tests (q = 0.01).
//   Kolmogorov-Smirnov uniformity: second-level test that the p-values of nightly reruns with fresh seeds are
//     U(0, 1) (TestU01's idea). p-value: Marsaglia-Tsang-Wang (2003) exact for n <= 1000 and n d^2 small, their
//     tail formula for large n d^2, Kolmogorov's limit with Stephens' correction for n > 1000.
//     Assumption: independent p-values of continuous statistics (discrete tests give conservative,
//     non-uniform p-values; feed them only continuous ones, e.g. X^2 with E >= 10).
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "samplecheck/core/error.h"

namespace samplecheck::stats {

struct MultipleTestingDecision {
  std::vector<bool> rejected;             // per input p-value, in input order
  std::vector<double> adjusted_p_values;  // per input p-value: rejected[i] == (adjusted_p_values[i] <= level)
  std::size_t rejections = 0;
};

// p-values in [0, 1]; alpha (or q) in (0, 1). An empty list gives no rejections.
Result<MultipleTestingDecision> HolmBonferroni(std::span<const double> p_values, double alpha);
Result<MultipleTestingDecision> BenjaminiHochberg(std::span<const double> p_values, double q);

struct UniformityTest {
  double statistic = 0.0;  // D_n = sup |F_n(u) - u|
  double p_value = 1.0;    // P(D_n >= statistic) under U(0, 1)
  std::size_t count = 0;
  bool Passes(double alpha) const noexcept { return p_value >= alpha; }
};
// Needs at least one p-value, all in [0, 1].
Result<UniformityTest> KolmogorovSmirnovUniformity(std::span<const double> p_values);

// P(D_n >= d) for the one-sample two-sided Kolmogorov statistic with n observations. n >= 1, d in [0, 1].
Result<double> KolmogorovSmirnovPValue(double d, std::uint64_t n);

}  // namespace samplecheck::stats
