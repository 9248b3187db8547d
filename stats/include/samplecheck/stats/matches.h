// Matches between paired draws: how often two draws that should be independent come out equal. The stream checks of
// a campaign (harness/checks/src/checks_stream.cpp) count them: the same rows and offsets under two seeds (a stream
// that ignores its seed matches every time), and adjacent steps of one stream (a key reused across steps, a uniform
// baked into a captured graph: adjacent draws equal far more often than chance).
//
// Under independence, pair i matches with a known probability pi_i (for two draws from the same law p it is the
// collision probability sum_t p_t^2), so the number of matches M is a sum of independent Bernoulli(pi_i): Poisson
// binomial (binomial when every pi_i is the same). The test is its exact upper tail.
//   alpha:      exact (the discrete tail is conservative: P(p <= a) <= a).
//   power:      against a stream that repeats itself every pair (M = n): p = prod_i pi_i, so the test has power 1 at
//               alpha exactly when prod_i pi_i <= alpha (MatchesNeededForPower gives the n for a constant pi).
//   assumption: the pairs are independent of each other (disjoint draws) and pi_i is the exact match probability of a
//               correct sampler (the reference's law).
#pragma once

#include <cstdint>
#include <span>

#include "samplecheck/core/error.h"

namespace samplecheck::stats {

// P(M >= k) for M the sum of independent Bernoulli(probs[i]), exactly (dynamic programming over the n pairs, in
// long double; n <= 1e5). kInvalidArgument for a probability outside [0, 1] (or NaN), or more than 1e5 pairs.
Result<double> PoissonBinomialUpperTail(std::span<const double> probs, uint64_t k);

// P(Bin(n, p) >= k), exactly (Boost.Math's incomplete beta). kInvalidArgument for p outside [0, 1].
Result<double> BinomialUpperTail(uint64_t n, double p, uint64_t k);

// The least n with pi^n <= alpha: the pairs at which a stream that repeats itself every time is rejected for sure.
// UINT64_MAX when no n suffices (pi >= 1: every pair matches anyway), or alpha is outside (0, 1).
uint64_t MatchesNeededForPower(double pi, double alpha);

}  // namespace samplecheck::stats
