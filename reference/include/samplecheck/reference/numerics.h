// The numerics model of a profile turned into numbers: how far an fp32 implementation of the profile can move a
// top-p decision. docs/semantics.md, "Numerics model", derives every formula and names the engine source each
// profile's model follows.
//
// The bound is the rigorous first-order one on the engine's actual summation shape (Higham, Accuracy and Stability
// of Numerical Algorithms, 2nd ed., 2002, sec. 4.2): a sum of nonnegative terms, each of which passes through at
// most d roundings, is within gamma_d = d u / (1 - d u) of the exact sum, relatively. Engines sum in blocked shapes
// (a few hundred roundings for V = 262144, not V), so the bound stays at tens to hundreds of fp32 ulps. The
// probabilistic bound lambda sqrt(d) u (Higham and Mary, SIAM J. Sci. Comput. 41(5), 2019) is not used: it assumes
// independent rounding errors, and the rows where a boundary is most fragile (near-flat rows: many nearly equal
// terms added to a growing accumulator) round with a consistent sign along every sequential chain; the simulation
// in tests/reference/numerics_test.cpp measures a sequential fp32 softmax + cumsum of such rows 5.5 times past
// 3 sqrt(d) u (and within 0.05 of gamma_d).
#pragma once

#include <cstdint>

#include "samplecheck/reference/profile.h"

namespace samplecheck {

// Kahan summation in long double: the one running-sum rule of the reference's CDFs (InverseCdf and the speculative
// verifier's residual draws round the running sum once per entry to double and must agree bit for bit).
class KahanSum {
 public:
  // Adds `value`; returns the running sum.
  long double Add(long double value) {
    const long double y = value - compensation_;
    const long double t = running_ + y;
    compensation_ = (t - running_) - y;
    running_ = t;
    return running_;
  }
  long double Value() const { return running_; }

 private:
  long double running_ = 0;
  long double compensation_ = 0;
};

// The most roundings a term of an n-term sum of shape `sum` passes through (0 for kExact or n <= 1).
int64_t SumDepth(const SumModel& sum, int64_t terms);

// gamma_d = d u / (1 - d u) for d = SumDepth(sum, terms); +inf once d u >= 1/2.
double SumRelativeError(const SumModel& sum, int64_t terms, double unit_roundoff);

// Relative error bound of the quantity a profile compares with top_p (a sum of positive fp32 probabilities over
// a row of `terms` live tokens): the normalizer's error (every probability carries it), the mass sum's error and
// each term's own error (prob_error_ulps, an ulp being at most 2u of the value). 0 for an exact model.
double TopPRelativeError(const NumericsModel& model, int64_t terms);

// The relative distance below which the engine's fp32 probabilities of two tokens can compare equal or swapped:
// 2 * prob_error_ulps ulps (one error on each, an ulp being at most 2u relative) plus the pivot tolerance. 0 when
// the profile orders by logits (the order is then exact in the reference's sense).
double ValueWindow(const NumericsModel& model);

}  // namespace samplecheck
