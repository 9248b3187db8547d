// RunGate (harness/gate): the campaign and the property suites against one sampler, one report and one verdict.
// Fixed seeds throughout (campaign seed 1, RapidCheck seed 20260401): deterministic. The smoke campaign's
// false-alarm rate on a correct sampler is <= its alpha 1e-4 (Holm); a property cannot fail on a correct sampler.
#include <gtest/gtest.h>

#include <string>

#include "samplecheck/gate/gate.h"

namespace samplecheck::harness {
namespace {

GateOptions Smoke(const std::string& sampler, bool properties) {
  GateOptions o;
  o.suite = "smoke";
  o.campaign.sampler_spec = sampler;
  o.campaign.seed = 1;
  o.campaign.progress = Progress::Mode::kQuiet;
  o.properties = properties;
  o.property_cases = 20;
  return o;
}

TEST(GateTest, ExactPassesTheCampaignAndEveryProperty) {
  auto result = RunGate(Smoke("exact", true));
  ASSERT_TRUE(result.ok()) << result.error().message;
  EXPECT_TRUE(result->Passed()) << FormatGateSummary(*result, "");
  EXPECT_TRUE(result->report.properties_run);
  ASSERT_FALSE(result->report.properties.empty());
  for (const PropertyOutcome& p : result->report.properties) EXPECT_TRUE(p.ok) << p.name << ": " << p.message;
  EXPECT_EQ(result->report.property_seed, 20260401u);
  EXPECT_FALSE(result->ab.has_value());
  const std::string summary = FormatGateSummary(*result, "");
  EXPECT_NE(summary.find("properties (seed 20260401): "), std::string::npos) << summary;
  EXPECT_NE(summary.find("VERDICT: PASS"), std::string::npos) << summary;
}

// minp-zero-clamp (min_p = 0 clamped to 1e-6) loses mass far below the smoke campaign's TV 0.01: the campaign alone
// passes it, the property suites do not (kept-set-complete, all-filters-disabled-is-softmax), and the gate's one
// verdict fails with a replay line.
TEST(GateTest, APropertyFailureFailsTheOneVerdict) {
  auto campaign_only = RunGate(Smoke("mutant:minp-zero-clamp", false));
  ASSERT_TRUE(campaign_only.ok()) << campaign_only.error().message;
  EXPECT_TRUE(campaign_only->Passed());
  EXPECT_FALSE(campaign_only->report.properties_run);

  auto gated = RunGate(Smoke("mutant:minp-zero-clamp", true));
  ASSERT_TRUE(gated.ok()) << gated.error().message;
  EXPECT_FALSE(gated->Passed());
  size_t failed = 0;
  for (const PropertyOutcome& p : gated->report.properties) {
    if (p.ok) continue;
    ++failed;  // which property sees it first depends on the cases drawn (kept-set-complete at 100 per property)
    EXPECT_NE(p.replay.find("--reproduce "), std::string::npos) << p.name << ": " << p.replay;
  }
  EXPECT_GE(failed, 1u);
  const std::string summary = FormatGateSummary(*gated, "");
  EXPECT_NE(summary.find("FAIL    property "), std::string::npos) << summary;
  EXPECT_NE(summary.find("VERDICT: FAIL"), std::string::npos) << summary;
}

TEST(GateTest, BadInputsAreErrorsNotVerdicts) {
  GateOptions missing = Smoke("exact", false);
  missing.baseline = "/nonexistent/baseline.json";
  auto r = RunGate(missing);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("/nonexistent/baseline.json"), std::string::npos) << r.error().message;

  GateOptions suite = Smoke("exact", false);
  suite.suite = "no-such-suite";
  r = RunGate(suite);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("no-such-suite"), std::string::npos) << r.error().message;

  GateOptions sampler = Smoke("no-such-sampler", true);
  r = RunGate(sampler);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("no-such-sampler"), std::string::npos) << r.error().message;
}

}  // namespace
}  // namespace samplecheck::harness
