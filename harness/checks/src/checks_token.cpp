// The per-token family (checks.h): the most extreme support token by its exact binomial tail (max-|z|).
#include <algorithm>
#include <cmath>
#include <cstdio>

#include "check_family.h"
#include "samplecheck/core/format.h"
#include "samplecheck/stats/goodness_of_fit.h"
#include "samplecheck/suites/json_text.h"

namespace samplecheck::harness {

using nlohmann::json;

namespace {

constexpr size_t kTopResiduals = 10;

// ---- max-abs-z --------------------------------------------------------------------------------------------------
class MaxAbsZCheck final : public CaseCheck {
 public:
  std::string_view Name() const override { return "max-abs-z"; }
  std::string_view Summary() const override {
    return "the most extreme single token of the support by its exact binomial tail, Bonferroni over every support "
           "token (z* reported); catches a bias on one token long before X^2 over thousands of cells, and a token "
           "of tiny probability drawn far too often (the pooled tail cells hide it)";
  }
  std::vector<std::string> ReportKeys() const override { return {"max_abs_z", "top_residuals"}; }

  json Evaluate(const CaseEvidence& e) const override {
    double max_abs_z = 0.0, threshold = 0.0, p_value = 1.0;
    int32_t token = -1;
    json residuals = json::array();
    // Every support token is its own cell here (the counts are per token already), not only the head binning's
    // single-token cells: a sampler that moves 1e-6 of mass onto one token of p0 ~ 1e-20 (FlashInfer's fallback
    // to the last valid token when its fp32 running sum stays below the uniform, docs/conformance.md) changes no
    // pooled tail cell by much, but that token's binomial tail is ~0.
    std::vector<size_t> support;
    for (size_t t = 0; t < e.p0.size() && t < e.histogram.size(); ++t) {
      if (e.p0[t] > 0) support.push_back(t);
    }
    if (support.size() >= 2) {
      const Result<stats::MaxAbsZ> mz = stats::MaxAbsZTest(e.histogram, e.p0, support, e.planned.alpha_plan);
      if (mz.ok()) {
        max_abs_z = mz->max_abs_z;
        token = int32_t(mz->cell);
        threshold = mz->threshold;
        p_value = mz->p_value;
      }
      // The largest residuals, z = (O - E) / sqrt(E (1 - p)), over the support.
      struct Residual {
        int32_t token;
        uint64_t observed;
        double expected, z;
      };
      long double total = 0;
      uint64_t n = 0;
      for (size_t t : support) {
        total += e.p0[t];
        n += e.histogram[t];
      }
      std::vector<Residual> rs;
      rs.reserve(support.size());
      for (size_t t : support) {
        const double p = double(e.p0[t] / total);
        const double ex = double(n) * p;
        const double var = ex * (1.0 - p);
        rs.push_back({int32_t(t), e.histogram[t], ex, var > 0 ? (double(e.histogram[t]) - ex) / std::sqrt(var) : 0.0});
      }
      const size_t keep = std::min<size_t>(rs.size(), kTopResiduals);
      std::partial_sort(rs.begin(), rs.begin() + keep, rs.end(),
                        [](const Residual& a, const Residual& b) { return std::fabs(a.z) > std::fabs(b.z); });
      rs.resize(keep);
      for (const Residual& r : rs) {
        residuals.push_back({{"token", r.token},
                             {"observed", r.observed},
                             {"expected", JsonNumber(r.expected)},
                             {"z", JsonNumber(r.z)}});
      }
    }
    return {{"max_abs_z",
             {{"value", JsonNumber(max_abs_z)},
              {"token", token},
              {"threshold", JsonNumber(threshold)},
              {"p_value", JsonNumber(p_value)}}},
            {"top_residuals", residuals}};
  }

  Result<std::vector<CheckOutcome>> Outcomes(const json& fields, const CaseResult& c) const override {
    return ParseOutcomes(Name(), [&]() -> std::vector<CheckOutcome> {
      const json& mz = fields.at("max_abs_z");
      const double value = ReadJsonNumber(mz.at("value"));
      const int32_t token = mz.at("token").get<int32_t>();
      const double threshold = ReadJsonNumber(mz.at("threshold"));
      const double p = ReadJsonNumber(mz.at("p_value"));
      for (const json& r : fields.at("top_residuals")) {
        (void)r.at("token").get<int32_t>();
        (void)r.at("observed").get<uint64_t>();
        (void)ReadJsonNumber(r.at("expected"));
        (void)ReadJsonNumber(r.at("z"));
      }
      if (token < 0) return {};  // the test did not run (no head token, or it could not be evaluated)
      CheckOutcome o = MakeOutcome("max-abs-z", "token " + std::to_string(token),
                                   "max-|z| token " + std::to_string(token), CheckOutcome::Kind::kPValue);
      o.p_value = p;
      o.statistic = value;
      char buf[96];
      std::snprintf(buf, sizeof buf, "|z| = %.3g at token %d (threshold %.3g)", value, token, threshold);
      o.finding = buf;
      for (const json& r : fields.at("top_residuals")) {
        if (r.at("token").get<int32_t>() != token) continue;
        o.finding += ": " + std::to_string(r.at("observed").get<uint64_t>()) + " drawn vs " +
                     FormatSignificant(ReadJsonNumber(r.at("expected")), 4) + " expected";
        break;
      }
      if (value > 0 && threshold > 0) {
        const double ratio = (threshold + 2.33) / value;  // 2.33: the one-sided z of power 0.99
        o.draws_for_power = double(c.draws) * ratio * ratio;
      }
      return {o};
    });
  }

  // The stored p-value against the head binning's single-token cells, whose counts the report keeps: the test is
  // Bonferroni over every support token (kept of them), so its p-value is at most kept x the smallest exact tail
  // of those cells (MaxAbsZTest on the head cells gives head-cells x that tail). A p-value above that bound (a
  // failing case edited to pass) is an inconsistency; "did not run" counts as p = 1.
  Status Recheck(const json& fields, const CaseResult& c) const override {
    try {
      const json& mz = fields.at("max_abs_z");
      const int32_t token = mz.at("token").get<int32_t>();
      const double stored = token < 0 ? 1.0 : ReadJsonNumber(mz.at("p_value"));
      if (!c.checks.contains("binnings") || !c.checks["binnings"].is_array() || c.kept < 2) return Status::Ok();
      for (const json& b : c.checks["binnings"]) {
        if (b.at("name").get<std::string>() != "head" || !b.contains("cell_token")) continue;
        std::vector<uint64_t> observed;
        std::vector<double> expected;
        std::vector<size_t> cells;
        for (const json& o : b.at("observed")) observed.push_back(StoredCount(o, "an observed count"));
        for (const json& x : b.at("expected")) expected.push_back(ReadJsonNumber(x));
        const json& tokens = b.at("cell_token");
        for (size_t k = 0; k < tokens.size() && k < expected.size(); ++k) {
          if (tokens[k].get<int64_t>() >= 0 && expected[k] > 0 && expected[k] < 1) cells.push_back(k);
        }
        if (cells.empty() || observed.size() != expected.size()) return Status::Ok();
        const Result<stats::MaxAbsZ> head = stats::MaxAbsZTest(observed, expected, cells, c.alpha_plan);
        if (!head.ok() || !(head->p_value < 1)) return Status::Ok();
        const double tail = head->p_value / double(cells.size());
        const double bound = std::min(1.0, double(c.kept) * tail);
        if (!(stored <= bound * (1 + 1e-6) + 1e-300)) {
          return Error{ErrorCode::kParse, "check max-abs-z: p_value " + FormatSignificant(stored, 4) +
                                              (token < 0 ? " (the test did not run)" : "") +
                                              " but the head binning's single-token counts give at most " +
                                              FormatSignificant(bound, 4) + " (token " +
                                              std::to_string(tokens[head->cell].get<int64_t>()) + ")"};
        }
      }
    } catch (const std::exception& e) {
      return Error{ErrorCode::kParse, "check max-abs-z: " + JsonErrorText(e)};
    }
    return Status::Ok();
  }
};

}  // namespace

CheckList TokenChecks() {
  CheckList v;
  v.push_back(std::make_unique<MaxAbsZCheck>());
  return v;
}

StoredMaxAbsZ StoredMaxAbsZTest(const CaseResult& c) {
  StoredMaxAbsZ out;
  if (!c.checks.contains("max_abs_z")) return out;
  try {
    const json& mz = c.checks["max_abs_z"];
    out.value = ReadJsonNumber(mz.at("value"));
    out.token = mz.at("token").get<int32_t>();
    out.threshold = ReadJsonNumber(mz.at("threshold"));
    out.p_value = ReadJsonNumber(mz.at("p_value"));
    if (c.checks.contains("top_residuals")) {
      for (const json& r : c.checks["top_residuals"]) {
        out.top_residuals.push_back({r.at("token").get<int32_t>(), r.at("observed").get<uint64_t>(),
                                     ReadJsonNumber(r.at("expected")), ReadJsonNumber(r.at("z"))});
      }
    }
  } catch (const std::exception&) {
    return {};
  }
  return out;
}

}  // namespace samplecheck::harness
