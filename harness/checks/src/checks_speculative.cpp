// The speculative family (checks.h, SpecCaseChecks; docs/speculative.md): the checks of speculative-decoding
// cases. Their fields are null on every other case, so reports of sampler campaigns read as before.
//   spec-rejection         p-value: the rejections at position j among the trials that reached it against
//                          Binomial(n_j, 1 - beta_j), exact two-sided (stats::ExactBinomialPValue). Alpha: the
//                          case's share; power: 1 - beta_j shifted by d is seen at n_j ~ (z sqrt(b(1-b)) / d)^2.
//   spec-structure         hard: an accepted length outside 0..g, or an accepted position whose token is not the
//                          draft token.
//   spec-determinism       hard (deterministic verifiers): the first trials re-verified alone, twice, equal the
//                          campaign's results token for token.
//   spec-batch-invariance  hard (batch cases): a request's first trials verified alone equal them in the batch.
//   spec-scripted          hard (verifiers taking scripted uniforms): u = 0 on a draft of target probability 0
//                          rejects and emits a residual token; u = (p/q)(1 - 1e-4) accepts, u = (p/q)(1 + 1e-4)
//                          rejects; greedy positions accept exactly their argmax, whatever the coin.
#include <cmath>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "check_family.h"
#include "samplecheck/core/format.h"
#include "samplecheck/stats/exact_tests.h"
#include "samplecheck/suites/json_text.h"

namespace samplecheck::harness {

using nlohmann::json;

namespace {

class SpecRejectionCheck final : public CaseCheck {
 public:
  std::string_view Name() const override { return "spec-rejection"; }
  std::string_view Summary() const override {
    return "speculative positions: the rejections among the trials reaching position j against Binomial(n_j, "
           "1 - beta_j), beta_j = sum min(p_j, q_j), exact two-sided; one p-value in the case's Bonferroni family";
  }
  std::vector<std::string> ReportKeys() const override { return {"spec_rejection"}; }
  bool KeysOptional() const override { return true; }

  json Evaluate(const CaseEvidence& e) const override {
    if (e.spec == nullptr || !e.spec->has_rejection_test) return {{"spec_rejection", nullptr}};
    const SpecEvidence& s = *e.spec;
    double p = 1.0;
    const double reject = 1.0 - s.beta;
    if (s.reached == 0) {
      p = 1.0;
    } else if (reject <= 0.0) {
      p = s.rejected == 0 ? 1.0 : 0.0;  // beta = 1: a rejection is impossible
    } else if (reject >= 1.0) {
      p = s.rejected == s.reached ? 1.0 : 0.0;
    } else {
      Result<double> r = stats::ExactBinomialPValue(s.rejected, s.reached, reject);
      p = r.ok() ? *r : 1.0;
    }
    return {{"spec_rejection",
             {{"position", s.position},
              {"reached", s.reached},
              {"rejected", s.rejected},
              {"beta", JsonNumber(s.beta)},
              {"p_value", JsonNumber(p)}}}};
  }

  Result<std::vector<CheckOutcome>> Outcomes(const json& fields, const CaseResult&) const override {
    return ParseOutcomes(Name(), [&]() -> std::vector<CheckOutcome> {
      const json& j = fields.at("spec_rejection");
      if (j.is_null()) return {};
      const uint64_t reached = j.at("reached").get<uint64_t>(), rejected = j.at("rejected").get<uint64_t>();
      const double beta = ReadJsonNumber(j.at("beta"));
      const std::string position = std::to_string(j.at("position").get<int>());
      CheckOutcome o = MakeOutcome("spec-rejection", "position " + position, "rejections at position " + position,
                                   CheckOutcome::Kind::kPValue);
      o.p_value = ReadJsonNumber(j.at("p_value"));
      o.statistic = reached ? double(rejected) / double(reached) : 0.0;
      o.finding = std::to_string(rejected) + " of " + std::to_string(reached) +
                  " rejected (expected 1 - beta = " + FormatSignificant(1.0 - beta, 4) + ")";
      return {o};
    });
  }
};

// The hard checks of a request: one class, parameterized by which fields it owns.
class SpecHardCheck final : public CaseCheck {
 public:
  SpecHardCheck(std::string name, std::string key, std::string summary, std::string test)
      : name_(std::move(name)), key_(std::move(key)), summary_(std::move(summary)), test_(std::move(test)) {}
  std::string_view Name() const override { return name_; }
  std::string_view Summary() const override { return summary_; }
  std::vector<std::string> ReportKeys() const override { return {key_}; }
  bool KeysOptional() const override { return true; }

  json Evaluate(const CaseEvidence& e) const override {
    if (e.spec == nullptr || e.spec->role != SpecRole::kLength) return {{key_, nullptr}};
    const SpecEvidence& s = *e.spec;
    if (key_ == "spec_structure") {
      return {
          {key_,
           {{"compared", e.planned.draws}, {"violations", s.structure_violations}, {"finding", s.structure_finding}}}};
    }
    if (key_ == "spec_determinism") {
      if (!s.determinism_run) return {{key_, nullptr}};
      return {{key_,
               {{"compared", s.determinism_compared},
                {"violations", s.determinism_differences},
                {"finding", s.determinism_finding}}}};
    }
    if (key_ == "spec_batch_invariance") {
      if (!s.batch_run) return {{key_, nullptr}};
      return {
          {key_, {{"compared", s.batch_compared}, {"violations", s.batch_differences}, {"finding", s.batch_finding}}}};
    }
    if (!s.scripted_run) return {{key_, nullptr}};
    return {{key_,
             {{"compared", s.scripted_probes}, {"violations", s.scripted_failures}, {"finding", s.scripted_finding}}}};
  }

  Result<std::vector<CheckOutcome>> Outcomes(const json& fields, const CaseResult&) const override {
    return ParseOutcomes(Name(), [&]() -> std::vector<CheckOutcome> {
      const json& j = fields.at(key_);
      if (j.is_null()) return {};
      CheckOutcome o = MakeOutcome(name_, "", test_, CheckOutcome::Kind::kHard);
      o.violations = j.at("violations").get<uint64_t>();
      o.statistic = double(o.violations);
      const std::string finding = j.at("finding").get<std::string>();
      o.finding = o.violations > 0
                      ? finding
                      : "no violation in " + std::to_string(j.at("compared").get<uint64_t>()) + " compared";
      if (o.violations > 0) o.draws_for_power = 1;
      return {o};
    });
  }

 private:
  std::string name_, key_, summary_, test_;
};

}  // namespace

std::vector<std::unique_ptr<const CaseCheck>> SpecCaseChecks() {
  std::vector<std::unique_ptr<const CaseCheck>> v;
  v.push_back(std::make_unique<SpecRejectionCheck>());
  v.push_back(std::make_unique<SpecHardCheck>(
      "spec-structure", "spec_structure",
      "speculative requests, hard: every accepted length in 0..g and every accepted position's token the draft token",
      "spec structure"));
  v.push_back(std::make_unique<SpecHardCheck>(
      "spec-determinism", "spec_determinism",
      "speculative requests of deterministic verifiers, hard: the first trials re-verified alone, twice, equal the "
      "campaign's results token for token",
      "spec determinism"));
  v.push_back(std::make_unique<SpecHardCheck>(
      "spec-batch-invariance", "spec_batch_invariance",
      "speculative batch cases, hard: a request's first trials verified alone equal its results in the batch",
      "spec batch invariance"));
  v.push_back(std::make_unique<SpecHardCheck>(
      "spec-scripted", "spec_scripted",
      "speculative requests of verifiers taking scripted uniforms, hard: u = 0 never accepts a draft of target "
      "probability 0, u = (p/q)(1 -+ 1e-4) accepts / rejects, greedy positions accept exactly their argmax; every "
      "emitted token in the support of its law",
      "spec scripted coins"));
  return v;
}

}  // namespace samplecheck::harness
