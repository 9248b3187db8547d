// Replay campaigns (replay_campaign.h): the stages of engine.h configured for two replay sources. Plan: every case's
// rows (identity, seeds, parameters valid under the judged profile or skipped; the rows' logits are checked here
// and built again when drawn). Draw and Judge: one ReplayDrawer per worker (replay_draw.cpp). Report: the sink
// (engine.cpp), the rows in suite order, then the "aggregate" case over them, and the verdict.
#include "samplecheck/campaign/replay_campaign.h"
#include "samplecheck/core/splitmix.h"
#include "samplecheck/suites/case_seed.h"

#include <chrono>

#include "campaign_work.h"
#include "engine.h"
#include "judge.h"
#include "replay_draw.h"

namespace samplecheck::harness {
namespace {

// One case's rows as judged cases: "<case>" alone, "<case>/b<k>" in a batch; the rollout's Philox key per row.
Result<ReplayCaseWork> PlanCase(const ReplayCaseSpec& cs, const Profile& profile, uint64_t seed, uint64_t rollout) {
  ReplayCaseWork w;
  w.spec = &cs;
  const uint64_t case_seed = CaseSeed(seed, cs.name);
  uint32_t rows = 0;
  for (const ReplayEntry& e : cs.entries) rows += e.copies;
  uint32_t k = 0;
  for (size_t ei = 0; ei < cs.entries.size(); ++ei) {
    const ReplayEntry& e = cs.entries[ei];
    if (e.row.vocab != cs.entries.front().row.vocab && e.row.kind != "npy") {
      return InvalidArgument("case " + cs.name + ": the rows of a batch share one vocabulary (entry " +
                             std::to_string(ei) + " has " + std::to_string(e.row.vocab) + ", entry 0 " +
                             std::to_string(cs.entries.front().row.vocab) + ")");
    }
    for (uint32_t copy = 0; copy < e.copies; ++copy, ++k) {
      ReplayRowWork r;
      CaseResult& cr = r.result;
      cr.name = rows == 1 ? cs.name : cs.name + "/b" + std::to_string(k);
      if (rows > 1) cr.batch = {cs.name, k, rows, static_cast<uint32_t>(ei), copy, ""};
      cr.row = e.row;
      cr.row_seed = SplitMix64(case_seed + k);
      cr.params = e.params;
      cr.params.seed = SplitMix64(case_seed ^ (0xC0FFEEULL + k));
      cr.params.offset = 0;
      cr.profile = std::string(profile.name);
      cr.planned_draws = cr.max_draws = rollout;
      auto logits = MakeRow(cr.row, cr.row_seed);
      if (!logits.ok()) return logits.error().WithContext("case " + cr.name);
      cr.vocab = static_cast<int64_t>(logits->size());
      if (k > 0 && cr.vocab != w.rows.front().result.vocab) {
        return InvalidArgument("case " + cs.name + ": the rows of a batch share one vocabulary (" + cr.name + " has " +
                               std::to_string(cr.vocab) + ")");
      }
      if (auto bad = ValidateParams(cr.params, profile)) {
        r.skipped = true;
        cr.status = CaseStatus::kSkipped;
        cr.reason = "parameters invalid under profile " + std::string(profile.name) + ": " + bad->message;
      }
      w.rows.push_back(std::move(r));
    }
  }
  return w;
}

// The suite's cases, its generated ones, then `more` generated under the run's seed ("more-gen/<i>").
std::vector<ReplayCaseSpec> ReplayCases(const ReplaySuite& suite, const Profile& profile, uint64_t seed, size_t more) {
  std::vector<ReplayCaseSpec> cases = suite.cases;
  for (ReplayCaseSpec& g : GenerateReplayCases(suite.generated_seed, suite.generated, profile)) cases.push_back(g);
  for (ReplayCaseSpec& g : GenerateReplayCases(seed ^ 0x5EEDULL, more, profile)) {
    g.name = "more-" + g.name;
    cases.push_back(g);
  }
  return cases;
}

// Every case's rows in suite order (`cases` outlives the work: each ReplayCaseWork points at its spec).
Result<std::vector<ReplayCaseWork>> PlanWork(const std::vector<ReplayCaseSpec>& cases, const Profile& profile,
                                             uint64_t seed, uint64_t rollout) {
  std::vector<ReplayCaseWork> work;
  size_t rows = 0;
  for (const ReplayCaseSpec& cs : cases) {
    auto w = PlanCase(cs, profile, seed, rollout);
    if (!w.ok()) return w.error();
    w->first_row = rows;
    rows += w->rows.size();
    work.push_back(std::move(*w));
  }
  return work;
}

// The case over every row: the replay-ratio-bias check and the rows' figures summed.
CaseResult AggregateCase(const CampaignReport& report, double max_ratio_bias) {
  CaseResult cr;
  cr.name = kReplayAggregateCase;
  cr.profile = report.profile;
  ReplayEvidence ev;
  ev.role = ReplayRole::kAggregate;
  ev.max_ratio_bias = max_ratio_bias;
  ev.rows = report.cases;
  JudgeReplay(ev, cr);
  return cr;
}

}  // namespace

namespace {

// The replay campaign as a kind of the engine (engine.h): an engine and a trainer source per worker, a replay case
// per work item, its rows' judged cases and the aggregate case.
class ReplayCampaign final : public ReportKind {
 public:
  ReplayCampaign(const ReplaySuite& suite, const ReplayCampaignOptions& options) : suite_(suite), options_(options) {}

  Result<KindPlan> Plan() override {
    auto judged = JudgeProfile();
    if (!judged.ok()) return judged.error();
    profile_name_ = *judged;
    Result<const Profile*> found = ProfileByName(profile_name_);
    if (!found.ok()) return found.error();
    const Profile* profile = *found;
    auto first_engine = FirstSide(engine_made_, options_.engine);
    if (!first_engine.ok()) return first_engine.error().WithContext("--engine");
    auto first_trainer = FirstSide(trainer_made_, options_.trainer);
    if (!first_trainer.ok()) return first_trainer.error().WithContext("--trainer");
    // No statistical test: every replay check is exact. The alpha is the reports' nominal one (unused).
    StampReport(report, {suite_.name, suite_.source, 1e-4, 0.0, 0.0}, options_, profile_name_);
    report.sampler = "engine " + (options_.engine.empty() ? std::string("reference") : (*first_engine)->Name()) +
                     ", trainer " + (options_.trainer.empty() ? std::string("reference") : (*first_trainer)->Name());
    report.sampler_spec = "replay --engine " + (options_.engine.empty() ? "exact" : options_.engine) + " --trainer " +
                          (options_.trainer.empty() ? "exact" : options_.trainer);
    report.seed = options_.seed.value_or(suite_.seed);
    report.draw_seed = report.seed;
    const uint64_t rollout = options_.rollout.value_or(suite_.rollout);
    if (rollout < 1) return InvalidArgument("--rollout 0: a row's synthetic rollout needs at least one token");
    cases_ = ReplayCases(suite_, *profile, report.seed, options_.generated);
    auto planned = PlanWork(cases_, *profile, report.seed, rollout);
    if (!planned.ok()) return planned.error();
    work_ = std::move(*planned);
    rows_ = work_.empty() ? 0 : work_.back().first_row + work_.back().rows.size();
    results_.assign(rows_, {});
    context_ = ReplayDrawContext{profile, rollout, nullptr, &results_};
    const bool parallel =
        (*first_engine)->GetCapabilities().parallel_instances && (*first_trainer)->GetCapabilities().parallel_instances;
    first_engine_ = std::move(*first_engine);
    first_trainer_ = std::move(*first_trainer);
    KindPlan plan;
    plan.items.resize(work_.size());
    for (size_t c = 0; c < plan.items.size(); ++c) plan.items[c].unit = c;
    plan.cases = plan.to_draw = rows_;
    plan.draws = rollout * rows_;
    plan.workers = WorkerCount(options_.jobs, parallel, work_.size());
    plan.progress = options_.quiet ? Progress::Mode::kQuiet : Progress::Mode::kLines;
    return plan;
  }

  Result<std::unique_ptr<ItemDrawer>> Drawer(unsigned worker, CaseSink& sink) override {
    auto engine = worker == 0 ? std::move(first_engine_) : Side(options_.engine);
    auto trainer = worker == 0 ? std::move(first_trainer_) : Side(options_.trainer);
    if (!engine.ok()) return engine.error();
    if (!trainer.ok()) return trainer.error();
    context_.sink = &sink;
    return std::unique_ptr<ItemDrawer>(std::make_unique<ReplayDrawer>(
        std::move(*engine), !options_.engine.empty(), std::move(*trainer), !options_.trainer.empty(), work_, context_));
  }

  Status Collect(const CaseSink& sink) override {
    for (size_t r = 0; r < rows_; ++r) {
      if (sink.Finished(r)) {
        report.cases.push_back(std::move(results_[r]));
      } else {
        report.interrupted = true;
      }
    }
    report.cases.push_back(AggregateCase(report, options_.max_ratio_bias.value_or(suite_.max_ratio_bias)));
    report.planned_cases = rows_ + 1;
    ApplyCampaignVerdict(report);
    return Status::Ok();
  }

 private:
  // A side made before the judged profile was known, for the profile it claims: the profile it was made under
  // ("" when it was not made), and the source or why it could not be made.
  struct MadeSide {
    std::string made_under;
    Result<std::unique_ptr<ReplaySource>> source = InternalError("not made");
  };

  Result<std::unique_ptr<ReplaySource>> Side(const std::string& spec) const {
    return MakeReplaySource(spec.empty() ? "exact" : spec, profile_name_);
  }

  // JudgedProfile's rule; the claim is the first given side's that makes one (exact, fault and cuda take the
  // profile they are made under, so only other kinds can say something else). A side made here is kept for
  // FirstSide: a process source is started once (each start costs a handshake, up to its deadline), and a side
  // that cannot start fails the campaign at once (its error is the side's; none of the later ones is made).
  Result<std::string> JudgeProfile() {
    if (!options_.profile.empty() || !suite_.profile.empty()) return OpeningProfile(options_.profile, suite_.profile);
    constexpr const char* kProvisional = "vllm";
    for (auto [spec, made] :
         {std::pair{&options_.engine, &engine_made_}, std::pair{&options_.trainer, &trainer_made_}}) {
      if (spec->empty()) continue;
      made->made_under = kProvisional;
      made->source = MakeReplaySource(*spec, kProvisional);
      if (!made->source.ok()) break;
      const std::string claim = (*made->source)->GetCapabilities().profile;
      if (!claim.empty()) return JudgedProfile("", "", claim, "replay source " + (*made->source)->Name());
    }
    return std::string(kProvisional);
  }

  // Worker 0's side: the one JudgeProfile made (or its error), unless it took the provisional profile it was made
  // under (it claims that profile) and the judged one is another: then it is made again under the judged profile.
  // A side JudgeProfile did not make is made here.
  Result<std::unique_ptr<ReplaySource>> FirstSide(MadeSide& made, const std::string& spec) const {
    if (made.made_under.empty()) return Side(spec);
    if (!made.source.ok()) return made.source.error();
    const bool took_profile = (*made.source)->GetCapabilities().profile == made.made_under;
    if (took_profile && made.made_under != profile_name_) return Side(spec);
    return std::move(made.source);
  }

  const ReplaySuite& suite_;
  const ReplayCampaignOptions& options_;
  std::string profile_name_;
  Result<std::unique_ptr<ReplaySource>> first_engine_ = InternalError("no engine yet");
  Result<std::unique_ptr<ReplaySource>> first_trainer_ = InternalError("no trainer yet");
  MadeSide engine_made_, trainer_made_;  // made by JudgeProfile (moved into first_engine_, first_trainer_)
  std::vector<ReplayCaseSpec> cases_;    // the work points into them
  std::vector<ReplayCaseWork> work_;
  size_t rows_ = 0;
  std::vector<CaseResult> results_;
  ReplayDrawContext context_;
};

}  // namespace

Result<CampaignReport> RunReplayCampaign(const ReplaySuite& suite, const ReplayCampaignOptions& options) {
  ReplayCampaign kind(suite, options);
  return RunForReport(kind, options.stop);
}

Result<std::vector<CaseResult>> PlanReplayRows(const ReplaySuite& suite, const std::string& profile_name,
                                               uint64_t seed, size_t more_generated, uint64_t rollout) {
  Result<const Profile*> found = ProfileByName(profile_name);
  if (!found.ok()) return found.error();
  const Profile* profile = *found;
  const std::vector<ReplayCaseSpec> cases = ReplayCases(suite, *profile, seed, more_generated);
  auto work = PlanWork(cases, *profile, seed, rollout);
  if (!work.ok()) return work.error();
  std::vector<CaseResult> rows;
  for (const ReplayCaseWork& w : *work) {
    for (const ReplayRowWork& r : w.rows) rows.push_back(r.result);
  }
  return rows;
}

}  // namespace samplecheck::harness
