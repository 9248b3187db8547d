#include "samplecheck/properties/generators.h"
#include "samplecheck/core/splitmix.h"

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <limits>
#include <numeric>
#include <string>
#include <utility>
#include <vector>

#include "samplecheck/reference/params.h"

namespace samplecheck::properties::gen {
namespace {

constexpr float kInf = std::numeric_limits<float>::infinity();
constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();
constexpr int kNegInfCode = std::numeric_limits<int>::min();  // a -inf logit in a run of codes

float Dyadic(int code) { return code == kNegInfCode ? -kInf : static_cast<float>(code) / 16.0f; }

// Fisher-Yates with splitmix64; seed 0 is the identity (what shrinking ends in).
void Shuffle(std::vector<float>& values, uint32_t seed) {
  if (seed == 0) return;
  uint64_t state = seed;
  for (size_t i = values.size(); i > 1; --i) std::swap(values[i - 1], values[SplitMix64Next(state) % i]);
}

rc::Gen<int> Code() { return rc::gen::inRange(-1024, 1025); }
rc::Gen<uint32_t> PermutationSeed() {
  return rc::gen::weightedOneOf<uint32_t>({{1, rc::gen::just<uint32_t>(0)}, {3, rc::gen::arbitrary<uint32_t>()}});
}

// Weights exp((x - max) / T) of the alive tokens in descending logit order (ties by ascending id), long double.
struct Ranked {
  std::vector<int32_t> order;
  std::vector<long double> weight;  // by position in `order`
  long double total = 0;
};
Ranked Rank(const std::vector<float>& logits, double temperature) {
  Ranked ranked;
  float max_logit = -kInf;
  for (float x : logits) max_logit = std::max(max_logit, x);
  for (size_t i = 0; i < logits.size(); ++i) {
    if (logits[i] > -kInf) ranked.order.push_back(static_cast<int32_t>(i));
  }
  std::stable_sort(ranked.order.begin(), ranked.order.end(),
                   [&](int32_t a, int32_t b) { return logits[a] > logits[b]; });
  for (int32_t token : ranked.order) {
    const long double w = std::exp((static_cast<long double>(logits[token]) - max_logit) / temperature);
    ranked.weight.push_back(w);
    ranked.total += w;
  }
  return ranked;
}

double NudgeUlps(long double value, int ulps) {
  if (ulps == 0) return static_cast<double>(value);
  float f = static_cast<float>(value);
  for (int i = 0; i < std::abs(ulps); ++i) f = std::nextafter(f, ulps > 0 ? kInf : -kInf);
  return f;
}

Params OnlyTemperature(double temperature) {
  Params params;
  params.temperature = temperature;
  return params;
}

// A row of `above` tokens strictly above a tie group of `tied` equal logits, and `below` tokens strictly below.
std::vector<float> GroupRow(const std::vector<int>& above, int tie_code, int tied, const std::vector<int>& below) {
  std::vector<float> logits;
  for (int a : above) logits.push_back(Dyadic(tie_code + 1 + a));
  for (int t = 0; t < tied; ++t) logits.push_back(Dyadic(tie_code));
  for (int b : below) logits.push_back(Dyadic(tie_code - 1 - b));
  return logits;
}

rc::Gen<std::vector<int>> Offsets(int max_count, int max_offset) {
  return rc::gen::mapcat(rc::gen::inRange(0, max_count + 1), [max_offset](int n) {
    return rc::gen::container<std::vector<int>>(static_cast<size_t>(n), rc::gen::inRange(0, max_offset + 1));
  });
}

struct GroupLayout {
  std::vector<int> above;
  int tie_code = 0;
  int tied = 2;
  std::vector<int> below;
  uint32_t permutation = 0;
};
// Offsets in 1/16 logit steps: up to max_offset / 16 logits between neighbours of the layout.
rc::Gen<GroupLayout> Layout(int max_above, int max_tied, int max_below, int max_offset = 256) {
  return rc::gen::apply(
      [](std::vector<int> above, int tie_code, int tied, std::vector<int> below, uint32_t permutation) {
        return GroupLayout{std::move(above), tie_code, tied, std::move(below), permutation};
      },
      Offsets(max_above, max_offset), rc::gen::inRange(-256, 257), rc::gen::inRange(2, max_tied + 1),
      Offsets(max_below, max_offset),
      PermutationSeed());
}

}  // namespace

// ---- rows ----

rc::Gen<Row> DyadicRow() {
  return rc::gen::map(rc::gen::nonEmpty(rc::gen::container<std::vector<int>>(Code())), [](const std::vector<int>& codes) {
    Row row{"dyadic", {}};
    for (int c : codes) row.logits.push_back(Dyadic(c));
    return row;
  });
}

rc::Gen<Row> NegInfRunsRow() {
  auto segment = rc::gen::pair(rc::gen::weightedOneOf<int>({{3, Code()}, {2, rc::gen::just(kNegInfCode)}}),
                               rc::gen::inRange(1, 9));
  return rc::gen::map(rc::gen::nonEmpty(rc::gen::container<std::vector<std::pair<int, int>>>(segment)),
                      [](const std::vector<std::pair<int, int>>& segments) {
                        Row row{"neg-inf-runs", {}};
                        for (const auto& [code, run] : segments) {
                          for (int i = 0; i < run; ++i) row.logits.push_back(Dyadic(code));
                        }
                        if (std::all_of(row.logits.begin(), row.logits.end(), [](float x) { return x == -kInf; })) {
                          row.logits.back() = 0.0f;  // keep the row valid: BadRow makes all -inf rows
                        }
                        return row;
                      });
}

rc::Gen<Row> WholeRowTies() {
  return rc::gen::apply(
      [](int vocab, int code) { return Row{"whole-row-ties", std::vector<float>(static_cast<size_t>(vocab), Dyadic(code))}; },
      rc::gen::inRange(1, 65), Code());
}

rc::Gen<Row> TopTiesRow() {
  return rc::gen::map(Layout(0, 8, 24), [](const GroupLayout& layout) {
    Row row{"top-ties", GroupRow({}, layout.tie_code, layout.tied, layout.below)};
    // Tail at least one logit below the tie: the tie group holds a good share of the mass.
    for (size_t i = static_cast<size_t>(layout.tied); i < row.logits.size(); ++i) row.logits[i] -= 1.0f;
    Shuffle(row.logits, layout.permutation);
    return row;
  });
}

rc::Gen<Row> HugeTinyRow() {
  const std::vector<float> extremes = {FLT_MAX, -FLT_MAX, 3e38f,   1e38f,  -1e38f,  1e30f, -1e30f, 1e20f,
                                       -1e20f,  1e-30f,   1e-38f,  1e-45f, -1e-45f, 0.0f,  -0.0f,  88.7f,
                                       -88.7f,  -103.9f,  FLT_MIN, 1e10f};
  auto element = rc::gen::weightedOneOf<float>(
      {{3, rc::gen::elementOf(extremes)}, {1, rc::gen::map(Code(), [](int c) { return Dyadic(c); })}});
  return rc::gen::map(rc::gen::nonEmpty(rc::gen::container<std::vector<float>>(element)),
                      [](std::vector<float> logits) { return Row{"huge-tiny", std::move(logits)}; });
}

rc::Gen<Row> WideRangeRow() {
  return rc::gen::apply(
      [](std::vector<int> head, std::vector<int> tail, uint32_t permutation) {
        Row row{"wide-range", {}};
        for (int h : head) row.logits.push_back(Dyadic(h));
        for (int t : tail) row.logits.push_back(Dyadic(-(40 * 16 + t)));  // 40 .. 100 below 0
        Shuffle(row.logits, permutation);
        return row;
      },
      rc::gen::container<std::vector<int>>(static_cast<size_t>(2), rc::gen::inRange(0, 1025)),
      rc::gen::nonEmpty(rc::gen::container<std::vector<int>>(rc::gen::inRange(0, 60 * 16 + 1))), PermutationSeed());
}

rc::Gen<Row> ZipfRow() {
  return rc::gen::apply(
      [](int vocab, int s10, uint32_t permutation) {
        Row row{"zipf", {}};
        for (int rank = 1; rank <= vocab; ++rank) {
          row.logits.push_back(static_cast<float>(-(s10 / 10.0) * std::log(static_cast<double>(rank))));
        }
        Shuffle(row.logits, permutation);
        return row;
      },
      rc::gen::inRange(2, 1025), rc::gen::inRange(5, 21), PermutationSeed());
}

rc::Gen<Row> GaussianRow() {
  return rc::gen::apply(
      [](int vocab, double sigma, uint32_t seed) {
        Row row{"gaussian", {}};
        uint64_t state = seed;
        constexpr double kTwoPi = 6.283185307179586;
        for (int i = 0; i < vocab; ++i) {  // Box-Muller on splitmix64: portable, unlike std::normal_distribution
          const double u1 = (static_cast<double>(SplitMix64Next(state) >> 11) + 0.5) * 0x1p-53;
          const double u2 = static_cast<double>(SplitMix64Next(state) >> 11) * 0x1p-53;
          row.logits.push_back(static_cast<float>(sigma * std::sqrt(-2.0 * std::log(u1)) * std::cos(kTwoPi * u2)));
        }
        return row;
      },
      rc::gen::inRange(2, 1025), rc::gen::element(0.5, 1.0, 3.0, 5.0), rc::gen::arbitrary<uint32_t>());
}

rc::Gen<Row> NearUniformRow() {
  return rc::gen::apply(
      [](int vocab, uint32_t seed) {
        Row row{"near-uniform", {}};
        uint64_t state = seed;
        for (int i = 0; i < vocab; ++i)
          row.logits.push_back(static_cast<float>(static_cast<int>(SplitMix64Next(state) % 33) - 16) / 1024.0f);
        return row;
      },
      rc::gen::inRange(256, 1025), rc::gen::arbitrary<uint32_t>());
}

namespace {
std::vector<std::string>& Excluded() {
  static std::vector<std::string> kinds;
  return kinds;
}
bool IsExcluded(const std::string& kind) {
  return std::find(Excluded().begin(), Excluded().end(), kind) != Excluded().end();
}
}  // namespace

void SetExcludedRowKinds(std::vector<std::string> kinds) { Excluded() = std::move(kinds); }

namespace {
bool& HeldMinP() {
  static bool held = false;
  return held;
}
}  // namespace

void SetMinPHeldAtZero(bool held) { HeldMinP() = held; }
bool MinPHeldAtZero() { return HeldMinP(); }
const std::vector<std::string>& ExcludedRowKinds() { return Excluded(); }
const std::vector<std::string>& RowKinds() {
  static const std::vector<std::string> kinds = {"dyadic", "neg-inf-runs", "whole-row-ties", "top-ties", "huge-tiny",
                                                 "wide-range", "zipf", "gaussian", "nan", "all-neg-inf", "pos-inf"};
  return kinds;
}

rc::Gen<Row> BadRow() {
  auto nan_row = rc::gen::apply(
      [](Row row, int where) {
        row.kind = "nan";
        row.logits[static_cast<size_t>(where) % row.logits.size()] = kNaN;
        return row;
      },
      rc::gen::oneOf(DyadicRow(), NegInfRunsRow()), rc::gen::inRange(0, 1000));
  auto all_neg_inf = rc::gen::map(rc::gen::inRange(1, 65), [](int vocab) {
    return Row{"all-neg-inf", std::vector<float>(static_cast<size_t>(vocab), -kInf)};
  });
  auto pos_inf = rc::gen::apply(
      [](Row row, std::vector<int> where) {
        row.kind = "pos-inf";
        for (int w : where) row.logits[static_cast<size_t>(w) % row.logits.size()] = kInf;
        return row;
      },
      rc::gen::oneOf(DyadicRow(), NegInfRunsRow()),
      rc::gen::container<std::vector<int>>(static_cast<size_t>(2), rc::gen::inRange(0, 1000)));
  std::vector<rc::Gen<Row>> kinds;
  if (!IsExcluded("nan")) kinds.push_back(nan_row);
  if (!IsExcluded("all-neg-inf")) kinds.push_back(all_neg_inf);
  if (!IsExcluded("pos-inf")) kinds.push_back(pos_inf);
  if (kinds.empty()) return nan_row;  // AnyRow does not ask for BadRow then
  if (kinds.size() == 1) return kinds[0];
  if (kinds.size() == 2) return rc::gen::oneOf(kinds[0], kinds[1]);
  return rc::gen::oneOf(kinds[0], kinds[1], kinds[2]);
}

rc::Gen<Row> ValidRow() {
  if (Excluded().empty()) {  // the CI domain, unchanged
    return rc::gen::weightedOneOf<Row>({{4, DyadicRow()},
                                        {2, NegInfRunsRow()},
                                        {1, WholeRowTies()},
                                        {2, TopTiesRow()},
                                        {1, HugeTinyRow()},
                                        {1, WideRangeRow()},
                                        {1, ZipfRow()},
                                        {1, GaussianRow()}});
  }
  const std::vector<std::pair<std::string, std::pair<int, rc::Gen<Row>>>> all = {
      {"dyadic", {4, DyadicRow()}},        {"neg-inf-runs", {2, NegInfRunsRow()}}, {"whole-row-ties", {1, WholeRowTies()}},
      {"top-ties", {2, TopTiesRow()}},     {"huge-tiny", {1, HugeTinyRow()}},      {"wide-range", {1, WideRangeRow()}},
      {"zipf", {1, ZipfRow()}},            {"gaussian", {1, GaussianRow()}}};
  std::vector<std::pair<int, rc::Gen<Row>>> kept;
  int total = 0;
  for (const auto& [kind, entry] : all) {
    if (IsExcluded(kind)) continue;
    kept.push_back(entry);
    total += entry.first;
  }
  if (kept.empty()) return DyadicRow();  // RunPropertySuite refuses to leave out every valid kind
  return rc::gen::mapcat(rc::gen::inRange(0, total), [kept](int x) {
    for (const auto& [weight, gen] : kept) {
      if (x < weight) return gen;
      x -= weight;
    }
    return kept.back().second;
  });
}

rc::Gen<Row> AnyRow() {
  if (IsExcluded("nan") && IsExcluded("all-neg-inf") && IsExcluded("pos-inf")) return ValidRow();
  return rc::gen::weightedOneOf<Row>({{6, ValidRow()}, {1, BadRow()}});
}

// ---- parameters ----

rc::Gen<double> Temperature() {
  return rc::gen::weightedOneOf<double>({
      {4, rc::gen::just(1.0)},
      {3, rc::gen::map(rc::gen::inRange(-6, 2), [](int j) { return std::ldexp(1.0, j); })},
      {3, rc::gen::map(rc::gen::inRange(5, 201), [](int t) { return t / 100.0; })},
      {2, rc::gen::element(0.0, 1e-6, 0.99e-6, 1.01e-6, 1e-5, 0.99e-5, 1.01e-5, 1e-4, 0.99e-4, 1.01e-4, 0x1p-20)},
      {1, rc::gen::element(-1.0, 2.5, std::numeric_limits<double>::quiet_NaN(), std::numeric_limits<double>::infinity())},
  });
}

rc::Gen<double> PowerOfTwoTemperature(const Profile& profile) {
  const double max_temperature = profile.max_temperature;
  return rc::gen::map(rc::gen::inRange(-6, 2), [max_temperature](int j) {
    return std::min(std::ldexp(1.0, j), std::isinf(max_temperature) ? 2.0 : max_temperature);
  });
}

rc::Gen<int64_t> TopK(int64_t vocab) {
  return rc::gen::weightedOneOf<int64_t>({
      {3, rc::gen::just<int64_t>(-1)},
      {1, rc::gen::element<int64_t>(0, 1, vocab, vocab + 1, int64_t{1} << 40)},
      {3, rc::gen::inRange<int64_t>(1, vocab + 1)},
      {1, rc::gen::just<int64_t>(-2)},
  });
}

rc::Gen<double> TopP() {
  return rc::gen::weightedOneOf<double>({
      {3, rc::gen::just(1.0)},
      {1, rc::gen::element(0.0, 1e-9, 0.5, 0.75, 0.875, std::nextafter(1.0, 0.0))},
      {3, rc::gen::map(rc::gen::inRange(1, 1000), [](int p) { return p / 1000.0; })},
      {1, rc::gen::element(-0.1, 1.5)},
  });
}

rc::Gen<double> MinP() {
  if (MinPHeldAtZero()) return rc::gen::just(0.0);
  return rc::gen::weightedOneOf<double>({
      {4, rc::gen::just(0.0)},
      {1, rc::gen::element(1.0, 1e-3, 1e-20)},
      {2, rc::gen::map(rc::gen::inRange(1, 1000), [](int p) { return p / 1000.0; })},
      {1, rc::gen::element(-0.1, 1.5)},
  });
}

rc::Gen<uint64_t> Seed() { return rc::gen::arbitrary<uint64_t>(); }

rc::Gen<Params> AnyParams(int64_t vocab) {
  return rc::gen::apply(
      [](double temperature, int64_t top_k, double top_p, double min_p, uint64_t seed, uint64_t offset) {
        Params params;
        params.temperature = temperature;
        params.top_k = top_k;
        params.top_p = top_p;
        params.min_p = min_p;
        params.seed = seed;
        params.offset = offset;
        return params;
      },
      Temperature(), TopK(vocab), TopP(), MinP(), Seed(), Seed());
}

Params MakeValid(Params params, const Profile& profile) {
  for (int attempt = 0; attempt < 4; ++attempt) {
    const auto error = ValidateParams(params, profile);
    if (!error) break;
    switch (error->field) {
      case ParamField::kTemperature: params.temperature = 1.0; break;
      case ParamField::kTopK: params.top_k = profile.top_k_minus_one_disables ? -1 : (int64_t{1} << 40); break;
      case ParamField::kTopP: params.top_p = 1.0; break;
      case ParamField::kMinP: params.min_p = 0.0; break;
    }
  }
  return params;
}

rc::Gen<Params> ValidParams(int64_t vocab, const Profile& profile) {
  const Profile* p = &profile;
  return rc::gen::map(AnyParams(vocab), [p](Params params) { return MakeValid(params, *p); });
}

bool IsGreedy(const SamplingParams& params, const Profile& profile) {
  const double t = params.temperature;
  if (t == 0.0) return true;
  if (t < profile.greedy_temperature_below) return true;
  if (profile.greedy_temperature_inclusive && t <= profile.greedy_temperature_below) return true;
  if (params.top_p == 0.0 && profile.top_p_zero_is_greedy) return true;
  if (params.top_k == 1 && profile.top_k_one_is_greedy) return true;
  return false;
}

// ---- cases ----

rc::Gen<Case> TopKBoundaryTies(const Profile& profile) {
  return rc::gen::apply(
      [](const GroupLayout& layout, int cut_inside, double temperature) {
        Case c;
        c.row = Row{"ties-top-k", GroupRow(layout.above, layout.tie_code, layout.tied, layout.below)};
        Shuffle(c.row.logits, layout.permutation);
        c.params = OnlyTemperature(temperature);
        // The k-th position falls inside the tie group (1 .. tied - 1 of its members above the cut).
        c.params.top_k = static_cast<int64_t>(layout.above.size()) + 1 + cut_inside % (layout.tied - 1);
        return c;
      },
      Layout(8, 8, 8), rc::gen::inRange(0, 7), PowerOfTwoTemperature(profile));
}

rc::Gen<Case> TopPBoundaryTies(const Profile& profile) {
  return rc::gen::apply(
      [](const GroupLayout& layout, int fraction, double temperature) {
        Case c;
        c.row = Row{"ties-top-p", GroupRow(layout.above, layout.tie_code, layout.tied, layout.below)};
        c.params = OnlyTemperature(temperature);
        const Ranked ranked = Rank(c.row.logits, temperature);
        long double above = 0, group = 0;
        for (size_t i = 0; i < ranked.order.size(); ++i) {
          const size_t token = static_cast<size_t>(ranked.order[i]);
          if (token < layout.above.size() && c.row.logits[token] > Dyadic(layout.tie_code)) above += ranked.weight[i];
          if (c.row.logits[token] == Dyadic(layout.tie_code)) group += ranked.weight[i];
        }
        // top_p strictly inside the group's mass interval: the crossing token is one of the tied tokens.
        c.params.top_p = std::min(1.0, static_cast<double>((above + group * (fraction / 64.0L)) / ranked.total));
        if (!(c.params.top_p > 0)) c.params.top_p = 1e-9;
        Shuffle(c.row.logits, layout.permutation);
        return c;
      },
      // Neighbours within 3 logits and T in {1/2, 1, 2}: the tie group keeps a mass that top_p can resolve.
      Layout(6, 6, 8, 48), rc::gen::inRange(1, 64),
      rc::gen::map(PowerOfTwoTemperature(profile), [](double t) { return std::max(t, 0.5); }));
}

namespace {

rc::Gen<Row> BoundaryRow() { return rc::gen::oneOf(DyadicRow(), TopTiesRow(), ZipfRow(), GaussianRow(), NegInfRunsRow()); }

rc::Gen<Case> OnBoundary(const Profile& profile, bool top_p) {
  return rc::gen::apply(
      [top_p](Row row, int which, int ulps, double temperature) {
        Case c;
        c.row = std::move(row);
        c.row.kind += top_p ? "+top-p-boundary" : "+min-p-boundary";
        c.params = OnlyTemperature(temperature);
        const Ranked ranked = Rank(c.row.logits, temperature);
        const size_t alive = ranked.order.size();
        if (top_p) {
          if (alive < 2) {
            c.params.top_p = 0.5;
            return c;
          }
          const size_t j = 1 + static_cast<size_t>(which) % (alive - 1);
          long double above = 0;
          for (size_t i = 0; i < j; ++i) above += ranked.weight[i];
          const double value = NudgeUlps(above / ranked.total, ulps);
          c.params.top_p = value >= 1.0 ? 1.0 : (value > 0 ? value : 1e-9);
        } else {
          const size_t j = static_cast<size_t>(which) % alive;
          const double value = NudgeUlps(ranked.weight[j] / ranked.weight[0], ulps);
          c.params.min_p = value > 1.0 ? 1.0 : (value > 0 ? value : 1e-30);
        }
        return c;
      },
      BoundaryRow(), rc::gen::inRange(0, 1 << 20), rc::gen::inRange(-1, 2), PowerOfTwoTemperature(profile));
}

}  // namespace

rc::Gen<Case> TopPOnBoundary(const Profile& profile) { return OnBoundary(profile, true); }
rc::Gen<Case> MinPOnBoundary(const Profile& profile) { return OnBoundary(profile, false); }

rc::Gen<Case> AnyValidCase(const Profile& profile) {
  const Profile* p = &profile;
  auto general = rc::gen::mapcat(ValidRow(), [p](Row row) {
    const int64_t vocab = row.vocab();
    return rc::gen::map(ValidParams(vocab, *p), [row = std::move(row)](Params params) { return Case{row, params}; });
  });
  if (MinPHeldAtZero()) {
    return rc::gen::weightedOneOf<Case>({{6, general},
                                         {1, TopKBoundaryTies(profile)},
                                         {1, TopPBoundaryTies(profile)},
                                         {1, TopPOnBoundary(profile)}});
  }
  return rc::gen::weightedOneOf<Case>({{6, general},
                                       {1, TopKBoundaryTies(profile)},
                                       {1, TopPBoundaryTies(profile)},
                                       {1, TopPOnBoundary(profile)},
                                       {1, MinPOnBoundary(profile)}});
}

}  // namespace samplecheck::properties::gen
