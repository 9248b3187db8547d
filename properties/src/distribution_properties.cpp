// Properties of the processed distribution: for the reference itself (through the exact sampler) and for every
// sampler with the processed_distribution capability. docs/properties.md lists them with their bug classes.
//
// Ambiguity: the reference marks a keep/drop decision "ambiguous" when fp32 arithmetic could flip it (a margin
// below kAmbiguousMarginUlps, or a tie group cut by position). Exact-set comparisons skip ambiguous tokens; the
// exact sampler, which decides in exact arithmetic, is additionally held to bit-identical relations.
#include <algorithm>
#include <cmath>
#include <map>
#include <numeric>
#include <sstream>

#include "property_context.h"
#include "samplecheck/reference/params.h"
#include "samplecheck/properties/generators.h"

namespace samplecheck::properties {
namespace {

using gen::IsGreedy;

std::string Num(long double value) { return FormatValue(static_cast<double>(value)); }

// Tokens grouped by identical logit, in descending logit order; only alive tokens (positive mass in `full`).
std::vector<std::vector<int32_t>> TieGroups(const Row& row, const std::vector<double>& full) {
  std::map<float, std::vector<int32_t>, std::greater<float>> groups;
  for (int32_t t = 0; t < static_cast<int32_t>(row.logits.size()); ++t) {
    if (full[static_cast<size_t>(t)] > 0) groups[row.logits[static_cast<size_t>(t)] == 0.0f ? 0.0f : row.logits[static_cast<size_t>(t)]].push_back(t);
  }
  std::vector<std::vector<int32_t>> result;
  for (auto& [logit, tokens] : groups) result.push_back(std::move(tokens));
  return result;
}

// The alive tokens in the profiles' rank order: logit descending, ties by ascending id.
std::vector<int32_t> RankOrder(const Row& row, const std::vector<double>& full) {
  std::vector<int32_t> order;
  for (const auto& group : TieGroups(row, full)) order.insert(order.end(), group.begin(), group.end());
  return order;
}

// Temperature and top_k only (top_p = 1, min_p = 0): top_k = NoTopK(profile, V) for the whole row.
Params WithOnly(double temperature, int64_t top_k) {
  Params params;
  params.temperature = temperature;
  params.top_k = top_k;
  return params;
}

// A token of the reference with a probability too small to be seen in the sampler's output.
bool AnyInvisible(const Context& ctx, const ProcessedDistribution& reference) {
  for (size_t i = 0; i < reference.kept.size(); ++i) {
    if (reference.prob[i] < ctx.visibility_floor) return true;
  }
  return false;
}

// Kept sets of two distributions that must be equal, except at ambiguous or invisible tokens; with no such token
// anywhere, the probabilities too (within tolerance; bit for bit for the exact sampler).
void ExpectSameDistribution(const Context& ctx, const std::vector<double>& a, const ProcessedDistribution& ref_a,
                            const std::vector<double>& b, const ProcessedDistribution& ref_b,
                            const std::vector<int32_t>& b_of_a, const std::string& what,
                            bool compare_probabilities = true) {
  const bool any_ambiguous = !ref_a.ambiguous.empty() || !ref_b.ambiguous.empty() || !compare_probabilities;
  const double tolerance = ctx.exact ? 0.0 : ctx.tolerance;
  for (int32_t t = 0; t < static_cast<int32_t>(a.size()); ++t) {
    const int32_t u = b_of_a[static_cast<size_t>(t)];
    if (ref_a.IsAmbiguous(t) || ref_b.IsAmbiguous(u) || Invisible(ctx, ref_a, t) || Invisible(ctx, ref_b, u)) continue;
    const bool kept_a = a[static_cast<size_t>(t)] > 0, kept_b = b[static_cast<size_t>(u)] > 0;
    if (kept_a != kept_b) {
      RC_FAIL(what + ": token " + std::to_string(t) + (kept_a ? " kept" : " dropped") + " in the first, token " +
              std::to_string(u) + (kept_b ? " kept" : " dropped") + " in the second");
    }
    if (!any_ambiguous && !Close(a[static_cast<size_t>(t)], b[static_cast<size_t>(u)], tolerance)) {
      RC_FAIL(what + ": probability of token " + std::to_string(t) + " is " + Num(a[static_cast<size_t>(t)]) +
              " in the first and " + Num(b[static_cast<size_t>(u)]) + " (token " + std::to_string(u) +
              ") in the second (tolerance " + Num(tolerance) + (tolerance == 0 ? ", bit-identical" : "") + ")");
    }
  }
}

// Profile::tied_row_unmasked (vllm-triton): with min-p off, a row whose finite logits are all equal is not masked
// by top-k or top-p at all.
bool TiedRowKeptWhole(const Profile& profile, const Row& row, const Params& params) {
  if (!profile.tied_row_unmasked || params.min_p > 0) return false;
  float value = std::numeric_limits<float>::quiet_NaN();
  for (float x : row.logits) {
    if (x == -std::numeric_limits<float>::infinity()) continue;
    if (!std::isfinite(x) || (value == value && x != value)) return false;
    value = x;
  }
  return value == value;
}

std::vector<int32_t> Identity(int64_t vocab) {
  std::vector<int32_t> id(static_cast<size_t>(vocab));
  std::iota(id.begin(), id.end(), 0);
  return id;
}

// ---------------------------------------------------------------------------------------------------------------

void MassSumsToOne(const Context& ctx) {
  const Case c = *gen::AnyValidCase(*ctx.profile);
  const auto dense = Processed(ctx, c.row, c.params);
  long double sum = 0;
  for (size_t t = 0; t < dense.size(); ++t) {
    if (!(std::isfinite(dense[t]) && dense[t] >= 0 && dense[t] <= 1)) {
      RC_FAIL("probability of token " + std::to_string(t) + " is " + Num(dense[t]) + ", outside [0, 1]");
    }
    sum += dense[t];
  }
  const double slack = ctx.exact ? kExactTolerance : ctx.tolerance;
  if (!(std::fabs(sum - 1.0L) <= slack)) RC_FAIL("probabilities sum to " + Num(sum) + ", not 1 within " + Num(slack));
}

void NoMassOutsideKeptSet(const Context& ctx) {
  const Case c = *gen::AnyValidCase(*ctx.profile);
  const auto dense = Processed(ctx, c.row, c.params);
  const auto widest = Reference(ctx, c.row, c.params, AmbiguousPolicy::kAllIn);
  for (int32_t t = 0; t < static_cast<int32_t>(dense.size()); ++t) {
    if (dense[static_cast<size_t>(t)] > 0 && !widest.IsKept(t)) {
      RC_FAIL("token " + std::to_string(t) + " (logit " + Num(c.row.logits[static_cast<size_t>(t)]) + ") has mass " +
              Num(dense[static_cast<size_t>(t)]) + " but profile " + std::string(ctx.profile->name) +
              " drops it (even with every ambiguous token kept)");
    }
  }
}

void KeptSetComplete(const Context& ctx) {
  const Case c = *gen::AnyValidCase(*ctx.profile);
  const auto dense = Processed(ctx, c.row, c.params);
  const auto narrowest = Reference(ctx, c.row, c.params, AmbiguousPolicy::kAllOut);
  for (size_t i = 0; i < narrowest.kept.size(); ++i) {
    const int32_t t = narrowest.kept[i];
    // kAllOut never empties the kept set: a tie group cut by position from its first member (exactly k of a tied
    // maximum, a greedy choice among tied maxima by sort position) keeps its lowest id although it is ambiguous.
    if (narrowest.IsAmbiguous(t)) continue;
    if (narrowest.prob[i] >= ctx.visibility_floor && !(dense[static_cast<size_t>(t)] > 0)) {
      RC_FAIL("token " + std::to_string(t) + " (logit " + Num(c.row.logits[static_cast<size_t>(t)]) +
              ", reference probability " + Num(narrowest.prob[i]) + ") has no mass, but profile " +
              std::string(ctx.profile->name) + " keeps it (even with every ambiguous token dropped)");
    }
  }
}

// Nucleus minimality: with only top-p active, a token is kept iff the mass above it (the mass of the tokens
// ranked before it; for kKeepTied, of the tokens with a strictly larger logit) is < top_p (<= for kNonStrict).
// That is: the kept set reaches top_p, and dropping its least likely member (tie group) falls below it. A fully
// tied row under a tied_row_unmasked profile (vllm-triton) is kept whole.
void NucleusMinimality(const Context& ctx) {
  const Profile& profile = *ctx.profile;
  auto general = rc::gen::apply(
      [](Row row, double temperature, int top_p_milli) {
        Case c{std::move(row), WithOnly(temperature, 1)};
        c.params.top_p = top_p_milli / 1000.0;
        return c;
      },
      gen::ValidRow(), gen::PowerOfTwoTemperature(profile), rc::gen::inRange(1, 1000));
  Case c = *rc::gen::oneOf(general, gen::TopPBoundaryTies(profile), gen::TopPOnBoundary(profile));
  c.params.top_k = NoTopK(profile, c.row.vocab());
  Params full_params = c.params;
  full_params.top_p = 1.0;
  // Where the temperature comes after the filters (llama.cpp), top-p sees the T = 1 distribution.
  if (profile.temperature_placement == TemperaturePlacement::kLast) full_params.temperature = 1.0;
  const auto full = Processed(ctx, c.row, full_params);
  const auto kept = Processed(ctx, c.row, c.params);
  const auto reference = Reference(ctx, c.row, c.params);
  const auto full_reference = Reference(ctx, c.row, full_params);
  Params full_at_t = c.params;  // the kept tokens' masses at T (differs from full_params when T comes last)
  full_at_t.top_p = 1.0;
  if (AnyInvisible(ctx, full_reference) || AnyInvisible(ctx, Reference(ctx, c.row, full_at_t))) {
    RC_TAG("skipped: probabilities below the visibility floor");
    return;
  }
  const bool strict = profile.top_p_comparison == TopPComparison::kStrict;
  const bool keep_tied = profile.top_p_ties == TopPTies::kKeepTied;
  const long double top_p = c.params.top_p;
  long double above_position = 0, above_group = 0, group_mass = 0;
  float group_logit = std::numeric_limits<float>::quiet_NaN();
  int kept_count = 0;
  for (int32_t t : RankOrder(c.row, full)) {
    const float logit = c.row.logits[static_cast<size_t>(t)];
    if (!(logit == group_logit)) {  // a new tie group starts
      above_group += group_mass;
      group_mass = 0;
      group_logit = logit;
    }
    const long double above = keep_tied ? above_group : above_position;
    // top_p = 1 disables the filter (the mass above the last tokens can round to 1 in double: not a decision).
    const bool should_keep = top_p >= 1 || above_position == 0 || (strict ? above < top_p : above <= top_p) ||
                             TiedRowKeptWhole(profile, c.row, c.params);
    const bool is_kept = kept[static_cast<size_t>(t)] > 0;
    kept_count += is_kept;
    // Decisions within the sampler's own rounding of the masses are not judged (fp32 samplers only).
    const bool too_close = !ctx.exact && std::fabs(above - top_p) <= ctx.tolerance;
    if (is_kept != should_keep && !reference.IsAmbiguous(t) && !too_close) {
      RC_FAIL("top_p = " + Num(top_p) + ": token " + std::to_string(t) + " (logit " + Num(logit) + ") is " +
              (is_kept ? "kept" : "dropped") + " but the mass above it is " + Num(above) + (keep_tied ? " (tie group)" : "") +
              ", so profile " + std::string(profile.name) + " (" + (strict ? "mass above < top_p" : "mass above <= top_p") +
              ") " + (should_keep ? "keeps" : "drops") + " it");
    }
    above_position += full[static_cast<size_t>(t)];
    group_mass += full[static_cast<size_t>(t)];
  }
  if (kept_count == 0) RC_FAIL("top_p = " + Num(top_p) + " kept no token");
  RC_CLASSIFY(!reference.ambiguous.empty(), "ambiguous boundary");
}

// Top-k cardinality: with only top-k active, exactly k tokens (kExactK) or the k-th and every token tied with it
// (kKeepTied), and they are the top tokens by logit; a fully tied row under a tied_row_unmasked profile: every token.
void TopKCardinality(const Context& ctx) {
  const Profile& profile = *ctx.profile;
  auto general = rc::gen::mapcat(gen::ValidRow(), [&profile](Row row) {
    const int64_t vocab = row.vocab();
    return rc::gen::apply(
        [row](double temperature, int64_t k) {
          Case c{row, WithOnly(temperature, 1)};
          c.params.top_k = k;
          return c;
        },
        gen::PowerOfTwoTemperature(profile), rc::gen::inRange<int64_t>(1, TopKEnd(profile, vocab)));
  });
  const Case c = *rc::gen::oneOf(general, gen::TopKBoundaryTies(profile));
  const auto kept = Support(Processed(ctx, c.row, c.params));
  const auto full_params = WithOnly(c.params.temperature, NoTopK(profile, c.row.vocab()));
  const auto full = Processed(ctx, c.row, full_params);
  const auto reference = Reference(ctx, c.row, c.params);
  if (AnyInvisible(ctx, Reference(ctx, c.row, full_params))) {
    RC_TAG("skipped: probabilities below the visibility floor");
    return;
  }
  const auto order = RankOrder(c.row, full);
  const int64_t k = c.params.top_k;
  const int64_t alive = static_cast<int64_t>(order.size());
  int64_t expected = 0;
  float kth_logit = 0;
  if (IsGreedy(c.params, profile)) {
    expected = 1;
    kth_logit = c.row.logits[static_cast<size_t>(order[0])];
  } else if (k >= alive || TiedRowKeptWhole(profile, c.row, c.params)) {
    expected = alive;
    kth_logit = -std::numeric_limits<float>::infinity();
  } else {
    kth_logit = c.row.logits[static_cast<size_t>(order[static_cast<size_t>(k - 1)])];
    expected = k;
    if (profile.top_k_ties == TopKTies::kKeepTied) {
      while (expected < alive && c.row.logits[static_cast<size_t>(order[static_cast<size_t>(expected)])] == kth_logit) ++expected;
    }
  }
  const int64_t slack = ctx.exact ? 0 : static_cast<int64_t>(reference.ambiguous.size());
  const int64_t count = static_cast<int64_t>(kept.size());
  if (count < expected - slack || count > expected + slack) {
    RC_FAIL("top_k = " + std::to_string(k) + " kept " + std::to_string(count) + " tokens; profile " +
            std::string(profile.name) + " (" + (profile.top_k_ties == TopKTies::kKeepTied ? "ties kept" : "exactly k") +
            ") keeps " + std::to_string(expected) + " of " + std::to_string(alive) + " alive tokens" +
            (slack ? " (+-" + std::to_string(slack) + " ambiguous)" : ""));
  }
  for (int32_t t : order) {
    if (reference.IsAmbiguous(t)) continue;
    const float logit = c.row.logits[static_cast<size_t>(t)];
    const bool is_kept = Contains(kept, t);
    if ((is_kept && logit < kth_logit) || (!is_kept && logit > kth_logit)) {
      RC_FAIL("top_k = " + std::to_string(k) + ": token " + std::to_string(t) + " (logit " + Num(logit) + ") is " +
              (is_kept ? "kept below" : "dropped above") + " the k-th logit " + Num(kth_logit));
    }
  }
  RC_CLASSIFY(count > k && k < alive, "tie group kept beyond k");
}

// Tied tokens (identical logits) that are both kept get identical probability; a tie group split by a filter is
// split only where the profile cuts ties by position (then the reference reports the group ambiguous).
void TiedTokensIdenticalProbability(const Context& ctx) {
  const Profile& profile = *ctx.profile;
  const Case c = *rc::gen::oneOf(gen::AnyValidCase(profile), gen::TopKBoundaryTies(profile), gen::TopPBoundaryTies(profile),
                                 rc::gen::map(gen::WholeRowTies(), [](Row row) { return Case{std::move(row), Params()}; }));
  const auto dense = Processed(ctx, c.row, c.params);
  const auto reference = Reference(ctx, c.row, c.params);
  // TensorRT-LLM's truncated CDF gives the crossing token (the least likely kept one) top_p - mass above.
  int32_t crossing = -1;
  if (profile.top_p_mass == TopPMass::kTruncatedCdf && c.params.top_p < 1.0) {
    for (int32_t t : RankOrder(c.row, dense)) crossing = t;
  }
  std::vector<double> alive(c.row.logits.size());
  for (size_t t = 0; t < alive.size(); ++t) alive[t] = c.row.logits[t] > -std::numeric_limits<float>::infinity() ? 1.0 : 0.0;
  const double tolerance = ctx.exact ? 0.0 : ctx.tolerance;
  for (const auto& group : TieGroups(c.row, alive)) {
    int32_t first_kept = -1;
    bool split = false;
    for (int32_t t : group) {
      const bool is_kept = dense[static_cast<size_t>(t)] > 0;
      if (!is_kept) {
        split = split || first_kept >= 0 || t != group.front();
        continue;
      }
      if (first_kept < 0) {
        first_kept = t;
        split = split || t != group.front();
      } else if (t != crossing && first_kept != crossing &&
                 !Close(dense[static_cast<size_t>(t)], dense[static_cast<size_t>(first_kept)], tolerance)) {
        RC_FAIL("tied tokens " + std::to_string(first_kept) + " and " + std::to_string(t) + " (logit " +
                Num(c.row.logits[static_cast<size_t>(t)]) + ") get probabilities " +
                Num(dense[static_cast<size_t>(first_kept)]) + " and " + Num(dense[static_cast<size_t>(t)]));
      }
    }
    const bool any_kept = first_kept >= 0;
    const bool all_kept = std::all_of(group.begin(), group.end(), [&](int32_t t) { return dense[static_cast<size_t>(t)] > 0; });
    // The greedy path keeps the lowest id of the maximal group by definition (greedy-limits checks it).
    if (any_kept && !all_kept && !reference.greedy) {
      for (int32_t t : group) {
        if (!reference.IsAmbiguous(t) && !Invisible(ctx, reference, t)) {
          RC_FAIL("tie group of logit " + Num(c.row.logits[static_cast<size_t>(t)]) + " (" + std::to_string(group.size()) +
                  " tokens) is split, but profile " + std::string(profile.name) +
                  " keeps or drops it whole here (token " + std::to_string(t) + " is not ambiguous)");
        }
      }
      RC_TAG("split tie group");
    }
    (void)split;
  }
}

// Disabled encodings are no-ops, bit for bit: top_k in {-1, 0 (where they disable), V, V + 1, 2^40} give the
// same distribution, whatever the other parameters are.
void DisabledValuesAreNoOps(const Context& ctx) {
  const Case c = *gen::AnyValidCase(*ctx.profile);
  const auto encodings = DisabledTopK(*ctx.profile, c.row.vocab());
  Params base = c.params;
  base.top_k = encodings.front();
  const auto expected = Processed(ctx, c.row, base);
  for (int64_t k : encodings) {
    Params variant = base;
    variant.top_k = k;
    const auto got = Processed(ctx, c.row, variant);
    for (size_t t = 0; t < got.size(); ++t) {
      if (!Close(got[t], expected[t], 0.0)) {
        RC_FAIL("top_k = " + std::to_string(k) + " and top_k = " + std::to_string(base.top_k) +
                " (both disabled) differ at token " + std::to_string(t) + ": " + Num(got[t]) + " vs " + Num(expected[t]));
      }
    }
  }
}

// With every filter disabled (top_k disabled, top_p = 1, min_p = 0) the distribution is the plain softmax of
// logits / T: every alive token keeps its mass, however deep in the tail (the min_p = 0 clamp bug removes
// tokens ~46 logits down), and the probabilities match the reference.
void AllFiltersDisabledIsSoftmax(const Context& ctx) {
  const Row row = *rc::gen::oneOf(gen::WideRangeRow(), gen::ValidRow());
  Params params = *gen::ValidParams(row.vocab(), *ctx.profile);
  params.top_k = DisabledTopK(*ctx.profile, row.vocab()).front();
  params.top_p = 1.0;
  params.min_p = 0.0;
  const auto dense = Processed(ctx, row, params);
  const auto reference = Reference(ctx, row, params);
  for (size_t i = 0; i < reference.kept.size(); ++i) {
    const int32_t t = reference.kept[i];
    const double got = dense[static_cast<size_t>(t)];
    const long double want = reference.prob[i];
    if (want >= ctx.visibility_floor && !(got > 0)) {
      RC_FAIL("token " + std::to_string(t) + " (logit " + Num(row.logits[static_cast<size_t>(t)]) + ", probability " +
              Num(want) + ") has no mass with every filter disabled {" + Describe(params) + "}");
    }
    const double tolerance = ctx.exact ? kExactTolerance : ctx.tolerance;
    if (want >= 1e-30 && !Close(got, static_cast<double>(want), tolerance)) {
      RC_FAIL("token " + std::to_string(t) + " has probability " + Num(got) + ", the softmax gives " + Num(want) +
              " {" + Describe(params) + "}");
    }
  }
}

// Shift invariance: logits + c (exact in fp32: dyadic rows, integer c) give the same distribution.
void ShiftInvariance(const Context& ctx) {
  const Row row = *rc::gen::oneOf(gen::DyadicRow(), gen::NegInfRunsRow(), gen::TopTiesRow());
  const Params params = *gen::ValidParams(row.vocab(), *ctx.profile);
  const int shift = *rc::gen::inRange(-256, 257);
  Row shifted = row;
  for (float& x : shifted.logits) x += static_cast<float>(shift);
  const auto a = Processed(ctx, row, params);
  const auto b = Processed(ctx, shifted, params);
  ExpectSameDistribution(ctx, a, Reference(ctx, row, params), b, Reference(ctx, shifted, params),
                         Identity(row.vocab()), "logits vs logits + " + std::to_string(shift));
}

// Temperature equivalence: logits at T vs logits / T at T = 1, for T a power of two (logits / T exact).
void TemperatureEquivalence(const Context& ctx) {
  const Row row = *rc::gen::oneOf(gen::DyadicRow(), gen::NegInfRunsRow(), gen::TopTiesRow());
  Params params = *gen::ValidParams(row.vocab(), *ctx.profile);
  params.temperature = *gen::PowerOfTwoTemperature(*ctx.profile);
  if (IsGreedy(params, *ctx.profile)) params.top_k = NoTopK(*ctx.profile, row.vocab());  // keep the scaled path
  if (IsGreedy(params, *ctx.profile)) params.top_p = 1.0;
  if (ctx.profile->temperature_placement == TemperaturePlacement::kLast) {
    // The filters see the T = 1 distribution (llama.cpp): the kept set at T is the kept set at T = 1, and logits at
    // T equal logits / T at T = 1 once the filters are off (with them on, logits / T would move their cuts).
    Params unit_t = params;
    unit_t.temperature = 1.0;
    if (!IsGreedy(params, *ctx.profile) && !IsGreedy(unit_t, *ctx.profile)) {
      ExpectSameDistribution(ctx, Processed(ctx, row, params), Reference(ctx, row, params), Processed(ctx, row, unit_t),
                             Reference(ctx, row, unit_t), Identity(row.vocab()),
                             "kept set at T = " + Num(params.temperature) + " vs at T = 1 (temperature applied last)",
                             /*compare_probabilities=*/false);
    }
    params.top_k = NoTopK(*ctx.profile, row.vocab());
    params.top_p = 1.0;
    params.min_p = 0.0;
    RC_TAG("temperature applied last");
  }
  Row scaled = row;
  for (float& x : scaled.logits) x = static_cast<float>(x / params.temperature);
  Params unit = params;
  unit.temperature = 1.0;
  const auto a = Processed(ctx, row, params);
  const auto b = Processed(ctx, scaled, unit);
  ExpectSameDistribution(ctx, a, Reference(ctx, row, params), b, Reference(ctx, scaled, unit), Identity(row.vocab()),
                         "logits at T = " + Num(params.temperature) + " vs logits / T at T = 1");
}

// Permutation equivariance: permuting the row permutes the distribution (ambiguous tokens aside: their tie-break
// is by position).
void PermutationEquivariance(const Context& ctx) {
  const Case c = *gen::AnyValidCase(*ctx.profile);
  const uint64_t seed = *rc::gen::arbitrary<uint64_t>();
  const int64_t vocab = c.row.vocab();
  std::vector<int32_t> perm = Identity(vocab);  // token t moves to perm[t]
  uint64_t state = seed;
  for (size_t i = perm.size(); i > 1; --i) {
    state = state * 6364136223846793005ULL + 1442695040888963407ULL;
    std::swap(perm[i - 1], perm[(state >> 33) % i]);
  }
  Row permuted = c.row;
  for (size_t t = 0; t < perm.size(); ++t) permuted.logits[static_cast<size_t>(perm[t])] = c.row.logits[t];
  const auto ref_a = Reference(ctx, c.row, c.params);
  if (ref_a.greedy) {
    const float top = c.row.logits[static_cast<size_t>(ref_a.kept[0])];
    if (std::count(c.row.logits.begin(), c.row.logits.end(), top) > 1) {
      RC_TAG("skipped: greedy with a tied maximum (the lowest id wins)");
      return;
    }
  }
  const auto a = Processed(ctx, c.row, c.params);
  const auto b = Processed(ctx, permuted, c.params);
  Context relaxed = ctx;
  relaxed.exact = false;  // summation order changes with the permutation: not bit-identical
  relaxed.tolerance = ctx.exact ? kExactTolerance : ctx.tolerance;
  // The truncated CDF (TensorRT-LLM legacy) gives the crossing token top_p - mass above: when it is tied with
  // another token, which of them gets the truncated mass is decided by position, not by value.
  bool position_decides_mass = false;
  if (ctx.profile->top_p_mass == TopPMass::kTruncatedCdf && c.params.top_p < 1.0 && !ref_a.greedy) {
    const auto order = RankOrder(c.row, a);
    const float crossing = c.row.logits[static_cast<size_t>(order.back())];
    position_decides_mass = std::count(c.row.logits.begin(), c.row.logits.end(), crossing) > 1;
  }
  RC_CLASSIFY(position_decides_mass, "truncated-CDF crossing token tied: kept sets only");
  ExpectSameDistribution(relaxed, a, ref_a, b, Reference(ctx, permuted, c.params), perm,
                         "row vs permuted row (seed " + std::to_string(seed) + ")", !position_decides_mass);
}

// Monotone kept sets: kept(small) \ ambiguous is inside kept(large) for a larger top_p or top_k; a larger min_p
// never grows the kept set.
void ExpectSubset(const Context& ctx, const Row& row, const Params& smaller, const Params& larger, const std::string& what) {
  const auto small = Processed(ctx, row, smaller);
  const auto large = Processed(ctx, row, larger);
  const auto ref_small = Reference(ctx, row, smaller);
  const auto ref_large = Reference(ctx, row, larger);
  for (int32_t t = 0; t < static_cast<int32_t>(small.size()); ++t) {
    if (!(small[static_cast<size_t>(t)] > 0) || large[static_cast<size_t>(t)] > 0) continue;
    if (ref_small.IsAmbiguous(t) || ref_large.IsAmbiguous(t) || Invisible(ctx, ref_large, t) || Invisible(ctx, ref_small, t)) continue;
    RC_FAIL(what + ": token " + std::to_string(t) + " (logit " + Num(row.logits[static_cast<size_t>(t)]) +
            ") is kept with {" + Describe(smaller) + "} but dropped with {" + Describe(larger) + "}");
  }
}

void MonotoneTopP(const Context& ctx) {
  const Case c = *gen::AnyValidCase(*ctx.profile);
  double a = *gen::TopP(), b = *gen::TopP();
  Params small = c.params, large = c.params;
  small.top_p = std::min(a, b);
  large.top_p = std::max(a, b);
  RC_PRE(!ValidateParams(small, *ctx.profile) && !ValidateParams(large, *ctx.profile));
  ExpectSubset(ctx, c.row, small, large, "larger top_p shrank the kept set");
}

void MonotoneTopK(const Context& ctx) {
  const Case c = *gen::AnyValidCase(*ctx.profile);
  const int64_t vocab = c.row.vocab();
  const int64_t end = TopKEnd(*ctx.profile, vocab);
  int64_t a = *rc::gen::inRange<int64_t>(1, end), b = *rc::gen::inRange<int64_t>(1, end);
  Params small = c.params, large = c.params;
  small.top_k = std::min(a, b);
  large.top_k = *rc::gen::element(0, 1) ? std::max(a, b) : DisabledTopK(*ctx.profile, vocab).front();
  ExpectSubset(ctx, c.row, small, large, "larger top_k shrank the kept set");
}

void MonotoneMinP(const Context& ctx) {
  const Case c = *gen::AnyValidCase(*ctx.profile);
  double a = *gen::MinP(), b = *gen::MinP();
  Params small = c.params, large = c.params;
  small.min_p = std::min(a, b);
  large.min_p = std::max(a, b);
  RC_PRE(!ValidateParams(small, *ctx.profile) && !ValidateParams(large, *ctx.profile));
  ExpectSubset(ctx, c.row, large, small, "larger min_p grew the kept set");
}

// Greedy limits: T at or below the profile's greedy threshold is one-hot on the lowest-id maximum; min_p = 1
// keeps exactly the maximal tie group; top_k = 1 and a tiny top_p keep the maximum (its whole tie group where the
// profile keeps ties, one of it where it cuts by position; one-hot where the profile makes them greedy).
void GreedyLimits(const Context& ctx) {
  const Profile& profile = *ctx.profile;
  const Row row = *rc::gen::oneOf(gen::ValidRow(), gen::TopTiesRow(), gen::WholeRowTies());
  const int limit = *rc::gen::inRange(0, 4);
  Params params = *gen::ValidParams(row.vocab(), profile);
  const auto full = Processed(ctx, row, WithOnly(1.0, NoTopK(profile, row.vocab())));
  const auto order = RankOrder(row, full);
  const float top = row.logits[static_cast<size_t>(order[0])];
  std::vector<int32_t> top_group;
  for (int32_t t : order) {
    if (row.logits[static_cast<size_t>(t)] == top) top_group.push_back(t);
  }
  std::sort(top_group.begin(), top_group.end());
  bool one_hot = false, whole_group = false;
  std::string what;
  if (limit == 0) {
    if (profile.temperature_zero_allowed) {
      params.temperature = 0.0;
    } else if (profile.greedy_temperature_below > 0) {
      params.temperature = profile.greedy_temperature_below / 2;
    } else {
      RC_TAG("no greedy temperature in this profile");
      return;
    }
    one_hot = true;
    what = "T = " + Num(params.temperature);
  } else {
    params = WithOnly(*gen::PowerOfTwoTemperature(profile), NoTopK(profile, row.vocab()));
    if (limit == 1) {
      RC_PRE(!gen::MinPHeldAtZero());  // --no-min-p: the other limits only
      params.min_p = 1.0;
      whole_group = true;
      what = "min_p = 1";
    } else if (limit == 2) {
      params.top_k = 1;
      one_hot = profile.top_k_one_is_greedy;
      whole_group = !one_hot && (profile.top_k_ties == TopKTies::kKeepTied || TiedRowKeptWhole(profile, row, params));
      what = "top_k = 1";
    } else {
      params.top_p = 1e-9;
      whole_group = profile.top_p_ties == TopPTies::kKeepTied || TiedRowKeptWhole(profile, row, params);
      what = "top_p = 1e-9";
    }
  }
  const auto kept = Support(Processed(ctx, row, params));
  if (one_hot && profile.greedy_ties_by_position && top_group.size() > 1) {
    one_hot = false;  // the engine's greedy keeps the first maximal token in its array order: one of the group
    RC_TAG("greedy tie group by position");
  }
  if (one_hot) {
    if (kept != std::vector<int32_t>{top_group.front()}) {
      RC_FAIL(what + " must be greedy: one-hot on token " + std::to_string(top_group.front()) +
              " (the lowest id with the maximal logit); kept " + std::to_string(kept.size()) + " tokens, first " +
              (kept.empty() ? std::string("none") : std::to_string(kept.front())));
    }
  } else if (whole_group) {
    if (kept != top_group) {
      RC_FAIL(what + " must keep exactly the " + std::to_string(top_group.size()) +
              " tokens tied at the maximal logit; kept " + std::to_string(kept.size()));
    }
  } else {
    const bool inside = kept.size() == 1 && Contains(top_group, kept[0]);
    if (!inside || (ctx.exact && kept[0] != top_group.front())) {
      RC_FAIL(what + " must keep exactly one token of the maximal tie group (the lowest id for the exact sampler); kept " +
              std::to_string(kept.size()) + " tokens, first " + (kept.empty() ? std::string("none") : std::to_string(kept.front())));
    }
  }
}

}  // namespace

const std::vector<PropertyDef>& DistributionProperties() {
  static const std::vector<PropertyDef> properties = {
      {{"mass-sums-to-one", "processed probabilities are finite, in [0, 1] and sum to 1",
        "not renormalized after truncation", Need::kProcessedDistribution}, MassSumsToOne},
      {{"no-mass-outside-kept-set", "no token outside the profile's kept set (ambiguous tokens allowed) has mass",
        "leaks onto masked tokens; boundary one token too many; filter order; tie groups kept when trimmed",
        Need::kProcessedDistribution}, NoMassOutsideKeptSet},
      {{"kept-set-complete", "every token the profile keeps (ambiguous tokens aside) has mass",
        "drop one token; boundary one token too few; crossing token dropped; filter order",
        Need::kProcessedDistribution}, KeptSetComplete},
      {{"nucleus-minimality", "top-p alone keeps exactly the tokens whose mass above is < top_p (profile's tie rule "
        "and strictness): the set reaches top_p and is minimal", "strict vs non-strict top-p; crossing token dropped; "
        "boundary shifted by one; tie groups at the top-p boundary", Need::kProcessedDistribution}, NucleusMinimality},
      {{"top-k-cardinality", "top-k alone keeps exactly k, or k plus the tie group (profile), the top tokens by logit",
        "one token too many / too few; tie groups at the top-k boundary trimmed or kept against the profile",
        Need::kProcessedDistribution}, TopKCardinality},
      {{"tied-tokens-identical-probability", "kept tied tokens get identical probability; a tie group is split only "
        "where the profile cuts ties by position", "tie resolution by value (collapse onto the lowest id); tie rule at "
        "each boundary", Need::kProcessedDistribution}, TiedTokensIdenticalProbability},
      {{"disabled-values-are-no-ops", "top_k -1 / 0 / V / V+1 / 2^40 give bit-identical distributions",
        "disabled values that are not no-ops (k = V treated as V - 1, k = 0 as greedy)",
        Need::kProcessedDistribution}, DisabledValuesAreNoOps},
      {{"all-filters-disabled-is-softmax", "top_k disabled, top_p = 1, min_p = 0 is the plain softmax: every alive "
        "token keeps its mass, deep tails included", "min_p = 0 as a clamp (log(max(min_p, 1e-20))); numerical "
        "floors that drop deep-tail tokens", Need::kProcessedDistribution}, AllFiltersDisabledIsSoftmax},
      {{"shift-invariance", "logits + c (exact in fp32) give the same distribution (bit-identical for exact)",
        "temperature or filters applied to raw instead of max-shifted logits; absolute thresholds on logits",
        Need::kProcessedDistribution}, ShiftInvariance},
      {{"temperature-equivalence", "logits at T equal logits / T at T = 1 (T a power of two)",
        "temperature applied after the filters instead of before; T applied twice or not at all",
        Need::kProcessedDistribution}, TemperatureEquivalence},
      {{"permutation-equivariance", "permuting the row permutes the distribution (ambiguous tokens aside)",
        "tie resolution by value / position; index arithmetic errors; per-row parameters read from the wrong row",
        Need::kProcessedDistribution}, PermutationEquivariance},
      {{"monotone-top-p", "a larger top_p never shrinks the kept set", "boundary rules; filter order (top-p on the "
        "wrong distribution)", Need::kProcessedDistribution}, MonotoneTopP},
      {{"monotone-top-k", "a larger top_k never shrinks the kept set", "filter order; off-by-one top-k",
        Need::kProcessedDistribution}, MonotoneTopK},
      {{"monotone-min-p", "a larger min_p never grows the kept set", "min-p relative to the wrong maximum; filter order",
        Need::kProcessedDistribution}, MonotoneMinP},
      {{"greedy-limits", "T below the greedy threshold is one-hot on the lowest-id maximum; min_p = 1, top_k = 1 and "
        "a tiny top_p keep the maximal tie group as the profile says", "greedy paths (k = 0 / top_p = 0 / T = 0 "
        "semantics), tie resolution of argmax", Need::kProcessedDistribution}, GreedyLimits},
  };
  return properties;
}

}  // namespace samplecheck::properties
