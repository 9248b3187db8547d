// The stream checks of speculative-decoding campaigns: the exact verifier passes them (its requests' length cases carry
// a seed test, a fresh-verifier comparison and the repeats of adjacent trials); a verifier whose coins ignore the seed
// fails the seed test, one that reuses keys across steps fails the repeats of adjacent trials, one that replays a
// captured graph's counters fails a batch (decode) case. Fixed seeds: deterministic.
#include <gtest/gtest.h>

#include <string>

#include "samplecheck/campaign/spec_campaign.h"

namespace samplecheck::harness {
namespace {

const char* kSuite = R"({
  "schema": "samplecheck-spec-suite/1", "name": "unit", "seed": 5, "alpha": 1e-4, "tv": 0.05,
  "max_trials": 65536, "min_trials": 20000, "batch_max_trials": 4096,
  "cases": [
    {"name": "close", "target": {"kind": "gaussian", "vocab": 200, "sigma": 2.0}, "g": 3,
     "draft": {"form": "probabilities", "relation": "close", "noise": 0.5}},
    {"name": "steps", "batch": [
      {"target": {"kind": "gaussian", "vocab": 100, "sigma": 2.0}, "g": 2,
       "draft": {"form": "probabilities", "relation": "close", "noise": 0.5}},
      {"target": {"kind": "gaussian", "vocab": 100, "sigma": 2.0}, "g": 2,
       "draft": {"form": "one-hot", "relation": "close", "noise": 0.5}}]}
  ]})";

CampaignReport RunSpec(const std::string& verifier) {
  auto suite = ParseSpecSuite(nlohmann::json::parse(kSuite), "unit");
  EXPECT_TRUE(suite.ok()) << suite.error().message;
  SpecCampaignOptions o;
  o.verifier_spec = verifier;
  o.quiet = true;
  o.jobs = 1;
  auto report = RunSpecCampaign(*suite, o);
  EXPECT_TRUE(report.ok()) << report.error().message;
  return report.ok() ? *report : CampaignReport{};
}

// The smallest p-value (or a hard failure: 0) of `check` over the report's cases.
double Smallest(const CampaignReport& r, const std::string& check) {
  double p = 1.0;
  for (const CaseResult& c : r.cases) {
    for (const CheckOutcome* o : c.OutcomesOf(check)) p = std::min(p, o->Fails() ? 0.0 : o->p_value);
  }
  return p;
}

TEST(SpecStream, ExactVerifierPassesTheStreamChecks) {
  const CampaignReport r = RunSpec("exact");
  EXPECT_TRUE(r.Passed()) << r.VerdictProblems().front();
  size_t lengths = 0;
  for (const CaseResult& c : r.cases) {
    if (c.name.find("/length") == std::string::npos) continue;
    ++lengths;
    EXPECT_EQ(c.OutcomesOf("seed-dependence").size(), 1u) << c.name;
    EXPECT_EQ(c.OutcomesOf("fresh-handle").size(), 1u) << c.name;
    EXPECT_EQ(c.OutcomesOf("step-repeats").size(), 1u) << c.name;
    EXPECT_EQ(c.checks["seed_dependence"]["power_if_ignored"], 1) << c.name;
  }
  EXPECT_EQ(lengths, 3u);
  EXPECT_GT(Smallest(r, "seed-dependence"), 1e-6);
  EXPECT_GT(Smallest(r, "step-repeats"), 1e-6);
}

TEST(SpecStream, StreamFaultsFailByTheirCheck) {
  EXPECT_LT(Smallest(RunSpec("mutant:spec-seed-ignored"), "seed-dependence"), 1e-20);
  EXPECT_LT(Smallest(RunSpec("mutant:spec-step-key-reuse"), "step-repeats"), 1e-10);
  const CampaignReport graph = RunSpec("mutant:spec-graph-baked-coins");
  EXPECT_FALSE(graph.Passed());
  EXPECT_LT(Smallest(graph, "step-repeats"), 1e-10);
}

TEST(SpecStream, ALossyVerifierIsMeasuredNotFailed) {
  const CampaignReport r = RunSpec("lossy:mutant:spec-residual-unnormalized");
  EXPECT_TRUE(r.lossy);
  EXPECT_EQ(r.Count(CaseStatus::kFail), 0u);  // its p-values measure; no hard check fails
  ASSERT_FALSE(r.VerdictProblems().empty());
  EXPECT_NE(r.VerdictProblems().front().find("lossy"), std::string::npos) << r.VerdictProblems().front();
}

}  // namespace
}  // namespace samplecheck::harness
