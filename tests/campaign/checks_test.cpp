// The case checks as objects (checks.h): each writes exactly its report keys, reads its outcomes back from them,
// and rejects malformed fields with kParse naming the check; the verdict reads the outcomes generically.
#include <gtest/gtest.h>

#include <set>

#include "case_fixture.h"
#include "samplecheck/campaign/campaign.h"
#include "samplecheck/campaign/checks.h"

namespace samplecheck::harness {
namespace {

// A top-k case of exact draws (fixed seeds).
struct DrawnCase {
  PreparedCase pc;
  std::vector<uint64_t> histogram;
};

DrawnCase Drawn(uint64_t draws = 200000) {
  SamplingParams params;
  params.top_k = 50;
  DrawnCase d{testing::PrepareTestCase(R"({"kind":"gaussian","vocab":1000,"sigma":2})", params, draws), {}};
  d.histogram = testing::ExactHistogram(d.pc);
  return d;
}

TEST(CaseChecksTest, EveryCheckWritesExactlyItsReportKeysAndNamesAreUnique) {
  DrawnCase d = Drawn();
  const CaseEvidence evidence{d.pc.result, d.pc.p0, d.pc.binning, d.histogram, 0, ""};
  std::set<std::string> names, keys;
  for (const auto& check : CaseChecks()) {
    EXPECT_TRUE(names.insert(std::string(check->Name())).second) << check->Name();
    EXPECT_EQ(FindCaseCheck(check->Name()), check.get());
    EXPECT_FALSE(check->Summary().empty()) << check->Name();
    const nlohmann::json fields = check->Evaluate(evidence);
    std::set<std::string> written;
    for (const auto& [key, value] : fields.items()) written.insert(key);
    const std::vector<std::string> declared = check->ReportKeys();
    EXPECT_EQ(written, std::set<std::string>(declared.begin(), declared.end())) << check->Name();
    for (const std::string& k : declared) EXPECT_TRUE(keys.insert(k).second) << "key " << k << " written twice";
  }
  EXPECT_EQ(FindCaseCheck("no-such-check"), nullptr);
}

TEST(CaseChecksTest, ExactDrawsGiveOnePValuePerBinningPlusMaxZAndNoHardFailure) {
  DrawnCase d = Drawn();
  EvaluateCase(d.pc, d.histogram, 0);
  const CaseResult& r = d.pc.result;
  EXPECT_EQ(r.HardViolations(), 0u);
  EXPECT_EQ(r.OutcomesOf("pearson").size(), StoredBinnings(r).size());
  ASSERT_EQ(r.OutcomesOf("max-abs-z").size(), 1u);
  EXPECT_EQ(r.OutcomesOf("max-abs-z")[0]->test, "max-|z| token " + std::to_string(StoredMaxAbsZTest(r).token));
  // tests counts every p-value outcome, whichever check gave it (a new check adds its own without a change here).
  size_t p_values = 0;
  for (const CheckOutcome& o : r.outcomes) p_values += o.kind == CheckOutcome::Kind::kPValue;
  EXPECT_EQ(r.tests, p_values);
  EXPECT_GE(r.tests, r.OutcomesOf("pearson").size() + 1);
  for (const CheckOutcome& o : r.outcomes) EXPECT_FALSE(o.Fails()) << o.test << ": " << o.finding;
}

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

TEST(CaseChecksTest, MalformedFieldsAreParseErrorsNamingTheCheck) {
  DrawnCase d = Drawn();
  EvaluateCase(d.pc, d.histogram, 0);
  for (const auto& check : CaseChecks()) {
    for (const std::string& key : check->ReportKeys()) {
      nlohmann::json fields = nlohmann::json::object();
      for (const std::string& k : check->ReportKeys()) fields[k] = d.pc.result.checks[k];
      fields[key] = "garbage";
      auto outcomes = check->Outcomes(fields, d.pc.result);
      ASSERT_FALSE(outcomes.ok()) << check->Name() << " accepted a garbage " << key;
      EXPECT_EQ(outcomes.error().code, ErrorCode::kParse);
      EXPECT_NE(outcomes.error().message.find("check " + std::string(check->Name())), std::string::npos)
          << outcomes.error().message;
    }
  }
}

TEST(CaseChecksTest, ReadingTheFieldsBackGivesTheSameOutcomes) {
  DrawnCase d = Drawn();
  EvaluateCase(d.pc, d.histogram, 0);
  nlohmann::json case_object = d.pc.result.checks;
  CaseResult back = d.pc.result;
  ASSERT_TRUE(ReadCaseChecks(case_object, back).ok());
  ASSERT_EQ(back.outcomes.size(), d.pc.result.outcomes.size());
  for (size_t i = 0; i < back.outcomes.size(); ++i) {
    EXPECT_EQ(back.outcomes[i].test, d.pc.result.outcomes[i].test);
    EXPECT_EQ(back.outcomes[i].p_value, d.pc.result.outcomes[i].p_value);
    EXPECT_EQ(back.outcomes[i].draws_for_power, d.pc.result.outcomes[i].draws_for_power);
  }
  case_object.erase("max_abs_z");
  const Status missing = ReadCaseChecks(case_object, back);
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.error().message.find("max_abs_z"), std::string::npos) << missing.error().message;
}

TEST(CaseChecksTest, JsonNumbersRoundTripInfinityAndNan) {
  EXPECT_EQ(ReadJsonNumber(JsonNumber(1.5)), 1.5);
  EXPECT_EQ(ReadJsonNumber(JsonNumber(INFINITY)), INFINITY);
  EXPECT_EQ(ReadJsonNumber(JsonNumber(-INFINITY)), -INFINITY);
  EXPECT_TRUE(std::isnan(ReadJsonNumber(JsonNumber(NAN))));
  EXPECT_THROW(ReadJsonNumber(nlohmann::json("1.5")), std::exception);
}

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
