// The equivalence family (checks.h): upper confidence bounds on the TV and chi-square divergence to the reference,
// and with --equivalence EPS the certificate TV < EPS.
#include <algorithm>
#include <cmath>
#include <stdexcept>

#include "check_family.h"
#include "samplecheck/core/format.h"
#include "samplecheck/stats/equivalence.h"
#include "samplecheck/suites/json_text.h"

namespace samplecheck::harness {

using nlohmann::json;

namespace {

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
      CheckOutcome o = MakeOutcome("equivalence", v.worst_binning, "equivalence TV < " + FormatSignificant(v.eps, 3),
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
                   FormatSignificant(chi2_upper, 3) + (chi2_ok ? " < " : " >= ") + FormatSignificant(chi2_eps, 3);
      v.certified = v.certified && chi2_ok;
    }
    return v;
  }
};

}  // namespace

CheckList EquivalenceChecks() {
  CheckList v;
  v.push_back(std::make_unique<EquivalenceCheck>());
  return v;
}

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
      out.bound = InvalidArgument(j["error"].get<std::string>());
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

}  // namespace samplecheck::harness
