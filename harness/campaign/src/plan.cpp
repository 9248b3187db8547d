// The Plan stage of a sampler campaign (campaign_work.h): every case of the suite prepared, its draws from the power
// planner, a recorded plan (--plan-from, a resumed journal's) or a shard's clock-free plan, the journal's finished
// cases matched, and the record of it all (DrawPlan). The time budget's part is budget.cpp.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <random>
#include <sstream>
#include <unordered_map>

#include "campaign_work.h"
#include "samplecheck/checks/case_spec.h"
#include "samplecheck/core/format.h"
#include "samplecheck/core/splitmix.h"
#include "samplecheck/suites/case_seed.h"
#include "samplecheck/suites/case_selection.h"
#include "samplecheck/suites/corners.h"
#include "samplecheck/suites/generated.h"

namespace samplecheck::harness {
namespace {

// The report's identity (seeds, TV, equivalence asked); kInvalidArgument naming a value out of range.
Status Identity(CampaignWork& work, const Suite& suite, const PlanInputs& in) {
  CampaignReport& report = work.report;
  if (in.seed) {
    report.seed = *in.seed;
  } else if (suite.fresh_seed) {
    std::random_device rd;
    report.seed = (uint64_t(rd()) << 32) ^ rd() ^ uint64_t(std::chrono::system_clock::now().time_since_epoch().count());
  } else {
    report.seed = suite.seed;
  }
  report.draw_seed = in.draw_seed.value_or(report.seed);
  report.max_draws_override = in.max_draws;
  if (!(report.tv > 0 && report.tv <= 0.5)) return InvalidArgument("--tv must be in (0, 0.5]");
  if (!(in.equivalence_eps >= 0 && in.equivalence_eps < 1)) {
    return InvalidArgument("--equivalence must be a total variation in (0, 1), not " +
                           FormatSignificant(in.equivalence_eps));
  }
  if (!(in.equivalence_chi2_eps >= 0 && std::isfinite(in.equivalence_chi2_eps))) {
    return InvalidArgument("--equivalence-chi2 must be a positive finite chi-square divergence, not " +
                           FormatSignificant(in.equivalence_chi2_eps));
  }
  if (in.equivalence_chi2_eps > 0 && in.equivalence_eps == 0) {
    return InvalidArgument("--equivalence-chi2 needs --equivalence (the TV to certify)");
  }
  report.equivalence_eps = in.equivalence_eps;
  report.equivalence_chi2_eps = in.equivalence_chi2_eps;
  return Status::Ok();
}

// The suite's cases, then its generated block (a fixed seed, or the campaign's for "fresh"), then its corner block,
// then --generated.
Result<std::vector<CaseSpec>> SuiteCases(const Suite& suite, const Profile& profile, uint64_t seed, size_t generated) {
  std::vector<CaseSpec> cases = suite.cases;
  if (suite.generated > 0) {
    for (CaseSpec& cs :
         GenerateCases(suite.generated_seed.value_or(seed), suite.generated, profile, CaseOrigin::kGenerated)) {
      cs.max_draws = suite.generated_max_draws;
      cases.push_back(std::move(cs));
    }
  }
  if (suite.corners) {
    auto corners = CornerCases(suite.corners_seed.value_or(seed), seed, suite.corners_max_draws, suite.corners_tv);
    if (!corners.ok()) return corners.error();
    for (CaseSpec& cs : *corners) cases.push_back(std::move(cs));
  }
  if (generated > 0) {
    for (CaseSpec& cs : GenerateCases(seed ^ 0xC11, generated, profile, CaseOrigin::kCommandLine))
      cases.push_back(std::move(cs));
  }
  return cases;
}

CaseBudget BudgetOf(const CaseSpec& cs, const Suite& suite, const PlanInputs& in, double alpha_per_test) {
  CaseBudget budget;
  budget.alpha_per_test = alpha_per_test;
  budget.tv = in.tv.value_or(cs.tv.value_or(suite.tv));
  budget.power = suite.power;
  // --max-draws caps: it lowers a case's cap, never raises it (a batch case keeps its small one).
  budget.max_draws = cs.max_draws ? cs.max_draws : suite.max_draws;
  if (in.max_draws) budget.max_draws = std::min(budget.max_draws, *in.max_draws);
  budget.min_draws = std::min(suite.min_draws, budget.max_draws);
  budget.ambiguous = cs.ambiguous.value_or(suite.ambiguous);
  budget.equivalence_eps = in.equivalence_eps;
  budget.equivalence_chi2_eps = in.equivalence_chi2_eps;
  return budget;
}

// Every case prepared, a batch as its rows; a unit is what a worker draws at once (one row case, or one batch).
// --case keeps the selected entries, planned with the whole suite's alpha split (case_selection.h).
Status PrepareCases(CampaignWork& work, const Suite& suite, const PlanInputs& in) {
  const Result<std::vector<CaseSpec>> suite_cases = SuiteCases(suite, *work.default_profile, work.report.seed, in.generated);
  if (!suite_cases.ok()) return suite_cases.error();
  const std::vector<CaseSpec>& cases = *suite_cases;
  size_t judged_cases = 0, selected_cases = 0;
  std::vector<std::string> entries;
  for (const CaseSpec& cs : cases) {
    const size_t rows = cs.batch.empty() ? 1 : BatchRows(cs);
    judged_cases += rows;
    selected_cases += EntrySelected(in.only_cases, cs.name) ? rows : 0;
    entries.push_back(cs.name);
  }
  if (Status st = CheckSelection(in.only_cases, entries, suite.name); !st.ok()) return st;
  work.report.planned_cases = work.plan.cases = selected_cases;
  work.report.selected_cases = in.only_cases;
  const double alpha_per_test = suite.alpha / (double(judged_cases) * kPlannedTestsPerCase);
  const CampaignReport& report = work.report;
  for (const CaseSpec& cs : cases) {
    if (!EntrySelected(in.only_cases, cs.name)) continue;
    const CaseBudget budget = BudgetOf(cs, suite, in, alpha_per_test);
    const Profile& profile = cs.profile.empty() ? *work.default_profile : *FindProfile(cs.profile);
    std::vector<PreparedCase> unit;
    if (cs.batch.empty()) {
      auto pc = PrepareCase(cs, profile, CaseSeed(report.seed, cs.name), CaseSeed(report.draw_seed, cs.name), budget);
      if (!pc.ok()) return pc.error();
      unit.push_back(std::move(*pc));
    } else {
      auto batch = PrepareBatch(cs, profile, report.seed, report.draw_seed, budget);
      if (!batch.ok()) return batch.error();
      unit = std::move(*batch);
    }
    work.units.emplace_back();
    for (PreparedCase& pc : unit) {
      work.units.back().push_back(work.prepared.size());
      work.prepared.push_back(std::move(pc));
      work.budgets.push_back(budget);
      work.resumed.push_back(false);
    }
  }
  for (const PreparedCase& pc : work.prepared) work.why.push_back(WhyDraws(pc));
  return Status::Ok();
}

// The --max-draws a recorded plan was drawn under: the cap of its cases recorded below this run's (the suite's, or
// --max-draws) (none when every cap is this run's or a time budget's). A run caps every such case at its one
// --max-draws, so two such caps are no plan a run records. A replay of a capped plan is as capped as the run that
// recorded it, and says so (the gate's power floor and cap check read max_draws_override).
Result<std::optional<uint64_t>> RecordedCap(const CampaignWork& work, const std::vector<const PlannedCase*>& recorded,
                                            const std::string& refuse) {
  std::optional<uint64_t> cap;
  std::string capped;
  for (size_t i = 0; i < work.prepared.size(); ++i) {
    const uint64_t at = recorded[i]->max_draws;
    if (work.prepared[i].skip || at >= work.budgets[i].max_draws) continue;
    if (cap && *cap != at) {
      return InvalidArgument(refuse + "it caps case " + capped + " at " + std::to_string(*cap) + " draws and case " +
                             work.prepared[i].result.name + " at " + std::to_string(at) +
                             ", both below the suite's caps (a run lowers them to its one --max-draws)");
    }
    cap = at;
    capped = work.prepared[i].result.name;
  }
  return cap;
}

// --plan-from (or a resumed journal's plan): every case's draws and cap as recorded. The recorded cases must be
// exactly this suite's, each once, and (when the record has one) the fingerprint the same: same rows, seeds and
// profile. The recorded draws never make a pass this suite's own plan would not: a case recorded with fewer draws
// than this suite and seed plan for it (under this run's caps and the recorded --max-draws) is cut (recorded_cut),
// judged by the power floor as a --max-draws cap is, whatever "why" the record gives.
Status ApplyRecordedPlan(CampaignWork& work, const DrawPlan& recorded, const std::string& source) {
  const std::string refuse = "the plan of " + source + " is not this campaign's: ";
  std::unordered_map<std::string, const PlannedCase*> by_name;
  by_name.reserve(recorded.cases.size());
  for (const PlannedCase& c : recorded.cases) {
    if (!by_name.emplace(c.name, &c).second) return InvalidArgument(refuse + "it lists case " + c.name + " twice");
  }
  // --case draws some cases of a whole suite's plan: each must be in it (the fingerprint is the whole plan's).
  const bool part = !work.report.selected_cases.empty() && by_name.size() > work.prepared.size();
  if (by_name.size() != work.prepared.size() && !part) {
    return InvalidArgument(refuse + "it plans " + std::to_string(by_name.size()) + " cases, this suite " +
                           std::to_string(work.prepared.size()) + " (same suite and --generated needed)");
  }
  std::vector<const PlannedCase*> of_case(work.prepared.size());
  for (size_t i = 0; i < work.prepared.size(); ++i) {
    const PreparedCase& pc = work.prepared[i];
    const auto found = by_name.find(pc.result.name);
    if (found == by_name.end()) return InvalidArgument(refuse + "it has no case " + pc.result.name);
    of_case[i] = found->second;
    if (RowCase(pc) && found->second->draws > found->second->max_draws) {
      return InvalidArgument(refuse + "it gives case " + pc.result.name + " " + std::to_string(found->second->draws) +
                             " draws, above its cap max_draws " + std::to_string(found->second->max_draws));
    }
  }
  const Result<std::optional<uint64_t>> cap = RecordedCap(work, of_case, refuse);
  if (!cap.ok()) return cap.error();
  for (size_t i = 0; i < work.prepared.size(); ++i) {
    PreparedCase& pc = work.prepared[i];
    const PlannedCase& rec = *of_case[i];
    // What this suite plans for the case: its prepared draws (under --max-draws), or, for a case the record caps at
    // its --max-draws, those under that cap.
    uint64_t own = pc.result.draws;
    if (*cap && rec.max_draws == **cap && **cap < work.budgets[i].max_draws && !pc.skip) {
      CaseBudget budget = work.budgets[i];
      budget.max_draws = **cap;
      budget.min_draws = std::min(budget.min_draws, budget.max_draws);
      PreparedCase trial{pc.result, {}, pc.p0, {}, {}, false};
      if (pc.result.batch.size == 0 && !pc.result.unsamplable && !pc.refusal) {
        if (Status st = PlanCaseDraws(trial, budget); !st.ok()) return st;
        own = trial.result.draws;
      } else {
        own = std::min(own, **cap);
      }
    }
    const bool judged = !pc.skip && !pc.result.unsamplable && !pc.refusal;
    pc.result.max_draws = rec.max_draws;
    pc.result.recorded_cut = judged && rec.draws < own;
    if (Status st = PlanAtDraws(pc, pc.skip ? 0 : rec.draws); !st.ok()) return st;
    work.why[i] = pc.result.recorded_cut ? DrawsWhy::kCap : rec.why;
  }
  if (recorded.fingerprint != 0 && !part && PlanFingerprint(work.prepared) != recorded.fingerprint) {
    return InvalidArgument(refuse + "its cases have other rows, seeds, parameters or profile (give the same "
                           "--seed, --draw-seed and --profile as the run that recorded it)");
  }
  if (*cap) work.report.max_draws_override = **cap;
  return Status::Ok();
}

// The journal's finished cases (--resume) are this suite's cases as they were when the journal was started (a suite
// edited since changes a case spec: report_check.h), checked before the journal's plan is applied so that the refusal
// names the case and what changed.
Status CheckFinishedSpecs(const CampaignWork& work, const std::vector<CaseResult>& finished) {
  std::unordered_map<std::string, const CaseResult*> by_name;
  for (const CaseResult& c : finished) by_name[c.name] = &c;
  for (const PreparedCase& pc : work.prepared) {
    const auto done = by_name.find(pc.result.name);
    if (done == by_name.end()) continue;
    if (std::string diff = CaseSpecDifference(*done->second, pc.result); !diff.empty()) {
      return InvalidArgument("cannot resume: case " + pc.result.name + " changed since the journal was started (" +
                             diff + "): the suite or its rows were edited; --restart starts afresh");
    }
  }
  return Status::Ok();
}

// The journal's finished cases (--resume) reused when planned exactly as this run plans them; a batch is drawn
// whole, so a partly journaled one (an interrupted write) is drawn again.
Status MatchFinished(CampaignWork& work, const std::vector<CaseResult>& finished, const std::optional<uint64_t>& cap) {
  std::unordered_map<std::string, const CaseResult*> by_name;
  for (const CaseResult& c : finished) by_name[c.name] = &c;
  for (size_t i = 0; i < work.prepared.size(); ++i) {
    PreparedCase& pc = work.prepared[i];
    const auto done = by_name.find(pc.result.name);
    if (done == by_name.end()) continue;
    // Its draws are this run's plan, or the plan the time budget gave the earlier run (a journal without a plan).
    bool same_draws = done->second->draws == pc.result.draws;
    if (!same_draws && work.budget_seconds > 0 && RowCase(pc)) {
      PreparedCase trial{pc.result, {}, pc.p0, {}, {}, false};
      same_draws = PlanCaseDraws(trial, FullBudget(work.budgets[i], work, cap)).ok() &&
                   trial.result.draws == done->second->draws;
    }
    if (done->second->row_seed != pc.result.row_seed || done->second->params.seed != pc.result.params.seed ||
        !same_draws || done->second->profile != pc.result.profile) {
      return InvalidArgument("cannot resume: case " + pc.result.name +
                             " of the journal was planned differently (seed, draws or profile); start afresh");
    }
    const bool cut = pc.result.recorded_cut;  // the plan says whether it is cut, not the journal's line
    pc.result = *done->second;
    pc.result.recorded_cut = cut;
    work.resumed[i] = true;
  }
  for (const std::vector<size_t>& unit : work.units) {
    const bool all = std::all_of(unit.begin(), unit.end(), [&](size_t i) { return work.resumed[i]; });
    if (!all) {
      for (size_t i : unit) work.resumed[i] = false;
    }
  }
  return Status::Ok();
}

// A sharded campaign plans without a clock (every shard must plan alike): with a time budget, every row case gets
// the draws the budget gives it when it affords full power (docs/scale.md); without one, the power plan stands.
Status PlanShard(CampaignWork& work, const std::optional<uint64_t>& cap) {
  bool every_plan_met = true;
  for (size_t i = 0; i < work.prepared.size(); ++i) {
    PreparedCase& pc = work.prepared[i];
    if (!RowCase(pc) || work.resumed[i]) continue;
    if (Status st = PlanCaseDraws(pc, FullBudget(work.budgets[i], work, cap)); !st.ok()) return st;
    work.why[i] = pc.result.draws < pc.result.planned_draws ? DrawsWhy::kBudgetCap : DrawsWhy::kBudget;
    every_plan_met = every_plan_met && pc.result.draws >= pc.result.planned_draws;
  }
  work.report.full_power = work.plan.full_power = every_plan_met;
  return Status::Ok();
}

}  // namespace

PlanInputs PlanInputsOf(const Suite& suite, const CampaignOptions& options) {
  PlanInputs in;
  in.seed = options.seed;
  in.draw_seed = options.draw_seed;
  in.max_draws = options.max_draws;
  in.tv = options.tv;
  // A recorded plan made at a fixed TV (--tv, or chosen by --tv auto) is replayed at it.
  if (!in.tv && options.plan_from && options.plan_from->tv) in.tv = options.plan_from->tv;
  in.generated = options.generated;
  in.equivalence_eps = options.equivalence_eps;
  in.equivalence_chi2_eps = options.equivalence_chi2_eps;
  in.budget_seconds = options.budget_seconds.value_or(suite.budget_seconds);
  in.sharded = options.shard.has_value();
  in.recorded = options.plan_from ? &*options.plan_from : nullptr;
  in.recorded_source = options.plan_from_source;
  in.finished = &options.finished;
  in.only_cases = options.only_cases;
  return in;
}

CampaignOptions OptionsOfReport(const CampaignReport& report) {
  CampaignOptions options;
  options.sampler_spec = report.sampler_spec;
  options.profile = report.profile;
  options.seed = report.seed;
  options.draw_seed = report.draw_seed;
  options.equivalence_eps = report.equivalence_eps;
  options.equivalence_chi2_eps = report.equivalence_chi2_eps;
  options.version = report.samplecheck_version;
  options.only_cases = report.selected_cases;
  return options;
}

Result<CampaignWork> PrepareWork(const Suite& suite, const CampaignOptions& options, const std::string& judged,
                                 const std::string& sampler_name) {
  const PlanInputs in = PlanInputsOf(suite, options);
  CampaignWork work;
  work.default_profile = FindProfile(judged);
  work.budget_seconds = in.budget_seconds;
  work.budget_max_draws = suite.budget_max_draws;
  if (options.tv && in.recorded && in.recorded->tv && *in.recorded->tv != *options.tv) {
    return InvalidArgument("--tv " + FormatSignificant(*options.tv) + ": the plan of " + in.recorded_source +
                           " was made at TV " + FormatSignificant(*in.recorded->tv) +
                           " (give that --tv, or none: a recorded plan is replayed at its TV)");
  }
  StampReport(work.report, {suite.name, suite.source, suite.alpha, in.tv.value_or(suite.tv), suite.power}, options,
              judged);
  work.report.draw_plan.tv = in.tv;
  if (in.recorded) {
    work.report.draw_plan.tv_chosen_budget_seconds = in.recorded->tv_chosen_budget_seconds;
    work.report.draw_plan.tv_chosen_draws_per_second = in.recorded->tv_chosen_draws_per_second;
  }
  work.report.sampler = sampler_name;
  work.report.sampler_spec = options.sampler_spec;
  work.report.evidence = options.evidence;
  if (Status st = Identity(work, suite, in); !st.ok()) return st.error();
  if (Status st = PrepareCases(work, suite, in); !st.ok()) return st.error();
  if (Status st = CheckFinishedSpecs(work, *in.finished); !st.ok()) return st.error();
  PlanBasis basis = in.budget_seconds > 0 ? PlanBasis::kBudgetCaps : PlanBasis::kPower;
  if (in.recorded) {
    if (Status st = ApplyRecordedPlan(work, *in.recorded, in.recorded_source); !st.ok()) return st.error();
    basis = PlanBasis::kRecorded;
  }
  if (Status st = MatchFinished(work, *in.finished, in.max_draws); !st.ok()) return st.error();
  if (in.sharded && in.budget_seconds > 0 && !in.recorded) {
    if (Status st = PlanShard(work, in.max_draws); !st.ok()) return st.error();
  }
  if (in.sharded) basis = PlanBasis::kShard;
  for (size_t i = 0; i < work.prepared.size(); ++i) {
    if (work.resumed[i]) ++work.plan.resumed;
    if (work.prepared[i].skip && !work.resumed[i]) ++work.plan.skipped;
    if (!work.prepared[i].skip && !work.resumed[i]) work.total_draws += work.prepared[i].result.draws;
  }
  work.plan.draws = work.total_draws;
  RecordPlan(work, basis, in.recorded ? "replayed from " + in.recorded_source : "");
  return work;
}

Result<std::vector<PreparedCase>> PrepareSuiteCases(const Suite& suite, const CampaignOptions& options,
                                                    const std::string& profile) {
  if (Result<const Profile*> p = ProfileByName(profile); !p.ok()) return p.error();
  Result<CampaignWork> work = PrepareWork(suite, options, profile, options.sampler_spec);
  if (!work.ok()) return work.error();
  return std::move(work->prepared);
}

Result<std::vector<std::string>> SuiteCaseNames(const Suite& suite, const CampaignOptions& options,
                                                const std::string& profile) {
  const Profile* judged = FindProfile(profile);
  if (judged == nullptr) return ProfileByName(profile).error();
  CampaignWork work;
  work.report.tv = options.tv.value_or(suite.tv);
  if (Status st = Identity(work, suite, PlanInputsOf(suite, options)); !st.ok()) return st.error();
  auto cases = SuiteCases(suite, *judged, work.report.seed, options.generated);
  if (!cases.ok()) return cases.error();
  std::vector<std::string> names;
  for (const CaseSpec& cs : *cases) {
    names.push_back(cs.name);
    for (size_t k = 0; !cs.batch.empty() && k < BatchRows(cs); ++k) names.push_back(cs.name + "/b" + std::to_string(k));
  }
  return names;
}

void RecordPlan(CampaignWork& work, PlanBasis basis, const std::string& reason) {
  DrawPlan& plan = work.report.draw_plan;
  plan.basis = basis;
  if (!reason.empty() || plan.reason.empty()) plan.reason = reason;
  plan.budget_seconds = work.budget_seconds;
  plan.fingerprint = PlanFingerprint(work.prepared);
  plan.cases.clear();
  for (size_t i = 0; i < work.prepared.size(); ++i) {
    const CaseResult& r = work.prepared[i].result;
    plan.cases.push_back({r.name, work.prepared[i].skip ? 0 : r.draws, r.max_draws, work.why[i]});
  }
}

uint64_t PlanFingerprint(const std::vector<PreparedCase>& prepared) {
  std::ostringstream os;
  os.precision(17);
  for (const PreparedCase& pc : prepared) {
    const CaseResult& r = pc.result;
    os << r.name << '|' << r.row_seed << '|' << r.params.seed << '|' << r.params.offset << '|' << r.params.temperature
       << '|' << r.params.top_k << '|' << r.params.top_p << '|' << r.params.min_p << '|' << r.draws << '|'
       << pc.row.size() << '|' << r.kept << '|' << pc.skip << '\n';
  }
  return Fnv1a64(os.str());
}

bool Ranged(const PreparedCase& pc, bool resumed) {
  return pc.result.batch.size == 0 && !pc.skip && !resumed && pc.result.draws > 0;
}

bool RowCase(const PreparedCase& pc) {
  return pc.result.batch.size == 0 && !pc.skip && !pc.result.unsamplable && !pc.refusal;
}

CaseBudget FullBudget(CaseBudget b, const CampaignWork& work, const std::optional<uint64_t>& max_draws) {
  b.max_draws = std::max(b.max_draws, work.budget_max_draws);
  if (max_draws) b.max_draws = std::min(b.max_draws, *max_draws);
  return b;
}

}  // namespace samplecheck::harness
