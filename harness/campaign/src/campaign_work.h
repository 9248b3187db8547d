// Inside the campaign library: what a campaign decides before its first draw, shared by RunCampaign (campaign.cpp)
// and MergeShards (merge.cpp), which plans again from the shards' identity and checks it is the plan they drew.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "samplecheck/campaign/campaign.h"

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
  CampaignPlan plan;
  uint64_t total_draws = 0;
};

// What every report (sampler or spec campaign) states about its run beside the sampler and the seeds: the suite,
// the judged profile, alpha / TV / power, this machine and GPU, the git revision, the start time, the command line.
template <typename SuiteT, typename OptionsT>
void StampReport(CampaignReport& report, const SuiteT& suite, const OptionsT& options, const std::string& profile) {
  report.samplecheck_version = options.version;
  report.suite = suite.name;
  report.suite_source = suite.source;
  report.profile = profile;
  report.alpha = suite.alpha;
  report.tv = options.tv.value_or(suite.tv);
  report.power = suite.power;
  report.machine = DetectMachine();
  report.gpu = DetectGpu();
  report.git_revision = DetectGitRevision();
  report.started = NowIso8601();
  report.command_line = options.command_line;
}

// Prepares every case of `suite` under `options` (judged profile `judged`, an existing one). With options.shard
// the row cases are planned without the clock (FullBudget). Input errors as RunCampaign's.
Result<CampaignWork> PrepareWork(const Suite& suite, const CampaignOptions& options, const std::string& judged,
                                 const std::string& sampler_name);

// The plan's fingerprint: every case's name, row seed, parameters, vocabulary and draws.
uint64_t PlanFingerprint(const std::vector<PreparedCase>& prepared);

// Drawn through CountDraws in chunk-aligned ranges of draws: a case alone (not a batch row) with draws to make.
// A shard keeps such a case's counts as evidence (ShardRowEvidence) for merge.
bool Ranged(const PreparedCase& pc, bool resumed);

}  // namespace samplecheck::harness
