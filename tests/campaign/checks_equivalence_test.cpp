// The equivalence family (checks_equivalence.cpp).
#include <gtest/gtest.h>

#include "case_fixture.h"
#include "samplecheck/campaign/campaign.h"
#include "samplecheck/checks/checks.h"

namespace samplecheck::harness {
namespace {

using testing::Drawn;
using testing::DrawnCase;

// The equivalence check (stats/equivalence.h; calibrated in tests/stats): exact draws certify a TV their count can
// show, a case short of draws is named with the draws it needs, a real distance is never certified, and reports
// written before the check read back without it.
TEST(CaseChecksTest, EquivalenceCertifiesExactDrawsAndNamesACaseShortOfDraws) {
  DrawnCase d = Drawn(200000);
  d.pc.result.equivalence_eps = 0.05;  // K <= 50 cells, N = 2e5, alpha 1e-6: a correct sampler's bound ~0.01
  EvaluateCase(d.pc, d.histogram, 0);
  ASSERT_EQ(d.pc.result.OutcomesOf("equivalence").size(), 1u);
  EXPECT_FALSE(d.pc.result.OutcomesOf("equivalence")[0]->Fails()) << d.pc.result.OutcomesOf("equivalence")[0]->finding;
  StoredEquivalence e = StoredEquivalenceOf(d.pc.result);
  ASSERT_TRUE(e.present);
  EXPECT_TRUE(e.certified);
  EXPECT_GT(e.tv_upper, 0.0);
  EXPECT_LT(e.tv_upper, 0.05);
  EXPECT_EQ(e.alpha, 1e-6);

  d.pc.result.equivalence_eps = 1e-3;  // needs ~1e7 draws at these cells
  EvaluateCase(d.pc, d.histogram, 0);
  const auto outcome = d.pc.result.OutcomesOf("equivalence");
  ASSERT_EQ(outcome.size(), 1u);
  EXPECT_TRUE(outcome[0]->Fails());
  EXPECT_NE(outcome[0]->finding.find("inconclusive for lack of draws"), std::string::npos) << outcome[0]->finding;
  EXPECT_GT(outcome[0]->draws_for_power, 200000.0);
  e = StoredEquivalenceOf(d.pc.result);
  EXPECT_FALSE(e.certified);
  EXPECT_TRUE(e.lacks_draws);
  CampaignReport report;
  report.alpha = 1e-4;
  report.equivalence_eps = 1e-3;
  report.cases.push_back(d.pc.result);
  ApplyCampaignVerdict(report);
  EXPECT_EQ(report.cases[0].status, CaseStatus::kFail);
  const std::vector<std::string> problems = report.VerdictProblems();
  ASSERT_FALSE(problems.empty());
  EXPECT_NE(problems.back().find("1 case(s) inconclusive, 1 of them for lack of draws"), std::string::npos)
      << problems.back();
}

TEST(CaseChecksTest, EquivalenceNeverCertifiesARealDistance) {
  DrawnCase d = Drawn(200000);
  // Move 5% of the draws onto the most probable kept token: TV 0.05 from the reference at N = 2e5.
  size_t top = 0;
  for (size_t t = 0; t < d.pc.p0.size(); ++t) top = d.pc.p0[t] > d.pc.p0[top] ? t : top;
  uint64_t moved = 0;
  for (size_t t = 0; t < d.histogram.size() && moved < 10000; ++t) {
    if (t == top) continue;
    const uint64_t take = std::min<uint64_t>(d.histogram[t] / 2, 10000 - moved);
    d.histogram[t] -= take;
    moved += take;
  }
  d.histogram[top] += moved;
  d.pc.result.equivalence_eps = 0.04;
  EvaluateCase(d.pc, d.histogram, 0);
  const auto outcome = d.pc.result.OutcomesOf("equivalence");
  ASSERT_EQ(outcome.size(), 1u);
  EXPECT_TRUE(outcome[0]->Fails());
  EXPECT_GE(outcome[0]->statistic, 0.04);  // the bound itself covers the true 0.05
  EXPECT_NE(outcome[0]->finding.find("the data point at a distance near or above eps"), std::string::npos)
      << outcome[0]->finding;
  // Without --equivalence the bounds are reported and judge nothing.
  d.pc.result.equivalence_eps = 0;
  EvaluateCase(d.pc, d.histogram, 0);
  EXPECT_TRUE(d.pc.result.OutcomesOf("equivalence").empty());
  EXPECT_TRUE(StoredEquivalenceOf(d.pc.result).present);
}

TEST(CaseChecksTest, ReportsWithoutEquivalenceFieldsReadBack) {
  DrawnCase d = Drawn();
  EvaluateCase(d.pc, d.histogram, 0);
  nlohmann::json case_object = d.pc.result.checks;
  case_object.erase("equivalence");
  CaseResult back = d.pc.result;
  ASSERT_TRUE(ReadCaseChecks(case_object, back).ok());
  EXPECT_TRUE(back.OutcomesOf("equivalence").empty());
  EXPECT_FALSE(StoredEquivalenceOf(back).present);
}

}  // namespace
}  // namespace samplecheck::harness
