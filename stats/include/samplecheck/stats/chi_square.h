// Critical values and p-values of the chi-square and normal distributions, through Boost.Math.
//
// Tail probabilities are always computed as cdf(complement(d, x)) and critical values as
// quantile(complement(d, alpha)), never as 1 - cdf or quantile(d, 1 - alpha): those lose every digit below
// about 1e-16, and this library works at alpha down to 1e-12 and reports p-values far smaller.
//
// Where Boost.Math cannot evaluate (it throws under its default policy: dof above ~1e11, far beyond any binning),
// the result is an error naming the inputs ("... could not be evaluated: <Boost's message>"); no approximation
// is substituted and nothing throws.
#pragma once

#include <cstdint>

#include "samplecheck/core/error.h"

namespace samplecheck::stats {

inline constexpr char kChiSquared[] = "chi-squared";

// The x with P(X >= x) = alpha for X ~ chi-square(dof). dof >= 1, alpha in (0, 1).
Result<double> ChiSquareCriticalValue(std::uint64_t dof, double alpha);

// P(X >= statistic) for X ~ chi-square(dof). dof >= 1, statistic >= 0 and finite. A statistic of 0 has p-value
// exactly 1 for every dof.
Result<double> ChiSquarePValue(double statistic, std::uint64_t dof);

// P(X <= statistic) for X ~ chi-square(dof): the lower tail, for a fit too good to be random (a stratified or
// low-discrepancy stream gives X^2 far below dof). Same domain as ChiSquarePValue; a statistic of 0 gives 0.
Result<double> ChiSquareLowerTailPValue(double statistic, std::uint64_t dof);

// The z with P(Z >= z) = alpha for Z ~ N(0, 1). alpha in (0, 1).
Result<double> NormalUpperQuantile(double alpha);

// Two-sided Bonferroni threshold for the largest of m |z| scores: quantile(complement(normal, alpha / (2 m))).
// E.g. alpha = 1e-3: 3.29 for m = 1, 5.16 for m = 4096 (statistics.md 5.3). alpha in (0, 1), m >= 1.
Result<double> BonferroniTwoSidedZThreshold(double alpha, std::uint64_t m);

// P(|Z| >= |z|) for Z ~ N(0, 1), computed as 2 * cdf(complement(normal, |z|)).
double NormalTwoSidedPValue(double z);

}  // namespace samplecheck::stats
