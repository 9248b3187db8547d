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
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "samplecheck/core/error.h"

namespace samplecheck::stats {

struct GoodnessOfFit {
  double statistic = 0.0;                // X^2 or G over cells of positive probability
  std::uint64_t dof = 0;                 // positive-probability cells - 1
  double p_value = 1.0;                  // P(chi-square(dof) >= statistic)
  std::uint64_t draws = 0;               // n: observed draws in positive-probability cells
  double min_expected = 0.0;             // least n * p over positive-probability cells
  std::uint64_t support_violations = 0;  // observed draws in zero-probability cells
  // The gate: valid, no support violation, and p_value >= alpha.
  bool Passes(double alpha) const noexcept { return support_violations == 0 && p_value >= alpha; }
};

// `probabilities` are non-negative finite weights, normalized here by their sum; at least two must be positive.
// observed.size() must equal probabilities.size(); the counts of the positive-probability cells, and those of the
// zero-probability cells, must each sum to at most 2^64 - 1 (else an error: the draw total would wrap).
Result<GoodnessOfFit> PearsonChiSquareTest(std::span<const std::uint64_t> observed, std::span<const double> probabilities);
Result<GoodnessOfFit> GTest(std::span<const std::uint64_t> observed, std::span<const double> probabilities);

// Per-cell standardized (Pearson) residuals (O - E) / sqrt(E), E = n p; 0 for cells of probability 0 (their
// draws are support violations, reported by the tests above). Empty when the inputs are invalid.
std::vector<double> StandardizedResiduals(std::span<const std::uint64_t> observed,
                                          std::span<const double> probabilities);

// Max-|z| test over selected cells (the head tokens): each cell's count O_i ~ Binomial(n, p_i) under H0; the most
// extreme cell is the one with the smallest exact two-sided binomial tail
//   t_i = min(1, 2 min(P(X <= O_i), P(X >= O_i))),
// and the family rejects when min t_i < alpha / m (Bonferroni over m = cells.size()): p_value = min(1, m min t_i).
// The z-score z_i = (O_i - n p_i) / sqrt(n p_i (1 - p_i)) of that cell and the normal-equivalent threshold
// z* = quantile(complement(normal, alpha / (2 m))) are reported for reading (statistics.md 5.3: 3.29 at m = 1,
// 5.16 at m = 4096 for alpha 1e-3); the decision uses the exact tails because at z* ~ 3.7..6.3 the normal tail
// is far too light for cells with E ~ 10 (calibration by simulation measured 8.9% false alarms instead of 5%
// over 217 head cells when deciding on |z| >= z*).
//   alpha:      family-wise <= alpha over the m cells (Bonferroni; exact tails keep each cell's size <= alpha/m).
//   power:      against a relative bias r on one token of probability p: the shift is r sqrt(n p / (1 - p))
//               standard deviations, e.g. r = 1% at p = 0.01 needs n ~ 4e6 at alpha 1e-6, m = 4096 (X^2 over
//               thousands of cells needs ~5e7).
//   assumption: independent draws; cells chosen before the data (the head binning).
struct MaxAbsZ {
  double max_abs_z = 0.0;        // |z| of the most extreme cell
  std::size_t cell = 0;          // the most extreme cell (index into the cell arrays)
  double z = 0.0;                // its signed z
  double threshold = 0.0;        // z*, the normal-equivalent Bonferroni threshold (for reports)
  std::uint64_t m = 0;           // cells compared
  double alpha = 0.0;
  double p_value = 1.0;          // Bonferroni-adjusted: min(1, m * min t_i)
  bool Passes() const noexcept { return p_value >= alpha; }
};
// The counts must sum to at most 2^64 - 1 (as for PearsonChiSquareTest); a binomial tail that Boost.Math cannot
// evaluate is an error naming the cell, never an exception.
Result<MaxAbsZ> MaxAbsZTest(std::span<const std::uint64_t> observed, std::span<const double> probabilities,
                    std::span<const std::size_t> cells, double alpha);

}  // namespace samplecheck::stats
