#ifndef SAMPLECHECK_STATS_GOODNESS_OF_FIT_H_
#define SAMPLECHECK_STATS_GOODNESS_OF_FIT_H_

// One-sample goodness of fit of binned counts against fully specified cell probabilities.
//
// Pearson X^2 = sum (O - E)^2 / E with E = n p (n = draws in cells of positive probability) is the gate
// statistic; G = 2 sum O ln(O / E) is reported beside it. Both are referred to chi-square(K - 1) where K is the
// number of cells of positive probability (no fitted parameters).
//   alpha:      the caller's; the p-value is cdf(complement(chi_squared(K - 1), X^2)).
//   power:      against p1, P(chi'^2_{K-1}(n * sum (p1 - p0)^2 / p0) > c_alpha); see power.h.
//   assumption: independent draws, cells fixed before looking at the data, each E >= 10 (Abseil's rule; binning.h
//               guarantees it). `min_expected` is reported so a caller can refuse a test that breaks it; for tiny
//               supports or small n use exact_tests.h.
// Cells of probability 0 are the forbidden cell: a draw there is a support violation, counted in
// `support_violations` and never folded into the statistic or the p-value (a zero-expected cell must not turn
// into an infinite statistic or NaN p-value, the Pyro bug). Passes() fails on any support violation.

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace samplecheck::stats {

struct GoodnessOfFit {
  double statistic = 0.0;                // X^2 or G over cells of positive probability
  std::uint64_t dof = 0;                 // positive-probability cells - 1
  double p_value = 1.0;                  // P(chi-square(dof) >= statistic)
  std::uint64_t draws = 0;               // n: observed draws in positive-probability cells
  double min_expected = 0.0;             // least n * p over positive-probability cells
  std::uint64_t support_violations = 0;  // observed draws in zero-probability cells
  std::string error;                     // empty when valid

  bool ok() const noexcept { return error.empty(); }
  // The gate: valid, no support violation, and p_value >= alpha.
  bool Passes(double alpha) const noexcept { return ok() && support_violations == 0 && p_value >= alpha; }
};

// `probabilities` are non-negative finite weights, normalized here by their sum; at least two must be positive.
// observed.size() must equal probabilities.size().
GoodnessOfFit PearsonChiSquareTest(std::span<const std::uint64_t> observed, std::span<const double> probabilities);
GoodnessOfFit GTest(std::span<const std::uint64_t> observed, std::span<const double> probabilities);

// Per-cell standardized (Pearson) residuals (O - E) / sqrt(E), E = n p; 0 for cells of probability 0 (their
// draws are support violations, reported by the tests above). Empty when the inputs are invalid.
std::vector<double> StandardizedResiduals(std::span<const std::uint64_t> observed,
                                          std::span<const double> probabilities);

// Max-|z| test over selected cells (the head tokens), z_i = (O_i - n p_i) / sqrt(n p_i (1 - p_i)), against the
// two-sided Bonferroni threshold z* = quantile(complement(normal, alpha / (2 m))), m = cells.size().
//   alpha:      family-wise over the m cells (Bonferroni; conservative under the negative multinomial correlation).
//   power:      against a relative bias r on one token of probability p: the shift is r sqrt(n p / (1 - p))
//               standard deviations, e.g. r = 1% at p = 0.01 needs n ~ 4e6 at alpha 1e-6, m = 4096 (X^2 over
//               thousands of cells needs ~5e7).
//   assumption: n p_i (1 - p_i) large enough for the normal limit (n p_i >= 10 from the head binning).
struct MaxAbsZ {
  double max_abs_z = 0.0;
  std::size_t cell = 0;          // argmax (index into the cell arrays)
  double z = 0.0;                // signed z of that cell
  double threshold = 0.0;        // z*
  std::uint64_t m = 0;           // cells compared
  double p_value = 1.0;          // Bonferroni-adjusted: min(1, m * P(|Z| >= max_abs_z))
  std::string error;

  bool ok() const noexcept { return error.empty(); }
  bool Passes() const noexcept { return ok() && max_abs_z < threshold; }
};
MaxAbsZ MaxAbsZTest(std::span<const std::uint64_t> observed, std::span<const double> probabilities,
                    std::span<const std::size_t> cells, double alpha);

}  // namespace samplecheck::stats

#endif  // SAMPLECHECK_STATS_GOODNESS_OF_FIT_H_
