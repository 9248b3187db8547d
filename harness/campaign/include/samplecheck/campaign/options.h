// What each campaign kind takes: the options every kind shares (CampaignBasics: the judged profile, the seeds, the
// TV, the workers, the report's stamp, the verdict's floors, a stop flag) and each kind's own (sampler campaigns:
// CampaignOptions, campaign.h; speculative decoding: SpecCampaignOptions, spec_campaign.h; RL replay:
// ReplayCampaignOptions, replay_campaign.h), and what a sampler campaign shows before it draws (CampaignPlan).
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "samplecheck/campaign/progress.h"
#include "samplecheck/checks/result.h"
#include "samplecheck/core/error.h"

namespace samplecheck::harness {

struct CampaignPlan;

// Whom a sampler campaign tells what it does, as it goes (the run session of harness/session: the plan line and its
// limit, the journal, the plan file of --resume). The campaign calls back into nothing else. OnPlan and OnDrawPlan
// run on the campaign's thread, OnCaseDone on a worker's, serialized.
class CampaignObserver {
 public:
  virtual ~CampaignObserver() = default;
  // Before the first draw, once every case is prepared and the sampler's throughput measured: the plan. An error
  // returned here stops the campaign (the session refuses a plan past its limit unless forced).
  virtual Status OnPlan(const CampaignPlan& plan) = 0;
  // The plan as recorded (CampaignReport::draw_plan), before the first draw and again when the campaign re-plans
  // (its first cases ran slower than planned): for a journal, so that --resume follows it. An error before the first
  // draw stops the campaign and is returned (a re-plan's is not: the journal still holds every finished case).
  virtual Status OnDrawPlan(const DrawPlan& plan) = 0;
  // As each case finishes (serialized; completion order), for a journal. An error stops the campaign like a signal
  // does and is returned.
  virtual Status OnCaseDone(const CaseResult& c) = 0;
};

// One part of a campaign split over processes (run --shard I/N, docs/scale.md).
struct ShardSpec {
  uint32_t index = 0;  // 0-based
  uint32_t count = 1;
  std::string source;  // where it came from: "--shard", "GTEST_SHARD_INDEX", "SLURM_ARRAY_TASK_ID", ...
};

// What every campaign kind takes (sampler campaigns, speculative-decoding campaigns: spec_campaign.h): the judged
// profile, the seeds, the TV, the workers, the report's stamp, the verdict's floors and a stop flag.
struct CampaignBasics {
  std::string profile;           // judged profile; "" = JudgedProfile's rule (the suite's, the source's, vllm)
  std::optional<uint64_t> seed;  // overrides the suite's
  std::optional<double> tv;      // overrides the suite's detectable TV
  unsigned jobs = 0;             // parallel work items; 0 = one per core for samplers (verifiers) whose
                                 // instances may run in parallel (Capabilities::parallel_instances: exact,
                                 // CPU mutants), else 1
  std::string command_line;
  std::string version;      // samplecheck version for the report
  EvidencePolicy evidence;  // what the verdict needs besides no failure (result.h)
  // --case: the suite entries to draw (case_selection.h; empty: every case). The whole suite is planned first, so
  // a selected case has the full run's alpha, seeds and draws; the verdict's Holm runs over the selected cases.
  std::vector<std::string> only_cases;
  // Set (e.g. by a signal handler) to stop: no work item starts after it, a case being drawn stops at its next
  // chunk and is left out, and the report comes back marked interrupted with the cases that finished.
  const std::atomic<bool>* stop = nullptr;
};

// The one profile rule of every kind: --profile, else the suite's, else the profile its source claims (sampler,
// verifier, replay side), else vllm. A source is opened under OpeningProfile (what it implements when it takes a
// profile: exact, cuda, mutants) before its claim is read; kInvalidArgument for a claim this samplecheck does not
// know, naming `source` (then --profile decides).
std::string OpeningProfile(const std::string& option, const std::string& suite);
Result<std::string> JudgedProfile(const std::string& option, const std::string& suite, const std::string& claim,
                                  const std::string& source);

struct CampaignOptions : CampaignBasics {
  std::string sampler_spec = "exact";
  std::optional<uint64_t> draw_seed;  // seeds the sampler only (default: the campaign seed): same rows,
                                      // independent draws, for A/B against a baseline of the same seed
  std::optional<uint64_t> max_draws;  // overrides the suite's cap (and each case's)
  Progress::Mode progress = Progress::Mode::kAuto;
  size_t generated = 0;                  // generated cases added to the suite's (generated.h), seeded by the campaign
  std::optional<double> budget_seconds;  // overrides the suite's time budget (0: none; suite.h)
  // --tv auto: the time budget chooses the TV (docs/campaigns.md, "Power by budget"): the least TV on the ladder
  // (ChooseTv, work_items.h) at which every row case's full-power plan fits the budget by the probe's estimate; the
  // campaign is then planned, drawn and judged exactly as with `tv` set to it. Needs a budget (the suite's or
  // budget_seconds > 0); a recorded plan (--plan-from, a resumed journal's) gives its TV instead of a new choice.
  bool tv_auto = false;
  // Equivalence verdict (docs/statistics.md, "Equivalence bounds"): every judged case must certify TV < eps on its
  // binnings at its alpha (and chi-square divergence < chi2_eps when given); 0 = not asked (bounds still reported).
  double equivalence_eps = 0.0;
  double equivalence_chi2_eps = 0.0;
  // --plan-from: draw exactly this recorded plan (every case's draws and caps; PlanOfReport), not the power plan
  // nor the time budget's. kInvalidArgument when its cases or fingerprint are not this suite's (other cases, rows,
  // seeds or profile). plan_from_source names it in messages and in the report.
  std::optional<DrawPlan> plan_from;
  std::string plan_from_source;
  // The plan is the journal's (--resume): the run it finishes drew no --plan-from, and the journal's plan file is
  // removed when the run finishes, so the report's reproduce line is the interrupted run's, without it.
  bool plan_from_journal = false;

  // --shard I/N: draw only this shard's work items (whole cases, and chunk-aligned draw ranges of big row cases,
  // assigned from the plan alone) and keep the row cases' counts as evidence (CampaignReport::shard) for
  // `samplecheck merge`; the plan ignores the clock (every row case at full power, capped by --max-draws).
  std::optional<ShardSpec> shard;
  // --devices: one sampler per GPU of this host (SamplerOptions::device), the work items shared among them; the
  // counts are those of one device (a case's draws are chunk-aligned ranges at fixed offsets).
  std::vector<int> devices;

  // Told the plan, the recorded plan and each finished case (nullptr: nobody; then the sampler's throughput is
  // measured only for a time budget).
  CampaignObserver* observer = nullptr;
  // Cases judged by an earlier run of the same campaign (--resume): reused as they are, not drawn again.
  std::vector<CaseResult> finished;
};

// What a campaign is about to do, for the user to see (and refuse) before it starts.
struct CampaignPlan {
  const CampaignReport* identity = nullptr;  // suite, sampler, profile, seeds (no case yet)
  size_t cases = 0;
  size_t skipped = 0;              // never drawn (params invalid under the profile, ambiguous)
  size_t resumed = 0;              // reused from an earlier run (CampaignOptions::finished)
  uint64_t draws = 0;              // draws still to make
  double draws_per_second = 0.0;   // measured on the first drawn case (0 when nothing to draw)
  double estimated_seconds = 0.0;  // draws / draws_per_second
  bool full_power = false;         // the time budget gave every row case its planned draws
  // The time budget does not hold the plan (its estimate exceeds the budget by more than 20%): what the budget
  // affords instead, said before the first draw ("" otherwise). Also printed unless the progress is quiet.
  std::string budget_note;
  const DrawPlan* draw_plan = nullptr;  // what the Plan stage decided, as the report records it
};

struct SpecCampaignOptions : CampaignBasics {
  std::string verifier_spec = "exact";
  std::optional<uint64_t> max_trials;
  bool quiet = false;  // no progress lines
};

struct ReplayCampaignOptions : CampaignBasics {
  std::string engine;                    // replay source spec, "" = the exact engine (the reference)
  std::string trainer;                   // replay source spec, "" = the exact trainer (the reference, guarded)
  std::optional<uint64_t> rollout;       // overrides the suite's
  std::optional<double> max_ratio_bias;  // overrides the suite's
  size_t generated = 0;                  // more generated cases (after the suite's own)
  bool quiet = false;
};

}  // namespace samplecheck::harness
