// The case checks (checks.h). Each check is one class here plus its entry in CaseChecks() at the bottom.
#include "samplecheck/campaign/checks.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <optional>
#include <stdexcept>

#include "samplecheck/stats/chi_square.h"
#include "samplecheck/stats/equivalence.h"
#include "samplecheck/stats/goodness_of_fit.h"
#include "samplecheck/stats/independence.h"
#include "samplecheck/stats/two_sample.h"
#include "samplecheck/stats/power.h"

namespace samplecheck::harness {

using nlohmann::json;

namespace {

constexpr size_t kTopViolations = 16;
constexpr size_t kTopResiduals = 10;
constexpr double kScorePower = 0.99;  // draws_for_power: the draws at which a test reaches this power

CheckOutcome MakeOutcome(std::string check, std::string scope, std::string test, CheckOutcome::Kind kind) {
  CheckOutcome o;
  o.check = std::move(check);
  o.scope = std::move(scope);
  o.test = std::move(test);
  o.kind = kind;
  return o;
}

// Parses a check's fields with nlohmann's checked accessors; a malformed field becomes kParse naming the check.
template <class F>
Result<std::vector<CheckOutcome>> ParseOutcomes(std::string_view check, F&& parse) {
  try {
    return parse();
  } catch (const std::exception& e) {
    return Error{ErrorCode::kParse, "check " + std::string(check) + ": " + JsonErrorText(e)};
  }
}

// A count of a stored field: a whole number >= 0 (nlohmann would read -5 as 2^64 - 5).
uint64_t StoredCount(const json& j, const std::string& what) {
  if (!j.is_number_unsigned() && !(j.is_number_integer() && j.get<int64_t>() >= 0)) {
    throw std::runtime_error(what + " must be a whole number >= 0, not " +
                             j.dump(-1, ' ', false, json::error_handler_t::replace));
  }
  return j.get<uint64_t>();
}

Status RecheckSupport(const json& fields, const CaseResult& c);

// ---- support ----------------------------------------------------------------------------------------------------
class SupportCheck final : public CaseCheck {
 public:
  std::string_view Name() const override { return "support"; }
  std::string_view Summary() const override {
    return "hard: any draw outside the kept set or an invalid token fails the case (alpha 0; a leak of mass d is "
           "seen with probability 1 - (1 - d)^N); a sampler error fails it too";
  }
  std::vector<std::string> ReportKeys() const override { return {"support"}; }
  Status Recheck(const json& fields, const CaseResult& c) const override { return RecheckSupport(fields, c); }

  json Evaluate(const CaseEvidence& e) const override {
    std::vector<std::pair<int32_t, uint64_t>> violations;  // token (-1: invalid), count
    uint64_t outside = 0;
    for (size_t t = 0; t < e.histogram.size(); ++t) {
      if (e.histogram[t] > 0 && !(e.p0[t] > 0.0)) {
        outside += e.histogram[t];
        violations.emplace_back(static_cast<int32_t>(t), e.histogram[t]);
      }
    }
    std::sort(violations.begin(), violations.end(), [](const auto& a, const auto& b) { return a.second > b.second; });
    // An unsamplable row's invalid draws are its right answers, not violations.
    const uint64_t invalid_violations = e.planned.unsamplable ? 0 : e.invalid_draws;
    if (invalid_violations > 0) violations.insert(violations.begin(), {-1, invalid_violations});
    if (violations.size() > kTopViolations) violations.resize(kTopViolations);
    json tokens = json::array();
    for (const auto& [token, count] : violations) tokens.push_back({{"token", token}, {"count", count}});
    return {{"support",
             {{"violations", outside + invalid_violations},
              {"invalid_draws", e.invalid_draws},
              {"tokens", tokens},
              {"sampler_error", std::string(e.sampler_error)}}}};
  }

  Result<std::vector<CheckOutcome>> Outcomes(const json& fields, const CaseResult& c) const override {
    return ParseOutcomes(Name(), [&]() -> std::vector<CheckOutcome> {
      const json& s = fields.at("support");
      const uint64_t violations = s.at("violations").get<uint64_t>();
      const uint64_t invalid = s.at("invalid_draws").get<uint64_t>();
      const std::string sampler_error = s.at("sampler_error").get<std::string>();
      std::vector<CheckOutcome> out;
      if (!sampler_error.empty()) {
        CheckOutcome o = MakeOutcome("support", "sampler", "sampler error", CheckOutcome::Kind::kHard);
        o.violations = 1;
        o.statistic = 1;
        o.finding = "sampler error: " + sampler_error;
        o.draws_for_power = 1;
        out.push_back(std::move(o));
      }
      CheckOutcome o = MakeOutcome("support", "", "support", CheckOutcome::Kind::kHard);
      o.violations = violations;
      o.statistic = double(violations);
      if (c.unsamplable) {
        // Every draw of an unsamplable row must be the invalid marker; any token is the silent-token-0 class.
        o.test = "unsamplable row";
        if (violations > 0) {
          const json& tokens = s.at("tokens");
          o.finding = std::to_string(violations) + " token(s) drawn from an unsamplable row (NaN or every logit -inf)";
          if (!tokens.empty()) {
            o.finding += ", e.g. token " + std::to_string(tokens.front().at("token").get<int32_t>()) + " " +
                         std::to_string(tokens.front().at("count").get<uint64_t>()) + "x";
          }
          o.finding += "; the only right answer is the invalid marker";
          o.draws_for_power = 1;
        } else {
          o.finding = "every draw was the invalid marker";
        }
        out.push_back(std::move(o));
        return out;
      }
      if (violations > 0) {
        o.finding = std::to_string(violations) + " support violation(s)";
        if (invalid > 0) o.finding += " (" + std::to_string(invalid) + " invalid token(s))";
        const json& tokens = s.at("tokens");
        if (!tokens.empty()) {
          o.finding += ", e.g. token " + std::to_string(tokens.front().at("token").get<int32_t>()) + " drawn " +
                       std::to_string(tokens.front().at("count").get<uint64_t>()) + "x outside the kept set";
        }
        o.draws_for_power = std::log(1.0 / (1.0 - kScorePower)) * double(c.draws) / double(violations);
      } else {
        o.finding = "no draw outside the kept set";
      }
      out.push_back(std::move(o));
      return out;
    });
  }
};

// The support check's count against its list: the violations are the draws of the tokens listed (the invalid marker
// -1 first, then the tokens outside the kept set by count; the list keeps the kTopViolations largest).
Status RecheckSupport(const json& fields, const CaseResult& c) {
  try {
    const json& s = fields.at("support");
    const uint64_t violations = StoredCount(s.at("violations"), "support.violations");
    const uint64_t invalid = StoredCount(s.at("invalid_draws"), "support.invalid_draws");
    const json& tokens = s.at("tokens");
    if (!tokens.is_array()) throw std::runtime_error("support.tokens must be an array");
    uint64_t listed = 0;
    for (const json& t : tokens) {
      const json& token = t.at("token");
      if (!token.is_number_integer() || token.get<int64_t>() < -1 || token.get<int64_t>() > INT32_MAX) {
        throw std::runtime_error("support.tokens: token " + token.dump() + " is not a token id (or -1, invalid)");
      }
      const uint64_t count = StoredCount(t.at("count"), "support.tokens count");
      if (count == 0) throw std::runtime_error("support.tokens lists token " + token.dump() + " with 0 draws");
      if (token.get<int64_t>() == -1 && (c.unsamplable || count != invalid)) {
        throw std::runtime_error("support.tokens lists " + std::to_string(count) + " invalid draws, support.invalid_draws "
                                 "says " + std::to_string(invalid) + (c.unsamplable ? " (an unsamplable row's invalid draws "
                                 "are its right answers, never violations)" : ""));
      }
      if (__builtin_add_overflow(listed, count, &listed)) throw std::runtime_error("support.tokens counts overflow");
    }
    const bool whole_list = tokens.size() < kTopViolations;
    if (whole_list ? listed != violations : listed > violations) {
      return Error{ErrorCode::kParse, "check support: support.violations = " + std::to_string(violations) + " but " +
                                          "the tokens listed beside it were drawn " + std::to_string(listed) +
                                          " time(s)" + (whole_list ? "" : " (the largest " +
                                          std::to_string(kTopViolations) + " alone)")};
    }
    const uint64_t invalid_violations = c.unsamplable ? 0 : invalid;
    if (violations < invalid_violations) {
      return Error{ErrorCode::kParse, "check support: support.violations = " + std::to_string(violations) +
                                          " is below its " + std::to_string(invalid) + " invalid draws"};
    }
  } catch (const std::exception& e) {
    return Error{ErrorCode::kParse, "check support: " + JsonErrorText(e)};
  }
  return Status::Ok();
}

// Two stored numbers agree when both are NaN, both the same infinity, or within a relative 1e-7 (the same code on
// another machine's libm and Boost may differ in the last digits; a tampered value differs by far more).
bool SameStoredNumber(double stored, double recomputed) {
  if (std::isnan(stored) || std::isnan(recomputed)) return std::isnan(stored) && std::isnan(recomputed);
  if (std::isinf(stored) || std::isinf(recomputed)) return stored == recomputed;
  return std::fabs(stored - recomputed) <= 1e-7 * std::max(std::fabs(stored), std::fabs(recomputed)) + 1e-300;
}

// The observed counts of a binning; a histogram of the wrong size is a bug of the campaign (never user input).
stats::BinnedCounts Bin(const stats::Binning& b, std::span<const uint64_t> histogram) {
  Result<stats::BinnedCounts> counts = stats::BinCounts(b, histogram);
  if (!counts.ok()) throw std::logic_error("binning: " + counts.error().message);
  return std::move(*counts);
}

// ---- pearson ----------------------------------------------------------------------------------------------------
class PearsonCheck final : public CaseCheck {
 public:
  std::string_view Name() const override { return "pearson"; }
  std::string_view Summary() const override {
    return "Pearson X^2 on each usable binning (head, tail, hash; cells from p0 and N only, every E >= 10), both "
           "tails: a fit too poor or too good to be random (p = 2 min(upper, lower)); G reported beside it; power "
           "from the non-central chi-square at the case's TV";
  }
  std::vector<std::string> ReportKeys() const override { return {"binnings"}; }

  json Evaluate(const CaseEvidence& e) const override {
    json binnings = json::array();
    for (const stats::Binning* b : e.binning.UsableBinnings()) {
      const stats::BinnedCounts counts = Bin(*b, e.histogram);
      json j = BinningFields(b->name, counts.observed, stats::CellProbabilities(*b));
      if (b->name == "head") j["cell_token"] = HeadCellTokens(e.binning);
      binnings.push_back(std::move(j));
    }
    return {{"binnings", binnings}};
  }

  // One binning's fields from its cells' counts and probabilities: what Evaluate stores and Recheck recomputes.
  static json BinningFields(const std::string& name, std::span<const uint64_t> observed,
                            std::span<const double> expected) {
    const Result<stats::GoodnessOfFit> pearson = stats::PearsonChiSquareTest(observed, expected);
    const Result<stats::GoodnessOfFit> g = stats::GTest(observed, expected);
    const Result<double> lower = pearson.ok() && pearson->dof > 0
                                     ? stats::ChiSquareLowerTailPValue(pearson->statistic, pearson->dof)
                                     : Result<double>(InvalidArgument("no test"));
    json j{{"name", name},
           {"cells", expected.size()},
           {"dof", pearson.ok() ? pearson->dof : 0},
           {"pearson", JsonNumber(pearson.ok() ? pearson->statistic : 0.0)},
           {"pearson_p", JsonNumber(pearson.ok() ? pearson->p_value : NAN)},
           {"pearson_p_lower", JsonNumber(lower.ok() ? *lower : NAN)},
           {"g", JsonNumber(g.ok() ? g->statistic : 0.0)},
           {"g_p", JsonNumber(g.ok() ? g->p_value : NAN)},
           {"min_expected", JsonNumber(pearson.ok() ? pearson->min_expected : 0.0)},
           {"observed", std::vector<uint64_t>(observed.begin(), observed.end())}};
    json exp = json::array();
    for (double x : expected) exp.push_back(JsonNumber(x));
    j["expected"] = std::move(exp);
    return j;
  }

  // Every statistic of every binning again from its stored observed and expected cells (sufficient statistics):
  // a stored X^2, G, p-value, dof or least expectation that is not what its counts give is an inconsistency. The
  // counts are whole numbers >= 0, the expectations a distribution, and every binning holds the same draws.
  Status Recheck(const json& fields, const CaseResult& c) const override {
    std::string where = "check pearson";
    try {
      std::optional<uint64_t> total;
      for (const json& b : fields.at("binnings")) {
        const std::string name = b.at("name").get<std::string>();
        where = "check pearson, binning " + name;
        std::vector<uint64_t> observed;
        uint64_t sum = 0;
        for (const json& o : b.at("observed")) {
          observed.push_back(StoredCount(o, "an observed count"));
          if (__builtin_add_overflow(sum, observed.back(), &sum)) {
            throw std::runtime_error("the observed counts sum to more than 2^64 - 1");
          }
        }
        std::vector<double> expected;
        long double mass = 0;
        for (const json& x : b.at("expected")) {
          expected.push_back(ReadJsonNumber(x));
          if (!(expected.back() >= 0 && expected.back() <= 1)) {
            throw std::runtime_error("an expected cell probability " + x.dump() + " is outside [0, 1]");
          }
          mass += expected.back();
        }
        if (std::fabs(static_cast<double>(mass) - 1.0) > 1e-6) {
          throw std::runtime_error("the expected cell probabilities sum to " + Short(double(mass)) + ", not 1");
        }
        if (sum > c.draws) {
          throw std::runtime_error("the observed counts sum to " + std::to_string(sum) + ", more than the case's " +
                                   std::to_string(c.draws) + " draws");
        }
        if (total && *total != sum) {
          throw std::runtime_error("the observed counts sum to " + std::to_string(sum) + ", another binning's to " +
                                   std::to_string(*total) + " (every binning holds the same draws)");
        }
        total = sum;
        const json again = BinningFields(name, observed, expected);
        for (const char* key : {"cells", "dof"}) {
          if (b.at(key) != again.at(key)) {
            throw std::runtime_error(std::string(key) + " is " + b.at(key).dump() + ", its cells give " +
                                     again.at(key).dump());
          }
        }
        for (const char* key : {"pearson", "pearson_p", "pearson_p_lower", "g", "g_p", "min_expected"}) {
          if (!b.contains(key) && std::string(key) == "pearson_p_lower") continue;  // reports before the lower tail
          const double stored = ReadJsonNumber(b.at(key)), recomputed = ReadJsonNumber(again.at(key));
          if (!SameStoredNumber(stored, recomputed)) {
            throw std::runtime_error(std::string(key) + " is " + Short(stored) + " but its observed and expected " +
                                     "cells give " + Short(recomputed));
          }
        }
      }
    } catch (const std::exception& e) {
      return Error{ErrorCode::kParse, where + ": " + JsonErrorText(e)};
    }
    return Status::Ok();
  }

  Result<std::vector<CheckOutcome>> Outcomes(const json& fields, const CaseResult& c) const override {
    return ParseOutcomes(Name(), [&]() -> std::vector<CheckOutcome> {
      std::vector<CheckOutcome> out;
      const double alpha = std::clamp(c.alpha_plan / 2, 1e-300, 0.5);  // the upper tail's share of a two-sided test
      for (const json& b : fields.at("binnings")) {
        const std::string name = b.at("name").get<std::string>();
        const uint64_t dof = b.at("dof").get<uint64_t>();
        const double x2 = ReadJsonNumber(b.at("pearson"));
        const double p = ReadJsonNumber(b.at("pearson_p"));
        const size_t cells = b.at("expected").size();
        if (b.at("observed").size() != cells) throw std::runtime_error("observed and expected differ in length");
        if (b.contains("cell_token") && b["cell_token"].size() != cells) {
          throw std::runtime_error("cell_token and expected differ in length");
        }
        if (dof == 0) continue;  // the test could not be evaluated (fewer than two cells): not in the family
        // Both tails (reports before the lower tail hold the upper one only).
        const double lower = b.contains("pearson_p_lower") ? ReadJsonNumber(b["pearson_p_lower"]) : NAN;
        CheckOutcome o = MakeOutcome("pearson", name, "pearson " + name, CheckOutcome::Kind::kPValue);
        o.p_value = std::isnan(lower) ? p : std::min(1.0, 2.0 * std::min(p, lower));
        o.statistic = x2;
        o.finding = "X2 = " + Short(x2) + " (dof " + std::to_string(dof) + ")";
        if (!std::isnan(lower) && lower < p) o.finding += ", below its dof: a fit too good to be random?";
        if (x2 > double(dof) && c.draws > 0) {
          const double divergence = (x2 - double(dof)) / double(c.draws);
          const Result<stats::DrawPlan> plan = stats::PlanDrawsForDivergence(divergence, alpha, kScorePower, dof + 1);
          if (plan.ok()) o.draws_for_power = plan->draws;
        }
        out.push_back(std::move(o));
      }
      return out;
    });
  }

  // The token of each head cell (-1 for the rest cell), in cell order.
  static std::vector<int32_t> HeadCellTokens(const stats::BinningPlan& plan) {
    std::vector<int32_t> tokens(plan.head.cells.size(), -1);
    for (size_t c = 0; c < plan.head.cells.size(); ++c) {
      if (plan.head.cells[c].kind == stats::CellKind::kToken) {
        tokens[c] = static_cast<int32_t>(plan.tokens_by_rank[plan.head.cells[c].rank_begin]);
      }
    }
    return tokens;
  }

  static std::string Short(double v) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.4g", v);
    return buf;
  }
};

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
        residuals.push_back(
            {{"token", r.token}, {"observed", r.observed}, {"expected", JsonNumber(r.expected)}, {"z", JsonNumber(r.z)}});
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
      CheckOutcome o = MakeOutcome("max-abs-z", "token " + std::to_string(token), "max-|z| token " + std::to_string(token),
                     CheckOutcome::Kind::kPValue);
      o.p_value = p;
      o.statistic = value;
      char buf[96];
      std::snprintf(buf, sizeof buf, "|z| = %.3g at token %d (threshold %.3g)", value, token, threshold);
      o.finding = buf;
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
          return Error{ErrorCode::kParse, "check max-abs-z: p_value " + Short(stored) +
                                              (token < 0 ? " (the test did not run)" : "") +
                                              " but the head binning's single-token counts give at most " +
                                              Short(bound) + " (token " +
                                              std::to_string(tokens[head->cell].get<int64_t>()) + ")"};
        }
      }
    } catch (const std::exception& e) {
      return Error{ErrorCode::kParse, "check max-abs-z: " + JsonErrorText(e)};
    }
    return Status::Ok();
  }

  static std::string Short(double v) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.4g", v);
    return buf;
  }
};

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
  return {{"tested", true},
          {"statistic", JsonNumber(t->statistic)},
          {"dof", t->dof},
          {"p_value", JsonNumber(t->p_value)},
          {"pairs", t->pairs},
          {"min_expected", JsonNumber(t->min_expected)}};
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
    Result<stats::TwoSample> t = stats::TwoSampleChiSquareTest(alone.observed, batch.observed);
    if (!t.ok()) return {{"alone_vs_batch", {{"tested", false}, {"why", t.error().message}}}};
    return {{"alone_vs_batch",
             {{"tested", true},
              {"statistic", JsonNumber(t->statistic)},
              {"dof", t->dof},
              {"p_value", JsonNumber(t->p_value)},
              {"pairs", t->draws_r},
              {"min_expected", JsonNumber(double(t->min_pooled))}}}};
  }
  Result<std::vector<CheckOutcome>> Outcomes(const json& fields, const CaseResult& c) const override {
    return ParseOutcomes(Name(), [&]() {
      return ContingencyOutcome(fields.at("alone_vs_batch"), "alone-vs-batch", "alone vs batch", c);
    });
  }
};

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
                                                            {"sampled", a.sampled_token}};
    } else if (e.binning.head.usable()) {
      const stats::BinnedCounts fast = Bin(e.binning.head, a.fast);
      const stats::BinnedCounts sampled = Bin(e.binning.head, a.sampled);
      Result<stats::TwoSample> t = stats::TwoSampleChiSquareTest(fast.observed, sampled.observed);
      if (t.ok()) {
        j["two_sample"] = {{"tested", true},
                           {"statistic", JsonNumber(t->statistic)},
                           {"dof", t->dof},
                           {"p_value", JsonNumber(t->p_value)},
                           {"pairs", t->draws_r},
                           {"min_expected", JsonNumber(double(t->min_pooled))}};
      }
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

// ---- equivalence ------------------------------------------------------------------------------------------------
class EquivalenceCheck final : public CaseCheck {
 public:
  std::string_view Name() const override { return "equivalence"; }
  std::string_view Summary() const override {
    return "upper confidence bounds on TV and chi-square divergence to the reference on each usable binning, at "
           "the case's alpha (Hellinger inversion and an exact L1 deviation; calibrated in statistics.md), always "
           "reported; with --equivalence EPS hard: certified only when every bound is below EPS, else inconclusive "
           "with the draws a correct sampler needs";
  }
  std::vector<std::string> ReportKeys() const override { return {"equivalence"}; }
  bool KeysOptional() const override { return true; }

  json Evaluate(const CaseEvidence& e) const override {
    const CaseResult& c = e.planned;
    if (c.unsamplable || e.p0.empty() || !e.sampler_error.empty()) return {{"equivalence", nullptr}};
    const double alpha = c.alpha_plan;
    json j{{"alpha", JsonNumber(alpha)},
           {"eps", JsonNumber(c.equivalence_eps)},
           {"chi2_eps", JsonNumber(c.equivalence_chi2_eps)}};
    if (!(alpha > 0 && alpha < 1)) {
      j["error"] = "the case has no alpha in (0, 1) to bound at";
      return {{"equivalence", j}};
    }
    const Result<stats::BinnedEquivalence> be = stats::EquivalenceOverBinnings(e.binning, e.histogram, alpha);
    if (!be.ok()) {
      j["error"] = be.error().message;
      return {{"equivalence", j}};
    }
    j["tv_upper"] = JsonNumber(be->tv_upper);
    j["chi2_upper"] = JsonNumber(be->chi2_upper);
    j["worst_binning"] = be->binnings.empty() ? "" : be->binnings[be->worst].binning;
    json binnings = json::array();
    for (const stats::EquivalenceBound& b : be->binnings) {
      binnings.push_back({{"name", b.binning},
                          {"cells", b.cells},
                          {"draws", b.draws},
                          {"statistic", JsonNumber(b.statistic)},
                          {"tv_point", JsonNumber(b.tv_point)},
                          {"tv_upper", JsonNumber(b.tv_upper)},
                          {"tv_upper_hellinger", JsonNumber(b.tv_upper_hellinger)},
                          {"tv_upper_l1", JsonNumber(b.tv_upper_l1)},
                          {"chi2_point", JsonNumber(b.chi2_point)},
                          {"chi2_upper", JsonNumber(b.chi2_upper)},
                          {"tv_method", b.tv_method},
                          {"chi2_method", b.chi2_method}});
    }
    j["binnings"] = std::move(binnings);
    return {{"equivalence", j}};
  }

  Result<std::vector<CheckOutcome>> Outcomes(const json& fields, const CaseResult& c) const override {
    return ParseOutcomes(Name(), [&]() -> std::vector<CheckOutcome> {
      const json& j = fields.at("equivalence");
      if (j.is_null()) return {};
      const Judged v = Judge(j);
      if (v.eps == 0) return {};  // bounds reported, no verdict asked
      // The verdict is the row cases': a batch row draws a few thousand tokens to judge batch faults (its own
      // checks), never enough to bound a distance; its bounds are reported.
      if (c.batch.size > 0) return {};
      CheckOutcome o = MakeOutcome("equivalence", v.worst_binning, "equivalence TV < " + Short(v.eps),
                                   CheckOutcome::Kind::kHard);
      o.violations = v.certified ? 0 : 1;
      o.statistic = v.tv_upper;
      o.finding = v.message;
      if (v.lacks_draws) o.draws_for_power = v.draws_to_certify;
      return {o};
    });
  }

  struct Judged {
    double eps = 0, tv_upper = 0, draws_to_certify = 0;
    bool certified = false, lacks_draws = false;
    std::string worst_binning, message;
  };

  // The verdict on stored fields (the gate recomputes it from the bounds, not from a stored verdict).
  static Judged Judge(const json& j) {
    Judged v;
    v.eps = ReadJsonNumber(j.at("eps"));
    const double chi2_eps = ReadJsonNumber(j.at("chi2_eps"));
    if (!(v.eps >= 0 && v.eps < 1) || !(chi2_eps >= 0)) throw std::runtime_error("eps out of range");
    if (j.contains("error")) {
      const std::string error = j["error"].get<std::string>();
      v.lacks_draws = error.find("no usable binning") != std::string::npos;  // too few draws for two cells
      v.message = (v.lacks_draws ? "inconclusive for lack of draws: " : "no equivalence bound: ") + error;
      return v;
    }
    std::vector<stats::EquivalenceBound> bounds;
    const double alpha = ReadJsonNumber(j.at("alpha"));
    for (const json& b : j.at("binnings")) {
      stats::EquivalenceBound eb;
      eb.binning = b.at("name").get<std::string>();
      eb.cells = b.at("cells").get<uint64_t>();
      eb.draws = b.at("draws").get<uint64_t>();
      eb.alpha = alpha;
      eb.tv_upper = ReadJsonNumber(b.at("tv_upper"));
      eb.chi2_upper = ReadJsonNumber(b.at("chi2_upper"));
      bounds.push_back(std::move(eb));
    }
    double chi2_upper = 0;
    for (const auto& b : bounds) chi2_upper = std::max(chi2_upper, b.chi2_upper);
    if (bounds.empty()) {  // a support of one token: every in-support draw is that token, distance 0
      v.certified = true;
      v.message = "certified: a support of one token (distance 0 on it)";
    } else if (v.eps > 0) {
      Result<stats::EquivalenceVerdict> verdict = stats::JudgeEquivalence(bounds, v.eps);
      if (!verdict.ok()) throw std::runtime_error(verdict.error().message);
      v.certified = verdict->certified;
      v.lacks_draws = verdict->lacks_draws;
      v.tv_upper = verdict->tv_upper;
      v.worst_binning = verdict->worst_binning;
      v.draws_to_certify = verdict->draws_to_certify;
      v.message = verdict->message;
    } else {
      v.tv_upper = ReadJsonNumber(j.at("tv_upper"));
    }
    if (v.eps > 0 && chi2_eps > 0) {
      const bool chi2_ok = chi2_upper < chi2_eps;
      v.message += std::string(chi2_ok ? "; chi-square divergence <= " : "; NOT certified: chi-square divergence <= ") +
                   Short(chi2_upper) + (chi2_ok ? " < " : " >= ") + Short(chi2_eps);
      v.certified = v.certified && chi2_ok;
    }
    return v;
  }

  static std::string Short(double v) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.3g", v);
    return buf;
  }
};

}  // namespace

StoredEquivalence StoredEquivalenceOf(const CaseResult& c) {
  StoredEquivalence out;
  if (!c.checks.contains("equivalence") || c.checks["equivalence"].is_null()) return out;
  try {
    const json& j = c.checks["equivalence"];
    out.present = true;
    out.alpha = ReadJsonNumber(j.at("alpha"));
    out.eps = ReadJsonNumber(j.at("eps"));
    out.chi2_eps = ReadJsonNumber(j.at("chi2_eps"));
    if (j.contains("error")) {
      out.error = j["error"].get<std::string>();
      return out;
    }
    out.tv_upper = ReadJsonNumber(j.at("tv_upper"));
    out.chi2_upper = ReadJsonNumber(j.at("chi2_upper"));
    out.worst_binning = j.at("worst_binning").get<std::string>();
    if (out.eps > 0 && c.batch.size == 0) {
      const EquivalenceCheck::Judged v = EquivalenceCheck::Judge(j);
      out.certified = v.certified;
      out.lacks_draws = v.lacks_draws;
      out.draws_to_certify = v.draws_to_certify;
    }
  } catch (const std::exception&) {
    return {};  // validated when the report was read (ReadCaseChecks)
  }
  return out;
}

Status CaseCheck::Recheck(const json&, const CaseResult&) const { return Status::Ok(); }

const std::vector<std::unique_ptr<const CaseCheck>>& CaseChecks() {
  static const std::vector<std::unique_ptr<const CaseCheck>> checks = [] {
    std::vector<std::unique_ptr<const CaseCheck>> v;
    v.push_back(std::make_unique<SupportCheck>());
    v.push_back(std::make_unique<PearsonCheck>());
    v.push_back(std::make_unique<MaxAbsZCheck>());
    v.push_back(std::make_unique<BatchInvarianceCheck>());
    v.push_back(std::make_unique<IndependenceCheck>());
    v.push_back(std::make_unique<SerialCheck>());
    v.push_back(std::make_unique<AloneVsBatchCheck>());
    v.push_back(std::make_unique<AgreementCheck>());
    v.push_back(std::make_unique<EquivalenceCheck>());
    for (auto& check : SpecCaseChecks()) v.push_back(std::move(check));
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

std::vector<StoredBinning> StoredBinnings(const CaseResult& c) {
  std::vector<StoredBinning> out;
  if (!c.checks.contains("binnings")) return out;
  try {
    for (const json& j : c.checks["binnings"]) {
      StoredBinning b;
      b.name = j.at("name").get<std::string>();
      b.dof = j.at("dof").get<uint64_t>();
      b.pearson = ReadJsonNumber(j.at("pearson"));
      b.pearson_p = ReadJsonNumber(j.at("pearson_p"));
      b.g = ReadJsonNumber(j.at("g"));
      b.g_p = ReadJsonNumber(j.at("g_p"));
      b.min_expected = ReadJsonNumber(j.at("min_expected"));
      b.observed = j.at("observed").get<std::vector<uint64_t>>();
      for (const json& e : j.at("expected")) b.expected.push_back(ReadJsonNumber(e));
      if (j.contains("cell_token")) b.cell_token = j["cell_token"].get<std::vector<int32_t>>();
      out.push_back(std::move(b));
    }
  } catch (const std::exception&) {
    return {};  // validated when the report was read (ReadCaseChecks); a hand-built case may have none
  }
  return out;
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
