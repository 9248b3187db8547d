// The stream family (checks.h; stream.h; docs/statistics.md "Stream checks"): what a sampler's or verifier's stream
// does across seeds, instances, calls and steps, and the refusal of invalid parameters. Their fields are null where
// the case has no such evidence (a batch row, an older report); a sharded row case takes the fields its shard judged.
//   seed-dependence  p-value: the same rows and offsets under two seeds; M pairs of equal results against the sum of
//                    independent Bernoulli(pi_i), pi_i the exact match probability of independent streams (a
//                    sampler: sum_t p0_t^2; a verifier: sum_l P(accepted length l | the trial's drafts)^2), exact
//                    upper tail (stats/matches.h). Alpha: the case's share (Bonferroni in the case, Holm over cases).
//                    Power against a stream that ignores its seed (M = n): p = prod pi_i, reported as
//                    p_if_ignored; power 1 when it is below the case's alpha per test. Assumption: the pairs are
//                    disjoint draws of a correct sampler (independent, the reference's law).
//   fresh-handle     hard (deterministic samplers and verifiers): a fresh instance draws, at the same seeds and
//                    offsets, exactly this instance's results, in one batch and one call per draw (or step): no
//                    state carried across calls or handles (a global counter, a captured graph). Alpha 0.
//   step-repeats     p-value: adjacent steps of one stream (consecutive offsets) equal, in disjoint pairs of both
//                    alignments, (0,1), (2,3), .. and (1,2), (3,4), ..; each count exact binomial against the repeat
//                    probability c of independent steps (sum p0^2; a verifier: sum over the accepted-length law
//                    squared), p = min(1, 2 min(p_even, p_odd)). Power: a key reused across every other step repeats
//                    each pair of one alignment (M = n/2, p = c^(n/2)); assumption: independent steps.
//   refusal          hard (a corner case whose parameters the judged profile calls invalid): the sampling call must
//                    fail with an error naming the invalid field; drawing a token (a silent clamp) or an error that
//                    does not name the field fails. Alpha 0.
#include <algorithm>
#include <cmath>
#include <numeric>
#include <string>

#include "check_family.h"
#include "samplecheck/checks/evidence.h"
#include "samplecheck/stats/matches.h"
#include "samplecheck/suites/json_text.h"

namespace samplecheck::harness {

using nlohmann::json;

namespace {

// A shard's judged fields of one stream check (StreamEvidence::judged): its keys, null where the shard wrote none.
json StoredFields(const json& judged, const std::vector<std::string>& keys) {
  json out = json::object();
  for (const std::string& key : keys)
    out[key] = judged.is_object() && judged.contains(key) ? judged[key] : json(nullptr);
  return out;
}

json Untested(const std::string& why) { return {{"tested", false}, {"why", why}}; }

std::string Describe(const std::string& unit, int32_t code) {
  if (unit != "trial") return "token " + std::to_string(code);
  return "accepted " + std::to_string(code >> 24) + ", emitted " + std::to_string((code & 0xFFFFFF) - 1);
}

// The pairs at which a test of match rate pi reaches power 0.99 at alpha against the observed rate r (normal
// approximation of the binomial; the mutation score's estimate).
double PairsForPower(double pi, double r, double alpha) {
  if (!(r > pi)) return 0.0;
  if (r >= 1.0) return double(stats::MatchesNeededForPower(pi, alpha));
  const double z_a = std::sqrt(2.0 * std::log(1.0 / alpha));  // a normal-tail bound of z at alpha
  const double n = std::pow((z_a * std::sqrt(pi * (1 - pi)) + 2.33 * std::sqrt(r * (1 - r))) / (r - pi), 2);
  return std::ceil(n);
}

CheckOutcome PValueOutcome(const std::string& check, const std::string& test, const json& j, double needed) {
  CheckOutcome o = MakeOutcome(check, "", test, CheckOutcome::Kind::kPValue);
  o.p_value = ReadJsonNumber(j.at("p_value"));
  o.statistic = ReadJsonNumber(j.at("statistic"));
  o.finding = j.at("finding").get<std::string>();
  o.draws_for_power = needed;
  return o;
}

// ---- seed-dependence ---------------------------------------------------------------------------------------------
class SeedDependenceCheck final : public CaseCheck {
 public:
  std::string_view Name() const override { return "seed-dependence"; }
  std::string_view Summary() const override {
    return "p-value: the same rows and offsets under two seeds; matches against independent streams (exact Poisson "
           "binomial tail of the reference's match probabilities); power 1 against a stream that ignores its seed "
           "once prod pi <= alpha (reported)";
  }
  std::vector<std::string> ReportKeys() const override { return {"seed_dependence"}; }
  bool KeysOptional() const override { return true; }

  json Evaluate(const CaseEvidence& e) const override {
    if (e.stream != nullptr && e.stream->judged != nullptr) return StoredFields(*e.stream->judged, ReportKeys());
    if (e.stream == nullptr || (!e.stream->seed_run && e.stream->seed_untested.empty())) {
      return {{"seed_dependence", nullptr}};
    }
    const StreamEvidence& s = *e.stream;
    if (!s.seed_run) return {{"seed_dependence", Untested(s.seed_untested)}};
    const size_t n = std::min(s.under_a.size(), s.under_b.size());
    std::vector<double> pi(n);
    for (size_t i = 0; i < n; ++i) {
      pi[i] = s.match_probability.size() == 1 ? s.match_probability[0] : s.match_probability[i];
    }
    uint64_t matches = 0;
    for (size_t i = 0; i < n; ++i) matches += s.under_a[i] == s.under_b[i];
    const Result<double> p = stats::PoissonBinomialUpperTail(pi, matches);
    const Result<double> p_all = stats::PoissonBinomialUpperTail(pi, n);
    if (!p.ok() || !p_all.ok() || n == 0)
      return {{"seed_dependence", Untested(p.ok() ? "no pairs" : p.error().message)}};
    const double expected = std::accumulate(pi.begin(), pi.end(), 0.0);
    const double alpha = e.planned.alpha_plan;
    char finding[200];
    std::snprintf(finding, sizeof finding, "%llu of %zu pairs equal under seeds %llu and %llu (expected %.3g)",
                  static_cast<unsigned long long>(matches), n, static_cast<unsigned long long>(s.seed_a),
                  static_cast<unsigned long long>(s.seed_b), expected);
    return {{"seed_dependence",
             {{"tested", true},
              {"seeds", {s.seed_a, s.seed_b}},
              {"pairs", n},
              {"matches", matches},
              {"expected", JsonNumber(expected)},
              {"statistic", JsonNumber(double(matches))},
              {"p_value", JsonNumber(*p)},
              {"p_if_ignored", JsonNumber(*p_all)},
              {"power_if_ignored", alpha > 0 && *p_all <= alpha ? 1 : 0},
              {"needed_if_ignored",
               JsonNumber(double(stats::MatchesNeededForPower(n ? expected / double(n) : 1.0, alpha)))},
              {"finding", std::string(finding)}}}};
  }

  Result<std::vector<CheckOutcome>> Outcomes(const json& fields, const CaseResult& c) const override {
    return ParseOutcomes(Name(), [&]() -> std::vector<CheckOutcome> {
      const json& j = fields.at("seed_dependence");
      if (j.is_null() || !j.at("tested").get<bool>()) return {};
      const double pairs = double(j.at("pairs").get<uint64_t>());
      const double rate = ReadJsonNumber(j.at("statistic")) / pairs;
      const double pi = ReadJsonNumber(j.at("expected")) / pairs;
      return {PValueOutcome("seed-dependence", "seed dependence", j, PairsForPower(pi, rate, c.alpha_plan))};
    });
  }
};

// ---- fresh-handle ------------------------------------------------------------------------------------------------
json Compare(std::span<const int32_t> reference, std::span<const int32_t> other, const std::string& unit) {
  const size_t n = std::min(reference.size(), other.size());
  uint64_t mismatches = 0;
  json first = nullptr;
  for (size_t i = 0; i < n; ++i) {
    if (reference[i] == other[i]) continue;
    if (mismatches++ == 0) {
      first = unit + " " + std::to_string(i) + ": " + Describe(unit, reference[i]) + " on this instance, " +
              Describe(unit, other[i]) + " on a fresh one";
    }
  }
  return {{"compared", n}, {"mismatches", mismatches}, {"first", first}};
}

class FreshHandleCheck final : public CaseCheck {
 public:
  std::string_view Name() const override { return "fresh-handle"; }
  std::string_view Summary() const override {
    return "(deterministic samplers and verifiers) hard: a fresh instance gives this instance's results at the same "
           "seeds and offsets, in one batch and one call per draw or step; catches state carried across calls and "
           "handles (a global counter, a uniform captured in a graph)";
  }
  std::vector<std::string> ReportKeys() const override { return {"fresh_handle"}; }
  bool KeysOptional() const override { return true; }

  json Evaluate(const CaseEvidence& e) const override {
    if (e.stream != nullptr && e.stream->judged != nullptr) return StoredFields(*e.stream->judged, ReportKeys());
    if (e.stream == nullptr || (!e.stream->handles_run && e.stream->handles_untested.empty())) {
      return {{"fresh_handle", nullptr}};
    }
    const StreamEvidence& s = *e.stream;
    if (!s.handles_run) return {{"fresh_handle", Untested(s.handles_untested)}};
    return {{"fresh_handle",
             {{"tested", true},
              {"unit", s.unit},
              {"batch", Compare(s.reference, s.fresh_handle, s.unit)},
              {"calls", Compare(s.reference, s.fresh_calls, s.unit)}}}};
  }

  Result<std::vector<CheckOutcome>> Outcomes(const json& fields, const CaseResult&) const override {
    return ParseOutcomes(Name(), [&]() -> std::vector<CheckOutcome> {
      const json& j = fields.at("fresh_handle");
      if (j.is_null() || !j.at("tested").get<bool>()) return {};
      CheckOutcome o = MakeOutcome("fresh-handle", "", "fresh handle", CheckOutcome::Kind::kHard);
      const json& batch = j.at("batch");
      const json& calls = j.at("calls");
      o.violations = batch.at("mismatches").get<uint64_t>() + calls.at("mismatches").get<uint64_t>();
      o.statistic = double(o.violations);
      const std::string unit = j.at("unit").get<std::string>();
      if (o.violations == 0) {
        o.finding = "a fresh instance gave the same " + std::to_string(batch.at("compared").get<uint64_t>()) + " " +
                    unit + "s in a batch and " + std::to_string(calls.at("compared").get<uint64_t>()) +
                    " in calls of their own";
        return {o};
      }
      const bool in_batch = batch.at("mismatches").get<uint64_t>() > 0;
      const json& where = in_batch ? batch : calls;
      o.finding = std::to_string(o.violations) + " " + unit +
                  "(s) differ on a fresh instance at the same seeds and "
                  "offsets (" +
                  (in_batch ? "one batch" : "one call each") + "), first at " + where.at("first").get<std::string>();
      o.draws_for_power = double(where.at("compared").get<uint64_t>()) / double(o.violations);
      return {o};
    });
  }
};

// ---- step-repeats ------------------------------------------------------------------------------------------------
json Alignment(std::span<const int32_t> steps, size_t start, double c) {
  uint64_t pairs = 0, repeats = 0;
  for (size_t i = start; i + 1 < steps.size(); i += 2) {
    if (steps[i] < 0 || steps[i + 1] < 0) continue;  // invalid results are the support check's
    ++pairs;
    repeats += steps[i] == steps[i + 1];
  }
  const Result<double> p = stats::BinomialUpperTail(pairs, c, repeats);
  return {{"pairs", pairs}, {"repeats", repeats}, {"p_value", JsonNumber(p.ok() ? *p : 1.0)}};
}

class StepRepeatsCheck final : public CaseCheck {
 public:
  std::string_view Name() const override { return "step-repeats"; }
  std::string_view Summary() const override {
    return "p-value: adjacent steps of one stream (consecutive offsets) equal, disjoint pairs of both alignments, "
           "exact binomial against the repeat probability of independent steps; catches keys reused across steps "
           "and a uniform baked into a captured graph";
  }
  std::vector<std::string> ReportKeys() const override { return {"step_repeats"}; }
  bool KeysOptional() const override { return true; }

  json Evaluate(const CaseEvidence& e) const override {
    if (e.stream != nullptr && e.stream->judged != nullptr) return StoredFields(*e.stream->judged, ReportKeys());
    if (e.stream == nullptr || e.stream->steps.empty()) return {{"step_repeats", nullptr}};
    const StreamEvidence& s = *e.stream;
    const double c = s.repeat_probability;
    if (s.steps.size() < 4) return {{"step_repeats", Untested("fewer than 4 steps")}};
    if (!(c < 1.0)) return {{"step_repeats", Untested("every step has one possible result (repeats are certain)")}};
    const json even = Alignment(s.steps, 0, c), odd = Alignment(s.steps, 1, c);
    const double p_even = ReadJsonNumber(even.at("p_value")), p_odd = ReadJsonNumber(odd.at("p_value"));
    const bool odd_worse = p_odd < p_even;
    const json& worse = odd_worse ? odd : even;
    const uint64_t pairs = worse.at("pairs").get<uint64_t>(), repeats = worse.at("repeats").get<uint64_t>();
    char finding[200];
    std::snprintf(finding, sizeof finding, "%llu of %llu %s pairs of adjacent steps equal (expected %.3g)",
                  static_cast<unsigned long long>(repeats), static_cast<unsigned long long>(pairs),
                  odd_worse ? "odd" : "even", c * double(pairs));
    return {{"step_repeats",
             {{"tested", true},
              {"steps", s.steps.size()},
              {"repeat_probability", JsonNumber(c)},
              {"even", even},
              {"odd", odd},
              {"statistic", JsonNumber(double(repeats) / double(std::max<uint64_t>(pairs, 1)))},
              {"p_value", JsonNumber(std::min(1.0, 2.0 * std::min(p_even, p_odd)))},
              {"finding", std::string(finding)}}}};
  }

  Result<std::vector<CheckOutcome>> Outcomes(const json& fields, const CaseResult& c) const override {
    return ParseOutcomes(Name(), [&]() -> std::vector<CheckOutcome> {
      const json& j = fields.at("step_repeats");
      if (j.is_null() || !j.at("tested").get<bool>()) return {};
      const double rate = ReadJsonNumber(j.at("statistic"));
      const double pi = ReadJsonNumber(j.at("repeat_probability"));
      return {PValueOutcome("step-repeats", "step repeats", j, 2 * PairsForPower(pi, rate, c.alpha_plan / 2))};
    });
  }
};

// ---- refusal -----------------------------------------------------------------------------------------------------
class RefusalCheck final : public CaseCheck {
 public:
  std::string_view Name() const override { return "refusal"; }
  std::string_view Summary() const override {
    return "(parameters invalid under the judged profile: corner cases) hard: the sampling call fails with an error "
           "naming the invalid field; a token drawn (a silent clamp) or an error that does not name it fails";
  }
  std::vector<std::string> ReportKeys() const override { return {"refusal"}; }
  bool KeysOptional() const override { return true; }

  json Evaluate(const CaseEvidence& e) const override {
    if (e.stream != nullptr && e.stream->judged != nullptr) return StoredFields(*e.stream->judged, ReportKeys());
    if (e.stream == nullptr || !e.stream->refusal_run) return {{"refusal", nullptr}};
    const StreamEvidence& s = *e.stream;
    return {{"refusal",
             {{"field", s.refusal_field},
              {"value", s.refusal_value},
              {"refused", s.refused},
              {"names_field", s.refused && s.refusal_message.find(s.refusal_field) != std::string::npos},
              {"message", s.refusal_message}}}};
  }

  Result<std::vector<CheckOutcome>> Outcomes(const json& fields, const CaseResult&) const override {
    return ParseOutcomes(Name(), [&]() -> std::vector<CheckOutcome> {
      const json& j = fields.at("refusal");
      if (j.is_null()) return {};
      CheckOutcome o = MakeOutcome("refusal", j.at("field").get<std::string>(), "refusal", CheckOutcome::Kind::kHard);
      const std::string field = j.at("field").get<std::string>(), value = j.at("value").get<std::string>();
      const std::string message = j.at("message").get<std::string>();
      const bool refused = j.at("refused").get<bool>(), names = j.at("names_field").get<bool>();
      o.violations = refused && names ? 0 : 1;
      o.statistic = double(o.violations);
      o.draws_for_power = o.violations ? 1 : 0;
      o.finding =
          !refused ? field + " = " + value + " is invalid under the judged profile, and the sampler drew " + message +
                         " instead of refusing it (a silent clamp)"
          : !names ? field + " = " + value + " was refused with an error that does not name " + field + ": " + message
                   : field + " = " + value + " refused: " + message;
      return {o};
    });
  }
};

}  // namespace

json JudgeStreamFields(const CaseResult& planned, const StreamEvidence& stream) {
  const stats::BinningPlan none;
  const CaseEvidence evidence{planned, {}, none, {}, 0, "", nullptr, nullptr, nullptr, &stream};
  json fields = json::object();
  for (const auto& check : StreamChecks()) {
    fields.update(check->Evaluate(evidence));
  }
  return fields;
}

CheckList StreamChecks() {
  CheckList v;
  v.push_back(std::make_unique<SeedDependenceCheck>());
  v.push_back(std::make_unique<FreshHandleCheck>());
  v.push_back(std::make_unique<StepRepeatsCheck>());
  v.push_back(std::make_unique<RefusalCheck>());
  return v;
}

}  // namespace samplecheck::harness
