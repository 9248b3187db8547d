// The consistency of stored reports (campaign/report_check.h) as report readers apply it: a report that contradicts
// itself is refused naming the field, a p-value that is not a probability is never a pass, --max-draws below the
// target power is no pass, a journal line edited by hand is refused. Deterministic (fixed seeds).
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>

#include "quiet_campaign.h"
#include "samplecheck/campaign/campaign.h"
#include "samplecheck/campaign/report_check.h"
#include "samplecheck/checks/case_spec.h"
#include "samplecheck/report/journal.h"
#include "samplecheck/report/report.h"
#include "samplecheck/suites/suite.h"

namespace samplecheck::harness {
namespace {

using nlohmann::json;

// Three row cases of smoke under --max-draws 30000.
CampaignReport ThreeCases() {
  auto suite = LoadSuite("smoke");
  EXPECT_TRUE(suite.ok());
  suite->cases.resize(3);
  suite->generated = 0;
  CampaignOptions options;
  options.max_draws = 30000;
  return RunQuietCampaign(*suite, options);
}

std::string Refusal(const json& j) {
  auto r = ReportFromJson(j);
  return r.ok() ? "" : r.error().message;
}

TEST(ReportCheckTest, AnUntouchedReportIsRead) {
  const json j = ReportToJson(ThreeCases());
  EXPECT_EQ(Refusal(j), "");
}

TEST(ReportCheckTest, CountsTheStatisticsWereNotComputedFromAreRefused) {
  json j = ReportToJson(ThreeCases());
  json& observed = j["cases"][0]["binnings"][0]["observed"];
  const uint64_t total = [&] { uint64_t t = 0; for (const json& o : observed) t += o.get<uint64_t>(); return t; }();
  for (json& o : observed) o = 0;
  observed[0] = total;  // every draw on one cell: the stored X^2 and p-value are not what these counts give
  EXPECT_NE(Refusal(j).find("its observed and expected cells give"), std::string::npos) << Refusal(j);
}

TEST(ReportCheckTest, ANegativeCountIsRefusedNotWrapped) {
  json j = ReportToJson(ThreeCases());
  j["cases"][1]["binnings"][0]["observed"][0] = -5;
  EXPECT_NE(Refusal(j).find("whole number >= 0"), std::string::npos) << Refusal(j);
  j = ReportToJson(ThreeCases());
  j["cases"][1]["draws"] = -5;
  EXPECT_NE(Refusal(j).find("/cases/1/draws must be a whole number"), std::string::npos) << Refusal(j);
}

TEST(ReportCheckTest, PValuesOutsideZeroOneAreRefused) {
  for (const json& p : {json("nan"), json(5.0), json("inf"), json(-0.5)}) {
    json j = ReportToJson(ThreeCases());
    j["cases"][0]["binnings"][0]["pearson_p"] = p;
    EXPECT_NE(Refusal(j), "") << p;
  }
}

TEST(ReportCheckTest, CutDuplicatedAndFloorlessReportsAreRefused) {
  json cut = ReportToJson(ThreeCases());
  cut["cases"].erase(1);
  EXPECT_NE(Refusal(cut).find("cases are missing"), std::string::npos) << Refusal(cut);
  json dup = ReportToJson(ThreeCases());
  dup["cases"][2] = dup["cases"][0];
  EXPECT_NE(Refusal(dup).find("appears twice"), std::string::npos) << Refusal(dup);
  json floors = ReportToJson(ThreeCases());
  floors["evidence"]["min_draws"] = 0;
  EXPECT_NE(Refusal(floors).find("at least 1"), std::string::npos) << Refusal(floors);
}

TEST(ReportCheckTest, SupportViolationsAreTheTokensListed) {
  json j = ReportToJson(ThreeCases());
  j["cases"][0]["support"]["tokens"] = json::array({{{"token", 3}, {"count", 7}}});  // violations stays 0
  EXPECT_NE(Refusal(j).find("support.violations = 0"), std::string::npos) << Refusal(j);
}

TEST(ReportCheckTest, APValueThatIsNotAProbabilityMakesItsCaseAnErrorNeverAPass) {
  CampaignReport r = ThreeCases();
  r.evidence.allow_underpowered = true;  // --max-draws 30000 is below these cases' plans
  ASSERT_TRUE(r.Passed());
  for (CheckOutcome& o : r.cases[0].outcomes) {
    if (o.kind == CheckOutcome::Kind::kPValue) o.p_value = NAN;
  }
  ApplyCampaignVerdict(r);
  EXPECT_EQ(r.cases[0].status, CaseStatus::kError);
  EXPECT_NE(r.cases[0].reason.find("not a probability"), std::string::npos) << r.cases[0].reason;
  EXPECT_FALSE(r.Passed());
  EXPECT_EQ(r.cases[1].status, CaseStatus::kPass);  // the others are judged as before
}

TEST(ReportCheckTest, MaxDrawsBelowTheTargetPowerIsNoPassUnlessAllowed) {
  CampaignReport r = ThreeCases();  // --max-draws 30000: below the planned draws of these cases
  ASSERT_TRUE(r.max_draws_override.has_value());
  r.evidence.allow_underpowered = false;
  ASSERT_FALSE(r.UnderpoweredCases().empty());
  EXPECT_FALSE(r.Passed());
  r.evidence.allow_underpowered = true;
  EXPECT_TRUE(r.Passed());
  r.evidence.allow_underpowered = false;
  r.max_draws_override.reset();  // the suite's own caps: its design, not a cut
  EXPECT_TRUE(r.UnderpoweredCases().empty());
}

// Issue 44: a recorded plan's draws below the suite's plan are a cut whatever the report's --max-draws (none here)
// and the plan's "why" say; the mark survives the report's JSON, and is written only where it is set.
TEST(ReportCheckTest, ARecordedCutIsUnderpoweredWithoutAMaxDraws) {
  CampaignReport r = ThreeCases();
  r.max_draws_override.reset();
  r.evidence.allow_underpowered = false;
  ASSERT_TRUE(r.UnderpoweredCases().empty());
  ASSERT_FALSE(ReportToJson(r)["cases"][0]["plan"].contains("recorded_cut"));
  for (CaseResult& c : r.cases) c.recorded_cut = true;
  ASSERT_FALSE(r.UnderpoweredCases().empty());
  EXPECT_FALSE(r.Passed());
  const std::vector<std::string> problems = r.VerdictProblems();
  ASSERT_FALSE(problems.empty());
  EXPECT_NE(problems.back().find("under a recorded plan that gives fewer draws than this suite plans"),
            std::string::npos)
      << problems.back();
  Result<CampaignReport> back = ReportFromJson(ReportToJson(r));
  ASSERT_TRUE(back.ok()) << back.error().message;
  EXPECT_TRUE(back->cases[0].recorded_cut);
  EXPECT_FALSE(back->Passed());
  r.evidence.allow_underpowered = true;
  EXPECT_TRUE(r.Passed());
}

TEST(ReportCheckTest, CaseSpecDifferenceNamesWhatChanged) {
  const CampaignReport r = ThreeCases();
  CaseResult edited = r.cases[0];
  EXPECT_EQ(CaseSpecDifference(r.cases[0], edited), "");
  EXPECT_EQ(CaseSpecHash(r.cases[0]), CaseSpecHash(edited));
  edited.params.top_k = 7;
  EXPECT_NE(CaseSpecDifference(r.cases[0], edited).find("its parameters"), std::string::npos);
  EXPECT_NE(CaseSpecHash(r.cases[0]), CaseSpecHash(edited));
}

TEST(ReportCheckTest, AJournalLineEditedByHandIsRefused) {
  const CampaignReport r = ThreeCases();
  const std::filesystem::path path =
      std::filesystem::temp_directory_path() / ("report_check_test." + std::to_string(::getpid()) + ".journal");
  ASSERT_TRUE(StartJournal(path, {r.suite, r.suite_source, "exact", r.profile, r.seed, r.draw_seed, r.tv, 30000, "",
                                  std::nullopt})
                  .ok());
  ASSERT_TRUE(AppendToJournal(path, r.cases[0]).ok());
  ASSERT_TRUE(LoadJournal(path).ok());
  std::string text;
  {
    std::ifstream in(path);
    text.assign(std::istreambuf_iterator<char>(in), {});
  }
  const std::string from = "\"top_k\":-1";
  const size_t at = text.find(from);
  ASSERT_NE(at, std::string::npos) << text.substr(0, 400);
  text.replace(at, from.size(), "\"top_k\":9");
  std::ofstream(path) << text;
  auto loaded = LoadJournal(path);
  ASSERT_FALSE(loaded.ok());
  EXPECT_NE(loaded.error().message.find("spec hash"), std::string::npos) << loaded.error().message;
  EXPECT_FALSE(CheckNoPendingJournal(path).ok());
  std::filesystem::remove(path);
  EXPECT_TRUE(CheckNoPendingJournal(path).ok());
}

}  // namespace
}  // namespace samplecheck::harness
