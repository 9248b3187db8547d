// The goodness-of-fit family (checks_fit.cpp): exact draws pass on binnings made from p0 and N only; a skewed
// token is rejected. Fixed seeds, alpha per test 1e-6: a false alarm here has probability < 4e-6.
#include <gtest/gtest.h>

#include "samplecheck/reference/exact_sampler.h"

#include "case_fixture.h"
#include "samplecheck/campaign/campaign.h"
#include "samplecheck/checks/checks.h"

namespace samplecheck::harness {
namespace {

using testing::Drawn;
using testing::DrawnCase;

TEST(EvaluateCaseTest, ExactDrawsPassAndBinningsComeFromP0) {
  // alpha per test 1e-6, 4 tests: this fixed-seed case fails with probability < 4e-6 under the null.
  SamplingParams params;
  params.top_k = 50;
  PreparedCase pc = testing::PrepareTestCase(R"({"kind":"gaussian","vocab":1000,"sigma":2})", params, 200000);
  EXPECT_EQ(pc.result.draws, 200000u);
  EXPECT_EQ(pc.result.kept, 50);
  std::vector<uint64_t> hist(pc.row.size(), 0);
  ASSERT_TRUE(ExactCountDraws(LogitsView::Fp32(pc.row), pc.result.params, *FindProfile("vllm"), pc.result.draws, hist)
                  .ok());
  EvaluateCase(pc, hist, 0);
  EXPECT_EQ(pc.result.HardViolations(), 0u);
  const std::vector<StoredBinning> binnings = StoredBinnings(pc.result);
  ASSERT_FALSE(binnings.empty());
  EXPECT_EQ(binnings[0].name, "head");
  for (const auto& b : binnings) {
    EXPECT_GE(b.min_expected, 10.0) << b.name;  // the E >= 10 rule of stats/binning.h
    uint64_t total = 0;
    for (uint64_t o : b.observed) total += o;
    EXPECT_EQ(total, 200000u);
  }
  CampaignReport report;
  report.alpha = 1e-4;
  report.cases.push_back(pc.result);
  ApplyCampaignVerdict(report);
  EXPECT_GE(report.cases[0].p_value, 1e-6);
  EXPECT_GT(report.cases[0].tests, 1u);
  EXPECT_EQ(report.cases[0].status, CaseStatus::kPass);
}
TEST(EvaluateCaseTest, ASkewedTokenIsRejected) {
  // Move 2% of the draws from the top token to the second: TV 0.02; at 2e5 draws the head X^2 has noncentrality
  // ~ 2e5 * 0.02^2 / p > 80 at dof <= 50, power ~1 at alpha 1e-6.
  SamplingParams params;
  params.top_k = 50;
  PreparedCase pc = testing::PrepareTestCase(R"({"kind":"gaussian","vocab":1000,"sigma":2})", params, 200000);
  std::vector<uint64_t> hist(pc.row.size(), 0);
  ASSERT_TRUE(ExactCountDraws(LogitsView::Fp32(pc.row), pc.result.params, *FindProfile("vllm"), 200000, hist).ok());
  const auto top = std::max_element(hist.begin(), hist.end()) - hist.begin();
  size_t second = top == 0 ? 1 : 0;
  for (size_t t = 0; t < hist.size(); ++t) {
    if (size_t(t) != size_t(top) && hist[t] > hist[second]) second = t;
  }
  hist[top] -= 4000;
  hist[second] += 4000;
  EvaluateCase(pc, hist, 0);
  EXPECT_EQ(pc.result.HardViolations(), 0u);
  CampaignReport report;
  report.alpha = 1e-4;
  report.cases.push_back(pc.result);
  ApplyCampaignVerdict(report);
  EXPECT_LT(report.cases[0].p_value, 1e-6);
  EXPECT_EQ(report.cases[0].status, CaseStatus::kFail);
}

}  // namespace
}  // namespace samplecheck::harness
