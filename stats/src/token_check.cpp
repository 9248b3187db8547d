#include "samplecheck/stats/token_check.h"

#include "argument_checks.h"

namespace samplecheck::stats {

Result<TokenCheck> CheckTokenCounts(const BinningPlan& plan, std::span<const std::uint64_t> token_counts,
                                    double alpha) {
  TokenCheck out;
  out.alpha = alpha;
  if (Status st = CheckProbabilityOpen("alpha", alpha); !st.ok()) return st.error();
  for (const Binning* b : plan.UsableBinnings()) {
    const Result<BinnedCounts> binned = BinCounts(*b, token_counts);
    if (!binned.ok()) return binned.error();
    const BinnedCounts& counts = *binned;
    out.support_violations = counts.forbidden;  // the same in every binning
    const auto probabilities = CellProbabilities(*b);
    BinningResult r;
    r.binning = b->name;
    const Result<GoodnessOfFit> pearson = PearsonChiSquareTest(counts.observed, probabilities);
    if (!pearson.ok()) return pearson.error().WithContext(b->name + " binning");
    const Result<GoodnessOfFit> g = GTest(counts.observed, probabilities);
    if (!g.ok()) return g.error().WithContext(b->name + " binning (G)");
    r.pearson = *pearson;
    r.g = *g;
    r.residuals = StandardizedResiduals(counts.observed, probabilities);
    out.p_values.push_back(r.pearson.p_value);
    if (b == &plan.head) {
      const auto cells = TokenCells(*b);
      if (!cells.empty()) {
        const Result<MaxAbsZ> head_z = MaxAbsZTest(counts.observed, probabilities, cells, alpha);
        if (!head_z.ok()) return head_z.error().WithContext("head max-|z|");
        out.head_z = *head_z;
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
  const Result<MultipleTestingDecision> holm = HolmBonferroni(out.p_values, alpha);
  if (!holm.ok()) return holm.error();
  out.holm = *holm;
  out.passed = out.support_violations == 0 && out.holm.rejections == 0;
  return out;
}

}  // namespace samplecheck::stats
