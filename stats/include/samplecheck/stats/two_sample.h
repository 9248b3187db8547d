// Two-sample chi-square on identical bins, for A/B of two samplers or two versions of one kernel
// (statistics.md 5.8, NIST Dataplot chi2samp):
//   X^2 = sum (K1 R_i - K2 S_i)^2 / (R_i + S_i),  K1 = sqrt(N_S / N_R),  K2 = sqrt(N_R / N_S),
// over the bins with R_i + S_i > 0, referred to chi-square(non-empty bins - 1). This equals the 2 x k
// contingency-table X^2 of homogeneity, which has k - 1 dof whether or not N_R == N_S.
//   alpha:      the caller's; p-value = cdf(complement(chi_squared(dof), X^2)).
//   power:      as one-sample X^2 with effective draws N_R N_S / (N_R + N_S): equal arms need 2x the one-sample
//               draws each (4x in total) for the same power (PlanTwoSampleDrawsPerArm).
//   assumption: both arms binned identically, bins fixed in advance (from p0), pooled counts R_i + S_i >= 10
//               (min_pooled is reported); independent draws.
// A/B detects regressions between the arms; it does not replace the one-sample test against the exact reference.
#pragma once

#include <cstdint>
#include <span>
#include <string>

#include "samplecheck/stats/power.h"

#include "samplecheck/core/error.h"

namespace samplecheck::stats {

struct TwoSample {
  double statistic = 0.0;
  std::uint64_t dof = 0;
  double p_value = 1.0;
  std::uint64_t draws_r = 0;
  std::uint64_t draws_s = 0;
  std::uint64_t nonempty_bins = 0;
  std::uint64_t min_pooled = 0;   // least R_i + S_i over non-empty bins
  double effective_draws = 0.0;   // N_R N_S / (N_R + N_S)
  bool Passes(double alpha) const noexcept { return p_value >= alpha; }
};

// r.size() == s.size(); both arms need at least one draw and at least two bins must be non-empty.
Result<TwoSample> TwoSampleChiSquareTest(std::span<const std::uint64_t> r, std::span<const std::uint64_t> s);

// Draws per arm (equal arms) to detect chi2(p1 || p0) = divergence between the arms' distributions: twice the
// one-sample plan. The returned plan's `draws` is per arm.
Result<DrawPlan> PlanTwoSampleDrawsPerArm(double divergence, double alpha, double power, std::uint64_t cells);

}  // namespace samplecheck::stats
