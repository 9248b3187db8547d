// The support family (checks.h): draws outside the kept set, invalid tokens and sampler errors fail a case outright.
#include <algorithm>
#include <climits>
#include <cmath>
#include <stdexcept>

#include "check_family.h"
#include "samplecheck/checks/case_spec.h"
#include "samplecheck/core/format.h"
#include "samplecheck/reference/distribution.h"
#include "samplecheck/reference/explain.h"
#include "samplecheck/suites/json_text.h"

namespace samplecheck::harness {

using nlohmann::json;

namespace {

constexpr size_t kTopViolations = 16;
constexpr size_t kExplainedViolations = 3;  // the first tokens listed get their reference probability and filter

Status RecheckSupport(const json& fields, const CaseResult& c);
std::string SupportFinding(const json& s, const CaseResult& c, uint64_t violations, uint64_t invalid);

// What the reference says of a token drawn outside the kept set (ExplainTokenDrop on the row the case was judged
// on): its probability before the filters and the stage of the judged profile that drops it, added to its entry of
// support.tokens. Nothing is added where the case has no row (a speculative case) or its profile is unknown.
void ExplainViolation(const CaseEvidence& e, json& entry) {
  const Profile* profile = FindProfile(e.planned.profile);
  const int32_t token = entry.at("token").get<int32_t>();
  if (profile == nullptr || e.row.empty() || token < 0) return;
  const LogitsView row = LogitsView::Fp32(e.row);
  const Result<TokenDrop> drop = ExplainTokenDrop(row, e.planned.params, *profile, token);
  if (!drop.ok()) {
    entry["why"] = "the reference cannot say: " + drop.error().message;
    return;
  }
  entry["reference_prob"] = JsonNumber(drop->reference_prob);
  entry["rank"] = drop->rank;
  entry["dropped_by"] = DropStageName(drop->stage);
  entry["why"] = DescribeTokenDrop(*drop, e.planned.params);
}

// "token 2 60x (p 0.0123; top-p drops it: ...)" for the first token, "token 7 12x (top-k)" for the others.
std::string DescribeViolation(const json& t, bool first) {
  std::string s = "token " + std::to_string(t.at("token").get<int32_t>()) + " " +
                  std::to_string(t.at("count").get<uint64_t>()) + "x";
  if (!t.contains("why")) return s;
  if (!first) return s + " (" + (t.contains("dropped_by") ? t["dropped_by"] : t["why"]).get<std::string>() + ")";
  s += " (";
  if (t.contains("reference_prob")) s += "p " + FormatSignificant(ReadJsonNumber(t["reference_prob"]), 3) + "; ";
  return s + t["why"].get<std::string>() + ")";
}

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
    size_t explained = 0;
    for (const auto& [token, count] : violations) {
      json entry{{"token", token}, {"count", count}};
      if (token >= 0 && explained < kExplainedViolations && !e.planned.unsamplable) {
        ExplainViolation(e, entry);
        ++explained;
      }
      tokens.push_back(std::move(entry));
    }
    return {{"support",
             {{"violations", outside + invalid_violations},
              {"invalid_draws", e.invalid_draws},
              {"tokens", tokens},
              {"kept", e.planned.kept},
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
          o.finding = std::to_string(violations) + " token(s) drawn from an unsamplable row (NaN or every logit " +
                      "-inf; " + DescribeCaseRow(c) + ")";
          if (!tokens.empty()) o.finding += ", e.g. " + DescribeViolation(tokens.front(), false);
          o.finding += "; the only right answer is the invalid marker";
          o.draws_for_power = 1;
        } else {
          o.finding = "every draw was the invalid marker";
        }
        out.push_back(std::move(o));
        return out;
      }
      if (violations > 0) {
        o.finding = SupportFinding(s, c, violations, invalid);
        o.draws_for_power = std::log(1.0 / (1.0 - kScorePower)) * double(c.draws) / double(violations);
      } else {
        o.finding = "no draw outside the kept set";
      }
      out.push_back(std::move(o));
      return out;
    });
  }
};

// "9 support violation(s) (2 invalid tokens); row gaussian(V=1000, sigma=2); T 1, top_k 50, top_p
// 1, min_p 0; outside the kept set of 50: token 7 7x (p 0.0012; top-k 50 drops it (rank 51))"
// (reports before the explanations: the token and its count alone).
std::string SupportFinding(const json& s, const CaseResult& c, uint64_t violations, uint64_t invalid) {
  std::string finding = std::to_string(violations) + " support violation(s)";
  if (invalid > 0) finding += " (" + std::to_string(invalid) + " invalid tokens)";
  finding += "; " + DescribeCaseRow(c);
  const int64_t kept = s.contains("kept") ? s["kept"].get<int64_t>() : c.kept;
  const json& tokens = s.at("tokens");
  size_t listed = 0;
  for (const json& t : tokens) {
    if (t.at("token").get<int32_t>() < 0) continue;  // the invalid draws, counted above
    if (listed == kExplainedViolations) break;
    finding += (listed == 0 ? "; outside the kept set of " + std::to_string(kept) + ": " : ", ") +
               DescribeViolation(t, listed == 0);
    ++listed;
  }
  return finding;
}

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
