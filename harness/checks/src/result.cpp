#include "samplecheck/checks/result.h"

#include <algorithm>
#include <sstream>

#include "samplecheck/checks/checks.h"
#include "samplecheck/stats/multiple_testing.h"
#include "samplecheck/suites/json_text.h"

namespace samplecheck::harness {

const char* CaseStatusName(CaseStatus status) {
  switch (status) {
    case CaseStatus::kPass: return "pass";
    case CaseStatus::kFail: return "fail";
    case CaseStatus::kSkipped: return "skipped";
    case CaseStatus::kError: return "error";
  }
  return "error";
}

uint64_t CaseResult::HardViolations() const {
  uint64_t total = 0;
  for (const CheckOutcome& o : outcomes) {
    if (o.kind == CheckOutcome::Kind::kHard) total += o.violations;
  }
  return total;
}

std::vector<const CheckOutcome*> CaseResult::OutcomesOf(const std::string& check) const {
  std::vector<const CheckOutcome*> out;
  for (const CheckOutcome& o : outcomes) {
    if (o.check == check) out.push_back(&o);
  }
  return out;
}

uint64_t CampaignReport::JudgedCases() const { return Count(CaseStatus::kPass) + Count(CaseStatus::kFail); }

uint64_t CampaignReport::JudgedDraws() const {
  uint64_t draws = 0;
  for (const CaseResult& c : cases) {
    if (c.status == CaseStatus::kPass || c.status == CaseStatus::kFail) draws += c.draws;
  }
  return draws;
}

namespace {

// A lossy report without a distance to judge it against: what was measured, and how to judge it.
std::string LossyProblem(const CampaignReport& r) {
  double upper = 0.0, point = 0.0;
  std::string worst;
  for (const CaseResult& c : r.cases) {
    const StoredEquivalence e = StoredEquivalenceOf(c);
    if (!e.present || !e.bound.ok() || c.batch.size > 0) continue;
    if (e.tv_upper >= upper) {
      upper = e.tv_upper;
      worst = c.name;
      point = 0.0;
      for (const auto& b : c.checks["equivalence"]["binnings"])
        point = std::max(point, ReadJsonNumber(b.at("tv_point")));
    }
  }
  std::ostringstream os;
  os << "lossy (declared an approximation): a distance, not a pass; measured binned TV " << point << ", upper bound "
     << upper << (worst.empty() ? "" : " (case " + worst + ")")
     << "; judge it with samplecheck gate --max-tv T (or run --equivalence T)";
  return os.str();
}

}  // namespace

std::vector<const CaseResult*> CampaignReport::UnderpoweredCases() const {
  std::vector<const CaseResult*> out;
  for (const CaseResult& c : cases) {
    const bool judged = c.status == CaseStatus::kPass || c.status == CaseStatus::kFail;
    const bool capped = max_draws_override && c.max_draws == *max_draws_override && c.batch.size == 0;
    const bool cut = (capped || c.recorded_cut) && c.draws < c.planned_draws;
    if (judged && cut && c.tests > 0 && !(c.achieved_power >= power)) out.push_back(&c);
  }
  return out;
}

std::vector<std::string> CampaignReport::VerdictProblems() const {
  std::vector<std::string> problems;
  if (shard) {
    problems.push_back("a shard's evidence (shard " + std::to_string(shard->index) + "/" +
                       std::to_string(shard->count) + "), not a verdict: samplecheck merge judges the shards together");
  }
  const size_t failed = Count(CaseStatus::kFail);
  const size_t errors = Count(CaseStatus::kError);
  const size_t skipped = Count(CaseStatus::kSkipped);
  if (failed > 0) problems.push_back(std::to_string(failed) + " case(s) failed");
  if (errors > 0) problems.push_back(std::to_string(errors) + " case(s) could not be judged (error)");
  if (interrupted) {
    // replay keeps no journal: only run's interrupted reports can be finished (a replay report's sampler_spec is
    // "replay --engine ... --trainer ...").
    const bool replay = sampler_spec.rfind("replay ", 0) == 0;
    problems.push_back("interrupted: " + std::to_string(cases.size()) + " of " + std::to_string(planned_cases) +
                       " cases finished" +
                       (replay ? " (samplecheck replay keeps no journal: run the replay again)"
                               : " (samplecheck run --resume finishes the run)"));
  }
  if (skipped > 0 && !evidence.allow_skipped) {
    problems.push_back(std::to_string(skipped) + " case(s) skipped, never judged (--allow-skipped accepts them)");
  }
  if (const std::vector<const CaseResult*> weak = UnderpoweredCases(); !weak.empty() && !evidence.allow_underpowered) {
    const CaseResult* weakest = *std::min_element(
        weak.begin(), weak.end(),
        [](const CaseResult* a, const CaseResult* b) { return a->achieved_power < b->achieved_power; });
    std::ostringstream os;
    os.precision(3);
    os << "underpowered: " << weak.size() << " judged case(s) below power " << power << " at their TV (lowest "
       << weakest->achieved_power << ": " << weakest->name << ", " << weakest->draws << " draws, "
       << weakest->planned_draws << " planned at TV " << weakest->tv << ")";
    if (weakest->recorded_cut) {
      os << " under a recorded plan that gives fewer draws than this suite plans; run without --plan-from";
    } else {
      os << " under --max-draws " << *max_draws_override << "; raise it";
    }
    os << ", or --allow-underpowered accepts the weaker evidence";
    problems.push_back(os.str());
  }
  if (equivalence_eps > 0) {
    size_t inconclusive = 0, lacking = 0;
    for (const CaseResult& c : cases) {
      for (const CheckOutcome& o : c.outcomes) {
        if (o.check != "equivalence" || !o.Fails()) continue;
        ++inconclusive;
        lacking += o.finding.find("for lack of draws") != std::string::npos;
      }
    }
    if (inconclusive > 0) {
      std::ostringstream eps;
      eps << equivalence_eps;
      problems.push_back("equivalence within TV " + eps.str() + " not shown: " + std::to_string(inconclusive) +
                         " case(s) inconclusive, " + std::to_string(lacking) +
                         " of them for lack of draws (--max-draws, the suite's budget)");
    }
  }
  if (lossy && equivalence_eps == 0) problems.push_back(LossyProblem(*this));
  for (const PropertyOutcome& p : properties) {
    if (!p.ok)
      problems.push_back("property " + p.name + " " + p.status + " after " + std::to_string(p.cases) + " cases");
  }
  if (properties_run && std::none_of(properties.begin(), properties.end(),
                                     [](const PropertyOutcome& p) { return p.status == "passed"; })) {
    problems.push_back("no property evidence: none of the " + std::to_string(properties.size()) +
                       " properties ran (every one skipped)");
  }
  if (JudgedCases() < evidence.min_judged_cases) {
    problems.push_back("no evidence: " + std::to_string(JudgedCases()) + " judged case(s), at least " +
                       std::to_string(evidence.min_judged_cases) + " needed (--min-judged-cases)");
  }
  if (JudgedDraws() < evidence.min_draws) {
    problems.push_back("no evidence: " + std::to_string(JudgedDraws()) + " draws over the judged cases, at least " +
                       std::to_string(evidence.min_draws) + " needed (--min-draws)");
  }
  return problems;
}

size_t CampaignReport::Count(CaseStatus status) const {
  return static_cast<size_t>(
      std::count_if(cases.begin(), cases.end(), [&](const CaseResult& c) { return c.status == status; }));
}

std::string CampaignReport::ReproduceLine(const CaseResult& c) const {
  if (reproduce.empty()) return "";
  return reproduce + " --case " +
         (c.name.find_first_of(" \t'\"$`\\") == std::string::npos ? c.name : "'" + c.name + "'");
}

void ComputeCasePValue(CaseResult& c) {
  c.tests = 0;
  double min_p = 1.0;
  for (const CheckOutcome& o : c.outcomes) {
    if (o.kind != CheckOutcome::Kind::kPValue) continue;
    ++c.tests;
    min_p = std::min(min_p, o.p_value);
  }
  c.p_value = c.tests > 0 ? std::min(1.0, double(c.tests) * min_p) : 1.0;
}

void ApplyCampaignVerdict(CampaignReport& report) {
  auto judged_status = [](const CaseResult& c) {
    return c.status != CaseStatus::kSkipped && c.status != CaseStatus::kError;
  };
  // A p-value that is not a probability (NaN from a broken statistic, or a hand-edited 5 or inf) is never a pass:
  // its case cannot be judged, and stays out of Holm's family.
  auto not_a_probability = [](const CaseResult& c) -> const CheckOutcome* {
    for (const CheckOutcome& o : c.outcomes) {
      if (o.kind == CheckOutcome::Kind::kPValue && !(o.p_value >= 0.0 && o.p_value <= 1.0)) return &o;
    }
    return nullptr;
  };
  for (CaseResult& c : report.cases) {
    if (judged_status(c)) ComputeCasePValue(c);
  }
  std::vector<double> p_values;
  std::vector<size_t> judged;
  for (size_t i = 0; i < report.cases.size(); ++i) {
    const CaseResult& c = report.cases[i];
    if (!judged_status(c)) continue;
    if (c.tests == 0) continue;  // support-only case (a single kept token): no p-value
    if (not_a_probability(c) != nullptr) continue;
    judged.push_back(i);
    p_values.push_back(std::clamp(c.p_value, 0.0, 1.0));
  }
  const Result<stats::MultipleTestingDecision> holm = stats::HolmBonferroni(p_values, report.alpha);
  for (CaseResult& c : report.cases) {
    if (!judged_status(c)) continue;
    c.status = CaseStatus::kPass;
    c.reason.clear();
    c.holm_adjusted_p = 1.0;
  }
  for (size_t k = 0; k < judged.size() && holm.ok(); ++k) {
    CaseResult& c = report.cases[judged[k]];
    c.holm_adjusted_p = holm->adjusted_p_values[k];
    if (holm->rejected[k] && !report.lossy) {  // a lossy sampler's p-values measure, they do not reject
      std::ostringstream os;
      os << "goodness of fit rejected: p = " << c.p_value << ", Holm-adjusted " << c.holm_adjusted_p << " <= alpha "
         << report.alpha;
      // The test that rejected (the smallest p-value of the case's family) and what it saw.
      const CheckOutcome* smallest = nullptr;
      for (const CheckOutcome& o : c.outcomes) {
        if (o.kind == CheckOutcome::Kind::kPValue && (smallest == nullptr || o.p_value < smallest->p_value)) {
          smallest = &o;
        }
      }
      if (smallest != nullptr) os << "; by " << smallest->test << ": " << smallest->finding;
      c.status = CaseStatus::kFail;
      c.reason = os.str();
    }
  }
  for (CaseResult& c : report.cases) {
    const CheckOutcome* bad = judged_status(c) ? not_a_probability(c) : nullptr;
    if (bad == nullptr) continue;
    std::ostringstream os;
    os << bad->test << ": p-value " << bad->p_value << " is not a probability in [0, 1]: the case cannot be judged";
    c.status = CaseStatus::kError;
    c.reason = os.str();
  }
  // Hard outcomes fail their case whatever the p-values; their findings lead the reason, in check order.
  for (CaseResult& c : report.cases) {
    if (!judged_status(c) || c.status == CaseStatus::kError) continue;
    std::string hard;
    for (const CheckOutcome& o : c.outcomes) {
      if (!o.Fails()) continue;
      if (!hard.empty()) hard += "; ";
      hard += o.finding;
    }
    if (!hard.empty()) {
      c.status = CaseStatus::kFail;
      c.reason = c.reason.empty() ? hard : hard + "; " + c.reason;
    }
  }
  if (!holm.ok()) {
    for (size_t idx : judged) {
      report.cases[idx].status = CaseStatus::kError;
      report.cases[idx].reason = "Holm: " + holm.error().message;
    }
  }
}

Status ApplyMaxTv(CampaignReport& report, double max_tv) {
  if (!(max_tv > 0 && max_tv < 1)) {
    std::ostringstream os;
    os << "--max-tv " << max_tv << " is outside (0, 1): give the largest total variation distance to accept";
    return InvalidArgument(os.str());
  }
  const bool any_bound = std::any_of(report.cases.begin(), report.cases.end(), [](const CaseResult& c) {
    return c.checks.contains("equivalence") && !c.checks["equivalence"].is_null();
  });
  if (!any_bound) {
    // A distance verdict on no distance is no verdict: a replay report (exact checks only) or a run without
    // --equivalence stores no TV bound.
    return InvalidArgument("--max-tv: no case of this report has a TV upper bound to compare (" +
                           std::string(report.sampler_spec.rfind("replay ", 0) == 0
                                           ? "a replay report's checks are exact: gate it without --max-tv"
                                           : "run the campaign with --equivalence EPS to store them") +
                           ")");
  }
  report.equivalence_eps = max_tv;
  for (CaseResult& c : report.cases) {
    if (!c.checks.contains("equivalence") || c.checks["equivalence"].is_null()) continue;
    c.checks["equivalence"]["eps"] = max_tv;
    c.equivalence_eps = max_tv;
    const nlohmann::json fields = c.checks;  // ReadCaseChecks rewrites c.checks from it
    if (Status st = ReadCaseChecks(fields, c); !st.ok()) return st;
  }
  ApplyCampaignVerdict(report);
  return Status::Ok();
}

}  // namespace samplecheck::harness
