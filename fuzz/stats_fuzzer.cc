// stats_fuzzer: the statistics of stats/ on random count and expected-probability vectors (zeros, NaN, +-inf,
// negative, subnormal, huge weights; counts up to 2^64 - 1) and random test parameters.
//
// Invariants (docs/fuzzing.md):
//   no crash   every function returns a value or an error (Result / Status) whose message names the input; nothing
//              throws or aborts.
//   p-values   every p-value of a valid result is in [0, 1] (never NaN); statistics finite and >= 0.
//   binning    PlanBinnings: each binning partitions the support {p0 > 0}: cell_of_token names a cell for every
//              support token and kForbiddenCell exactly for p0 == 0; token counts and TokensInCell agree; the
//              cell masses are positive and sum to 1; usable binnings have N * p(cell) >= min_expected;
//              tokens_by_rank is the support by p0 descending, ties by id; BinCounts puts every count of a
//              forbidden token in `forbidden` (exact) and every other count in its cell.
//   planner    power grows with the draws; a smaller TV needs more draws; PowerOfRun at the planned draws gives
//              the planned power; critical values grow as alpha shrinks and ChiSquarePValue inverts them.
//   intervals  Clopper-Pearson contains k / n and lies in [0, 1]; Holm rejects a subset of the p-values <= alpha.
//   time       V <= 2048, exact multinomial enumeration capped at 2e5 outcomes, Monte Carlo at 64 replicates.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <numeric>
#include <string>
#include <vector>

#include <fuzzer/FuzzedDataProvider.h>

#include "fuzz_check.h"
#include "samplecheck/stats/binning.h"
#include "samplecheck/stats/chi_square.h"
#include "samplecheck/stats/exact_tests.h"
#include "samplecheck/stats/goodness_of_fit.h"
#include "samplecheck/stats/multiple_testing.h"
#include "samplecheck/stats/power.h"
#include "samplecheck/stats/support.h"
#include "samplecheck/stats/token_check.h"
#include "samplecheck/stats/two_sample.h"

namespace samplecheck::fuzz {
namespace {

using namespace samplecheck::stats;

constexpr size_t kMaxCells = 2048;

bool IsProbability(double p) { return p >= 0.0 && p <= 1.0; }  // false for NaN

// True for a value; false for an error, which must say what was wrong (a message naming the input).
template <typename T>
bool Valid(const Result<T>& r, const char* name) {
  if (r.ok()) return true;
  FUZZ_CHECK(!r.error().message.empty(), "%s: an error without a message", name);
  return false;
}

double DecodeWeight(FuzzedDataProvider& in) {
  switch (in.ConsumeIntegralInRange<int>(0, 15)) {
    case 0:
    case 1: return 0.0;
    case 2: return std::numeric_limits<double>::quiet_NaN();
    case 3: return std::numeric_limits<double>::infinity();
    case 4: return -in.ConsumeProbability<double>();
    case 5: return std::numeric_limits<double>::denorm_min() * in.ConsumeIntegralInRange<int>(1, 1000);
    case 6: return std::numeric_limits<double>::max() / in.ConsumeIntegralInRange<int>(1, 1000);
    case 7: return std::ldexp(1.0, -in.ConsumeIntegralInRange<int>(0, 60));
    case 8: return 1.0;
    default: return in.ConsumeProbability<double>();
  }
}

uint64_t DecodeCount(FuzzedDataProvider& in) {
  switch (in.ConsumeIntegralInRange<int>(0, 7)) {
    case 0: return 0;
    case 1: return std::numeric_limits<uint64_t>::max() - in.ConsumeIntegralInRange<uint64_t>(0, 3);
    case 2: return in.ConsumeIntegral<uint64_t>();
    case 3: return in.ConsumeIntegralInRange<uint64_t>(0, 1u << 20);
    default: return in.ConsumeIntegralInRange<uint64_t>(0, 200);
  }
}

double DecodeAlpha(FuzzedDataProvider& in) {
  switch (in.ConsumeIntegralInRange<int>(0, 9)) {
    case 0: return 0.0;
    case 1: return 1.0;
    case 2: return std::numeric_limits<double>::quiet_NaN();
    case 3: return std::numeric_limits<double>::denorm_min();
    case 4: return std::pow(10.0, -in.ConsumeIntegralInRange<int>(1, 300));
    case 5: return std::nextafter(1.0, 0.0);
    default: return in.ConsumeFloatingPointInRange<double>(1e-12, 0.5);
  }
}

double DecodeDraws(FuzzedDataProvider& in) {
  switch (in.ConsumeIntegralInRange<int>(0, 7)) {
    case 0: return 0.0;
    case 1: return -1.0;
    case 2: return std::numeric_limits<double>::infinity();
    case 3: return std::numeric_limits<double>::quiet_NaN();
    case 4: return std::ldexp(1.0, in.ConsumeIntegralInRange<int>(0, 60));
    default: return in.ConsumeFloatingPointInRange<double>(1.0, 1e9);
  }
}

void CheckGoodnessOfFit(const Result<GoodnessOfFit>& result, const char* name) {
  if (!Valid(result, name)) return;
  const GoodnessOfFit& g = *result;
  FUZZ_CHECK(IsProbability(g.p_value), "%s: p-value %.17g", name, g.p_value);
  FUZZ_CHECK(std::isfinite(g.statistic) && g.statistic >= 0.0, "%s: statistic %.17g", name, g.statistic);
  FUZZ_CHECK(!std::isnan(g.min_expected), "%s: min_expected NaN", name);
}

void CheckBinning(const BinningPlan& plan, const Binning& b, std::span<const double> p0) {
  const std::string name = "binning " + b.name;
  FUZZ_CHECK(b.cell_of_token.size() == p0.size(), "%s: cell_of_token size %zu for V %zu", name.c_str(),
             b.cell_of_token.size(), p0.size());
  std::vector<uint32_t> tokens_per_cell(b.cells.size(), 0);
  for (size_t t = 0; t < p0.size(); ++t) {
    const int32_t c = b.cell_of_token[t];
    if (p0[t] == 0.0) {
      FUZZ_CHECK(c == kForbiddenCell, "%s: token %zu with p0 = 0 is in cell %d", name.c_str(), t, c);
    } else {
      FUZZ_CHECK(c >= 0 && static_cast<size_t>(c) < b.cells.size(), "%s: token %zu (p0 %.17g) in cell %d of %zu",
                 name.c_str(), t, p0[t], c, b.cells.size());
      ++tokens_per_cell[static_cast<size_t>(c)];
    }
  }
  long double mass = 0;
  for (size_t c = 0; c < b.cells.size(); ++c) {
    const Cell& cell = b.cells[c];
    FUZZ_CHECK(cell.token_count == tokens_per_cell[c], "%s: cell %zu says %u tokens, has %u", name.c_str(), c,
               cell.token_count, tokens_per_cell[c]);
    FUZZ_CHECK(std::isfinite(cell.probability) && cell.probability > 0.0 && cell.probability <= 1.0 + 1e-12,
               "%s: cell %zu probability %.17g", name.c_str(), c, cell.probability);
    if (b.usable()) {
      FUZZ_CHECK(plan.planned_draws * cell.probability >= BinningOptions{}.min_expected * (1 - 1e-9),
                 "%s: cell %zu expects %.17g draws (< 10)", name.c_str(), c, plan.planned_draws * cell.probability);
    }
    if (c < 4 || c + 1 == b.cells.size()) {  // TokensInCell is O(V): a few cells
      const std::vector<uint32_t> tokens = TokensInCell(b, c);
      FUZZ_CHECK(tokens.size() == cell.token_count && std::is_sorted(tokens.begin(), tokens.end()),
                 "%s: TokensInCell(%zu) gave %zu tokens", name.c_str(), c, tokens.size());
      for (uint32_t t : tokens) {
        FUZZ_CHECK(t < p0.size() && b.cell_of_token[t] == static_cast<int32_t>(c), "%s: TokensInCell(%zu) has %u",
                   name.c_str(), c, t);
      }
    }
    mass += cell.probability;
  }
  if (!b.cells.empty()) FUZZ_CHECK(std::fabs(mass - 1.0L) <= 1e-9L, "%s: cell masses sum to %.17Lg", name.c_str(), mass);
  const std::vector<double> probs = CellProbabilities(b);
  FUZZ_CHECK(probs.size() == b.cells.size(), "%s: CellProbabilities size", name.c_str());
}

void FuzzBinning(FuzzedDataProvider& in) {
  const size_t v = in.ConsumeIntegralInRange<size_t>(0, kMaxCells);
  std::vector<double> p0(v);
  const int mode = in.ConsumeIntegralInRange<int>(0, 2);
  for (size_t t = 0; t < v; ++t) {
    p0[t] = mode == 0 ? DecodeWeight(in) : mode == 1 ? std::ldexp(1.0, -static_cast<int>(t % 40)) * (t % 3 == 0 ? 0 : 1)
                                                     : 1.0 / static_cast<double>(t + 1);
  }
  if (mode != 0 && v > 0 && in.ConsumeBool()) p0[in.ConsumeIntegralInRange<size_t>(0, v - 1)] = DecodeWeight(in);
  const double n = DecodeDraws(in);
  BinningOptions options;
  if (in.ConsumeBool()) {
    options.max_head_cells = in.ConsumeIntegralInRange<uint32_t>(0, 64);
    options.max_tail_cells = in.ConsumeIntegralInRange<uint32_t>(0, 64);
    options.hash_buckets = in.ConsumeIntegralInRange<uint32_t>(0, 128);
    options.hash_seed = in.ConsumeIntegral<uint64_t>();
  }
  const Result<BinningPlan> planned = PlanBinnings(p0, n, options);
  bool valid_input = std::isfinite(n) && n > 0;
  double sum = 0;
  for (double p : p0) {
    if (!(std::isfinite(p) && p >= 0)) valid_input = false;
    sum += p;
  }
  if (!(sum > 0) || !std::isfinite(sum)) valid_input = false;
  if (!Valid(planned, "PlanBinnings")) {
    FUZZ_CHECK(!valid_input || options.max_head_cells == 0 || options.max_tail_cells == 0 || options.hash_buckets == 0,
               "PlanBinnings rejected valid input (V %zu, N %.17g, sum %.17g): %s", v, n, sum,
               planned.error().message.c_str());
    return;
  }
  const BinningPlan& plan = *planned;
  FUZZ_CHECK(valid_input, "PlanBinnings accepted invalid input (V %zu, N %.17g, sum %.17g)", v, n, sum);
  // Support order and forbidden tokens.
  size_t support = 0;
  std::vector<uint32_t> forbidden;
  for (size_t t = 0; t < v; ++t) {
    if (p0[t] > 0) ++support; else forbidden.push_back(static_cast<uint32_t>(t));
  }
  FUZZ_CHECK(plan.forbidden_tokens == forbidden, "forbidden_tokens differ (%zu vs %zu)", plan.forbidden_tokens.size(),
             forbidden.size());
  FUZZ_CHECK(plan.tokens_by_rank.size() == support && plan.head_tokens <= support, "tokens_by_rank %zu, support %zu",
             plan.tokens_by_rank.size(), support);
  for (size_t r = 1; r < plan.tokens_by_rank.size(); ++r) {
    const uint32_t a = plan.tokens_by_rank[r - 1], b = plan.tokens_by_rank[r];
    FUZZ_CHECK(p0[a] > p0[b] || (p0[a] == p0[b] && a < b), "tokens_by_rank out of order at rank %zu (%u, %u)", r, a, b);
  }
  for (const Binning* b : {&plan.head, &plan.tail, &plan.hash}) CheckBinning(plan, *b, p0);
  for (const Binning* b : plan.UsableBinnings()) FUZZ_CHECK(b->usable(), "UsableBinnings returned an unusable one");

  // Counts through the binning.
  std::vector<uint64_t> counts(v);
  for (auto& c : counts) c = in.ConsumeIntegralInRange<uint64_t>(0, 1000);
  uint64_t forbidden_draws = 0;
  for (uint32_t t : forbidden) forbidden_draws += counts[t];
  for (const Binning* b : {&plan.head, &plan.tail, &plan.hash}) {
    const Result<BinnedCounts> binned_result = BinCounts(*b, counts);
    FUZZ_CHECK(binned_result.ok(), "BinCounts(%s) failed: %s", b->name.c_str(),
               binned_result.error().message.c_str());
    const BinnedCounts& binned = *binned_result;
    FUZZ_CHECK(binned.forbidden == forbidden_draws, "BinCounts(%s): forbidden %llu, expected %llu", b->name.c_str(),
               static_cast<unsigned long long>(binned.forbidden), static_cast<unsigned long long>(forbidden_draws));
    std::vector<uint64_t> expected(b->cells.size(), 0);
    for (size_t t = 0; t < v; ++t) {
      if (b->cell_of_token[t] >= 0) expected[static_cast<size_t>(b->cell_of_token[t])] += counts[t];
    }
    FUZZ_CHECK(binned.observed == expected, "BinCounts(%s): cell counts differ", b->name.c_str());
    FUZZ_CHECK(binned.in_support == std::accumulate(expected.begin(), expected.end(), uint64_t{0}),
               "BinCounts(%s): in_support", b->name.c_str());
    if (b->usable()) {
      CheckGoodnessOfFit(PearsonChiSquareTest(binned.observed, CellProbabilities(*b)), "binned Pearson");
      CheckGoodnessOfFit(GTest(binned.observed, CellProbabilities(*b)), "binned G");
    }
  }
  const double alpha = DecodeAlpha(in);
  const Result<TokenCheck> checked = CheckTokenCounts(plan, counts, alpha);
  if (Valid(checked, "CheckTokenCounts")) {
    const TokenCheck& check = *checked;
    FUZZ_CHECK(check.support_violations == forbidden_draws, "CheckTokenCounts: %llu violations, expected %llu",
               static_cast<unsigned long long>(check.support_violations),
               static_cast<unsigned long long>(forbidden_draws));
    for (double p : check.p_values) FUZZ_CHECK(IsProbability(p), "CheckTokenCounts: p-value %.17g", p);
    if (forbidden_draws > 0) FUZZ_CHECK(!check.passed, "CheckTokenCounts passed with support violations");
  }
}

void FuzzGoodnessOfFit(FuzzedDataProvider& in) {
  const size_t k = in.ConsumeIntegralInRange<size_t>(0, 64);
  std::vector<uint64_t> observed(k);
  std::vector<double> probabilities(in.ConsumeBool() ? k : in.ConsumeIntegralInRange<size_t>(0, 64));
  for (auto& o : observed) o = DecodeCount(in);
  for (auto& p : probabilities) p = DecodeWeight(in);
  CheckGoodnessOfFit(PearsonChiSquareTest(observed, probabilities), "Pearson");
  CheckGoodnessOfFit(GTest(observed, probabilities), "G");
  const Result<GoodnessOfFit> pearson_result = PearsonChiSquareTest(observed, probabilities);
  if (Valid(pearson_result, "Pearson")) {
    const GoodnessOfFit& pearson = *pearson_result;
    uint64_t zero_cell_draws = 0;
    bool overflow = false;
    for (size_t i = 0; i < k; ++i) {
      if (probabilities[i] == 0.0) overflow |= __builtin_add_overflow(zero_cell_draws, observed[i], &zero_cell_draws);
    }
    if (!overflow) {
      FUZZ_CHECK(pearson.support_violations == zero_cell_draws, "Pearson: %llu support violations, expected %llu",
                 static_cast<unsigned long long>(pearson.support_violations),
                 static_cast<unsigned long long>(zero_cell_draws));
    }
  }
  const std::vector<double> residuals = StandardizedResiduals(observed, probabilities);
  for (double r : residuals) FUZZ_CHECK(!std::isnan(r), "StandardizedResiduals: NaN");
  std::vector<size_t> cells;
  for (size_t i = 0; i < k; ++i) {
    if (in.ConsumeBool()) cells.push_back(in.ConsumeBool() ? i : in.ConsumeIntegralInRange<size_t>(0, 2 * k + 1));
  }
  const Result<MaxAbsZ> z = MaxAbsZTest(observed, probabilities, cells, DecodeAlpha(in));
  if (Valid(z, "MaxAbsZ")) {
    FUZZ_CHECK(IsProbability(z->p_value), "MaxAbsZ: p-value %.17g", z->p_value);
    FUZZ_CHECK(!std::isnan(z->max_abs_z) && z->max_abs_z >= 0, "MaxAbsZ: max |z| %.17g", z->max_abs_z);
  }
  const Result<SupportCheck> support = CheckSupport(probabilities, observed, in.ConsumeIntegralInRange<size_t>(0, 20));
  if (Valid(support, "CheckSupport")) {
    FUZZ_CHECK(support->violating_tokens.size() <= support->violating_token_count, "CheckSupport: listed > count");
    FUZZ_CHECK(std::is_sorted(support->violating_tokens.begin(), support->violating_tokens.end()),
               "CheckSupport: listed tokens not ascending");
  }
  // Two-sample over the same cells.
  std::vector<uint64_t> other(k);
  for (auto& o : other) o = DecodeCount(in);
  const Result<TwoSample> two = TwoSampleChiSquareTest(observed, other);
  if (Valid(two, "TwoSample")) FUZZ_CHECK(IsProbability(two->p_value), "TwoSample: p-value %.17g", two->p_value);
}

void FuzzExact(FuzzedDataProvider& in) {
  const size_t k = in.ConsumeIntegralInRange<size_t>(0, 8);
  std::vector<uint64_t> observed(k);
  std::vector<double> probabilities(k);
  for (auto& o : observed) o = in.ConsumeIntegralInRange<uint64_t>(0, in.ConsumeBool() ? 12 : 100000);
  for (auto& p : probabilities) p = DecodeWeight(in);
  const Result<ExactPValue> exact = ExactMultinomialTest(observed, probabilities, 200000);
  if (Valid(exact, "ExactMultinomial")) {
    FUZZ_CHECK(IsProbability(exact->p_value), "ExactMultinomial: p-value %.17g", exact->p_value);
  }
  const Result<ExactPValue> mc =
      MonteCarloPearsonTest(observed, probabilities, in.ConsumeIntegralInRange<uint64_t>(0, 64), in.ConsumeIntegral<uint64_t>());
  if (Valid(mc, "MonteCarlo")) {
    FUZZ_CHECK(IsProbability(mc->p_value) && mc->p_value > 0, "MonteCarlo: p-value %.17g", mc->p_value);
  }

  const uint64_t n = in.ConsumeBool() ? in.ConsumeIntegralInRange<uint64_t>(0, 2000) : in.ConsumeIntegral<uint64_t>();
  const uint64_t kk = in.ConsumeBool() ? in.ConsumeIntegralInRange<uint64_t>(0, n) : in.ConsumeIntegral<uint64_t>();
  const double p = DecodeWeight(in);
  if (n <= 100000) {
    const Result<double> binomial = ExactBinomialPValue(kk, n, p);
    if (Valid(binomial, "ExactBinomial")) {
      FUZZ_CHECK(IsProbability(*binomial), "ExactBinomial(%llu, %llu, %.17g) = %.17g",
                 static_cast<unsigned long long>(kk), static_cast<unsigned long long>(n), p, *binomial);
    }
  }
  const double confidence = DecodeWeight(in);
  const Result<Interval> ci = ClopperPearsonInterval(kk, n, confidence);
  if (Valid(ci, "ClopperPearson")) {
    FUZZ_CHECK(kk <= n && n >= 1, "ClopperPearson accepted k %llu n %llu", static_cast<unsigned long long>(kk),
               static_cast<unsigned long long>(n));
    const double phat = static_cast<double>(kk) / static_cast<double>(n);
    FUZZ_CHECK(0.0 <= ci->lower && ci->lower <= phat * (1 + 1e-12) + 1e-300 &&
                   phat * (1 - 1e-12) <= ci->upper && ci->upper <= 1.0,
               "ClopperPearson(%llu, %llu, %.17g) = [%.17g, %.17g]", static_cast<unsigned long long>(kk),
               static_cast<unsigned long long>(n), confidence, ci->lower, ci->upper);
  }
}

void FuzzPlanner(FuzzedDataProvider& in) {
  const double alpha = DecodeAlpha(in);
  const double power = DecodeWeight(in);
  const uint64_t cells = in.ConsumeBool() ? in.ConsumeIntegralInRange<uint64_t>(0, 5000) : in.ConsumeIntegral<uint64_t>();
  const double tv1 = DecodeWeight(in);
  const double tv2 = tv1 * in.ConsumeProbability<double>();  // smaller (or equal)
  const Result<DrawPlan> plan1 = PlanDrawsForTotalVariation(tv1, alpha, power, cells);
  const Result<DrawPlan> plan2 = PlanDrawsForTotalVariation(tv2, alpha, power, cells);
  const bool plan2_valid = Valid(plan2, "plan");
  if (Valid(plan1, "plan")) {
    FUZZ_CHECK(plan1->draws > 0 && !std::isnan(plan1->draws), "plan: draws %.17g", plan1->draws);
    FUZZ_CHECK(std::isfinite(plan1->critical_value) && plan1->critical_value > 0, "plan: critical value %.17g",
               plan1->critical_value);
    if (plan2_valid) {
      FUZZ_CHECK(plan2->draws >= plan1->draws * (1 - 1e-9), "smaller TV %.17g needs fewer draws (%.17g) than TV %.17g (%.17g)",
                 tv2, plan2->draws, tv1, plan1->draws);
    }
    if (std::isfinite(plan1->draws) && plan1->draws < 1e15) {
      const Result<double> at_plan = PowerOfRunForTotalVariation(tv1, alpha, cells, plan1->draws);
      if (Valid(at_plan, "PowerOfRunForTotalVariation")) {
        FUZZ_CHECK(std::fabs(*at_plan - power) <= 1e-3 + 1e-3 * (1 - power),
                   "power at the planned %.17g draws is %.17g, planned %.17g (tv %.17g alpha %.17g K %llu)", plan1->draws,
                   *at_plan, power, tv1, alpha, static_cast<unsigned long long>(cells));
      }
    }
  }
  const double divergence = WorstCaseDivergenceForTotalVariation(tv1);
  const double n1 = DecodeDraws(in);
  const double n2 = n1 * (1.0 + in.ConsumeProbability<double>() * 10);  // more draws
  const Result<double> p1 = PowerOfRun(divergence, alpha, cells, n1);
  const Result<double> p2 = PowerOfRun(divergence, alpha, cells, n2);
  const bool p1_valid = Valid(p1, "PowerOfRun");
  const bool p2_valid = Valid(p2, "PowerOfRun");
  if (p1_valid) FUZZ_CHECK(IsProbability(*p1), "PowerOfRun = %.17g", *p1);
  if (p1_valid && p2_valid) {
    FUZZ_CHECK(*p2 >= *p1 - 1e-9, "more draws (%.17g) give less power (%.17g) than %.17g draws (%.17g)", n2,
               *p2, n1, *p1);
  }
  // Critical values and p-values of the chi-square distribution.
  const uint64_t dof = in.ConsumeBool() ? in.ConsumeIntegralInRange<uint64_t>(0, 100000) : in.ConsumeIntegral<uint64_t>();
  const double a2 = alpha * in.ConsumeProbability<double>();
  const Result<double> c1 = ChiSquareCriticalValue(dof, alpha);
  const Result<double> c2 = ChiSquareCriticalValue(dof, a2);
  const bool c2_valid = Valid(c2, "ChiSquareCriticalValue");
  if (Valid(c1, "ChiSquareCriticalValue")) {
    FUZZ_CHECK(std::isfinite(*c1) && *c1 >= 0, "critical value %.17g", *c1);
    if (c2_valid) FUZZ_CHECK(*c2 >= *c1 * (1 - 1e-12), "smaller alpha gives a smaller critical value");
    const Result<double> back = ChiSquarePValue(*c1, dof);
    // 1e-6 relative in the range the harness uses (alpha >= 1e-100, dof <= 2^32); Boost's tail evaluations keep
    // about 5 digits beyond it (found: 6e-6 at alpha 1e-263, dof 8e9), so 1e-4 there.
    const double tolerance = alpha >= 1e-100 && dof <= (uint64_t{1} << 32) ? 1e-6 : 1e-4;
    if (Valid(back, "ChiSquarePValue") && alpha > 1e-290) {
      FUZZ_CHECK(std::fabs(*back - alpha) <= tolerance * alpha, "ChiSquarePValue(crit(%llu, %.17g)) = %.17g",
                 static_cast<unsigned long long>(dof), alpha, *back);
    }
  }
  const double x = DecodeWeight(in) * std::ldexp(1.0, in.ConsumeIntegralInRange<int>(0, 40));
  const Result<double> pv = ChiSquarePValue(x, dof);
  if (Valid(pv, "ChiSquarePValue")) {
    FUZZ_CHECK(IsProbability(*pv), "ChiSquarePValue(%.17g, %llu) = %.17g", x, static_cast<unsigned long long>(dof), *pv);
  }
  const double z = (in.ConsumeBool() ? -1 : 1) * DecodeWeight(in) * 40;
  FUZZ_CHECK(IsProbability(NormalTwoSidedPValue(z)) || std::isnan(z), "NormalTwoSidedPValue(%.17g)", z);
  const Result<double> threshold = BonferroniTwoSidedZThreshold(alpha, cells);
  if (Valid(threshold, "BonferroniTwoSidedZThreshold")) {
    FUZZ_CHECK(!std::isnan(*threshold) && *threshold > 0, "Bonferroni z %.17g", *threshold);
  }
  // Leak bounds.
  const Result<double> leak = LeakRateUpperBound(static_cast<uint64_t>(std::min(n1, 1e18) > 0 ? std::min(n1, 1e18) : 0), alpha);
  if (Valid(leak, "LeakRateUpperBound")) FUZZ_CHECK(IsProbability(*leak), "LeakRateUpperBound = %.17g", *leak);
  const Result<double> detect = DrawsToDetectLeak(tv1, power);
  if (Valid(detect, "DrawsToDetectLeak")) {
    FUZZ_CHECK(*detect >= 0 && !std::isnan(*detect), "DrawsToDetectLeak = %.17g", *detect);
  }
  // Divergences of two random vectors.
  const size_t k = in.ConsumeIntegralInRange<size_t>(0, 32);
  std::vector<double> q0(k), q1(k);
  for (size_t i = 0; i < k; ++i) {
    q0[i] = DecodeWeight(in);
    q1[i] = DecodeWeight(in);
  }
  const Result<double> chi2 = ChiSquareDivergence(q0, q1);
  if (Valid(chi2, "ChiSquareDivergence")) {
    FUZZ_CHECK(*chi2 >= 0 && !std::isnan(*chi2), "ChiSquareDivergence = %.17g", *chi2);
  }
  const Result<double> tv = TotalVariation(q0, q1);
  if (Valid(tv, "TotalVariation")) FUZZ_CHECK(*tv >= 0 && *tv <= 1 + 1e-12, "TotalVariation = %.17g", *tv);
}

void FuzzMultipleTesting(FuzzedDataProvider& in) {
  const size_t m = in.ConsumeIntegralInRange<size_t>(0, 256);
  std::vector<double> p(m);
  for (auto& x : p) x = in.ConsumeBool() ? in.ConsumeProbability<double>() : DecodeWeight(in);
  const double alpha = DecodeAlpha(in);
  for (const Result<MultipleTestingDecision>& decision : {HolmBonferroni(p, alpha), BenjaminiHochberg(p, alpha)}) {
    if (!Valid(decision, "multiple testing")) continue;
    const MultipleTestingDecision& d = *decision;
    FUZZ_CHECK(d.rejected.size() == m && d.adjusted_p_values.size() == m, "multiple testing sizes");
    size_t rejections = 0;
    for (size_t i = 0; i < m; ++i) {
      FUZZ_CHECK(IsProbability(d.adjusted_p_values[i]) && d.adjusted_p_values[i] >= p[i] * (1 - 1e-12),
                 "adjusted p %.17g for p %.17g", d.adjusted_p_values[i], p[i]);
      FUZZ_CHECK(d.rejected[i] == (d.adjusted_p_values[i] <= alpha), "rejected[%zu] disagrees with its adjusted p", i);
      rejections += d.rejected[i] ? 1 : 0;
    }
    FUZZ_CHECK(rejections == d.rejections, "rejection count");
  }
  const Result<UniformityTest> ks = KolmogorovSmirnovUniformity(p);
  if (Valid(ks, "KolmogorovSmirnovUniformity")) FUZZ_CHECK(IsProbability(ks->p_value), "KS p-value %.17g", ks->p_value);
}

}  // namespace
}  // namespace samplecheck::fuzz

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace samplecheck::fuzz;
  FuzzedDataProvider in(data, size);
  switch (in.ConsumeIntegralInRange<int>(0, 4)) {
    case 0: FuzzBinning(in); break;
    case 1: FuzzGoodnessOfFit(in); break;
    case 2: FuzzExact(in); break;
    case 3: FuzzPlanner(in); break;
    default: FuzzMultipleTesting(in); break;
  }
  return 0;
}
