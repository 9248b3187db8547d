// Units of the report library: the JSON round trip and its parse errors, the HTML report, the A/B test of two
// reports. Deterministic (fixed seeds).
#include <gtest/gtest.h>

#include "samplecheck/campaign/campaign.h"
#include "samplecheck/checks/checks.h"
#include "samplecheck/report/ab_comparison.h"
#include "samplecheck/report/html_report.h"
#include "samplecheck/report/report.h"
#include "samplecheck/suites/suite.h"

namespace samplecheck::harness {
namespace {

CampaignReport SmallSmokeReport(const std::string& sampler, uint64_t draw_seed = 1) {
  auto suite = LoadSuite("smoke");
  EXPECT_TRUE(suite.ok());
  suite->cases.resize(4);
  suite->generated = 0;  // the four written cases only
  CampaignOptions options;
  options.sampler_spec = sampler;
  options.max_draws = 30000;
  options.seed = 1;
  options.draw_seed = draw_seed;
  options.progress = Progress::Mode::kQuiet;
  options.version = "test";
  auto report = RunCampaign(*suite, options);
  EXPECT_TRUE(report.ok()) << report.error().message;
  return report.ok() ? *report : CampaignReport{};
}

TEST(ReportTest, RoundTripKeepsEveryFieldAndEveryOutcome) {
  const CampaignReport report = SmallSmokeReport("exact");
  const nlohmann::json j = ReportToJson(report);
  auto back = ReportFromJson(j);
  ASSERT_TRUE(back.ok()) << back.error().message;
  EXPECT_EQ(ReportToJson(*back), j);
  ASSERT_EQ(back->cases.size(), 4u);
  for (size_t i = 0; i < back->cases.size(); ++i) {
    const CaseResult& a = report.cases[i];
    const CaseResult& b = back->cases[i];
    EXPECT_EQ(StoredBinnings(b).size(), StoredBinnings(a).size()) << a.name;
    ASSERT_EQ(b.outcomes.size(), a.outcomes.size()) << a.name;
    for (size_t k = 0; k < a.outcomes.size(); ++k) {
      EXPECT_EQ(b.outcomes[k].test, a.outcomes[k].test);
      EXPECT_EQ(b.outcomes[k].p_value, a.outcomes[k].p_value);
      EXPECT_EQ(b.outcomes[k].violations, a.outcomes[k].violations);
    }
  }
  // The gate recomputes the same verdict from the stored fields.
  CampaignReport recomputed = *back;
  ApplyCampaignVerdict(recomputed);
  for (size_t i = 0; i < report.cases.size(); ++i) {
    EXPECT_EQ(recomputed.cases[i].status, report.cases[i].status);
    EXPECT_EQ(recomputed.cases[i].p_value, report.cases[i].p_value);
  }
}

// A sampler campaign's summary states its sampling test (alpha, TV), a replay's the exact checks; a sampler report's
// cases hold the replay fields too (null), which once made every run's summary read as a replay's.
TEST(ReportTest, TheSummaryOfASamplerRunStatesItsAlphaAndTv) {
  const CampaignReport report = SmallSmokeReport("exact");
  ASSERT_FALSE(report.cases.empty());
  ASSERT_TRUE(report.cases.front().checks.contains("replay_engine"));
  const std::string summary = FormatSummary(report);
  EXPECT_NE(summary.find("(Holm), TV 0.01"), std::string::npos) << summary;
  EXPECT_EQ(summary.find("no sampling test"), std::string::npos) << summary;
}

// A sampler whose COUNT draws another of its paths (process capability 512) says so in the report: the field
// round-trips, the summary names it, and a value other than "distributional" is a parse error naming the field.
TEST(ReportTest, ADistributionalCountPathIsStatedAndRoundTrips) {
  CampaignReport report = SmallSmokeReport("exact");
  EXPECT_FALSE(ReportToJson(report)["sampler"].contains("counts"));
  EXPECT_EQ(FormatSummary(report).find("distributional count path"), std::string::npos);
  report.sampler_counts = "distributional";
  nlohmann::json j = ReportToJson(report);
  EXPECT_EQ(j["sampler"]["counts"], "distributional");
  auto back = ReportFromJson(j);
  ASSERT_TRUE(back.ok()) << back.error().message;
  EXPECT_EQ(back->sampler_counts, "distributional");
  EXPECT_NE(FormatSummary(*back).find("distributional count path"), std::string::npos) << FormatSummary(*back);
  j["sampler"]["counts"] = "whole";
  auto bad = ReportFromJson(j);
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().code, ErrorCode::kParse);
  EXPECT_NE(bad.error().message.find("/sampler/counts"), std::string::npos) << bad.error().message;
}

TEST(ReportTest, MalformedReportsAreParseErrors) {
  EXPECT_FALSE(ReportFromJson(nlohmann::json::parse(R"({"schema":"samplecheck-report/2"})")).ok());
  EXPECT_FALSE(ReportFromJson(nlohmann::json::parse(R"({"schema":"samplecheck-report/1"})")).ok());
  EXPECT_FALSE(ReportFromJson(nlohmann::json::parse(R"([1,2])")).ok());
  EXPECT_EQ(LoadReport("/nonexistent/r.json").error().code, ErrorCode::kIo);
}

TEST(ReportTest, ACaseWithoutACheckFieldsIsAParseErrorNamingTheCheck) {
  nlohmann::json j = ReportToJson(SmallSmokeReport("exact"));
  j["cases"][1].erase("binnings");
  auto back = ReportFromJson(j);
  ASSERT_FALSE(back.ok());
  EXPECT_EQ(back.error().code, ErrorCode::kParse);
  EXPECT_NE(back.error().message.find("/cases/1"), std::string::npos) << back.error().message;
  EXPECT_NE(back.error().message.find("check pearson"), std::string::npos) << back.error().message;
}

TEST(ReportTest, HtmlIsSelfContainedAndShowsEveryOutcome) {
  const CampaignReport report = SmallSmokeReport("mutant:leak-1e-4");
  const std::string html = RenderHtmlReport(report);
  EXPECT_NE(html.find("<svg"), std::string::npos);
  EXPECT_EQ(html.find("http://"), std::string::npos);
  EXPECT_EQ(html.find("https://"), std::string::npos);
  for (const CaseResult& c : report.cases) {
    for (const CheckOutcome& o : c.outcomes) EXPECT_NE(html.find(">" + o.test + "<"), std::string::npos) << o.test;
  }
}

TEST(AbTest, IdenticalDrawsAreTheSameAndAFaultDiffers) {
  const CampaignReport base = SmallSmokeReport("exact");
  auto same = CompareWithBaseline(base, base);
  ASSERT_TRUE(same.ok()) << same.error().message;
  EXPECT_GT(same->compared, 0u);
  EXPECT_TRUE(same->Same());
  EXPECT_NE(FormatAbComparison(*same, "base.json").find("A/B VERDICT: SAME"), std::string::npos);
  // A no-renormalization mutant changes the head distribution grossly (TV > 0.1 on a filtered case).
  const CampaignReport mutant = SmallSmokeReport("mutant:no-renorm-cdf");
  auto differ = CompareWithBaseline(mutant, base);
  ASSERT_TRUE(differ.ok()) << differ.error().message;
  EXPECT_GT(differ->rejected, 0u);
  EXPECT_NE(FormatAbComparison(*differ, "base.json").find("A/B VERDICT: DIFFER"), std::string::npos);
}

TEST(AbTest, ReportsOfOtherSeedsAreNotComparable) {
  const CampaignReport a = SmallSmokeReport("exact");
  CampaignReport b = a;
  for (CaseResult& c : b.cases) c.row_seed += 1;
  auto ab = CompareWithBaseline(a, b);
  ASSERT_FALSE(ab.ok());
  EXPECT_EQ(ab.error().code, ErrorCode::kInvalidArgument);
}

}  // namespace
}  // namespace samplecheck::harness
