// One case of a sampler campaign before its draws (prepare.cpp; docs/campaigns.md): its row (perturbed when fp32
// could flip a decision), its reference, its budget and draw plan, and, once drawn, its evaluation by the checks.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "samplecheck/checks/evidence.h"
#include "samplecheck/checks/result.h"
#include "samplecheck/core/error.h"
#include "samplecheck/reference/profile.h"
#include "samplecheck/stats/binning.h"
#include "samplecheck/suites/suite.h"

namespace samplecheck::harness {

// Tests per case assumed by the planner's alpha split: head, tail, hash Pearson and the head max-|z|.
inline constexpr uint32_t kPlannedTestsPerCase = 4;

// A case ready to draw: its row (perturbed if needed), reference and plan. Built before any draw so that input
// errors (unreadable .npy, invalid row) stop the campaign with exit 2 before it starts.
struct PreparedCase {
  CaseResult result;  // identity, plan and (when skipped) status and reason
  std::vector<float> row;
  std::vector<double> p0;         // dense reference probabilities (0 on excluded tokens)
  std::vector<int32_t> excluded;  // ambiguous tokens set apart when the case is conditioned
  stats::BinningPlan binning;
  bool skip = false;
  bool decode = false;  // a row of a decode case: drawn one call per step (src/stream_draw.h)
  // A refusal case: a corner case whose parameters the judged profile calls invalid, judged by one sampling call
  // that must fail with an error naming the field (check refusal), never skipped.
  bool refusal = false;
  std::string refusal_field{}, refusal_value{};
};

struct CaseBudget {
  double alpha_per_test = 1e-6;
  double tv = 1e-3;
  double power = 0.99;
  uint64_t min_draws = 100000;
  uint64_t max_draws = uint64_t{1} << 24;
  AmbiguousAction ambiguous = AmbiguousAction::kPerturb;
  double equivalence_eps = 0.0;       // CampaignOptions::equivalence_eps
  double equivalence_chi2_eps = 0.0;  // CampaignOptions::equivalence_chi2_eps
};

// Steps 1-3 for one case. Errors are input errors (the row cannot be built or the reference cannot be computed).
// case_seed makes the row (and its perturbation); draw_case_seed the sampler's seed.
Result<PreparedCase> PrepareCase(const CaseSpec& spec, const Profile& profile, uint64_t case_seed,
                                 uint64_t draw_case_seed, const CaseBudget& budget);

// Step 4 given the token histogram (size V), the invalid draws and the sampler's error ("" when none): runs every
// check of checks.h on the case. The case's status is set by ApplyCampaignVerdict (Holm needs every case); a check
// that breaks an invariant makes the case an error.
void EvaluateCase(PreparedCase& prepared, const std::vector<uint64_t>& histogram, uint64_t invalid_draws,
                  const std::string& sampler_error = "", const struct BatchEvidence* batch = nullptr,
                  const struct AgreementEvidence* agreement = nullptr, const struct StreamEvidence* stream = nullptr);

// Step 2 alone: the draws of a prepared case under `budget` (cells of the head binning at the cap, the draws for
// the budget's TV at power, clamped to [min_draws, max_draws]), its binning and its achieved power. PrepareCase
// calls it; the campaign calls it again to give every case full power when the suite's time budget allows.
Status PlanCaseDraws(PreparedCase& prepared, const CaseBudget& budget);

// Step 2 at a recorded draw count (--plan-from): the binning and achieved power at exactly `draws`.
Status PlanCaseAtDraws(PreparedCase& prepared, uint64_t draws);

// The cases of `suite` a sampler campaign under `options` prepares (its seed, --generated, --case in
// options.only_cases, judged as `profile`), in suite order, exactly as it plans them (the whole suite's alpha
// split; a perturbed row as it is judged): `samplecheck explain --suite S --case NAME`. kInvalidArgument naming an
// unknown --case and its nearest names.
Result<std::vector<PreparedCase>> PrepareSuiteCases(const Suite& suite, const struct CampaignOptions& options,
                                                    const std::string& profile);
// The names a --case of `suite` may give: every entry (row case, batch case) and every row of a batch case.
Result<std::vector<std::string>> SuiteCaseNames(const Suite& suite, const struct CampaignOptions& options,
                                                const std::string& profile);

}  // namespace samplecheck::harness
