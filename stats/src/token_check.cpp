#include "samplecheck/stats/token_check.h"

namespace samplecheck::stats {

TokenCheck CheckTokenCounts(const BinningPlan& plan, std::span<const std::uint64_t> token_counts, double alpha) {
  TokenCheck out;
  out.alpha = alpha;
  if (!plan.ok()) {
    out.error = "the binning plan is invalid: " + plan.error;
    return out;
  }
  if (auto e = CheckProbabilityOpen("alpha", alpha); !e.empty()) {
    out.error = e;
    return out;
  }
  for (const Binning* b : plan.UsableBinnings()) {
    const BinnedCounts counts = BinCounts(*b, token_counts);
    if (!counts.ok()) {
      out.error = counts.error;
      return out;
    }
    out.support_violations = counts.forbidden;  // the same in every binning
    const auto probabilities = CellProbabilities(*b);
    BinningResult r;
    r.binning = b->name;
    r.pearson = PearsonChiSquareTest(counts.observed, probabilities);
    r.g = GTest(counts.observed, probabilities);
    r.residuals = StandardizedResiduals(counts.observed, probabilities);
    if (!r.pearson.ok()) {
      out.error = b->name + " binning: " + r.pearson.error;
      return out;
    }
    out.p_values.push_back(r.pearson.p_value);
    if (b == &plan.head) {
      const auto cells = TokenCells(*b);
      if (!cells.empty()) {
        out.head_z = MaxAbsZTest(counts.observed, probabilities, cells, alpha);
        if (!out.head_z.ok()) {
          out.error = "head max-|z|: " + out.head_z.error;
          return out;
        }
      }
    }
    out.binnings.push_back(std::move(r));
  }
  if (out.binnings.empty()) {
    // Nothing to test statistically (e.g. a one-token support); the support gate still applies.
    std::uint64_t forbidden = 0;
    for (std::uint32_t t : plan.forbidden_tokens) {
      if (t < token_counts.size()) forbidden += token_counts[t];
    }
    out.support_violations = forbidden;
  }
  if (out.head_z.m > 0) out.p_values.push_back(out.head_z.p_value);
  out.holm = HolmBonferroni(out.p_values, alpha);
  if (!out.holm.ok()) {
    out.error = out.holm.error;
    return out;
  }
  out.passed = out.support_violations == 0 && out.holm.rejections == 0;
  return out;
}

}  // namespace samplecheck::stats
