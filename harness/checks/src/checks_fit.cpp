// The goodness-of-fit family (checks.h): Pearson X^2 (both tails) on the head, tail and hash binnings, G beside it.
#include <algorithm>
#include <cmath>
#include <optional>
#include <stdexcept>

#include "check_family.h"
#include "samplecheck/core/format.h"
#include "samplecheck/stats/chi_square.h"
#include "samplecheck/stats/exact_tests.h"
#include "samplecheck/stats/goodness_of_fit.h"
#include "samplecheck/stats/power.h"
#include "samplecheck/suites/json_text.h"

namespace samplecheck::harness {

using nlohmann::json;

namespace {

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
    // Two cells: the exact lower tail (the chi-square one misses the lattice's atom at a perfect fit).
    const uint64_t n = observed.size() == 2 ? observed[0] + observed[1] : 0;
    const Result<double> lower = !pearson.ok() || pearson->dof == 0 ? Result<double>(InvalidArgument("no test"))
                                 : n > 0 ? stats::ExactTwoCellFitLowerTail(observed[0], n, expected[0])
                                         : stats::ChiSquareLowerTailPValue(pearson->statistic, pearson->dof);
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
        const uint64_t sum = StoredCells(b, c, observed);
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
          throw std::runtime_error("the expected cell probabilities sum to " + FormatSignificant(double(mass), 4) +
                                   ", not 1");
        }
        if (total && *total != sum) {
          throw std::runtime_error("the observed counts sum to " + std::to_string(sum) + ", another binning's to " +
                                   std::to_string(*total) + " (every binning holds the same draws)");
        }
        total = sum;
        SameAsRecomputed(b, BinningFields(name, observed, expected));
      }
    } catch (const std::exception& e) {
      return Error{ErrorCode::kParse, where + ": " + JsonErrorText(e)};
    }
    return Status::Ok();
  }

  // A binning's stored observed counts (whole numbers >= 0 summing to at most the case's draws) and their sum.
  static uint64_t StoredCells(const json& b, const CaseResult& c, std::vector<uint64_t>& observed) {
    uint64_t sum = 0;
    for (const json& o : b.at("observed")) {
      observed.push_back(StoredCount(o, "an observed count"));
      if (__builtin_add_overflow(sum, observed.back(), &sum)) {
        throw std::runtime_error("the observed counts sum to more than 2^64 - 1");
      }
    }
    if (sum > c.draws) {
      throw std::runtime_error("the observed counts sum to " + std::to_string(sum) + ", more than the case's " +
                               std::to_string(c.draws) + " draws");
    }
    return sum;
  }

  // Throws naming the first stored field of binning `b` that is not what its cells give (`again`).
  static void SameAsRecomputed(const json& b, const json& again) {
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
        throw std::runtime_error(std::string(key) + " is " + FormatSignificant(stored, 4) + " but its observed and " +
                                 "expected cells give " + FormatSignificant(recomputed, 4));
      }
    }
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
        o.finding = "X2 = " + FormatSignificant(x2, 4) + " (dof " + std::to_string(dof) + ")";
        if (!std::isnan(lower) && lower < p) {
          o.finding += ", below its dof: a fit too good to be random?";
        } else {
          o.finding += WorstCells(b);
        }
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

  // ", worst: token 5 120 drawn vs 80.1 expected, ..." : the cells of the largest standardized residuals
  // (O - E) / sqrt(E) (the cells that make X2), at most kWorstCells, by token where a cell is one token.
  static std::string WorstCells(const json& b) {
    constexpr size_t kWorstCells = 3;
    const json& observed = b.at("observed");
    const json& expected = b.at("expected");
    uint64_t n = 0;
    for (const json& o : observed) n += o.get<uint64_t>();
    struct Cell {
      size_t index;
      uint64_t observed;
      double expected, z;
    };
    std::vector<Cell> cells;
    for (size_t i = 0; i < observed.size() && i < expected.size(); ++i) {
      const double e = double(n) * ReadJsonNumber(expected[i]);
      const uint64_t o = observed[i].get<uint64_t>();
      if (e > 0) cells.push_back({i, o, e, (double(o) - e) / std::sqrt(e)});
    }
    const size_t keep = std::min(cells.size(), kWorstCells);
    std::partial_sort(cells.begin(), cells.begin() + keep, cells.end(),
                      [](const Cell& x, const Cell& y) { return std::fabs(x.z) > std::fabs(y.z); });
    std::string s;
    for (size_t k = 0; k < keep; ++k) {
      const Cell& cell = cells[k];
      const bool token = b.contains("cell_token") && cell.index < b["cell_token"].size() &&
                         b["cell_token"][cell.index].get<int32_t>() >= 0;
      s += (k == 0 ? ", worst: " : ", ") +
           (token ? "token " + std::to_string(b["cell_token"][cell.index].get<int32_t>())
                  : "cell " + std::to_string(cell.index)) +
           " " + std::to_string(cell.observed) + " drawn vs " + FormatSignificant(cell.expected, 4) + " expected";
    }
    return s;
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
};

}  // namespace

CheckList FitChecks() {
  CheckList v;
  v.push_back(std::make_unique<PearsonCheck>());
  return v;
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

}  // namespace samplecheck::harness
