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

std::string JudgedProfile(const ReplaySuite& suite, const ReplayCampaignOptions& options) {
  if (!options.profile.empty()) return options.profile;
  if (!suite.profile.empty()) return suite.profile;
  for (const std::string& spec : {options.engine, options.trainer}) {
    if (spec.empty()) continue;
    // The profile a source claims (exact/fault/cuda take the judged one, so only other kinds can say).
    auto source = MakeReplaySource(spec, "vllm");
    if (source.ok() && !(*source)->GetCapabilities().profile.empty()) return (*source)->GetCapabilities().profile;
  }
  return "vllm";
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

Result<CampaignReport> RunReplayCampaign(const ReplaySuite& suite, const ReplayCampaignOptions& options) {
  const auto started = std::chrono::steady_clock::now();
  const std::string profile_name = JudgedProfile(suite, options);
  Result<const Profile*> found = ProfileByName(profile_name);
  if (!found.ok()) return found.error();
  const Profile* profile = *found;
  auto make_side = [&](const std::string& spec) { return MakeReplaySource(spec.empty() ? "exact" : spec, profile_name); };
  auto first_engine = make_side(options.engine);
  if (!first_engine.ok()) return first_engine.error().WithContext("--engine");
  auto first_trainer = make_side(options.trainer);
  if (!first_trainer.ok()) return first_trainer.error().WithContext("--trainer");
  CampaignReport report;
  // No statistical test: every replay check is exact. The alpha is the reports' nominal one (unused).
  StampReport(report, {suite.name, suite.source, 1e-4, 0.0, 0.0}, options, profile_name);
  report.sampler = "engine " + (options.engine.empty() ? std::string("reference") : (*first_engine)->Name()) +
                   ", trainer " + (options.trainer.empty() ? std::string("reference") : (*first_trainer)->Name());
  report.sampler_spec = "replay --engine " + (options.engine.empty() ? "exact" : options.engine) + " --trainer " +
                        (options.trainer.empty() ? "exact" : options.trainer);
  report.seed = options.seed.value_or(suite.seed);
  report.draw_seed = report.seed;
  const uint64_t rollout = options.rollout.value_or(suite.rollout);
  if (rollout < 1) return InvalidArgument("--rollout 0: a row's synthetic rollout needs at least one token");
  const std::vector<ReplayCaseSpec> cases = ReplayCases(suite, *profile, report.seed, options.generated);
  auto planned = PlanWork(cases, *profile, report.seed, rollout);
  if (!planned.ok()) return planned.error();
  std::vector<ReplayCaseWork>& work = *planned;
  const size_t rows = work.empty() ? 0 : work.back().first_row + work.back().rows.size();
  const bool parallel = (*first_engine)->GetCapabilities().parallel_instances &&
                        (*first_trainer)->GetCapabilities().parallel_instances;
  const unsigned jobs = WorkerCount(options.jobs, parallel, work.size());
  CaseSink sink(rows, rows, rollout * rows, options.quiet ? Progress::Mode::kQuiet : Progress::Mode::kLines, nullptr,
                options.stop);
  std::vector<CaseResult> results(rows);
  const ReplayDrawContext context{profile, rollout, &sink, &results};
  std::vector<std::unique_ptr<ItemDrawer>> drawers;
  for (unsigned j = 0; j < jobs; ++j) {
    auto engine = j == 0 ? std::move(first_engine) : make_side(options.engine);
    auto trainer = j == 0 ? std::move(first_trainer) : make_side(options.trainer);
    if (!engine.ok()) return engine.error();
    if (!trainer.ok()) return trainer.error();
    drawers.push_back(std::make_unique<ReplayDrawer>(std::move(*engine), !options.engine.empty(), std::move(*trainer),
                                                     !options.trainer.empty(), work, context));
  }
  std::vector<WorkItem> items(work.size());
  for (size_t c = 0; c < items.size(); ++c) items[c].unit = c;
  RunWorkers(items, drawers, sink);
  sink.progress().Finish();
  for (size_t r = 0; r < rows; ++r) {
    if (sink.Finished(r)) {
      report.cases.push_back(std::move(results[r]));
    } else {
      report.interrupted = true;
    }
  }
  report.cases.push_back(AggregateCase(report, options.max_ratio_bias.value_or(suite.max_ratio_bias)));
  report.planned_cases = rows + 1;
  ApplyCampaignVerdict(report);
  report.seconds = SecondsSince(started);
  return report;
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
