// The consistency of a stored report (report_check.h): the gate's and merge's defence against reports that
// contradict themselves. The statistics are recomputed by the checks' own code (CaseCheck::Recheck) and the plan by
// the campaign's (PrepareWork, PlanCaseDraws): one definition of each.
#include "samplecheck/campaign/report_check.h"
#include "samplecheck/campaign/machine.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <map>
#include <optional>
#include <set>

#include "campaign_work.h"
#include "replay_draw.h"
#include "samplecheck/campaign/replay_campaign.h"
#include "samplecheck/campaign/spec_campaign.h"
#include "samplecheck/checks/case_spec.h"
#include "samplecheck/checks/checks.h"
#include "samplecheck/core/format.h"
#include "samplecheck/suites/generated.h"
#include "samplecheck/suites/json_text.h"

namespace samplecheck::harness {
namespace {

using nlohmann::json;

Error Inconsistent(const std::string& message) { return {ErrorCode::kParse, message}; }

bool Probability(double p) { return p >= 0.0 && p <= 1.0; }

// A replay campaign's report (replay_campaign.h): exact checks only, so no TV, power or per-test alpha is planned.
bool IsReplayReport(const CampaignReport& r) { return r.sampler_spec.rfind("replay ", 0) == 0; }


}  // namespace

namespace {

// `replay`: the case is a replay report's, which plans no statistical test (its tv and alpha are 0).
Status CaseConsistency(const CaseResult& c, bool replay) {
  const std::string where = "case " + c.name;
  if (c.status == CaseStatus::kSkipped && c.draws != 0) {
    return Inconsistent(where + ": a skipped case is never drawn, this one says " + std::to_string(c.draws) + " draws");
  }
  if (!(c.achieved_power >= 0 && c.achieved_power <= 1)) {
    return Inconsistent(where + ": achieved_power " + FormatSignificant(c.achieved_power) + " is outside [0, 1]");
  }
  if (replay && (c.tv != 0 || c.alpha_plan != 0)) {
    return Inconsistent(where + ": a replay case plans no statistical test, this one says plan.tv " +
                        FormatSignificant(c.tv) + ", alpha_per_test " + FormatSignificant(c.alpha_plan));
  }
  if (c.status != CaseStatus::kSkipped && !replay) {
    if (!(c.tv > 0 && c.tv <= 0.5))
      return Inconsistent(where + ": plan.tv " + FormatSignificant(c.tv) + " is outside (0, 0.5]");
    if (!(c.alpha_plan > 0 && c.alpha_plan < 1)) {
      return Inconsistent(where + ": plan.alpha_per_test " + FormatSignificant(c.alpha_plan) + " is outside (0, 1)");
    }
  }
  for (const auto& check : CaseChecks()) {
    json fields = json::object();
    bool present = false;
    for (const std::string& key : check->ReportKeys()) {
      fields[key] = c.checks.contains(key) ? c.checks[key] : json(nullptr);
      present = present || (c.checks.contains(key) && !c.checks[key].is_null());
    }
    if (!present) continue;
    if (Status st = check->Recheck(fields, c); !st.ok()) return st.error().WithContext(where);
  }
  for (const CheckOutcome& o : c.outcomes) {
    if (o.kind == CheckOutcome::Kind::kPValue && !Probability(o.p_value)) {
      return Inconsistent(where + ": " + o.test + ": p-value " + FormatSignificant(o.p_value) +
                          " is not a probability in [0, 1] (NaN is never a pass)");
    }
  }
  for (const char* field : {"p_value", "holm_adjusted_p"}) {
    const double p = std::string(field) == "p_value" ? c.p_value : c.holm_adjusted_p;
    if (!Probability(p))
      return Inconsistent(where + ": " + field + " " + FormatSignificant(p) + " is not a probability in [0, 1]");
  }
  return Status::Ok();
}

}  // namespace

// Alone, a case with no planned test (tv and alpha 0) is taken for a replay row; its report says whether it is one.
Status CheckCaseConsistency(const CaseResult& c) { return CaseConsistency(c, c.tv == 0 && c.alpha_plan == 0); }

Status CheckReportConsistency(const CampaignReport& r) {
  const bool replay = IsReplayReport(r);
  if (replay && (r.tv != 0 || r.power != 0)) {
    return Inconsistent("a replay report's checks are exact: its tv " + FormatSignificant(r.tv) + " and power " +
                        FormatSignificant(r.power) + " must be 0");
  }
  if (!replay && !(r.tv > 0 && r.tv <= 0.5)) {
    return Inconsistent("the report's tv " + FormatSignificant(r.tv) + " is outside (0, 0.5]");
  }
  // A TV the plan fixed (--tv, or chosen by --tv auto) is the report's TV: a forged one says another than it planned.
  if (!replay && r.draw_plan.tv && r.tv != *r.draw_plan.tv) {
    return Inconsistent("the report's tv " + FormatSignificant(r.tv, 17) +
                        " is not the TV its draw_plan was made at (" + FormatSignificant(*r.draw_plan.tv, 17) + ")");
  }
  if (!replay && !(r.power > 0 && r.power < 1)) {
    return Inconsistent("the report's power " + FormatSignificant(r.power) + " is outside (0, 1)");
  }
  if (r.evidence.min_judged_cases < 1 || r.evidence.min_draws < 1) {
    return Inconsistent("evidence floors min_judged_cases = " + std::to_string(r.evidence.min_judged_cases) +
                        ", min_draws = " + std::to_string(r.evidence.min_draws) +
                        ": each must be at least 1 (a verdict on no evidence is no verdict)");
  }
  std::set<std::string> names;
  for (const CaseResult& c : r.cases) {
    if (!names.insert(c.name).second) return Inconsistent("case " + c.name + " appears twice");
    if (Status st = CaseConsistency(c, replay); !st.ok()) return st;
  }
  if (r.cases.size() > r.planned_cases) {
    return Inconsistent(std::to_string(r.cases.size()) + " cases, more than the " + std::to_string(r.planned_cases) +
                        " planned");
  }
  if (!r.interrupted && !r.shard && r.cases.size() != r.planned_cases) {
    return Inconsistent(std::to_string(r.cases.size()) + " cases of " + std::to_string(r.planned_cases) +
                        " planned, and the run is not marked interrupted: cases are missing");
  }
  for (const PropertyOutcome& p : r.properties) {
    const bool ok = p.status == "passed" || p.status == "skipped";
    if (p.ok != ok) {
      return Inconsistent("property " + p.name + ": status " + p.status + " with ok = " + (p.ok ? "true" : "false"));
    }
  }
  return Status::Ok();
}

namespace {

// The cases of a sampler campaign's report (or a spec campaign's) against their suite's plan.
Status CheckAgainstPlan(const CampaignReport& r, const std::string& suite_name);

// A speculative-decoding report: every request's positions and length (residuals where the trials allowed them).
Status CheckSpecPlan(const CampaignReport& r, const SpecSuite& suite) {
  std::set<std::string> required, allowed;
  for (const SpecCaseSpec& cs : suite.cases) {
    for (size_t k = 0; k < cs.requests.size(); ++k) {
      const std::string base = cs.requests.size() == 1 ? cs.name : cs.name + "/e" + std::to_string(k);
      const int32_t g = cs.requests[k].g;
      for (int32_t j = 1; j <= g + 1; ++j) required.insert(base + "/pos" + std::to_string(j));
      required.insert(base + "/length");
      for (int32_t j = 1; j <= g; ++j) allowed.insert(base + "/res" + std::to_string(j));
    }
  }
  allowed.insert(required.begin(), required.end());
  std::set<std::string> present;
  for (const CaseResult& c : r.cases) {
    if (!allowed.count(c.name)) {
      return Inconsistent("case " + c.name + " is not a case spec suite " + suite.name + " plans");
    }
    present.insert(c.name);
  }
  if (!r.interrupted) {
    for (const std::string& name : required) {
      if (!present.count(name)) {
        return Inconsistent("case " + name + " of spec suite " + suite.name + " is missing from the report");
      }
    }
  }
  return Status::Ok();
}

// A replay report's aggregate case is its rows' figures summed (JudgeReplay over the stored rows, the campaign's own
// code) under the suite's ratio bound, or the one `--max-ratio-bias` gave the run (its command line says so): an
// edited sum, a bound loosened in the report alone, is an inconsistency.
Status CheckReplayAggregate(const CampaignReport& r, const ReplaySuite& suite, size_t stored_rows) {
  const CaseResult& stored = r.cases.back();
  const json& fields = stored.checks.value("replay_aggregate", json());
  if (fields.is_null() || !fields.is_object() || !fields.contains("max_ratio_bias")) {
    return Inconsistent("the replay report's \"" + std::string(kReplayAggregateCase) +
                        "\" case has no replay_aggregate fields");
  }
  const double bound = ReadJsonNumber(fields.at("max_ratio_bias"));
  const std::string option = "--max-ratio-bias " + FormatValue(bound);
  const size_t found = r.command_line.find(option);
  const bool by_option = found != std::string::npos && (found + option.size() == r.command_line.size() ||
                                                        r.command_line[found + option.size()] == ' ');
  if (bound != suite.max_ratio_bias && !by_option) {
    return Inconsistent("the aggregate's max_ratio_bias " + FormatSignificant(bound) + " is not replay suite " +
                        suite.name + "'s " + FormatSignificant(suite.max_ratio_bias) +
                        ", and the run's command line gives no --max-ratio-bias");
  }
  ReplayEvidence ev;
  ev.role = ReplayRole::kAggregate;
  ev.max_ratio_bias = bound;
  ev.rows = std::span<const CaseResult>(r.cases.data(), stored_rows);
  CaseResult recomputed;
  recomputed.name = kReplayAggregateCase;
  recomputed.profile = r.profile;
  JudgeReplay(ev, recomputed);
  const json& want = recomputed.checks.value("replay_aggregate", json());
  // The same fields, numbers to the precision the report keeps them in.
  std::function<std::string(const json&, const json&, const std::string&)> differ =
      [&](const json& a, const json& b, const std::string& at) -> std::string {
    if (a.is_object() && b.is_object()) {
      for (const auto& [key, value] : b.items()) {
        if (!a.contains(key)) return at + key + " is missing";
        if (std::string d = differ(a.at(key), value, at + key + "."); !d.empty()) return d;
      }
      return "";
    }
    if (a.is_number() || b.is_number() || a.is_string() != b.is_string()) {
      try {
        if (SameStoredNumber(ReadJsonNumber(a), ReadJsonNumber(b))) return "";
      } catch (const std::exception&) {
      }
    } else if (a == b) {
      return "";
    }
    return at.substr(0, at.size() - 1) + " = " + a.dump() + ", its rows give " + b.dump();
  };
  if (std::string d = differ(fields, want, "replay_aggregate."); !d.empty()) {
    return Inconsistent("case " + stored.name + ": " + d);
  }
  return Status::Ok();
}

// A replay report: its row cases are those the campaign plans under the report's seed, profile and rollout (the
// "more-gen/<i>" cases of --generated counted from the report), in order, then the aggregate case.
Status CheckReplayPlan(const CampaignReport& r, const ReplaySuite& suite) {
  size_t more = 0;
  uint64_t rollout = suite.rollout;
  for (const CaseResult& c : r.cases) {
    if (c.name != kReplayAggregateCase) rollout = c.planned_draws;
    if (c.name.rfind("more-gen/", 0) != 0) continue;
    const std::string index = c.name.substr(9, c.name.find('/', 9) - 9);
    if (index.empty() || index.size() > 6 || index.find_first_not_of("0123456789") != std::string::npos) {
      return Inconsistent("case " + c.name + " is not a case replay suite " + suite.name + " plans");
    }
    more = std::max(more, static_cast<size_t>(std::stoul(index)) + 1);
  }
  auto planned = PlanReplayRows(suite, r.profile, r.seed, more, rollout);
  if (!planned.ok()) return planned.error().WithContext("replay suite " + suite.name);
  const size_t stored_rows = r.cases.empty() || r.cases.back().name != kReplayAggregateCase ? r.cases.size()
                                                                                              : r.cases.size() - 1;
  if (r.cases.empty() || r.cases.back().name != kReplayAggregateCase) {
    return Inconsistent("the replay report's last case is not its \"" + std::string(kReplayAggregateCase) + "\" case");
  }
  if (stored_rows > planned->size() || (!r.interrupted && stored_rows != planned->size())) {
    return Inconsistent(std::to_string(stored_rows) + " row cases, replay suite " + suite.name + " plans " +
                        std::to_string(planned->size()) + " under the report's seed and profile");
  }
  size_t next = 0;  // an interrupted run keeps the finished rows in plan order, some left out
  for (size_t i = 0; i < stored_rows; ++i) {
    const CaseResult& c = r.cases[i];
    while (next < planned->size() && (*planned)[next].name != c.name) ++next;
    if (next == planned->size()) {
      return Inconsistent("case " + c.name + " is not a row replay suite " + suite.name +
                          " plans in this place under the report's seed and profile");
    }
    const CaseResult& p = (*planned)[next++];
    if (std::string d = CaseSpecDifference(c, p); !d.empty()) {
      return Inconsistent("case " + c.name + " differs from the replay suite's plan in " + d);
    }
    if ((c.status == CaseStatus::kSkipped) != (p.status == CaseStatus::kSkipped)) {
      return Inconsistent("case " + c.name + (p.status == CaseStatus::kSkipped ? " is judged, its plan skips it ("
                                                                                  : " is skipped, its plan judges it (") +
                          (p.reason.empty() ? "valid parameters" : p.reason) + ")");
    }
    if (c.planned_draws != p.planned_draws || c.draws > c.planned_draws) {
      return Inconsistent("case " + c.name + ": " + std::to_string(c.draws) + " rollout tokens of " +
                          std::to_string(c.planned_draws) + " planned; every row of the report plans " +
                          std::to_string(p.planned_draws));
    }
  }
  return CheckReplayAggregate(r, suite, stored_rows);
}

}  // namespace

Status CheckReportAgainstPlan(const CampaignReport& r, const std::string& suite_name) {
  if (r.shard) return Status::Ok();  // a shard's evidence: merge plans the shards again itself
  const Status st = CheckAgainstPlan(r, suite_name);
  // A report of another samplecheck revision may have been planned by another reference (an ambiguity model, a
  // profile that changed since): say so beside what differs.
  const std::optional<std::string> here = DetectGitRevision();
  if (st.ok() || !r.git_revision || !here || *r.git_revision == *here) return st;
  return Error{st.error().code, st.error().message + " (the report was written by samplecheck " +
                                    r.git_revision->substr(0, 12) + ", this is " + here->substr(0, 12) +
                                    ": gate it with the samplecheck that wrote it if its plan differs)"};
}

namespace {

// The options that plan the report's suite as its run did: its seeds, profile, --max-draws, equivalence and
// generated cases, and the plan it records (draw_plan: a time budget's plan depends on the throughput measured
// then, so it is replayed, never made again; a merged report or one before the record is planned afresh).
CampaignOptions ReplanOptions(const CampaignReport& r) {
  CampaignOptions options = OptionsOfReport(r);
  options.max_draws = r.max_draws_override;
  for (const CaseResult& c : r.cases) options.generated += OriginOfCase(c.name) == CaseOrigin::kCommandLine ? 1 : 0;
  if (!r.draw_plan.empty()) {
    options.plan_from = r.draw_plan;
    options.plan_from_source = "the report's draw_plan";
  }
  return options;
}

// The binnings and the power at the stored draw count and TV: the stored expectations must be the reference's
// cells, the achieved power what that many draws give.
Status CheckCaseStatistics(const CaseResult& c, const PreparedCase& pc, CaseBudget budget) {
  budget.min_draws = budget.max_draws = c.draws;
  budget.tv = c.tv;
  budget.alpha_per_test = c.alpha_plan;
  PreparedCase again{pc.result, {}, pc.p0, {}, {}, false};
  if (Status st = PlanCaseDraws(again, budget); !st.ok()) return st.error().WithContext("case " + c.name);
  if (!SameStoredNumber(c.achieved_power, again.result.achieved_power)) {
    return Inconsistent("case " + c.name + ": achieved_power " + FormatSignificant(c.achieved_power) + " is not what " +
                        std::to_string(c.draws) + " draws give at TV " + FormatSignificant(c.tv) + " (" +
                        FormatSignificant(again.result.achieved_power) + ")");
  }
  const std::vector<StoredBinning> stored = StoredBinnings(c);
  const std::vector<const stats::Binning*> usable = again.binning.UsableBinnings();
  if (stored.size() != usable.size()) {
    return Inconsistent("case " + c.name + ": " + std::to_string(stored.size()) + " binnings stored, the reference " +
                        "at " + std::to_string(c.draws) + " draws has " + std::to_string(usable.size()));
  }
  for (size_t b = 0; b < usable.size(); ++b) {
    const std::vector<double> expected = stats::CellProbabilities(*usable[b]);
    bool same = stored[b].name == usable[b]->name && stored[b].expected.size() == expected.size();
    for (size_t k = 0; same && k < expected.size(); ++k) same = SameStoredNumber(stored[b].expected[k], expected[k]);
    if (!same) {
      return Inconsistent("case " + c.name + ": binning " + stored[b].name + ": the expected cells are not the " +
                          "reference's (" + usable[b]->name + ", " + std::to_string(expected.size()) + " cells)");
    }
  }
  return Status::Ok();
}

// One stored case against its planned case `pc` (with the suite's `budget` under the report's --max-draws).
Status CheckCaseAgainstPlan(const CampaignReport& r, const CaseResult& c, const PreparedCase& pc,
                            const CaseBudget& budget, const std::string& suite_name) {
  if (std::string diff = CaseSpecDifference(c, pc.result); !diff.empty()) {
    return Inconsistent("case " + c.name + ": " + diff + " is not what suite " + suite_name + " plans");
  }
  if ((c.status == CaseStatus::kSkipped) != pc.skip) {
    return Inconsistent("case " + c.name + ": stored as " + CaseStatusName(c.status) + ", but the plan " +
                        (pc.skip ? "skips it (" + pc.result.reason + ")" : "judges it (a case is skipped only when "
                                                                          "it is planned, never after its draws)"));
  }
  if (c.status == CaseStatus::kSkipped || c.draws == 0 || c.unsamplable) return Status::Ok();
  // A case's cap is the suite's, lowered only by the --max-draws the report declares (a time budget only raises
  // it): a cap below that says the run was cut without saying so.
  if (c.max_draws < budget.max_draws) {
    return Inconsistent("case " + c.name + ": plan.max_draws " + std::to_string(c.max_draws) + " is below its cap " +
                        std::to_string(budget.max_draws) + " under the report's " +
                        (r.max_draws_override ? "--max-draws " + std::to_string(*r.max_draws_override)
                                              : std::string("suite caps (it declares no --max-draws)")));
  }
  // The plan's fixed TV (draw_plan.tv) is every case's: planned again at it, a case at another TV was not drawn by it.
  if (r.draw_plan.tv && !SameStoredNumber(c.tv, pc.result.tv)) {
    return Inconsistent("case " + c.name + ": plan.tv " + FormatSignificant(c.tv) + " is not the TV its report's " +
                        "draw_plan was made at (" + FormatSignificant(pc.result.tv) + ")");
  }
  // The recorded plan replayed: a finished case drew what it records.
  if (!r.draw_plan.empty() && c.draws != pc.result.draws) {
    return Inconsistent("case " + c.name + ": " + std::to_string(c.draws) + " draws, its report's draw_plan gives it " +
                        std::to_string(pc.result.draws));
  }
  // A recorded plan's draws below this suite's own plan are a cut the power floor judges (recorded_cut): a report
  // that draws them without saying so hides it.
  if (c.recorded_cut != pc.result.recorded_cut) {
    return Inconsistent("case " + c.name + ": " + std::to_string(c.draws) + " draws " +
                        (pc.result.recorded_cut
                             ? "below what suite " + suite_name +
                                   " plans for it, but plan.recorded_cut is not set (a recorded "
                                   "plan's cut is judged by the power floor)"
                             : "are what suite " + suite_name + " plans for it, but plan.recorded_cut is set"));
  }
  if (!SameStoredNumber(c.alpha_plan, pc.result.alpha_plan)) {
    return Inconsistent("case " + c.name + ": plan.alpha_per_test " + FormatSignificant(c.alpha_plan) +
                        " is not the plan's " + FormatSignificant(pc.result.alpha_plan));
  }
  return CheckCaseStatistics(c, pc, budget);
}

Status CheckAgainstSuite(const CampaignReport& r, const Suite& suite, const std::string& context) {
  if (suite.name != r.suite) return InvalidArgument(context + " is named " + suite.name + ", the report ran " + r.suite);
  if (!FindProfile(r.profile)) return Inconsistent("the report judges profile \"" + r.profile + "\", unknown here");
  Result<CampaignWork> work = PrepareWork(suite, ReplanOptions(r), r.profile, r.sampler);
  if (!work.ok()) return work.error().WithContext(context);
  if (work->prepared.size() != r.planned_cases) {
    return Inconsistent("the report says " + std::to_string(r.planned_cases) + " planned cases, suite " + suite.name +
                        " plans " + std::to_string(work->prepared.size()) + " under its seed and profile");
  }
  std::map<std::string, size_t> planned;
  for (size_t i = 0; i < work->prepared.size(); ++i) planned[work->prepared[i].result.name] = i;
  std::set<std::string> present;
  for (const CaseResult& c : r.cases) {
    const auto at = planned.find(c.name);
    if (at == planned.end()) {
      return Inconsistent("case " + c.name + " is not a case suite " + suite.name + " plans (seed " +
                          std::to_string(r.seed) + ")");
    }
    present.insert(c.name);
    const size_t i = at->second;
    if (Status st = CheckCaseAgainstPlan(r, c, work->prepared[i], work->budgets[i], suite.name); !st.ok()) return st;
  }
  if (!r.interrupted) {
    for (const auto& [name, index] : planned) {
      if (!present.count(name)) {
        return Inconsistent("case " + name + " of suite " + suite.name + " is missing from the report");
      }
    }
  }
  return Status::Ok();
}

Status CheckAgainstPlan(const CampaignReport& r, const std::string& suite_name) {
  const std::string context = "the report's suite " + suite_name;
  if (IsReplayReport(r)) {
    Result<ReplaySuite> replay = LoadReplaySuite(suite_name);
    if (!replay.ok()) return replay.error().WithContext(context);
    return CheckReplayPlan(r, *replay);
  }
  if (IsBuiltinSpecSuite(suite_name)) {
    Result<SpecSuite> spec = LoadSpecSuite(suite_name);
    if (!spec.ok()) return spec.error().WithContext(context);
    return CheckSpecPlan(r, *spec);
  }
  Result<Suite> suite = LoadSuite(suite_name);
  if (!suite.ok()) {
    Result<SpecSuite> spec = LoadSpecSuite(suite_name);  // a spec suite file
    if (spec.ok()) return CheckSpecPlan(r, *spec);
    return suite.error().WithContext(context);
  }
  return CheckAgainstSuite(r, *suite, context);
}

}  // namespace
}  // namespace samplecheck::harness
