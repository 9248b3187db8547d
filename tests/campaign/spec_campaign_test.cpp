// Speculative-decoding campaigns (spec_campaign.h): the built-in spec suites parse; a small suite passes with the
// exact verifier and its report carries the spec checks; mutants of three different classes fail it, each by the
// check built for its class; bad suites are parse errors naming the field. Fixed seeds: deterministic.
#include "samplecheck/campaign/spec_campaign.h"

#include <gtest/gtest.h>

#include <string>

namespace samplecheck::harness {
namespace {

const char* kSuite = R"({
  "schema": "samplecheck-spec-suite/1", "name": "unit", "seed": 3, "alpha": 1e-4, "tv": 0.05,
  "max_trials": 65536, "min_trials": 20000, "batch_max_trials": 2048,
  "cases": [
    {"name": "far", "target": {"kind": "gaussian", "vocab": 100, "sigma": 2.0}, "g": 2, "params": {"top_k": 20},
     "draft": {"form": "probabilities", "relation": "far", "row": {"kind": "gaussian", "sigma": 2.0}}},
    {"name": "batch", "batch": [
      {"target": {"kind": "gaussian", "vocab": 80, "sigma": 2.0}, "g": 2, "params": {"temperature": 0.0},
       "draft": {"form": "probabilities", "relation": "far"}},
      {"target": {"kind": "gaussian", "vocab": 80, "sigma": 2.0}, "g": 1,
       "draft": {"form": "one-hot", "relation": "close", "noise": 0.5}}]}
  ]})";

Result<CampaignReport> RunUnitSuite(const std::string& verifier) {
  auto suite = ParseSpecSuite(nlohmann::json::parse(kSuite), "unit");
  EXPECT_TRUE(suite.ok()) << suite.error().message;
  SpecCampaignOptions o;
  o.verifier_spec = verifier;
  o.quiet = true;
  o.jobs = 1;
  return RunSpecCampaign(*suite, o);
}

bool FailedBy(const CampaignReport& r, const std::string& check) {
  for (const CaseResult& c : r.cases) {
    if (c.status != CaseStatus::kFail) continue;
    for (const CheckOutcome& o : c.outcomes) {
      if (o.check == check && (o.Fails() || (o.kind == CheckOutcome::Kind::kPValue && o.p_value < 1e-6))) return true;
    }
  }
  return false;
}

TEST(SpecCampaign, BuiltinSuitesParse) {
  for (const BuiltinSuiteInfo& s : BuiltinSpecSuites()) {
    EXPECT_EQ(s.description.rfind("BROKEN", 0), std::string::npos) << s.name << ": " << s.description;
    EXPECT_GT(s.cases, 0u);
  }
  EXPECT_TRUE(IsBuiltinSpecSuite("spec-standard"));
  EXPECT_EQ(LoadSpecSuite("no-such-suite").error().code, ErrorCode::kInvalidArgument);
}

TEST(SpecCampaign, ExactVerifierPassesWithEverySpecCheck) {
  auto report = RunUnitSuite("exact");
  ASSERT_TRUE(report.ok()) << report.error().message;
  EXPECT_TRUE(report->Passed()) << report->VerdictProblems().front();
  bool rejection = false, scripted = false, batch = false, determinism = false, residual = false;
  for (const CaseResult& c : report->cases) {
    for (const CheckOutcome& o : c.outcomes) {
      rejection |= o.check == "spec-rejection";
      scripted |= o.check == "spec-scripted";
      batch |= o.check == "spec-batch-invariance";
      determinism |= o.check == "spec-determinism";
    }
    residual |= c.name.find("/res") != std::string::npos;
  }
  EXPECT_TRUE(rejection && scripted && batch && determinism && residual);
}

TEST(SpecCampaign, MutantsFailByTheCheckOfTheirClass) {
  auto coin = RunUnitSuite("mutant:spec-coin-edge");
  ASSERT_TRUE(coin.ok());
  EXPECT_TRUE(FailedBy(*coin, "spec-scripted"));
  auto greedy = RunUnitSuite("mutant:spec-greedy-mixed-batch");
  ASSERT_TRUE(greedy.ok());
  EXPECT_TRUE(FailedBy(*greedy, "support") && FailedBy(*greedy, "spec-batch-invariance"));
  auto residual = RunUnitSuite("mutant:spec-residual-from-p");
  ASSERT_TRUE(residual.ok());
  EXPECT_TRUE(FailedBy(*residual, "support") || FailedBy(*residual, "pearson"));
}

TEST(SpecCampaign, BadSuitesAreParseErrors) {
  auto j = nlohmann::json::parse(kSuite);
  j["cases"][0]["g"] = 40;
  auto bad = ParseSpecSuite(j, "unit");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message.find("g = 40"), std::string::npos) << bad.error().message;
  j = nlohmann::json::parse(kSuite);
  j["cases"][0]["draft"]["form"] = "bf16";
  bad = ParseSpecSuite(j, "unit");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message.find("allowed: probabilities, logits, one-hot"), std::string::npos);
}

}  // namespace
}  // namespace samplecheck::harness
