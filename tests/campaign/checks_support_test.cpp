// The support family (checks_support.cpp): a draw outside the kept set, an invalid token or a sampler error fails
// the case whatever its p-values.
#include <gtest/gtest.h>

#include "samplecheck/reference/exact_sampler.h"

#include "case_fixture.h"
#include "samplecheck/campaign/campaign.h"
#include "samplecheck/checks/checks.h"

namespace samplecheck::harness {
namespace {

using testing::Drawn;
using testing::DrawnCase;

TEST(CaseChecksTest, SupportFindingNamesTheCountTheInvalidTokensAndTheWorstToken) {
  DrawnCase d = Drawn(100000);
  int32_t dropped = -1;
  for (size_t t = 0; t < d.pc.p0.size(); ++t) {
    if (d.pc.p0[t] == 0) dropped = static_cast<int32_t>(t);
  }
  ASSERT_GE(dropped, 0);
  d.histogram[static_cast<size_t>(dropped)] += 7;
  EvaluateCase(d.pc, d.histogram, 2, "plugin error: boom");
  const auto support = d.pc.result.OutcomesOf("support");
  ASSERT_EQ(support.size(), 2u);
  EXPECT_EQ(support[0]->finding, "sampler error: plugin error: boom");
  EXPECT_EQ(support[1]->violations, 9u);
  // The invalid draws lead the offenders (token -1), then the most frequent masked token.
  EXPECT_EQ(support[1]->finding, "9 support violation(s) (2 invalid token(s)), e.g. token -1 drawn 2x outside the "
                                 "kept set");
  CampaignReport report;
  report.alpha = 1e-4;
  report.cases.push_back(d.pc.result);
  ApplyCampaignVerdict(report);
  EXPECT_EQ(report.cases[0].status, CaseStatus::kFail);
  EXPECT_EQ(report.cases[0].reason.rfind("sampler error: plugin error: boom; 9 support violation(s)", 0), 0u)
      << report.cases[0].reason;
}
TEST(EvaluateCaseTest, DrawsOutsideTheKeptSetAreSupportViolations) {
  SamplingParams params;
  params.top_k = 5;
  PreparedCase pc = testing::PrepareTestCase(R"({"kind":"gaussian","vocab":100,"sigma":2})", params, 100000);
  std::vector<uint64_t> hist(pc.row.size(), 0);
  ASSERT_TRUE(ExactCountDraws(LogitsView::Fp32(pc.row), pc.result.params, *FindProfile("vllm"), 100000, hist).ok());
  int32_t dropped = -1;
  for (size_t t = 0; t < pc.p0.size(); ++t) {
    if (pc.p0[t] == 0) dropped = static_cast<int32_t>(t);
  }
  ASSERT_GE(dropped, 0);
  hist[dropped] += 3;
  EvaluateCase(pc, hist, 2);
  EXPECT_EQ(pc.result.HardViolations(), 5u);
  EXPECT_EQ(pc.result.checks["support"]["invalid_draws"], 2u);
  CampaignReport report;
  report.alpha = 1e-4;
  report.cases.push_back(pc.result);
  ApplyCampaignVerdict(report);
  EXPECT_EQ(report.cases[0].status, CaseStatus::kFail);
  EXPECT_NE(report.cases[0].reason.find("support violation"), std::string::npos);
  EXPECT_FALSE(report.Passed());
}

}  // namespace
}  // namespace samplecheck::harness
