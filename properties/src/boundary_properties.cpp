// Properties of exact boundaries: rows on which a keep/drop decision sits exactly on a threshold, so that the
// reference marks it ambiguous (a tie group cut by position), yet some quantity of the outcome is exact for every
// engine. docs/properties.md lists them with their bug classes.
//
// exact-tie-boundary-count: a row of V = 2^n equal logits (n in 1..6; optionally a few -inf tokens, which carry no
// mass) gives every alive token probability exactly 2^-n, and every cumulative sum of those probabilities is exact
// in fp32 (and in any wider type), whatever the summation order, ascending or descending. With top_p = m / 2^n
// (1 <= m < V, exact) and no other filter, the mass above the token at position j of the sorted order is exactly
// j / 2^n, so the top-p comparison is decided exactly at j = m: a strict rule (mass above < top_p) keeps m tokens,
// a non-strict one (<=) keeps m + 1, and a pivot / keep-tied rule keeps the whole group (V). WHICH members are
// kept depends on the engine's sort (the reference marks the group ambiguous), but HOW MANY is exact. The expected
// count is the reference's own (ComputeDistribution with AmbiguousPolicy::kAsComputed: the kept tokens of positive
// probability), so the profile stays the single source of truth.
#include <algorithm>
#include <cmath>
#include <limits>
#include <sstream>

#include "property_context.h"
#include "samplecheck/reference/params.h"
#include "samplecheck/properties/generators.h"

namespace samplecheck::properties {
namespace {

std::string Num(double value) { return FormatValue(value); }

// The draws of check (b) and their false-alarm rate: a correct sampler keeps k tokens, the least likely with
// probability p_min (1/k on these rows for every profile's renormalization; taken from the reference), and misses
// at least one of them in N independent draws with probability <= k (1 - p_min)^N. N is the smallest count with
// that bound below kMissRate (k = 64, p_min = 1/64: N = 1580), and at least kMinDraws, so that a sampler that keeps
// extra tokens has draws to show them.
constexpr double kMissRate = 1e-9;
constexpr uint64_t kMinDraws = 256;

uint64_t DrawsFor(size_t kept, double p_min) {
  if (kept <= 1 || p_min >= 1.0) return kMinDraws;
  const double n = (std::log(static_cast<double>(kept)) - std::log(kMissRate)) / -std::log1p(-p_min);
  return std::max<uint64_t>(kMinDraws, static_cast<uint64_t>(std::ceil(n)));
}

// The case: V = 2^n equal logits (code / 16, |code| <= 64: |logit / T| <= 8, no overflow even without a max
// shift), `dead` extra -inf tokens at arbitrary positions, top_p = m / 2^n, T in {1, 1/2, 2}, no other filter.
Case TieBoundaryCase(const Profile& profile) {
  const int n = *rc::gen::inRange(1, 7);
  const int64_t alive = int64_t{1} << n;
  const int64_t m = *rc::gen::inRange<int64_t>(1, alive);
  const int code = *rc::gen::inRange(0, 129);  // 0, -1, 1, -2, 2, ...: shrinks to logit 0
  const float logit = static_cast<float>(code % 2 == 0 ? code / 2 : -(code + 1) / 2) / 16.0f;
  const int dead = *rc::gen::weightedOneOf<int>({{3, rc::gen::just(0)}, {1, rc::gen::inRange(1, 5)}});
  Case c;
  c.row.kind = "exact-tie-boundary";
  c.row.logits.assign(static_cast<size_t>(alive), logit);
  for (int i = 0; i < dead; ++i) {
    const auto at = *rc::gen::inRange<size_t>(0, c.row.logits.size() + 1);
    c.row.logits.insert(c.row.logits.begin() + static_cast<std::ptrdiff_t>(at), -std::numeric_limits<float>::infinity());
  }
  c.params.temperature = std::min(*rc::gen::element(1.0, 0.5, 2.0), profile.max_temperature);
  c.params.top_k = NoTopK(profile, c.row.vocab());
  c.params.top_p = std::ldexp(static_cast<double>(m), -n);  // exact: m < 2^n <= 64
  c.params.min_p = 0.0;
  c.params.seed = *gen::Seed();
  c.params.offset = *rc::gen::inRange<uint64_t>(0, uint64_t{1} << 62);
  return c;
}

// (a) with the processed_distribution capability: the number of tokens of positive processed probability is the
// reference's kept count; (b) for every sampler: N draws (DrawsFor) hit exactly that many distinct tokens. More is
// a hard failure (a token kept that no correct engine keeps, whatever its sort); fewer is a failure with
// false-alarm rate <= k (1 - p_min)^N < 1e-9 per case.
void ExactTieBoundaryCount(const Context& ctx) {
  const Case c = TieBoundaryCase(*ctx.profile);
  const Params params = gen::MakeValid(c.params, *ctx.profile);
  RC_PRE(params.top_p == c.params.top_p && params.temperature == c.params.temperature);
  RC_PRE(!gen::IsGreedy(params, *ctx.profile));
  const ProcessedDistribution reference = Reference(ctx, c.row, params, AmbiguousPolicy::kAsComputed);
  size_t expected = 0;
  double p_min = 1.0;
  for (size_t i = 0; i < reference.kept.size(); ++i) {
    if (reference.prob[i] > 0) {
      ++expected;
      p_min = std::min(p_min, static_cast<double>(reference.prob[i]));
    }
  }
  RC_ASSERT(expected >= 1u);
  const std::string rule = "profile " + std::string(ctx.profile->name) + " keeps " + std::to_string(expected) +
                           " tokens (" +
                           (ctx.profile->top_p_ties == TopPTies::kKeepTied
                                ? std::string("keep-tied: the whole group")
                                : ctx.profile->top_p_comparison == TopPComparison::kStrict
                                      ? std::string("strict: mass above < top_p")
                                      : std::string("non-strict: mass above <= top_p")) +
                           ")";
  RC_TAG(ctx.profile->top_p_ties == TopPTies::kKeepTied ? "whole group" : "cut group");

  if (ctx.caps.processed_distribution) {
    const std::vector<double> dense = Processed(ctx, c.row, params);
    const std::vector<int32_t> support = Support(dense);
    if (support.size() != expected) {
      std::string ids;
      for (int32_t t : support) ids += (ids.empty() ? "" : ", ") + std::to_string(t);
      RC_FAIL("processed distribution has " + std::to_string(support.size()) + " tokens of positive probability {" +
              ids + "}; on an exact top-p boundary (every probability and cumulative sum exact) " + rule + ": " +
              CaseText(c.row, params));
    }
  }

  const uint64_t draws = DrawsFor(expected, p_min);
  std::vector<uint64_t> histogram(static_cast<size_t>(c.row.vocab()), 0);
  uint64_t invalid = 0;
  const Status status = ctx.sampler->CountDraws(c.row.logits, params, draws, histogram, &invalid);
  if (!status.ok()) RC_FAIL("CountDraws failed: " + status.error().ToString() + " for " + CaseText(c.row, params));
  if (invalid > 0) RC_FAIL(std::to_string(invalid) + " of " + std::to_string(draws) + " draws were invalid: " + CaseText(c.row, params));
  size_t distinct = 0;
  std::string counts;
  for (size_t t = 0; t < histogram.size(); ++t) {
    if (histogram[t] == 0) continue;
    ++distinct;
    counts += (counts.empty() ? "" : ", ") + std::to_string(t) + ":" + std::to_string(histogram[t]);
  }
  if (distinct > expected) {
    RC_FAIL(std::to_string(draws) + " draws hit " + std::to_string(distinct) + " distinct tokens {" + counts +
            "}, more than the " + rule + " on an exact top-p boundary: " + CaseText(c.row, params));
  }
  if (distinct < expected) {
    const double miss = static_cast<double>(expected) * std::pow(1.0 - p_min, static_cast<double>(draws));
    RC_FAIL(std::to_string(draws) + " draws hit only " + std::to_string(distinct) + " distinct tokens {" + counts +
            "}; " + rule + " (a correct sampler misses one with probability <= " + Num(miss) + "): " +
            CaseText(c.row, params));
  }
}

}  // namespace

const std::vector<PropertyDef>& BoundaryProperties() {
  static const std::vector<PropertyDef> properties = {
      {{"exact-tie-boundary-count", "V = 2^n equal logits, top_p = m / 2^n exactly on a boundary, no other filter: "
        "the number of kept tokens (positive processed probability; distinct tokens in N draws, miss rate < 1e-9) "
        "is the reference's (m strict, m + 1 non-strict, V keep-tied), whichever members are kept",
        "boundary rules: strict vs non-strict top-p comparison (mass above < vs <= top_p) where the equality falls "
        "inside a tie group the profile cuts by position; tie groups kept / cut against the profile at the top-p "
        "boundary; one token too many / too few on an exact boundary", Need::kSample, true},
       ExactTieBoundaryCount},
  };
  return properties;
}

}  // namespace samplecheck::properties
