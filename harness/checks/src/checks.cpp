// The case checks (checks.h): the one list of them, the helpers their families share, and running them on a case.
// Each family is its own file, its tests beside it in tests/campaign: checks_support.cpp, checks_fit.cpp (goodness
// of fit), checks_token.cpp (per-token), checks_batch.cpp (batch and independence), checks_agreement.cpp,
// checks_equivalence.cpp, checks_speculative.cpp (speculative decoding).
#include "samplecheck/checks/checks.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include "check_family.h"
#include "samplecheck/stats/two_sample.h"
#include "samplecheck/suites/json_text.h"

namespace samplecheck::harness {

using nlohmann::json;

CheckOutcome MakeOutcome(std::string check, std::string scope, std::string test, CheckOutcome::Kind kind) {
  CheckOutcome o;
  o.check = std::move(check);
  o.scope = std::move(scope);
  o.test = std::move(test);
  o.kind = kind;
  return o;
}

uint64_t StoredCount(const json& j, const std::string& what) {
  if (!j.is_number_unsigned() && !(j.is_number_integer() && j.get<int64_t>() >= 0)) {
    throw std::runtime_error(what + " must be a whole number >= 0, not " +
                             j.dump(-1, ' ', false, json::error_handler_t::replace));
  }
  return j.get<uint64_t>();
}

bool SameStoredNumber(double stored, double recomputed) {
  if (std::isnan(stored) || std::isnan(recomputed)) return std::isnan(stored) && std::isnan(recomputed);
  if (std::isinf(stored) || std::isinf(recomputed)) return stored == recomputed;
  return std::fabs(stored - recomputed) <= 1e-7 * std::max(std::fabs(stored), std::fabs(recomputed)) + 1e-300;
}

stats::BinnedCounts Bin(const stats::Binning& b, std::span<const uint64_t> histogram) {
  Result<stats::BinnedCounts> counts = stats::BinCounts(b, histogram);
  if (!counts.ok()) throw std::logic_error("binning: " + counts.error().message);
  return std::move(*counts);
}

json TwoSampleFields(std::span<const uint64_t> a, std::span<const uint64_t> b) {
  Result<stats::TwoSample> t = stats::TwoSampleChiSquareTest(a, b);
  if (!t.ok()) return {{"tested", false}, {"why", t.error().message}};
  return {{"tested", true},      {"statistic", JsonNumber(t->statistic)},
          {"dof", t->dof},       {"p_value", JsonNumber(t->p_value)},
          {"pairs", t->draws_r}, {"min_expected", JsonNumber(double(t->min_pooled))}};
}

Status CaseCheck::Recheck(const json&, const CaseResult&) const { return Status::Ok(); }

const std::vector<std::unique_ptr<const CaseCheck>>& CaseChecks() {
  static const std::vector<std::unique_ptr<const CaseCheck>> checks = [] {
    std::vector<std::unique_ptr<const CaseCheck>> v;
    // The families in evaluation order (check_family.h); a report's case object holds their keys in this order.
    for (CheckList (*family)() : {SupportChecks, FitChecks, TokenChecks, BatchChecks, AgreementChecks,
                                  EquivalenceChecks, SpecCaseChecks, StreamChecks, ReplayChecks}) {
      for (auto& check : family()) v.push_back(std::move(check));
    }
    return v;
  }();
  return checks;
}

const CaseCheck* FindCaseCheck(std::string_view name) {
  for (const auto& check : CaseChecks()) {
    if (check->Name() == name) return check.get();
  }
  return nullptr;
}

Status RunCaseChecks(const CaseEvidence& evidence, CaseResult& result) {
  result.checks = json::object();
  result.outcomes.clear();
  for (const auto& check : CaseChecks()) {
    json fields;
    try {
      fields = check->Evaluate(evidence);
    } catch (const std::exception& e) {  // a broken invariant of the campaign (never user input)
      return InternalError("check " + std::string(check->Name()) + ": " + e.what());
    }
    for (const auto& [key, value] : fields.items()) result.checks[key] = value;
    Result<std::vector<CheckOutcome>> outcomes = check->Outcomes(fields, result);
    if (!outcomes.ok()) return InternalError(outcomes.error().message);
    for (CheckOutcome& o : *outcomes) result.outcomes.push_back(std::move(o));
  }
  return Status::Ok();
}

Status ReadCaseChecks(const json& case_object, CaseResult& result) {
  result.checks = json::object();
  result.outcomes.clear();
  for (const auto& check : CaseChecks()) {
    json fields = json::object();
    for (const std::string& key : check->ReportKeys()) {
      if (!case_object.contains(key) && check->KeysOptional()) {
        fields[key] = nullptr;
        result.checks[key] = nullptr;
        continue;
      }
      if (!case_object.contains(key)) {
        return Error{ErrorCode::kParse, "no \"" + key + "\" (the fields of check " + std::string(check->Name()) + ")"};
      }
      fields[key] = case_object[key];
      result.checks[key] = case_object[key];
    }
    Result<std::vector<CheckOutcome>> outcomes = check->Outcomes(fields, result);
    if (!outcomes.ok()) return outcomes.error();
    for (CheckOutcome& o : *outcomes) result.outcomes.push_back(std::move(o));
  }
  return Status::Ok();
}

}  // namespace samplecheck::harness
