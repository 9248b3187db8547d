// The case checks as a list (checks.h): every check writes exactly its report keys, reads its outcomes back from
// them, and rejects malformed fields with kParse naming the check; the verdict reads the outcomes generically. The
// families have their tests beside this file: checks_<family>_test.cpp.
#include <gtest/gtest.h>

#include <set>

#include "case_fixture.h"
#include "samplecheck/campaign/campaign.h"
#include "samplecheck/checks/checks.h"

namespace samplecheck::harness {
namespace {

using testing::Drawn;
using testing::DrawnCase;

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

}  // namespace
}  // namespace samplecheck::harness
