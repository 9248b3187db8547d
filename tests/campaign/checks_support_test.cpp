// The support family (checks_support.cpp): a draw outside the kept set, an invalid token or a sampler error fails
// the case whatever its p-values.
#include <gtest/gtest.h>

#include <cmath>
#include <string>

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
  // The invalid draws are counted first; then the row, the parameters, the kept set's size and the token drawn
  // outside it with its count, its probability before the filters and the filter that drops it (top-k 50: its rank
  // past 50, counted here from the row: the tokens of a larger logit, ties by id).
  int64_t rank = 1;
  for (size_t t = 0; t < d.pc.row.size(); ++t) {
    const float x = d.pc.row[t], y = d.pc.row[static_cast<size_t>(dropped)];
    rank += x > y || (x == y && static_cast<int32_t>(t) < dropped);
  }
  ASSERT_GT(rank, 50);
  const std::string prefix =
      "9 support violation(s) (2 invalid tokens); row gaussian(V=1000, sigma=2); T 1, top_k 50, "
      "top_p 1, min_p 0; outside the kept set of 50: token " +
      std::to_string(dropped) + " 7x (p ";
  EXPECT_EQ(support[1]->finding.rfind(prefix, 0), 0u) << support[1]->finding;
  EXPECT_NE(support[1]->finding.find("; top-k 50 drops it (rank " + std::to_string(rank) + "))"), std::string::npos)
      << support[1]->finding;
  EXPECT_LE(support[1]->finding.size(), 200u) << "one readable line";
  // The structured detail beside it (docs/report-format.md, support.tokens).
  const nlohmann::json& tokens = d.pc.result.checks["support"]["tokens"];
  ASSERT_EQ(tokens.size(), 2u);
  EXPECT_EQ(tokens[0]["token"], -1);
  EXPECT_FALSE(tokens[0].contains("dropped_by"));
  EXPECT_EQ(tokens[1]["token"], dropped);
  EXPECT_EQ(tokens[1]["dropped_by"], "top-k");
  EXPECT_EQ(tokens[1]["rank"], rank);
  const double logit = d.pc.row[static_cast<size_t>(dropped)];
  double total = 0;
  for (float x : d.pc.row) total += std::exp(double(x) - logit);
  EXPECT_NEAR(tokens[1]["reference_prob"].get<double>(), 1.0 / total, 1e-9);
  EXPECT_EQ(d.pc.result.checks["support"]["kept"], 50);
  CampaignReport report;
  report.alpha = 1e-4;
  report.cases.push_back(d.pc.result);
  ApplyCampaignVerdict(report);
  EXPECT_EQ(report.cases[0].status, CaseStatus::kFail);
  EXPECT_EQ(report.cases[0].reason.rfind("sampler error: plugin error: boom; 9 support violation(s)", 0), 0u)
      << report.cases[0].reason;
}
// A batch row names its place in the batch; a report written before the explanations (no `kept`, no `why`) still
// reads, with the token and its count alone.
TEST(CaseChecksTest, SupportFindingOfABatchRowAndOfAnOlderReport) {
  DrawnCase d = Drawn(100000);
  d.pc.result.batch = {"b", 2, 4, 0, 2, ""};
  size_t dropped = 0;
  while (d.pc.p0[dropped] > 0) ++dropped;
  d.histogram[dropped] += 3;
  EvaluateCase(d.pc, d.histogram, 0);
  const auto support = d.pc.result.OutcomesOf("support");
  ASSERT_EQ(support.size(), 1u);
  EXPECT_NE(support[0]->finding.find("support violation(s); row 2 of 4 of batch 'b', gaussian(V=1000, sigma=2); T 1, "
                                     "top_k 50, top_p 1, min_p 0; outside the kept set of 50: token "),
            std::string::npos)
      << support[0]->finding;
  nlohmann::json old = d.pc.result.checks;
  old["support"].erase("kept");
  for (nlohmann::json& t : old["support"]["tokens"]) {
    for (const char* key : {"reference_prob", "rank", "dropped_by", "why"}) t.erase(key);
  }
  CaseResult reread = d.pc.result;
  ASSERT_TRUE(ReadCaseChecks(old, reread).ok());
  const auto again = reread.OutcomesOf("support");
  ASSERT_EQ(again.size(), 1u);
  EXPECT_NE(again[0]->finding.find(": token " + std::to_string(dropped) + " 3x"), std::string::npos)
      << again[0]->finding;
  EXPECT_EQ(again[0]->finding.find("drops it"), std::string::npos) << again[0]->finding;
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
