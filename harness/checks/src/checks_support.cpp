// The support family (checks.h): draws outside the kept set, invalid tokens and sampler errors fail a case outright.
#include <algorithm>
#include <climits>
#include <cmath>
#include <stdexcept>

#include "check_family.h"
#include "samplecheck/suites/json_text.h"

namespace samplecheck::harness {

using nlohmann::json;

namespace {

constexpr size_t kTopViolations = 16;

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
        throw std::runtime_error("support.tokens lists " + std::to_string(count) +
                                 " invalid draws, support.invalid_draws "
                                 "says " +
                                 std::to_string(invalid) +
                                 (c.unsamplable ? " (an unsamplable row's invalid draws "
                                                  "are its right answers, never violations)"
                                                : ""));
      }
      if (__builtin_add_overflow(listed, count, &listed)) throw std::runtime_error("support.tokens counts overflow");
    }
    const bool whole_list = tokens.size() < kTopViolations;
    if (whole_list ? listed != violations : listed > violations) {
      return Error{ErrorCode::kParse,
                   "check support: support.violations = " + std::to_string(violations) + " but " +
                       "the tokens listed beside it were drawn " + std::to_string(listed) + " time(s)" +
                       (whole_list ? "" : " (the largest " + std::to_string(kTopViolations) + " alone)")};
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

}  // namespace

CheckList SupportChecks() {
  CheckList v;
  v.push_back(std::make_unique<SupportCheck>());
  return v;
}

}  // namespace samplecheck::harness
