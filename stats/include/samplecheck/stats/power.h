// Power and sample size of Pearson's X^2 test over K cells (statistics.md 5.2, 5.4).
//
// Under an alternative p1 the statistic is approximately non-central chi-square(K - 1, lambda) with
// lambda = N * chi2(p1 || p0), chi2(p1 || p0) = sum (p1 - p0)^2 / p0 (over the cells). The test rejects when
// X^2 > c_alpha = quantile(complement(chi_squared(K - 1), alpha)), so
//   power(N)  = cdf(complement(non_central_chi_squared(K - 1, N * divergence), c_alpha))
//   draws     = lambda* / divergence,  lambda* = find_non_centrality(complement(K - 1, c_alpha, power)).
// Total variation: chi2(p1 || p0) >= 4 TV^2 (Cauchy-Schwarz), with equality for the worst case, a
// p0-proportional shift of TV between two halves of the mass; the TV planners use 4 TV^2, i.e. they plan for
// the alternative hardest to see at that TV. Binning only loses divergence: compute the binned divergence of a
// concrete alternative with ChiSquareDivergence over the cells.
// Assumption: the local (large-N, small-divergence) approximation; the calibration tests in tests/stats check
// the achieved power by simulation.
#pragma once

#include <cstdint>
#include <span>
#include <string>

#include "samplecheck/core/error.h"

namespace samplecheck::stats {

struct DrawPlan {
  double divergence = 0.0;      // chi2(p1 || p0) the plan detects
  double alpha = 0.0;
  double power = 0.0;
  std::uint64_t cells = 0;      // K
  double critical_value = 0.0;  // c_alpha of chi-square(K - 1)
  double noncentrality = 0.0;   // lambda*
  double draws = 0.0;           // lambda* / divergence (real; round up to use)
};

// Allowed: divergence in (0, inf); alpha in (0, 1); power in (alpha, 1); cells in [2, 2^32].
Result<DrawPlan> PlanDrawsForDivergence(double divergence, double alpha, double power, std::uint64_t cells);
// tv in (0, 0.5]: the worst-case shift needs two halves of p0-mass, so TV <= 1/2 (divergence 4 TV^2 <= 1).
Result<DrawPlan> PlanDrawsForTotalVariation(double tv, double alpha, double power, std::uint64_t cells);

// Power of a finished (or planned) run of `draws` draws. draws in (0, inf).
Result<double> PowerOfRun(double divergence, double alpha, std::uint64_t cells, double draws);
Result<double> PowerOfRunForTotalVariation(double tv, double alpha, std::uint64_t cells, double draws);

// The worst-case chi-square divergence at total variation tv: 4 tv^2.
double WorstCaseDivergenceForTotalVariation(double tv);

// chi2(p1 || p0) = sum (p1_i - p0_i)^2 / p0_i over cells; both normalized by their sums. A cell with p0 = 0 and
// p1 > 0 is a support leak, not a divergence: it gives an error saying so (see support.h).
Result<double> ChiSquareDivergence(std::span<const double> p0, std::span<const double> p1);

// Total variation 1/2 sum |p1 - p0| (both normalized).
Result<double> TotalVariation(std::span<const double> p0, std::span<const double> p1);

}  // namespace samplecheck::stats
