// The gate of a kernel change, in one call: the campaign of a suite (row cases, batch cases, generated cases) and
// the RapidCheck property suites against the same sampler, and, with a baseline report, the A/B test: one report,
// one summary, one verdict (`samplecheck verify`, what a CI job runs before merging a sampler change).
#pragma once

#include <optional>
#include <string>

#include "samplecheck/campaign/campaign.h"
#include "samplecheck/core/error.h"
#include "samplecheck/report/ab_comparison.h"

namespace samplecheck::harness {

struct GateOptions {
  std::string suite = "standard";     // the campaign's suite
  CampaignOptions campaign;           // sampler, profile, seeds, evidence, journal hooks, ...
  bool properties = true;             // run the property suites too
  uint64_t property_seed = 20260401;  // RapidCheck seed (fixed in CI)
  int property_cases = 100;           // cases per property
  std::string baseline;               // a baseline report for the A/B test ("" none)
};

struct GateResult {
  CampaignReport report;              // the campaign, with the properties' outcomes in report.properties
  std::optional<AbComparison> ab;     // with a baseline
  bool Passed() const { return report.Passed() && (!ab || ab->Same()); }
};

// Errors are those of the campaign (input, sampler), of the property suite's setup (unknown profile) and of the
// baseline (unreadable, not comparable): the CLI exits 2 on them. A property that fails fails the verdict.
Result<GateResult> RunGate(const GateOptions& options);

// The summary of the campaign, the property line and the A/B block, then the one verdict line.
std::string FormatGateSummary(const GateResult& result, const std::string& baseline_path);

}  // namespace samplecheck::harness
