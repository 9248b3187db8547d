// The full one-sample check of a token histogram against a BinningPlan (statistics.md 0 and 5.6): two gates.
//   1. Support: any draw of a forbidden token (p0 == 0) fails, with no statistics.
//   2. Goodness of fit: Pearson X^2 on each usable binning (head, tail, hash) plus the max-|z| test over the head
//      tokens, combined with Holm-Bonferroni at family-wise alpha. G and the residuals are reported, not gated.
//   alpha:      family-wise over the m <= 4 p-values (Holm; valid under any dependence between the binnings).
//   power:      per binning as power.h with alpha / m (Holm is at least as powerful as Bonferroni).
//   assumption: independent draws; the plan was built for (about) this many draws, so every cell has E >= 10
//               (min_expected per binning is reported for the caller to check when the draw count differs).
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "samplecheck/stats/binning.h"
#include "samplecheck/stats/goodness_of_fit.h"
#include "samplecheck/stats/multiple_testing.h"

#include "samplecheck/core/error.h"

namespace samplecheck::stats {

struct BinningResult {
  std::string binning;  // "head", "tail", "hash"
  GoodnessOfFit pearson;
  GoodnessOfFit g;
  std::vector<double> residuals;  // standardized, per cell
};

struct TokenCheck {
  std::uint64_t support_violations = 0;  // gate 1
  std::vector<BinningResult> binnings;   // usable binnings only
  MaxAbsZ head_z;                        // over the head binning's single-token cells (m = 0 when none)
  std::vector<double> p_values;          // the Holm family: each binning's Pearson p, then head_z.p_value
  MultipleTestingDecision holm;
  double alpha = 0.0;
  bool passed = false;  // no support violation and no Holm rejection
};

Result<TokenCheck> CheckTokenCounts(const BinningPlan& plan, std::span<const std::uint64_t> token_counts, double alpha);

}  // namespace samplecheck::stats
