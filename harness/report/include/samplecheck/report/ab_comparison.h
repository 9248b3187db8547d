// A/B of two reports (`samplecheck gate --baseline`): the two-sample chi-square of every case against the same case
// of a baseline report, on identical bins (statistics.md 5.8). Detects a regression between two kernel versions;
// it does not replace the one-sample test against the exact reference.
//   alpha:      the report's campaign alpha, Holm over the compared cases, Bonferroni over each case's binnings.
//   assumption: both reports come from the same suite, seed and draw budgets (same p0, same N), so every compared
//               binning has the same cells; cases whose cells differ are "not comparable", never compared.
#pragma once

#include <string>
#include <vector>

#include "samplecheck/checks/result.h"
#include "samplecheck/core/error.h"

namespace samplecheck::harness {

struct AbCase {
  std::string name;
  std::string note;       // why not compared
  double p_value = 1.0;   // Bonferroni over the compared binnings
  double statistic = 0.0;
  uint64_t dof = 0;
  std::string binning;    // binning of the smallest p
  bool compared = false;
  bool rejected = false;
  double holm = 1.0;
};

struct AbComparison {
  std::string baseline_sampler;
  uint64_t baseline_seed = 0;
  double alpha = 0.0;
  std::vector<AbCase> cases;  // in the report's case order
  size_t compared = 0;
  size_t rejected = 0;
  bool holm_ok = true;

  bool Same() const { return holm_ok && rejected == 0; }
};

// kInvalidArgument when no case of `report` is comparable with `baseline` (same suite, seed and draw budgets are
// needed).
Result<AbComparison> CompareWithBaseline(const CampaignReport& report, const CampaignReport& baseline);

// The A/B block of the gate's output, ending with "A/B VERDICT: SAME" or "A/B VERDICT: DIFFER".
std::string FormatAbComparison(const AbComparison& ab, const std::string& baseline_path);

}  // namespace samplecheck::harness
