// The Plan stage's record (result.h, DrawPlan): its JSON form, and the plan of a report for `run --plan-from`.
#include <stdexcept>
#include <unordered_set>

#include "samplecheck/checks/result.h"
#include "samplecheck/suites/json_text.h"

namespace samplecheck::harness {

using nlohmann::json;

namespace {

constexpr std::pair<DrawsWhy, const char*> kDrawsWhyNames[] = {
    {DrawsWhy::kPower, "power"},
    {DrawsWhy::kCap, "cap"},
    {DrawsWhy::kFloor, "floor"},
    {DrawsWhy::kBudget, "budget"},
    {DrawsWhy::kBudgetCap, "budget cap"},
    {DrawsWhy::kBatch, "batch"},
    {DrawsWhy::kUnsamplable, "unsamplable"},
    {DrawsWhy::kSkipped, "skipped"},
    {DrawsWhy::kRefusal, "refusal"},
    {DrawsWhy::kReplanned, "replanned"},
    {DrawsWhy::kRecorded, "recorded"},
};
constexpr std::pair<PlanBasis, const char*> kPlanBasisNames[] = {
    {PlanBasis::kPower, "power"},
    {PlanBasis::kBudgetFullPower, "budget: full power"},
    {PlanBasis::kBudgetCaps, "budget: caps"},
    {PlanBasis::kBudgetReplanned, "budget: replanned"},
    {PlanBasis::kBudgetTv, "budget: tv"},
    {PlanBasis::kShard, "shard"},
    {PlanBasis::kRecorded, "recorded"},
};

template <class E, size_t N>
const char* NameIn(const std::pair<E, const char*> (&names)[N], E value) {
  for (const auto& [v, name] : names) {
    if (v == value) return name;
  }
  return "?";
}

template <class E, size_t N>
Result<E> FromNameIn(const std::pair<E, const char*> (&names)[N], const std::string& text, const char* what) {
  std::string allowed;
  for (const auto& [v, name] : names) {
    if (text == name) return v;
    allowed += std::string(allowed.empty() ? "" : ", ") + "\"" + name + "\"";
  }
  return ParseError(std::string(what) + " \"" + text + "\" is unknown; allowed: " + allowed);
}

}  // namespace

const char* DrawsWhyName(DrawsWhy why) { return NameIn(kDrawsWhyNames, why); }
Result<DrawsWhy> DrawsWhyFromName(const std::string& name) { return FromNameIn(kDrawsWhyNames, name, "why"); }
const char* PlanBasisName(PlanBasis basis) { return NameIn(kPlanBasisNames, basis); }
Result<PlanBasis> PlanBasisFromName(const std::string& name) { return FromNameIn(kPlanBasisNames, name, "basis"); }

json DrawPlanToJson(const DrawPlan& plan) {
  if (plan.empty()) return nullptr;
  json cases = json::array();
  for (const PlannedCase& c : plan.cases) {
    cases.push_back({{"case", c.name}, {"draws", c.draws}, {"max_draws", c.max_draws}, {"why", DrawsWhyName(c.why)}});
  }
  json j = {{"basis", PlanBasisName(plan.basis)},
            {"reason", plan.reason},
            {"budget_seconds", JsonNumber(plan.budget_seconds)},
            {"planned_seconds", JsonNumber(plan.planned_seconds)},
            {"spent_seconds", JsonNumber(plan.spent_seconds)},
            {"fingerprint", plan.fingerprint},
            {"replanned", plan.replanned},
            {"cases", std::move(cases)}};
  if (plan.tv) j["tv"] = JsonNumber(*plan.tv);
  if (plan.tv_chosen_budget_seconds > 0) {
    j["tv_chosen_by"] = {{"budget_seconds", JsonNumber(plan.tv_chosen_budget_seconds)},
                         {"draws_per_second", JsonNumber(plan.tv_chosen_draws_per_second)}};
  }
  return j;
}

Result<DrawPlan> DrawPlanFromJson(const json& j) {
  DrawPlan plan;
  try {
    Result<PlanBasis> basis = PlanBasisFromName(j.at("basis").get<std::string>());
    if (!basis.ok()) return basis.error().WithContext("\"draw_plan\"");
    plan.basis = *basis;
    plan.reason = j.at("reason").get<std::string>();
    plan.budget_seconds = ReadJsonNumber(j.at("budget_seconds"));
    plan.planned_seconds = ReadJsonNumber(j.at("planned_seconds"));
    plan.spent_seconds = ReadJsonNumber(j.at("spent_seconds"));
    plan.fingerprint = j.at("fingerprint").get<uint64_t>();
    // The fingerprint ties the plan to its suite, seeds and draws; a record without one would replay on anything.
    if (plan.fingerprint == 0) {
      return Error{ErrorCode::kParse,
                   "\"draw_plan\": \"fingerprint\" is 0; a recorded plan carries the nonzero "
                   "fingerprint of its cases (every run records one)"};
    }
    plan.replanned = j.at("replanned").get<uint32_t>();
    if (j.contains("tv") && !j["tv"].is_null()) {
      plan.tv = ReadJsonNumber(j["tv"]);
      if (!(*plan.tv > 0 && *plan.tv <= 0.5)) {
        return Error{ErrorCode::kParse, "\"draw_plan\": \"tv\" " + j["tv"].dump() + " is outside (0, 0.5]"};
      }
    }
    if (j.contains("tv_chosen_by") && !j["tv_chosen_by"].is_null()) {
      const json& by = j["tv_chosen_by"];
      plan.tv_chosen_budget_seconds = ReadJsonNumber(by.at("budget_seconds"));
      plan.tv_chosen_draws_per_second = ReadJsonNumber(by.at("draws_per_second"));
      if (!(plan.tv_chosen_budget_seconds > 0 && plan.tv_chosen_draws_per_second > 0) || !plan.tv) {
        return Error{ErrorCode::kParse,
                     "\"draw_plan\": \"tv_chosen_by\" needs a positive budget_seconds and draws_per_second, and "
                     "the \"tv\" they chose"};
      }
    }
    if (plan.basis == PlanBasis::kBudgetTv && plan.tv_chosen_budget_seconds == 0) {
      return Error{ErrorCode::kParse,
                   "\"draw_plan\": basis \"budget: tv\" without \"tv_chosen_by\" (the budget and rate that chose "
                   "its \"tv\")"};
    }
    const json& cases = j.at("cases");
    if (!cases.is_array()) return Error{ErrorCode::kParse, "\"draw_plan\": \"cases\" is not an array"};
    plan.cases.reserve(cases.size());
    std::unordered_set<std::string> names;
    names.reserve(cases.size());
    for (const json& c : cases) {
      std::string name = c.at("case").get<std::string>();
      Result<DrawsWhy> why = DrawsWhyFromName(c.at("why").get<std::string>());
      if (!why.ok()) return why.error().WithContext("\"draw_plan\" case " + name);
      if (!names.insert(name).second) {
        return Error{ErrorCode::kParse, "\"draw_plan\": case " + name + " is listed twice (each case once)"};
      }
      plan.cases.push_back({std::move(name), c.at("draws").get<uint64_t>(), c.at("max_draws").get<uint64_t>(), *why});
    }
  } catch (const std::exception& e) {
    return Error{ErrorCode::kParse, std::string("\"draw_plan\": ") + JsonErrorText(e)};
  }
  if (plan.cases.empty()) return Error{ErrorCode::kParse, "\"draw_plan\": no case"};
  return plan;
}

Result<DrawPlan> PlanOfReport(const CampaignReport& report) {
  if (report.shard) {
    return InvalidArgument("a shard's report holds no whole plan (its row cases are counts): give the merged report");
  }
  if (!report.draw_plan.empty()) return report.draw_plan;
  // A report written before the record: the draws every case ran, complete only when no case is missing.
  if (report.interrupted || report.cases.size() != report.planned_cases) {
    return InvalidArgument("the report holds " + std::to_string(report.cases.size()) + " of its " +
                           std::to_string(report.planned_cases) + " planned cases and no recorded plan");
  }
  DrawPlan plan;
  plan.basis = PlanBasis::kRecorded;
  plan.reason = "the draws of every case of a report written before plans were recorded";
  for (const CaseResult& c : report.cases) {
    plan.cases.push_back({c.name, c.status == CaseStatus::kSkipped ? 0 : c.draws, c.max_draws, DrawsWhy::kRecorded});
  }
  return plan;
}

}  // namespace samplecheck::harness
