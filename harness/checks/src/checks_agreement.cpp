// The agreement family (checks.h): a sampler's counting fast path against the sampling call that ships.
#include <algorithm>

#include "check_family.h"
#include "samplecheck/suites/json_text.h"

namespace samplecheck::harness {

using nlohmann::json;

namespace {

// ---- agreement ---------------------------------------------------------------------------------------------------
class AgreementCheck final : public CaseCheck {
 public:
  std::string_view Name() const override { return "agreement"; }
  std::string_view Summary() const override {
    return "(samplers with a counting fast path) the first 2^16 draws (CPU samplers: 64 to 1024) again "
           "through the real sampling call (Sample "
           "on replicated rows, same seeds and offsets): equal token for token for deterministic samplers (hard), "
           "else a two-sample chi-square; the gate judges the kernel that ships, not only its fast path";
  }
  std::vector<std::string> ReportKeys() const override { return {"agreement"}; }
  bool KeysOptional() const override { return true; }  // null: not a batch row / no fast path

  json Evaluate(const CaseEvidence& e) const override {
    if (e.agreement == nullptr || e.agreement->draws == 0) return {{"agreement", nullptr}};
    const AgreementEvidence& a = *e.agreement;
    uint64_t differing = 0;  // draws that must differ: half the L1 distance of the two histograms
    for (size_t t = 0; t < a.fast.size() && t < a.sampled.size(); ++t) {
      differing += a.fast[t] > a.sampled[t] ? a.fast[t] - a.sampled[t] : 0;
    }
    json j{{"draws", a.draws}, {"deterministic", a.deterministic}, {"differing", differing}};
    if (a.deterministic) {
      j["first_difference"] =
          a.first_difference < 0
              ? json(nullptr)
              : json{{"draw", a.first_difference}, {"fast", a.fast_token}, {"sampled", a.sampled_token}};
    } else if (e.binning.head.usable()) {
      const stats::BinnedCounts fast = Bin(e.binning.head, a.fast);
      const stats::BinnedCounts sampled = Bin(e.binning.head, a.sampled);
      json two_sample = TwoSampleFields(fast.observed, sampled.observed);
      if (two_sample.at("tested").get<bool>()) j["two_sample"] = std::move(two_sample);  // untested: no field
    }
    return {{"agreement", j}};
  }

  Result<std::vector<CheckOutcome>> Outcomes(const json& fields, const CaseResult& c) const override {
    return ParseOutcomes(Name(), [&]() -> std::vector<CheckOutcome> {
      const json& j = fields.at("agreement");
      if (j.is_null()) return {};
      if (!j.at("deterministic").get<bool>()) {
        return j.contains("two_sample") ? ContingencyOutcome(j["two_sample"], "agreement", "fast path vs Sample", c)
                                        : std::vector<CheckOutcome>{};
      }
      const uint64_t draws = j.at("draws").get<uint64_t>();
      const uint64_t differing = j.at("differing").get<uint64_t>();
      CheckOutcome o = MakeOutcome("agreement", "", "fast path vs Sample", CheckOutcome::Kind::kHard);
      const json& first = j.at("first_difference");
      o.violations = first.is_null() ? differing : std::max<uint64_t>(differing, 1);
      o.statistic = double(o.violations);
      if (o.violations > 0) {
        o.finding = "the sampler's counting fast path and its sampling call disagree on the same seeds and offsets (" +
                    std::to_string(differing) + " of " + std::to_string(draws) + " draws at least)";
        if (!first.is_null()) {
          o.finding += ", first at draw " + std::to_string(first.at("draw").get<int64_t>()) + ": token " +
                       std::to_string(first.at("fast").get<int32_t>()) + " counted, " +
                       std::to_string(first.at("sampled").get<int32_t>()) + " sampled";
        }
        o.draws_for_power = double(draws) / double(std::max<uint64_t>(differing, 1));
      } else {
        o.finding = "the first " + std::to_string(draws) + " draws agree token for token";
      }
      return {o};
    });
  }
};

}  // namespace

CheckList AgreementChecks() {
  CheckList v;
  v.push_back(std::make_unique<AgreementCheck>());
  return v;
}

}  // namespace samplecheck::harness
