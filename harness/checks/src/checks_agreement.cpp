// The agreement family (checks.h): a sampler's counting fast path against the sampling call that ships.
#include <algorithm>

#include "check_family.h"
#include "samplecheck/suites/json_text.h"

namespace samplecheck::harness {

using nlohmann::json;

namespace {

std::string TokenText(int32_t token) { return token < 0 ? "no token" : "token " + std::to_string(token); }

// What the first differing draw says, in words: which call gave what at the same row, seed and offset. Its token
// counted alone (fast), Sample's among the case's draws (sampled) and Sample's alone in a call of its own
// (sampled_alone; absent in reports before it). Equal fast and sampled tokens: the bisection (sampler_draw.cpp,
// FirstDifference) found the counts of a range differing while those of its parts agreed, so the draw it ends at,
// asked again, agrees: the counting path's draws depend on how they are split into calls.
std::string FirstDifferenceFinding(const json& first) {
  const std::string draw = std::to_string(first.at("draw").get<int64_t>());
  const int32_t fast = first.at("fast").get<int32_t>();
  const int32_t sampled = first.at("sampled").get<int32_t>();
  const int32_t alone = first.contains("sampled_alone") ? first["sampled_alone"].get<int32_t>() : -1;
  const std::string not_a_function =
      ": your draws are not a function of (seed, offset) (a global RNG, or state kept between calls?)";
  if (alone >= 0 && alone != sampled) {
    return ", first at draw " + draw + ": the same row, seed and offset gave " + TokenText(sampled) +
           " through Sample among the case's draws and " + TokenText(alone) + " through Sample in a call of its own" +
           not_a_function;
  }
  if (fast == sampled) {
    return ", yet no single draw shows it: draw " + draw + " asked again alone gives " + TokenText(fast) +
           " both ways, so what CountDraws draws depends on how the draws are split into calls: your draws are not "
           "a function of (seed, offset) (the draw count of a call, a global RNG, or state kept between calls?)";
  }
  return ", first at draw " + draw + ": the same row, seed and offset gave " + TokenText(fast) +
         " through CountDraws and " + TokenText(sampled) + " through Sample" + not_a_function +
         ", or the two paths draw differently";
}

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
      j["first_difference"] = a.first_difference < 0 ? json(nullptr)
                                                     : json{{"draw", a.first_difference},
                                                            {"fast", a.fast_token},
                                                            {"sampled", a.sampled_token},
                                                            {"sampled_alone", a.sampled_alone_token}};
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
        o.finding =
            "the sampler's counting fast path (CountDraws) and its sampling call (Sample) disagree on the "
            "same seeds and offsets (" +
            std::to_string(differing) + " of " + std::to_string(draws) + " draws at least)";
        if (!first.is_null()) o.finding += FirstDifferenceFinding(first);
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
