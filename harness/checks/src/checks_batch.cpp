// The batch and independence family (checks.h): batch invariance, independence across rows, serial independence
// within a row, a row alone against the row in its batch. Their fields are null outside batch rows.
#include <algorithm>
#include <cstdio>

#include "check_family.h"
#include "samplecheck/stats/independence.h"
#include "samplecheck/stats/two_sample.h"
#include "samplecheck/suites/json_text.h"

namespace samplecheck::harness {

using nlohmann::json;

namespace {

// ---- batch-invariance ---------------------------------------------------------------------------------------------
class BatchInvarianceCheck final : public CaseCheck {
 public:
  std::string_view Name() const override { return "batch-invariance"; }
  std::string_view Summary() const override {
    return "(batch rows, deterministic samplers) hard: a row's first draws alone (batch size 1) equal its draws in the "
           "batch at the same seed and offsets; catches streams that depend on the batch (size, position, neighbours)";
  }
  std::vector<std::string> ReportKeys() const override { return {"batch_invariance"}; }
  bool KeysOptional() const override { return true; }  // null: not a batch row / no fast path

  json Evaluate(const CaseEvidence& e) const override {
    if (e.batch == nullptr || !e.batch->deterministic || e.batch->alone.empty()) return {{"batch_invariance", nullptr}};
    const size_t n = std::min(e.batch->alone.size(), e.batch->sequence.size());
    uint64_t mismatches = 0;
    json first = nullptr;
    for (size_t i = 0; i < n; ++i) {
      if (e.batch->alone[i] == e.batch->sequence[i]) continue;
      if (mismatches++ == 0) {
        first = {{"draw", i}, {"alone", e.batch->alone[i]}, {"batch", e.batch->sequence[i]}};
      }
    }
    return {{"batch_invariance", {{"draws", n}, {"mismatches", mismatches}, {"first", first}}}};
  }

  Result<std::vector<CheckOutcome>> Outcomes(const json& fields, const CaseResult& c) const override {
    return ParseOutcomes(Name(), [&]() -> std::vector<CheckOutcome> {
      const json& j = fields.at("batch_invariance");
      if (j.is_null()) return {};
      const uint64_t n = j.at("draws").get<uint64_t>(), mismatches = j.at("mismatches").get<uint64_t>();
      CheckOutcome o = MakeOutcome("batch-invariance", c.batch.batch, "batch invariance", CheckOutcome::Kind::kHard);
      o.violations = mismatches;
      o.statistic = double(mismatches);
      if (mismatches > 0) {
        const json& f = j.at("first");
        o.finding = std::to_string(mismatches) + " of " + std::to_string(n) +
                    " draws differ alone and in the batch (same seed and offset), first at draw " +
                    std::to_string(f.at("draw").get<uint64_t>()) + ": token " +
                    std::to_string(f.at("alone").get<int32_t>()) + " alone, " +
                    std::to_string(f.at("batch").get<int32_t>()) + " in the batch";
        o.draws_for_power = double(n) / double(mismatches);
      } else {
        o.finding = "the first " + std::to_string(n) + " draws alone equal the draws in the batch";
      }
      return {o};
    });
  }
};
// The pairs of a contingency test as JSON fields, or null when no test is possible.
json ContingencyFields(std::span<const int32_t> a_tokens, std::span<const double> a_p0,
                       std::span<const int32_t> b_tokens, std::span<const double> b_p0, bool serial) {
  const size_t pairs = serial ? a_tokens.size() / 2 : std::min(a_tokens.size(), b_tokens.size());
  if (pairs < 2) return nullptr;
  constexpr uint32_t kCells = 8;
  const std::vector<int32_t> a_cells = stats::CoarseCells(a_p0, kCells, pairs);
  const std::vector<int32_t> b_cells = serial ? a_cells : stats::CoarseCells(b_p0, kCells, pairs);
  auto cell = [](const std::vector<int32_t>& cells, int32_t token) {
    return token >= 0 && static_cast<size_t>(token) < cells.size() ? cells[static_cast<size_t>(token)] : stats::kNoCell;
  };
  std::vector<int32_t> a(pairs), b(pairs);
  for (size_t i = 0; i < pairs; ++i) {
    a[i] = cell(a_cells, serial ? a_tokens[2 * i] : a_tokens[i]);
    b[i] = cell(b_cells, serial ? a_tokens[2 * i + 1] : b_tokens[i]);
  }
  Result<stats::Independence> t = stats::IndependenceChiSquareTest(a, b);
  if (!t.ok()) return {{"tested", false}, {"why", t.error().message}};
  return {{"tested", true},    {"statistic", JsonNumber(t->statistic)},
          {"dof", t->dof},     {"p_value", JsonNumber(t->p_value)},
          {"pairs", t->pairs}, {"min_expected", JsonNumber(t->min_expected)}};
}
// ---- independence ------------------------------------------------------------------------------------------------
class IndependenceCheck final : public CaseCheck {
 public:
  std::string_view Name() const override { return "independence"; }
  std::string_view Summary() const override {
    return "(batch rows) contingency chi-square of the row's draws against its partner's (another seed) from the "
           "same calls: independent seeds give independent tokens; catches reused seeds and shared streams";
  }
  std::vector<std::string> ReportKeys() const override { return {"independence"}; }
  bool KeysOptional() const override { return true; }  // null: not a batch row / no fast path
  json Evaluate(const CaseEvidence& e) const override {
    if (e.batch == nullptr || e.batch->partner_sequence.empty()) return {{"independence", nullptr}};
    return {{"independence",
             ContingencyFields(e.batch->sequence, e.p0, e.batch->partner_sequence, e.batch->partner_p0, false)}};
  }
  Result<std::vector<CheckOutcome>> Outcomes(const json& fields, const CaseResult& c) const override {
    return ParseOutcomes(Name(), [&]() {
      return ContingencyOutcome(fields.at("independence"), "independence", "independence with " + c.batch.partner, c);
    });
  }
};

// ---- serial ------------------------------------------------------------------------------------------------------
class SerialCheck final : public CaseCheck {
 public:
  std::string_view Name() const override { return "serial"; }
  std::string_view Summary() const override {
    return "(batch rows) contingency chi-square of consecutive draws (0,1), (2,3), ... of one row: a stream with a "
           "perfect marginal can still repeat itself from step to step (an offset not advanced)";
  }
  std::vector<std::string> ReportKeys() const override { return {"serial"}; }
  bool KeysOptional() const override { return true; }  // null: not a batch row / no fast path
  json Evaluate(const CaseEvidence& e) const override {
    if (e.batch == nullptr || e.batch->sequence.size() < 4) return {{"serial", nullptr}};
    return {{"serial", ContingencyFields(e.batch->sequence, e.p0, {}, {}, true)}};
  }
  Result<std::vector<CheckOutcome>> Outcomes(const json& fields, const CaseResult& c) const override {
    return ParseOutcomes(Name(), [&]() { return ContingencyOutcome(fields.at("serial"), "serial", "serial", c); });
  }
};

// ---- alone-vs-batch ----------------------------------------------------------------------------------------------
class AloneVsBatchCheck final : public CaseCheck {
 public:
  std::string_view Name() const override { return "alone-vs-batch"; }
  std::string_view Summary() const override {
    return "(batch rows, non-deterministic samplers) two-sample chi-square of the row drawn alone against the row in "
           "the batch, on the head binning (NIST chi2samp)";
  }
  std::vector<std::string> ReportKeys() const override { return {"alone_vs_batch"}; }
  bool KeysOptional() const override { return true; }  // null: not a batch row / no fast path
  json Evaluate(const CaseEvidence& e) const override {
    if (e.batch == nullptr || e.batch->alone_histogram.empty() || !e.binning.head.usable()) {
      return {{"alone_vs_batch", nullptr}};
    }
    const stats::BinnedCounts batch = Bin(e.binning.head, e.histogram);
    const stats::BinnedCounts alone = Bin(e.binning.head, e.batch->alone_histogram);
    return {{"alone_vs_batch", TwoSampleFields(alone.observed, batch.observed)}};
  }
  Result<std::vector<CheckOutcome>> Outcomes(const json& fields, const CaseResult& c) const override {
    return ParseOutcomes(Name(), [&]() {
      return ContingencyOutcome(fields.at("alone_vs_batch"), "alone-vs-batch", "alone vs batch", c);
    });
  }
};

}  // namespace

CheckList BatchChecks() {
  CheckList v;
  v.push_back(std::make_unique<BatchInvarianceCheck>());
  v.push_back(std::make_unique<IndependenceCheck>());
  v.push_back(std::make_unique<SerialCheck>());
  v.push_back(std::make_unique<AloneVsBatchCheck>());
  return v;
}

// The outcome of a contingency test's fields (none when untested).
std::vector<CheckOutcome> ContingencyOutcome(const json& j, const std::string& check, const std::string& test,
                                             const CaseResult& c) {
  if (j.is_null() || !j.at("tested").get<bool>()) return {};
  CheckOutcome o = MakeOutcome(check, c.batch.partner, test, CheckOutcome::Kind::kPValue);
  o.p_value = ReadJsonNumber(j.at("p_value"));
  o.statistic = ReadJsonNumber(j.at("statistic"));
  char buf[160];
  std::snprintf(buf, sizeof buf, "X2 = %.4g (dof %llu) over %llu pairs", o.statistic,
                static_cast<unsigned long long>(j.at("dof").get<uint64_t>()),
                static_cast<unsigned long long>(j.at("pairs").get<uint64_t>()));
  o.finding = buf;
  return {o};
}

}  // namespace samplecheck::harness
