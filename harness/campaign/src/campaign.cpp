// Sampler campaigns (campaign.h): the stages of engine.h configured for a Sampler. Plan: PrepareWork (plan.cpp),
// the probe and the time budget (budget.cpp), the work items and this shard's part of them (work_items.cpp).
// Draw and Judge: one SamplerDrawer per worker (sampler_draw.cpp, judge.cpp). Report: the sink (engine.cpp), the
// cases in suite order, the verdict.
#include "samplecheck/campaign/campaign.h"

#include <algorithm>
#include <chrono>
#include <memory>
#include <optional>
#include <unordered_map>

#include "campaign_work.h"
#include "engine.h"
#include "samplecheck/core/format.h"
#include "samplecheck/samplers/sampler_registry.h"
#include "sampler_draw.h"
#include "work_items.h"

namespace samplecheck::harness {
namespace {

using Clock = std::chrono::steady_clock;

// The samplers of the workers (one each: samplers need not be thread-safe; with --devices one per GPU), what the
// first one claims, and the judged profile.
struct Samplers {
  std::vector<std::unique_ptr<Sampler>> all;
  Capabilities caps;
  std::string judged;
  SamplerOptions options;
};

Status CheckOptions(const CampaignOptions& options, const std::string& judged) {
  if (!judged.empty()) {
    if (Result<const Profile*> p = ProfileByName(judged); !p.ok()) return p.error();
  }
  const std::optional<ShardSpec>& shard = options.shard;
  if (shard && (shard->count == 0 || shard->index >= shard->count)) {
    return InvalidArgument("shard " + std::to_string(shard->index) + "/" + std::to_string(shard->count) +
                           ": the index runs from 0 to the count - 1");
  }
  if (shard && !options.finished.empty()) {
    return InvalidArgument("--resume does not apply to a shard: run the shard again (it is deterministic)");
  }
  if (shard && options.plan_from) {
    return InvalidArgument("--plan-from does not apply to a shard: shards plan without the clock (docs/scale.md)");
  }
  return Status::Ok();
}

// --tv auto needs a time budget to choose by, a clock (no shard), and, replaying a recorded plan, the TV it records.
Status CheckTvAuto(const Suite& suite, const CampaignOptions& options) {
  if (!options.tv_auto) return Status::Ok();
  const double budget = options.budget_seconds.value_or(suite.budget_seconds);
  if (!(budget > 0)) {
    return InvalidArgument("--tv auto needs a time budget to choose the TV by: suite " + suite.name +
                           (options.budget_seconds
                                ? " is run with --budget " + FormatSignificant(*options.budget_seconds)
                                : " has no budget_seconds") +
                           "; allowed: --tv auto with --budget S (S > 0) or a suite with budget_seconds > 0, or --tv a "
                           "number in (0, 0.5]");
  }
  if (options.shard) {
    return InvalidArgument(
        "--tv auto chooses the TV by the clock, and a shard plans without it (docs/scale.md): give "
        "--tv a number in (0, 0.5]");
  }
  if (options.plan_from && !options.plan_from->tv) {
    return InvalidArgument("--tv auto: the plan of " + options.plan_from_source +
                           " records no TV (it was planned at the suite's TV): drop --tv auto to replay it");
  }
  return Status::Ok();
}

// The judged profile (JudgedProfile's rule: --profile, the suite's, the sampler's claim, vllm) and the first sampler.
Result<Samplers> OpenSampler(const Suite& suite, const CampaignOptions& options) {
  Samplers s;
  const std::string given = !options.profile.empty() ? options.profile : suite.profile;
  if (Status st = CheckOptions(options, given); !st.ok()) return st.error();
  s.options.profile = OpeningProfile(options.profile, suite.profile);
  if (!options.devices.empty()) s.options.device = options.devices.front();
  auto first = MakeSampler(options.sampler_spec, s.options);
  if (!first.ok()) return first.error();
  s.caps = (*first)->GetCapabilities();
  if (!options.devices.empty() && !s.caps.gpu) {
    return InvalidArgument("--devices splits the work of a GPU sampler over GPUs; " + (*first)->Name() +
                           " is not one");
  }
  auto judged = JudgedProfile(options.profile, suite.profile, s.caps.profile, "sampler " + (*first)->Name());
  if (!judged.ok()) return judged.error();
  s.judged = *judged;
  s.all.push_back(std::move(*first));
  return s;
}

Status AddWorkers(Samplers& s, unsigned jobs, const std::string& spec, const std::vector<int>& devices) {
  for (unsigned j = static_cast<unsigned>(s.all.size()); j < jobs; ++j) {
    SamplerOptions o = s.options;
    if (!devices.empty()) o.device = devices[j % devices.size()];
    auto made = MakeSampler(spec, o);
    if (!made.ok()) return made.error();
    s.all.push_back(std::move(*made));
  }
  return Status::Ok();
}

// This shard's part of the items (assigned from the plan and the fixed cost model alone) and its report block.
std::vector<WorkItem> ShardItems(CampaignWork& work, const ShardSpec& shard, const CampaignOptions& options,
                                 const CostModel& fixed) {
  const std::vector<WorkItem> all = MakeWorkItems(work, fixed);
  const std::vector<uint32_t> shard_of = AssignShards(all, shard.count);
  std::vector<WorkItem> items;
  uint64_t draws = 0;
  for (size_t k = 0; k < all.size(); ++k) {
    if (shard_of[k] != shard.index) continue;
    items.push_back(all[k]);
    if (all[k].end > all[k].begin) {
      draws += all[k].end - all[k].begin;
    } else {
      for (size_t i : work.units[all[k].unit]) draws += work.prepared[i].skip || work.resumed[i] ? 0 : work.prepared[i].result.draws;
    }
  }
  ShardInfo info;
  info.index = shard.index;
  info.count = shard.count;
  info.source = shard.source;
  info.plan_fingerprint = PlanFingerprint(work.prepared);
  info.tv = options.tv;
  info.max_draws = options.max_draws;
  info.generated = options.generated;
  info.items = items.size();
  work.report.shard = std::move(info);
  work.plan.draws = work.total_draws = draws;
  return items;
}

// The row cases not yet started go back to their caps (the budget's watch fired): their items end earlier.
uint32_t Replan(SamplerRun& run, const std::vector<WorkItem>& items) {
  CampaignWork& work = run.work;
  uint32_t replanned = 0;
  for (size_t i = 0; i < work.prepared.size(); ++i) {
    PreparedCase& pc = work.prepared[i];
    if (!RowCase(pc) || work.resumed[i] || work.why[i] != DrawsWhy::kBudget) continue;
    RowDraws& d = run.rows[i];
    std::lock_guard<std::mutex> lock(d.mu);
    const uint64_t before = pc.result.draws;
    if (d.started || !PlanCaseDraws(pc, work.budgets[i]).ok() || pc.result.draws >= before) continue;
    d.pending = 0;
    for (const WorkItem& item : items) {
      if (item.end > item.begin && work.units[item.unit].front() == i && item.begin < pc.result.draws) ++d.pending;
    }
    work.why[i] = DrawsWhy::kReplanned;
    work.total_draws -= before - pc.result.draws;
    ++replanned;
  }
  return replanned;
}

// The budget's watch: as items finish, the spent time against the plan; once past budget + 20%, the re-plan.
void WatchBudget(SamplerRun& run, const std::vector<WorkItem>& items, const CampaignOptions& options,
                 Clock::time_point start) {
  double planned_cost = 0.0;
  for (const WorkItem& item : items) planned_cost += item.cost;
  auto monitor = std::make_shared<BudgetMonitor>(run.work.budget_seconds, run.work.report.draw_plan.planned_seconds,
                                                 planned_cost);
  auto mu = std::make_shared<std::mutex>();
  run.item_done = [&run, &items, &options, start, monitor, mu](const WorkItem& item) {
    std::lock_guard<std::mutex> lock(*mu);
    if (!monitor->ItemDone(item.cost, SecondsSince(start))) return;
    const uint32_t replanned = Replan(run, items);
    if (replanned == 0) return;
    RecordPlan(run.work, PlanBasis::kBudgetReplanned,
               run.work.report.draw_plan.reason + "; the first cases ran slower than planned: " +
                   std::to_string(replanned) + " row case(s) not yet started went back to their caps");
    run.work.report.draw_plan.replanned = replanned;
    run.work.report.full_power = false;
    run.sink.progress().SetTotalDraws(run.work.total_draws);
    if (options.observer != nullptr) (void)options.observer->OnDrawPlan(run.work.report.draw_plan);
  };
}

// The probe and power by budget; the items this process draws, costliest first (the longest-processing-time rule,
// so a big batch does not start last).
// `probed`: the cost the probe measured already (--tv auto measured it to choose the TV), else measured here.
Result<std::vector<WorkItem>> PlanTime(CampaignWork& work, const Samplers& s, const CampaignOptions& options,
                                       std::optional<CostModel> probed) {
  const CostModel fixed = s.caps.gpu ? kGpuCost : kCpuCost;
  std::optional<CostModel> cost = std::move(probed);
  if (!cost && (options.observer != nullptr || work.budget_seconds > 0)) cost = MeasureCost(s.all, work);
  const auto workers = static_cast<unsigned>(s.all.size());
  if (cost && work.budget_seconds > 0 && !options.shard) {
    if (!options.plan_from) {
      if (Status st = ApplyBudget(work, *cost, workers, options.max_draws); !st.ok()) return st.error();
      DrawPlan& plan = work.report.draw_plan;
      if (plan.tv_chosen_budget_seconds > 0 && plan.basis == PlanBasis::kBudgetFullPower) {
        RecordPlan(work, PlanBasis::kBudgetTv,
                   plan.reason + "; --tv auto: TV " + FormatSignificant(*plan.tv) +
                       " is the least TV of the ladder whose full-power plan fits the budget at the measured rate");
      } else if (plan.tv_chosen_budget_seconds > 0) {
        RecordPlan(work, plan.basis,
                   plan.reason + "; --tv auto: no TV of the ladder up to 0.5 has a full-power plan the budget fits " +
                       "at the measured rate: TV " + FormatSignificant(*plan.tv) + " kept, the cases at their caps");
      }
    } else if (options.plan_from->basis == PlanBasis::kBudgetFullPower ||
               options.plan_from->basis == PlanBasis::kBudgetTv) {  // what the budget gave when it was recorded
      work.report.full_power = work.plan.full_power = std::all_of(
          work.prepared.begin(), work.prepared.end(),
          [](const PreparedCase& pc) { return !RowCase(pc) || pc.result.draws >= pc.result.planned_draws; });
    }
    work.report.budget_seconds = work.budget_seconds;
    work.report.measured_draws_per_second = 1e9 / cost->counted_draw * workers;
  }
  std::vector<WorkItem> items =
      options.shard ? ShardItems(work, *options.shard, options, fixed) : MakeWorkItems(work, cost.value_or(fixed));
  if (cost) {
    work.plan.draws_per_second = 1e9 / cost->counted_draw * workers;
    work.plan.estimated_seconds = EstimateSeconds(options.shard ? items : MakeWorkItems(work, *cost), workers);
    if (work.report.draw_plan.planned_seconds == 0) work.report.draw_plan.planned_seconds = work.plan.estimated_seconds;
  }
  std::stable_sort(items.begin(), items.end(), [](const WorkItem& a, const WorkItem& b) { return a.cost > b.cost; });
  return items;
}

// The report: the finished cases in suite order (a shard's row cases are evidence, in case order), the verdict.
CampaignReport Finish(CampaignWork& work, const CaseSink& sink, const std::vector<uint8_t>& in_this_run) {
  CampaignReport& report = work.report;
  for (size_t i = 0; i < work.prepared.size(); ++i) {
    const bool row_evidence = report.shard && Ranged(work.prepared[i], work.resumed[i]);
    if (sink.Finished(i) && !row_evidence) report.cases.push_back(std::move(work.prepared[i].result));
  }
  if (!report.shard) {
    report.interrupted = report.cases.size() < work.prepared.size();
    ApplyCampaignVerdict(report);
    return std::move(report);
  }
  std::unordered_map<std::string, size_t> order;
  for (size_t i = 0; i < work.prepared.size(); ++i) order[work.prepared[i].result.name] = i;
  std::sort(report.shard->evidence.begin(), report.shard->evidence.end(),
            [&](const ShardRowEvidence& a, const ShardRowEvidence& b) { return order[a.name] < order[b.name]; });
  size_t expected = 0, got = 0;
  for (size_t i = 0; i < work.prepared.size(); ++i) {
    if (!in_this_run[i] || work.resumed[i]) continue;
    ++expected;
    got += sink.Finished(i);
  }
  report.interrupted = got < expected;
  return std::move(report);
}

// The command that draws this campaign's cases again as it drew them (CampaignReport::reproduce): what fixes the plan
// and the draws besides the suite, sampler, profile and seeds.
// A TV the plan fixed (--tv, chosen by --tv auto, or a recorded plan's) is written as --tv: a --tv auto run is
// reproduced at the TV it chose, never by choosing again. When the budget chose it and every row case's draws are
// what `--tv <chosen>` plans under the suite's own caps, the line says --budget 0: the same draws, clock-free.
std::string Reproduce(const CampaignReport& report, const CampaignOptions& given, const CampaignWork& work) {
  CampaignOptions o = given;
  o.finished.clear();
  o.tv = report.draw_plan.tv;
  std::string line = ReproduceBase(report, o, "--sampler", o.sampler_spec);
  if (report.draw_seed != report.seed) line += " --draw-seed " + std::to_string(report.draw_seed);
  if (o.max_draws) line += " --max-draws " + std::to_string(*o.max_draws);
  if (o.generated > 0) line += " --generated " + std::to_string(o.generated);
  bool clock_free = report.draw_plan.tv_chosen_budget_seconds > 0 && (!o.plan_from || o.plan_from_journal);
  for (size_t i = 0; clock_free && i < work.prepared.size(); ++i) {
    clock_free = !RowCase(work.prepared[i]) || work.prepared[i].result.draws <= work.budgets[i].max_draws;
  }
  if (clock_free) {
    line += " --budget 0";
  } else if (report.draw_plan.tv_chosen_budget_seconds > 0) {
    line += " --budget " + FormatExact(report.draw_plan.tv_chosen_budget_seconds);
  } else if (o.budget_seconds) {
    line += " --budget " + FormatExact(*o.budget_seconds);
  }
  if (o.equivalence_eps > 0) line += " --equivalence " + FormatExact(o.equivalence_eps);
  if (o.equivalence_chi2_eps > 0) line += " --equivalence-chi2 " + FormatExact(o.equivalence_chi2_eps);
  if (o.plan_from && !o.plan_from_journal && !o.plan_from_source.empty())
    line += " --plan-from " + ShellWord(o.plan_from_source);
  return line;
}

// The cases this process draws (a shard's part), and how many of them are still to draw.
std::vector<uint8_t> InThisRun(const CampaignWork& work, const std::vector<WorkItem>& items, size_t& to_draw) {
  std::vector<uint8_t> in(work.prepared.size(), 0);
  to_draw = 0;
  for (const WorkItem& item : items) {
    for (size_t i : work.units[item.unit]) {
      if (!in[i] && !work.resumed[i]) ++to_draw;
      in[i] = 1;
    }
  }
  return in;
}

// The sampler campaign as a kind of the engine (engine.h): Plan opens the samplers and plans the work, the first
// Drawer starts the run the workers share (and the budget's watch), Collect keeps the finished cases.
class SamplerCampaign final : public ReportKind {
 public:
  SamplerCampaign(const Suite& suite, const CampaignOptions& options) : suite_(suite), options_(options) {}

  Result<KindPlan> Plan() override {
    if (Status st = CheckTvAuto(suite_, options_); !st.ok()) return st.error();
    auto samplers = OpenSampler(suite_, options_);
    if (!samplers.ok()) return samplers.error();
    samplers_ = std::move(*samplers);
    auto prepared = PrepareWork(suite_, options_, samplers_.judged, samplers_.all.front()->Name());
    if (!prepared.ok()) return prepared.error();
    work_.emplace(std::move(*prepared));
    const unsigned jobs = !options_.devices.empty()
                              ? static_cast<unsigned>(options_.devices.size())
                              : WorkerCount(options_.jobs, samplers_.caps.parallel_instances, work_->units.size());
    if (Status st = AddWorkers(samplers_, jobs, options_.sampler_spec, options_.devices); !st.ok()) return st.error();
    std::optional<CostModel> probed;
    std::string tv_note;
    if (options_.tv_auto && !options_.plan_from) {
      auto chosen = ChooseTheTv(probed, tv_note);
      if (!chosen.ok()) return chosen.error();
    }
    CampaignWork& work = *work_;
    work.report.lossy = samplers_.caps.lossy;
    work.plan.identity = &work.report;
    work.plan.draw_plan = &work.report.draw_plan;
    auto items = PlanTime(work, samplers_, options_, std::move(probed));
    if (!items.ok()) return items.error();
    work.report.reproduce = Reproduce(work.report, options_, work);
    if (!tv_note.empty()) {
      work.plan.budget_note = work.plan.budget_note.empty() ? tv_note : tv_note + "\nnote: " + work.plan.budget_note;
    }
    if (CampaignObserver* observer = options_.observer; observer != nullptr) {
      if (Status st = observer->OnPlan(work.plan); !st.ok()) return st.error();
      if (Status st = observer->OnDrawPlan(work.report.draw_plan); !st.ok()) return st.error();
    }
    items_ = std::move(*items);
    KindPlan plan;
    in_this_run_ = InThisRun(work, items_, plan.to_draw);
    plan.items = items_;
    plan.cases = work.prepared.size();
    plan.draws = work.total_draws;
    plan.workers = static_cast<unsigned>(samplers_.all.size());
    plan.progress = options_.progress;
    plan.observer = options_.observer;
    plan.note = work.plan.budget_note;
    return plan;
  }

  Result<std::unique_ptr<ItemDrawer>> Drawer(unsigned worker, CaseSink& sink) override {
    if (!run_) StartRun(sink);
    return MakeSamplerDrawer(*samplers_.all[worker], *run_);
  }

  Status Collect(const CaseSink& sink) override {
    work_->report.draw_plan.spent_seconds = SecondsSince(drawing_);
    report = Finish(*work_, sink, in_this_run_);
    return Status::Ok();
  }

 private:
  // The run the workers share, its journal's cases marked finished, and the time budget's watch.
  void StartRun(CaseSink& sink) {
    run_ = std::make_unique<SamplerRun>(*work_, sink);
    run_->deterministic = samplers_.caps.deterministic;
    run_->count_draws = samplers_.caps.count_draws;
    run_->count_distributional = samplers_.caps.count_distributional;
    if (samplers_.caps.count_distributional) work_->report.sampler_counts = "distributional";
    run_->gpu = samplers_.caps.gpu;
    run_->sharded = options_.shard.has_value();
    run_->make_fresh = [this]() { return MakeSampler(options_.sampler_spec, samplers_.options); };
    run_->Start(items_);
    drawing_ = Clock::now();
    const PlanBasis basis = work_->report.draw_plan.basis;
    if (basis == PlanBasis::kBudgetFullPower || basis == PlanBasis::kBudgetTv) {
      WatchBudget(*run_, items_, options_, drawing_);
    }
  }

  // --tv auto: the probe on the work prepared at the suite's TV, the least TV of the ladder whose full-power plan
  // fits the budget (ChooseTv), and the work prepared again at it exactly as --tv <chosen> prepares it. `probed`
  // keeps the measured cost for the budget's plan; `note` is the line said before the first draw.
  Status ChooseTheTv(std::optional<CostModel>& probed, std::string& note) {
    probed = MeasureCost(samplers_.all, *work_);
    if (!probed) {
      return InvalidArgument(
          "--tv auto: the probe measured no cost (no row case to draw, or the sampler failed its "
          "probe draws), so no budget chooses a TV: give --tv a number in (0, 0.5]");
    }
    const auto workers = static_cast<unsigned>(samplers_.all.size());
    const double rate = 1e9 / probed->counted_draw * workers;
    const double budget = work_->budget_seconds;
    const TvChoice choice = ChooseTv(*work_, *probed, workers, options_.max_draws);
    CampaignOptions at = options_;
    at.tv = choice.tv;
    at.tv_auto = false;
    auto prepared = PrepareWork(suite_, at, samplers_.judged, samplers_.all.front()->Name());
    if (!prepared.ok()) return prepared.error();
    work_.emplace(std::move(*prepared));
    work_->report.draw_plan.tv_chosen_budget_seconds = budget;
    work_->report.draw_plan.tv_chosen_draws_per_second = rate;
    if (choice.fits) {
      note = "TV chosen by the budget: " + FormatSignificant(choice.tv) + " (the least TV of the ladder the " +
             FormatSignificant(budget) + " s budget affords at the measured " + FormatCount(rate) + " draws/s: power " +
             FormatSignificant(suite_.power) + " at it, estimated " + Progress::FormatDuration(choice.seconds) + ")";
    } else {
      note = "TV chosen by the budget: none up to 0.5 fits: the " + FormatSignificant(budget) +
             " s budget does not afford full power even at TV " + FormatSignificant(choice.tv) + " at the measured " +
             FormatCount(rate) + " draws/s (estimated " + Progress::FormatDuration(choice.seconds) +
             "); the run keeps TV " + FormatSignificant(choice.tv) + ", its cases at their caps";
    }
    return Status::Ok();
  }

  const Suite& suite_;
  const CampaignOptions& options_;
  Samplers samplers_;
  std::optional<CampaignWork> work_;
  std::vector<WorkItem> items_;
  std::vector<uint8_t> in_this_run_;
  std::unique_ptr<SamplerRun> run_;
  Clock::time_point drawing_;
};

}  // namespace

Result<CampaignReport> RunCampaign(const Suite& suite, const CampaignOptions& options) {
  SamplerCampaign kind(suite, options);
  return RunForReport(kind, options.stop);
}

}  // namespace samplecheck::harness
