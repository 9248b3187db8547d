// Exact and Monte-Carlo tests for tiny supports and small draw counts, where the chi-square limit of X^2 is not
// trustworthy (statistics.md 5.1: K <= 6, n <~ 1000, or any expected count below 1), and the single-cell
// binomial test with Clopper-Pearson bounds.
#pragma once

#include <cstdint>
#include <span>
#include <string>

#include "samplecheck/core/error.h"

namespace samplecheck::stats {

struct ExactPValue {
  double p_value = 1.0;
  std::uint64_t support_violations = 0;  // draws in zero-probability cells: a hard failure, not in p_value
  std::uint64_t outcomes = 0;            // outcomes enumerated (exact) or replicates drawn (Monte Carlo)
  bool Passes(double alpha) const noexcept { return support_violations == 0 && p_value >= alpha; }
};

// Exact multinomial test: p = sum of P(x) over all outcomes x with n draws and P(x) <= P(observed) (relative
// tolerance 1e-7), enumerating C(n + K - 1, K - 1) outcomes over the K positive-probability cells.
//   alpha:      exact (the test is conservative: P(reject) <= alpha for every n).
//   assumption: independent draws; fails with an error when the outcome count exceeds max_outcomes.
Result<ExactPValue> ExactMultinomialTest(std::span<const std::uint64_t> observed, std::span<const double> probabilities,
                                 std::uint64_t max_outcomes = 20'000'000);

// Monte-Carlo p-value of Pearson's X^2: (1 + #{X^2_b >= X^2_obs}) / (replicates + 1) over `replicates`
// multinomial samples drawn with simulation.h from std::mt19937_64(seed).
//   alpha:      valid at every replicate count (P(p <= a) <= a); resolution 1 / (replicates + 1).
//   assumption: independent draws; no cell-size requirement.
Result<ExactPValue> MonteCarloPearsonTest(std::span<const std::uint64_t> observed, std::span<const double> probabilities,
                                  std::uint64_t replicates, std::uint64_t seed);

// Exact two-sided binomial test of k successes in n trials against success probability p: the sum of P(X = j)
// over j with P(X = j) <= P(X = k) (relative tolerance 1e-7), as R's binom.test. n >= 1, k <= n, p in (0, 1).
Result<double> ExactBinomialPValue(std::uint64_t k, std::uint64_t n, double p);

// The lower tail of a two-cell fit, exactly: P(|X - n p| <= |k - n p|) for X ~ Binomial(n, p), the probability of a fit
// at least as good as k of n. The chi-square lower tail of X^2 (dof 1) misses the lattice: at p = 1/2 and n even, X^2 = 0
// has probability ~sqrt(2 / (pi n)) (0.9% at n = 8192) where the continuous tail says 0. n >= 1, k <= n, p in (0, 1).
//   alpha: exact (conservative: the atom at the observed fit is counted).
Result<double> ExactTwoCellFitLowerTail(std::uint64_t k, std::uint64_t n, double p);

struct Interval {
  double lower = 0.0;
  double upper = 1.0;
};
// Clopper-Pearson (exact) two-sided interval for a binomial proportion at `confidence` in (0, 1): each side
// has at most (1 - confidence) / 2 miss probability. n >= 1, k <= n. A valid result has
// 0 <= lower <= k / n <= upper <= 1; where Boost.Math cannot evaluate the bounds or loses that order (n beyond
// ~1e14 or extreme confidence, where double precision does not resolve the interval) the result is an error.
Result<Interval> ClopperPearsonInterval(std::uint64_t k, std::uint64_t n, double confidence);

}  // namespace samplecheck::stats
