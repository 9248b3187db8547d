// Support violations (statistics.md 5.5): a draw of a token with p0 == 0 (masked by top-k, top-p or min-p) is a
// hard failure with no statistics. It is counted here, apart from every p-value, and never folded into one.
//   alpha:      0 (a correct sampler never draws a forbidden token).
//   power:      a kernel leaking mass delta outside the support is caught with probability 1 - (1 - delta)^N,
//               so N >= ln(1 / beta) / delta draws give power 1 - beta (delta 1e-3, beta 0.01: 4.6e3 draws).
//   assumption: p0 == 0 exactly marks the forbidden tokens; tokens within floating-point reach of a cutoff are
//               the reference's "ambiguous" set and must be given positive p0 by the caller.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "samplecheck/core/error.h"

namespace samplecheck::stats {

struct SupportCheck {
  std::uint64_t violations = 0;                  // draws of forbidden tokens
  std::uint64_t violating_token_count = 0;       // distinct forbidden tokens drawn
  std::vector<std::uint32_t> violating_tokens;   // the first max_listed of them, ascending id
  bool Passes() const noexcept { return violations == 0; }
};

// p0.size() == token_counts.size(); p0 entries non-negative and finite.
Result<SupportCheck> CheckSupport(std::span<const double> p0, std::span<const std::uint64_t> token_counts,
                          std::size_t max_listed = 16);

// Upper confidence bound on the leak rate after `draws` draws with no violation: the delta with
// (1 - delta)^draws = alpha, i.e. 1 - alpha^(1/draws) ~ ln(1/alpha) / draws (rule of three at alpha 0.05).
// draws >= 1, alpha in (0, 1).
Result<double> LeakRateUpperBound(std::uint64_t draws, double alpha);

// Draws needed to see at least one violation with probability 1 - beta from a leak of mass delta:
// ln(beta) / ln(1 - delta). delta in (0, 1), beta in (0, 1).
Result<double> DrawsToDetectLeak(double delta, double beta);

}  // namespace samplecheck::stats
