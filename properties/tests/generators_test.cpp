// The generators' own properties (RC_GTEST_PROP): each builds what its name says, so the property suites really
// probe the boundaries they are meant to.
#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "samplecheck/properties/generators.h"
#include "samplecheck/reference/distribution.h"

namespace samplecheck::properties {
namespace {

const Profile& Vllm() { return *FindProfile("vllm"); }

bool AnyNaN(const Row& row) { return std::any_of(row.logits.begin(), row.logits.end(), [](float x) { return std::isnan(x); }); }
bool AllNegInf(const Row& row) {
  return std::all_of(row.logits.begin(), row.logits.end(), [](float x) { return x == -std::numeric_limits<float>::infinity(); });
}

RC_GTEST_PROP(Generators, ValidRowsAreSamplable, ()) {
  const Row row = *gen::ValidRow();
  RC_ASSERT(row.vocab() >= 1);
  RC_ASSERT(!AnyNaN(row));
  RC_ASSERT(!AllNegInf(row));
  RC_ASSERT(ComputeDistribution(LogitsView::Fp32(row.logits), SamplingParams{}, Vllm()).ok());
}

RC_GTEST_PROP(Generators, DyadicRowsAreExactUnderShiftAndPowerOfTwoScaling, ()) {
  const Row row = *gen::DyadicRow();
  for (float x : row.logits) {
    RC_ASSERT(std::fabs(x) <= 64.0f);
    RC_ASSERT(x * 16.0f == std::round(x * 16.0f));
    RC_ASSERT(static_cast<double>(x + 256.0f) == static_cast<double>(x) + 256.0);
    RC_ASSERT(static_cast<double>(x * 64.0f) == static_cast<double>(x) * 64.0);
  }
}

RC_GTEST_PROP(Generators, ValidParamsAreValid, ()) {
  const Profile* profile = *rc::gen::elementOf(AllProfiles());
  const Params params = *gen::ValidParams(*rc::gen::inRange<int64_t>(1, 100), *profile);
  RC_ASSERT(!ValidateParams(params, *profile));
}

RC_GTEST_PROP(Generators, TopKBoundaryTiesCutATieGroup, ()) {
  const Case c = *gen::TopKBoundaryTies(Vllm());
  std::vector<float> sorted = c.row.logits;
  std::sort(sorted.begin(), sorted.end(), std::greater<float>());
  const auto k = static_cast<size_t>(c.params.top_k);
  RC_ASSERT(k >= 1 && k < sorted.size());
  RC_ASSERT(sorted[k - 1] == sorted[k]);  // the k-th and the (k+1)-th are tied
}

RC_GTEST_PROP(Generators, TopPBoundaryTiesPutTheCrossingTokenInATieGroup, ()) {
  const Profile& profile = *FindProfile("flashinfer-topk-first");  // keeps the tie group at the top-p boundary
  const Case c = *gen::TopPBoundaryTies(profile);
  const auto dist = ComputeDistribution(LogitsView::Fp32(c.row.logits), c.params, profile);
  RC_ASSERT(dist.ok());
  // The least likely kept token has a tied partner (kept with it).
  float least = std::numeric_limits<float>::infinity();
  for (int32_t t : dist->kept) least = std::min(least, c.row.logits[static_cast<size_t>(t)]);
  RC_ASSERT(std::count(c.row.logits.begin(), c.row.logits.end(), least) >= 2);
}

RC_GTEST_PROP(Generators, OnBoundaryCasesAreAmbiguousOrDecidedByMoreThanAnUlp, ()) {
  const Case c = *rc::gen::oneOf(gen::TopPOnBoundary(Vllm()), gen::MinPOnBoundary(Vllm()));
  RC_ASSERT(!ValidateParams(c.params, Vllm()));
  const auto dist = ComputeDistribution(LogitsView::Fp32(c.row.logits), c.params, Vllm());
  RC_ASSERT(dist.ok());
  RC_CLASSIFY(!dist->ambiguous.empty(), "ambiguous");
}

RC_GTEST_PROP(Generators, BadRowsAreRejectedByTheReference, ()) {
  const Row row = *gen::BadRow();
  const auto dist = ComputeDistribution(LogitsView::Fp32(row.logits), SamplingParams{}, Vllm());
  RC_ASSERT(dist.ok() == (row.kind == "pos-inf"));
}

RC_GTEST_PROP(Generators, WideRangeRowsReachBelowTheMinPClamp, ()) {
  const Row row = *gen::WideRangeRow();
  const float top = *std::max_element(row.logits.begin(), row.logits.end());
  const float bottom = *std::min_element(row.logits.begin(), row.logits.end());
  RC_ASSERT(top - bottom >= 40.0f);  // log(1e-20) = -46: the clamp bug drops tokens this far down
}

// --no-min-p: with min_p held at 0 every generated case (the general ones and the boundary ones) has min_p = 0, and
// without it the generators do reach min_p > 0 (so the hold is what removes them). Each property resets the hold.
struct HoldMinP {
  explicit HoldMinP(bool held) { gen::SetMinPHeldAtZero(held); }
  ~HoldMinP() { gen::SetMinPHeldAtZero(false); }
};

RC_GTEST_PROP(Generators, HeldMinPIsZeroInEveryCase, ()) {
  const HoldMinP hold(true);
  RC_ASSERT(*gen::MinP() == 0.0);
  const Case c = *gen::AnyValidCase(Vllm());
  RC_ASSERT(c.params.min_p == 0.0);
}

TEST(Generators, UnheldMinPReachesPositiveValues) {
  const HoldMinP hold(false);
  int positive = 0;
  const auto cases = rc::gen::container<std::vector<Case>>(400, gen::AnyValidCase(Vllm()));
  for (const Case& c : cases(rc::Random(7), 50).value()) positive += c.params.min_p > 0.0;
  EXPECT_GT(positive, 0) << "the generators never drew min_p > 0: the --no-min-p test above would prove nothing";
}

}  // namespace
}  // namespace samplecheck::properties
