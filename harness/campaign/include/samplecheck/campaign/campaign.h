// Campaigns: run every case of a suite against a sampler and judge it against the exact reference.
//
// One case, step by step (docs/campaigns.md has the reasoning):
//   1. the row: MakeRow(row spec, row seed); the reference: ComputeDistribution(row, params, judged profile).
//      Params invalid under the judged profile: the case is skipped (reported). Ambiguous tokens: the row is
//      jittered and the reference recomputed (AmbiguousAction::kPerturb), else the draws are judged conditioned on
//      the unambiguous tokens (kCondition), or the case is skipped (kSkip); a case is never judged on a decision
//      that fp32 arithmetic could flip.
//   2. the draws: PlanDrawsForTotalVariation(tv, alpha_per_test / 2, power, cells of the head binning) (the Pearson
//      test is two-sided: half its alpha for a fit too poor, half for one too good to be random), clamped to
//      [min_draws, max_draws]; alpha_per_test = campaign alpha / (cases x 4 tests). The achieved power at the
//      final draw count is reported, honestly below the target when the cap binds.
//   3. the binnings: head / tail / hash from p0 and the draw count only (stats::PlanBinnings), never from counts.
//   4. the checks: support violations (draws on tokens of p0 = 0, invalid tokens) fail the case outright, apart
//      from any p-value; Pearson X^2 on each usable binning (G reported beside it); max-|z| over the head tokens.
//      The case's p-value is Bonferroni over its tests; the campaign applies Holm over the cases at alpha.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "samplecheck/campaign/progress.h"
#include "samplecheck/checks/result.h"
#include "samplecheck/reference/distribution.h"
#include "samplecheck/reference/profile.h"
#include "samplecheck/samplers/sampler.h"
#include "samplecheck/stats/binning.h"
#include "samplecheck/suites/case_seed.h"
#include "samplecheck/suites/suite.h"

namespace samplecheck::harness {

// Tests per case assumed by the planner's alpha split: head, tail, hash Pearson and the head max-|z|.
inline constexpr uint32_t kPlannedTestsPerCase = 4;

// One part of a campaign split over processes (run --shard I/N, docs/scale.md).
struct ShardSpec {
  uint32_t index = 0;  // 0-based
  uint32_t count = 1;
  std::string source;  // where it came from: "--shard", "GTEST_SHARD_INDEX", "SLURM_ARRAY_TASK_ID", ...
};

// What every campaign kind takes (sampler campaigns, speculative-decoding campaigns: spec_campaign.h): the judged
// profile, the seeds, the TV, the workers, the report's stamp, the verdict's floors and a stop flag.
struct CampaignBasics {
  std::string profile;                  // judged profile; "" = the suite's, else the sampler's, else vllm
  std::optional<uint64_t> seed;         // overrides the suite's
  std::optional<double> tv;             // overrides the suite's detectable TV
  unsigned jobs = 0;                    // parallel work items; 0 = one per core for samplers (verifiers) whose
                                        // instances may run in parallel (Capabilities::parallel_instances: exact,
                                        // CPU mutants), else 1
  std::string command_line;
  std::string version;                  // samplecheck version for the report
  EvidencePolicy evidence;              // what the verdict needs besides no failure (result.h)
  // Set (e.g. by a signal handler) to stop: no work item starts after it, a case being drawn stops at its next
  // chunk and is left out, and the report comes back marked interrupted with the cases that finished.
  const std::atomic<bool>* stop = nullptr;
};

struct CampaignOptions : CampaignBasics {
  std::string sampler_spec = "exact";
  std::optional<uint64_t> draw_seed;    // seeds the sampler only (default: the campaign seed): same rows,
                                        // independent draws, for A/B against a baseline of the same seed
  std::optional<uint64_t> max_draws;    // overrides the suite's cap (and each case's)
  Progress::Mode progress = Progress::Mode::kAuto;
  size_t generated = 0;                 // generated cases added to the suite's (generated.h), seeded by the campaign
  std::optional<double> budget_seconds; // overrides the suite's time budget (0: none; suite.h)
  // Equivalence verdict (docs/statistics.md, "Equivalence bounds"): every judged case must certify TV < eps on its
  // binnings at its alpha (and chi-square divergence < chi2_eps when given); 0 = not asked (bounds still reported).
  double equivalence_eps = 0.0;
  double equivalence_chi2_eps = 0.0;
  // --plan-from: draw exactly this recorded plan (every case's draws and caps; PlanOfReport), not the power plan
  // nor the time budget's. kInvalidArgument when its cases or fingerprint are not this suite's (other cases, rows,
  // seeds or profile). plan_from_source names it in messages and in the report.
  std::optional<DrawPlan> plan_from;
  std::string plan_from_source;

  // --shard I/N: draw only this shard's work items (whole cases, and chunk-aligned draw ranges of big row cases,
  // assigned from the plan alone) and keep the row cases' counts as evidence (CampaignReport::shard) for
  // `samplecheck merge`; the plan ignores the clock (every row case at full power, capped by --max-draws).
  std::optional<ShardSpec> shard;
  // --devices: one sampler per GPU of this host (SamplerOptions::device), the work items shared among them; the
  // counts are those of one device (a case's draws are chunk-aligned ranges at fixed offsets).
  std::vector<int> devices;

  // Before the first draw, once every case is prepared and the sampler's throughput measured: the plan. An error
  // returned here stops the campaign (the CLI refuses a plan past its limits unless forced).
  std::function<Status(const struct CampaignPlan&)> on_plan;
  // As each case finishes (serialized; completion order), for a journal. An error stops the campaign like a
  // signal does and is returned.
  std::function<Status(const CaseResult&)> on_case_done;
  // The plan as recorded (CampaignReport::draw_plan), before the first draw and again when the campaign re-plans
  // (its first cases ran slower than planned): for a journal, so that --resume follows it. An error stops the
  // campaign like a signal does and is returned.
  std::function<Status(const DrawPlan&)> on_draw_plan;
  // Cases judged by an earlier run of the same campaign (--resume): reused as they are, not drawn again.
  std::vector<CaseResult> finished;
};

// What a campaign is about to do, for the user to see (and refuse) before it starts.
struct CampaignPlan {
  const CampaignReport* identity = nullptr;  // suite, sampler, profile, seeds (no case yet)
  size_t cases = 0;
  size_t skipped = 0;                        // never drawn (params invalid under the profile, ambiguous)
  size_t resumed = 0;                        // reused from an earlier run (CampaignOptions::finished)
  uint64_t draws = 0;                        // draws still to make
  double draws_per_second = 0.0;             // measured on the first drawn case (0 when nothing to draw)
  double estimated_seconds = 0.0;            // draws / draws_per_second
  bool full_power = false;                   // the time budget gave every row case its planned draws
  // The time budget does not hold the plan (its estimate exceeds the budget by more than 20%): what the budget
  // affords instead, said before the first draw ("" otherwise). Also printed unless the progress is quiet.
  std::string budget_note;
  const DrawPlan* draw_plan = nullptr;       // what the Plan stage decided, as the report records it
};

// A case ready to draw: its row (perturbed if needed), reference and plan. Built before any draw so that input
// errors (unreadable .npy, invalid row) stop the campaign with exit 2 before it starts.
struct PreparedCase {
  CaseResult result;                    // identity, plan and (when skipped) status and reason
  std::vector<float> row;
  std::vector<double> p0;               // dense reference probabilities (0 on excluded tokens)
  std::vector<int32_t> excluded;        // ambiguous tokens set apart when the case is conditioned
  stats::BinningPlan binning;
  bool skip = false;
  bool decode = false;                  // a row of a decode case: drawn one call per step (src/stream_draw.h)
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

// The whole campaign. Errors: unknown sampler or profile (kInvalidArgument), a sampler that fails to load
// (kPlugin / kUnsupported), a bad row or .npy (kIo / kParse / kInvalidArgument): the CLI exits 2 on all of them.
// A sampler that fails while drawing is not an error here: its cases fail.
Result<CampaignReport> RunCampaign(const Suite& suite, const CampaignOptions& options);

// Environment of the report: hostname, OS, CPU; the GPUs from the CUDA runtime and NVML (samplers/devices.h; nullopt
// without one); the git revision of the source tree samplecheck was built from, taken at build time (nullopt when
// the tree had no git). No external program runs.
MachineInfo DetectMachine();
std::optional<std::string> DetectGpu();
std::optional<std::string> DetectGitRevision();
std::string NowIso8601();

}  // namespace samplecheck::harness
