// The per-token family (checks_token.cpp): max-|z| over every support token by its exact binomial tail.
#include <gtest/gtest.h>

#include "case_fixture.h"
#include "samplecheck/campaign/campaign.h"
#include "samplecheck/checks/checks.h"

namespace samplecheck::harness {
namespace {

using testing::Drawn;
using testing::DrawnCase;

// FlashInfer's u grid, reduced (docs/conformance.md): V = 2, logits (0, -25). Token 1 has p0 = 1.39e-11, an
// expected 0.0075 draws in 2^29; FlashInfer drew it 13 times (its fp32 uniform equals 1.0f with probability 2^-25,
// then its fp32 running sum never exceeds u and it falls back to the last valid token). The head binning has one
// cell here (token 1 is not worth a cell of its own), so only the per-token test over the whole support sees it.
TEST(CaseChecksTest, MaxAbsZCatchesATokenOfTinyProbabilityDrawnFarTooOften) {
  const uint64_t n = uint64_t(1) << 29;
  PreparedCase pc = testing::PrepareTestCase(R"({"kind":"dyadic","probs":[1.0,1.3887943864964021e-11]})",
                                             SamplingParams{}, n);
  ASSERT_FALSE(pc.binning.head.usable());
  std::vector<uint64_t> histogram = {n - 13, 13};
  EvaluateCase(pc, histogram, 0);
  ASSERT_EQ(pc.result.OutcomesOf("max-abs-z").size(), 1u);
  EXPECT_LT(pc.result.OutcomesOf("max-abs-z")[0]->p_value, 1e-30);
  CampaignReport report;
  report.alpha = 1e-4;
  report.cases.push_back(pc.result);
  ApplyCampaignVerdict(report);
  EXPECT_EQ(report.cases[0].status, CaseStatus::kFail) << report.cases[0].reason;
  // What exact draws give with probability exp(-0.0075) = 0.9926: no draw of token 1, and no failure.
  PreparedCase clean = testing::PrepareTestCase(R"({"kind":"dyadic","probs":[1.0,1.3887943864964021e-11]})",
                                                SamplingParams{}, n);
  histogram = {n, 0};
  EvaluateCase(clean, histogram, 0);
  for (const CheckOutcome& o : clean.result.outcomes) EXPECT_FALSE(o.Fails()) << o.test << ": " << o.finding;
  ASSERT_EQ(clean.result.OutcomesOf("max-abs-z").size(), 1u);
  EXPECT_GT(clean.result.OutcomesOf("max-abs-z")[0]->p_value, 0.5);
}

// The same fault inside a vocabulary whose head binning is usable: 5 draws moved from the top token onto the token
// of smallest probability (T = 0.3 makes it ~1e-20) change no pooled tail cell by much, so the Pearson binnings pass,
// while the per-token tail names that token.
TEST(CaseChecksTest, MaxAbsZNamesATailTokenThePooledCellsHide) {
  SamplingParams params;
  params.temperature = 0.3;
  PreparedCase pc = testing::PrepareTestCase(R"({"kind":"gaussian","vocab":1000,"sigma":2})", params, 200000);
  std::vector<uint64_t> histogram = testing::ExactHistogram(pc);
  size_t top = 0, rare = 0;
  for (size_t t = 0; t < pc.p0.size(); ++t) {
    if (pc.p0[t] > pc.p0[top]) top = t;
    if (pc.p0[t] > 0 && (pc.p0[rare] == 0 || pc.p0[t] < pc.p0[rare])) rare = t;
  }
  ASSERT_LT(pc.p0[rare] * 200000, 1e-6);
  ASSERT_GE(histogram[top], 5u);
  histogram[top] -= 5;
  histogram[rare] += 5;
  EvaluateCase(pc, histogram, 0);
  for (const CheckOutcome* o : pc.result.OutcomesOf("pearson")) {
    EXPECT_GT(o->p_value, pc.result.alpha_plan) << o->test << ": " << o->finding;
  }
  ASSERT_EQ(pc.result.OutcomesOf("max-abs-z").size(), 1u);
  EXPECT_LT(pc.result.OutcomesOf("max-abs-z")[0]->p_value, 1e-20);
  EXPECT_EQ(StoredMaxAbsZTest(pc.result).token, int32_t(rare));
}

}  // namespace
}  // namespace samplecheck::harness
