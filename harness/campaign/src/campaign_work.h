// Inside the campaign library: the Plan stage's output, shared by the sampler campaign (campaign.cpp), the time
// budget (budget.cpp) and MergeShards (merge.cpp), which plans again from the shards' identity and checks it is the
// plan they drew.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "samplecheck/campaign/options.h"
#include "samplecheck/campaign/prepare.h"

namespace samplecheck::harness {

// Everything a campaign decides before its first draw: the report's identity, every prepared case, the units a
// worker draws at once (a row case, or a whole batch), and the plan.
struct CampaignWork {
  CampaignReport report;
  const Profile* default_profile = nullptr;
  std::vector<PreparedCase> prepared;
  std::vector<std::vector<size_t>> units;
  std::vector<bool> resumed;
  std::vector<CaseBudget> budgets;  // per prepared case: what it was planned with (the time budget re-plans)
  std::vector<DrawsWhy> why;        // per prepared case: why it has its draws (DrawPlan)
  CampaignPlan plan;
  uint64_t total_draws = 0;
  double budget_seconds = 0.0;      // the suite's time budget, or --budget (0: none)
  uint64_t budget_max_draws = 0;    // a row case's cap when the budget gives full power
};

// What the Plan stage takes from the options: the seeds, the caps, the equivalence asked, the shard, the recorded
// plan and the journal's cases; nothing else of CampaignOptions reaches it.
struct PlanInputs {
  std::optional<uint64_t> seed, draw_seed, max_draws;
  std::optional<double> tv;
  size_t generated = 0;
  double equivalence_eps = 0.0, equivalence_chi2_eps = 0.0;
  double budget_seconds = 0.0;
  bool sharded = false;
  const DrawPlan* recorded = nullptr;  // --plan-from, or the journal's plan
  std::string recorded_source;
  const std::vector<CaseResult>* finished = nullptr;
  std::vector<std::string> only_cases;  // --case (case_selection.h)
};
PlanInputs PlanInputsOf(const Suite& suite, const CampaignOptions& options);
// The options that plan a stored report's campaign again (merge's shards, the gate's check against the plan): its
// sampler, profile, seeds, equivalence asked and samplecheck version.
CampaignOptions OptionsOfReport(const CampaignReport& report);

// What every report (sampler or spec campaign) states about its run beside the sampler and the seeds: the suite,
// the judged profile, alpha / TV / power, this machine and GPU, the git revision, the start time, the command line.
struct SuiteIdentity {
  std::string name, source;
  double alpha = 0.0, tv = 0.0, power = 0.0;
};
// The start of a campaign's reproduce line (CampaignReport::reproduce): "samplecheck run --suite S <source> --profile
// P --seed N" and --tv when given; `source` is "--sampler <spec>" or "--verifier <spec>". Words that need it are
// quoted for a POSIX shell.
std::string ReproduceBase(const CampaignReport& report, const CampaignBasics& options, const std::string& flag,
                          const std::string& spec);
std::string ShellWord(const std::string& word);

void StampReport(CampaignReport& report, const SuiteIdentity& suite, const CampaignBasics& options,
                 const std::string& profile);

// Prepares every case of `suite` under `options` (judged profile `judged`, an existing one). With options.shard
// the row cases are planned without the clock (FullBudget). Input errors as RunCampaign's.
Result<CampaignWork> PrepareWork(const Suite& suite, const CampaignOptions& options, const std::string& judged,
                                 const std::string& sampler_name);

// The plan's fingerprint: every case's name, row seed, parameters, vocabulary and draws.
uint64_t PlanFingerprint(const std::vector<PreparedCase>& prepared);

// Drawn through CountDraws in chunk-aligned ranges of draws: a case alone (not a batch row) with draws to make.
// A shard keeps such a case's counts as evidence (ShardRowEvidence) for merge.
bool Ranged(const PreparedCase& pc, bool resumed);
// A row case the time budget may give more draws: a case alone, drawn, samplable.
bool RowCase(const PreparedCase& pc);
// The cap a row case gets when the time budget affords full power (the suite's budget cap; --max-draws still caps).
CaseBudget FullBudget(CaseBudget budget, const CampaignWork& work, const std::optional<uint64_t>& max_draws);

// Step 2 at a given draw count: the binning from p0 and `draws`, and the achieved power at the case's TV.
Status PlanAtDraws(PreparedCase& prepared, uint64_t draws);
// The binning from p0 at `draws` (expected draws for a speculative case) and the achieved power at the case's TV
// and alpha: the Pearson head binning's, or the support check's at `support_draws` with one kept token.
Status PlanBinningAt(PreparedCase& prepared, double draws, double support_draws);
// Why a case has its draws ("power", "cap", "floor", "unsamplable", "skipped", "batch"), from its plan.
DrawsWhy WhyDraws(const PreparedCase& prepared);
// The record of the plan (DrawPlan) as it stands: every case's draws, cap and why.
void RecordPlan(CampaignWork& work, PlanBasis basis, const std::string& reason);

// A batch case's rows as prepared cases "<name>/b<k>" (prepare.cpp), and how many there are.
Result<std::vector<PreparedCase>> PrepareBatch(const CaseSpec& cs, const Profile& profile, uint64_t seed,
                                               uint64_t draw_seed, CaseBudget budget);
size_t BatchRows(const CaseSpec& cs);

// The binnings of every campaign: the same cells for the same p0 and N in sampler and spec campaigns.
stats::BinningOptions CampaignBinningOptions();

}  // namespace samplecheck::harness
