// Chain speculative sampling in the reference (speculative.h): the laws on a worked example, the emitted marginal
// equal to p on random rows and every profile's filters, the verifier checked deterministically with stratified
// (scripted) uniforms, the coin edge, greedy rules, the Philox discipline, several drafts per position, bad input.
#include "samplecheck/reference/speculative.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "samplecheck/reference/exact_sampler.h"
#include "samplecheck/reference/philox.h"
#include "test_rows.h"

namespace samplecheck {
namespace {

using testing::LogitsOf;
using testing::Params;

// The input keeps views of the rows: they must outlive it (a temporary only within one full expression).
ChainInput Input(const std::vector<std::vector<float>>& target, const std::vector<std::vector<float>>& draft_probs,
                 const SamplingParams& params, const char* profile = "vllm") {
  ChainInput in;
  for (const auto& row : target) in.target.push_back(LogitsView::Fp32(row));
  for (const auto& row : draft_probs) in.draft_rows.emplace_back(row);
  in.params = params;
  in.profile = FindProfile(profile);
  in.draft_form = DraftForm::kProbabilities;
  return in;
}

TEST(SpeculativeLaws, WorkedExample) {
  const std::vector<float> target = LogitsOf({0.5, 0.3, 0.2});
  const std::vector<float> draft{0.2f, 0.3f, 0.5f};
  Result<ChainLaws> laws = ComputeChainLaws(Input({target, target}, {draft}, Params(1, -1, 1, 0)));
  ASSERT_TRUE(laws.ok()) << laws.error().message;
  const PositionLaw& law = laws->positions[0];
  EXPECT_NEAR(double(law.beta), 0.7, 1e-6);  // 0.2 + 0.3 + 0.2
  EXPECT_NEAR(double(law.residual_mass), 0.3, 1e-6);
  ASSERT_EQ(law.residual.tokens, std::vector<int32_t>({0}));  // only p(0) > q(0)
  EXPECT_NEAR(double(laws->length_law[0]), 0.3, 1e-6);
  EXPECT_NEAR(double(laws->length_law[1]), 0.7, 1e-6);
  EXPECT_NEAR(double(laws->reach[1]), 0.7, 1e-6);
  for (int32_t t = 0; t < 3; ++t) EXPECT_NEAR(double(law.emitted.Prob(t)), double(law.p.Prob(t)), 1e-15);
}

// For random rows, every profile's filters and drafts near and far: emitted == p, beta == 1 - TV, the length law
// sums to 1.
TEST(SpeculativeLaws, EmittedMarginalIsTheTargetForEveryProfile) {
  std::mt19937 rng(5);
  std::normal_distribution<float> normal(0.0f, 2.0f);
  std::uniform_real_distribution<float> uniform(0.0f, 1.0f);
  for (const Profile* profile : AllProfiles()) {
    for (const SamplingParams& params : {Params(1, -1, 1, 0), Params(0.7, 20, 0.9, 0.02), Params(0, -1, 1, 0)}) {
      if (ValidateParams(params, *profile)) continue;
      const int g = 3;
      std::vector<std::vector<float>> target(g + 1, std::vector<float>(64)), draft(g, std::vector<float>(64));
      for (auto& row : target) for (float& x : row) x = normal(rng);
      for (auto& row : draft) {
        double total = 0;
        for (float& x : row) total += (x = uniform(rng) < 0.3f ? 0.0f : uniform(rng));
        for (float& x : row) x = static_cast<float>(x / total);
      }
      Result<ChainLaws> laws = ComputeChainLaws(Input(target, draft, params, profile->name.data()));
      ASSERT_TRUE(laws.ok()) << laws.error().message;
      long double length_total = 0;
      for (long double v : laws->length_law) length_total += v;
      EXPECT_NEAR(double(length_total), 1.0, 1e-15);
      for (const PositionLaw& law : laws->positions) {
        long double tv = 0;
        for (int32_t t = 0; t < 64; ++t) {
          EXPECT_NEAR(double(law.emitted.Prob(t)), double(law.p.Prob(t)), 1e-15) << profile->name << " token " << t;
          tv += std::fabs(law.p.Prob(t) - law.q.Prob(t));
        }
        EXPECT_NEAR(double(law.beta), double(1 - tv / 2), 1e-15);
      }
    }
  }
}

// VerifyChain with stratified uniforms over (draft token, coin, draw) reproduces the law up to the grid's
// resolution: a deterministic check of the verifier's arithmetic (no seed, no false alarm).
TEST(VerifyChain, StratifiedUniformsReproduceTheEmittedLawAndBeta) {
  const std::vector<float> target = LogitsOf({0.4, 0.25, 0.2, 0.1, 0.05});
  const std::vector<float> draft{0.1f, 0.5f, 0.05f, 0.3f, 0.05f};
  Result<ChainLaws> laws = ComputeChainLaws(Input({target, target}, {draft}, Params(1, -1, 1, 0)));
  ASSERT_TRUE(laws.ok());
  const PositionLaw& law = laws->positions[0];
  const int M = 400;
  std::vector<double> emitted(5, 0.0);
  double accepted = 0;
  for (int32_t x = 0; x < 5; ++x) {
    for (int i = 0; i < M; ++i) {
      for (int k = 0; k < M; ++k) {
        const std::vector<double> stream{(i + 0.5) / M, (k + 0.5) / M, 0.5, 0.5};
        Result<ChainOutcome> out = VerifyChain(*laws, std::vector<int32_t>{x}, 0, 0, {stream});
        ASSERT_TRUE(out.ok());
        const double w = double(law.q.Prob(x)) / (double(M) * M);
        emitted[static_cast<size_t>(out->emitted[0])] += w;
        accepted += out->accepted * w;
      }
    }
  }
  for (int32_t t = 0; t < 5; ++t) EXPECT_NEAR(emitted[t], double(law.p.Prob(t)), 2.0 / M) << "token " << t;
  EXPECT_NEAR(accepted, double(law.beta), 2.0 / M);
}

TEST(VerifyChain, CoinZeroNeverAcceptsAZeroProbabilityDraftAndTheEdgeRejects) {
  const std::vector<std::vector<float>> rows(2, LogitsOf({0.5, 0.5, 0.0}));  // token 2: -inf
  ChainInput in = Input(rows, {}, Params(1, -1, 1, 0));
  in.draft_form = DraftForm::kOneHot;
  in.draft_tokens = {2};
  Result<ChainLaws> laws = ComputeChainLaws(in);
  ASSERT_TRUE(laws.ok());
  for (double d : {0.0, 0.3, 0.9999}) {
    Result<ChainOutcome> out = VerifyChain(*laws, in.draft_tokens, 0, 0, {std::vector<double>{0.0, d, 0.0, 0.0}});
    ASSERT_TRUE(out.ok());
    EXPECT_EQ(out->accepted, 0);
    EXPECT_NE(out->emitted[0], 2);
  }
  // One-hot on token 0 (p = 0.5): u = 0.5 exactly is the edge p/q, rejected (u < p/q is strict); just below accepts.
  in.draft_tokens = {0};
  laws = ComputeChainLaws(in);
  ASSERT_TRUE(laws.ok());
  const double edge = double(laws->positions[0].p.Prob(0));
  Result<ChainOutcome> at = VerifyChain(*laws, in.draft_tokens, 0, 0, {std::vector<double>{edge, 0.0, 0.0, 0.0}});
  Result<ChainOutcome> below =
      VerifyChain(*laws, in.draft_tokens, 0, 0, {std::vector<double>{std::nextafter(edge, 0.0), 0.0, 0.0, 0.0}});
  ASSERT_TRUE(at.ok() && below.ok());
  EXPECT_EQ(at->accepted, 0);
  EXPECT_EQ(at->emitted[0], 1);  // the residual max(0, p - q) is token 1 alone
  EXPECT_EQ(below->accepted, 1);
}

TEST(VerifyChain, GreedyTargetAcceptsExactlyTheArgmaxWhateverTheCoin) {
  const std::vector<std::vector<float>> rows(2, std::vector<float>{1.0f, 3.0f, 3.0f, 0.5f});  // tied maxima: id 1
  for (int32_t x = 0; x < 4; ++x) {
    ChainInput in = Input(rows, {}, Params(0, -1, 1, 0));
    in.draft_form = DraftForm::kOneHot;
    in.draft_tokens = {x};
    Result<ChainLaws> laws = ComputeChainLaws(in);
    ASSERT_TRUE(laws.ok());
    for (double u : {0.0, 0.5, 0.999}) {
      Result<ChainOutcome> out = VerifyChain(*laws, in.draft_tokens, 0, 0, {std::vector<double>{u, u, u, u}});
      ASSERT_TRUE(out.ok());
      EXPECT_EQ(out->accepted, x == 1 ? 1 : 0);
      EXPECT_EQ(out->emitted[0], 1);
      if (x == 1) {
        EXPECT_EQ(out->emitted[1], 1);
      }
    }
  }
}

TEST(VerifyChain, PhiloxDisciplineAndGZeroIsTheExactSampler) {
  const std::vector<std::vector<float>> rows(1, LogitsOf({0.3, 0.3, 0.2, 0.1, 0.1}));
  for (uint64_t offset : {0ull, 7ull, (1ull << 32) - 1}) {
    EXPECT_EQ(SpecDrawUniform(42, offset, 3), UniformForDraw(42, offset + 2));
    const double coin = SpecCoin(42, offset, 1);
    EXPECT_GT(coin, 0.0);
    EXPECT_LT(coin, 1.0);
    EXPECT_NE(coin, UniformForDraw(42, offset));
    ChainInput in = Input(rows, {}, Params(1, -1, 1, 0));
    Result<ChainLaws> laws = ComputeChainLaws(in);
    ASSERT_TRUE(laws.ok());
    Result<ChainOutcome> out = VerifyChain(*laws, {}, 42, offset);
    ASSERT_TRUE(out.ok());
    EXPECT_EQ(out->emitted[0], InverseCdfDraw(laws->bonus, UniformForDraw(42, offset)));
  }
}

TEST(MultiDraft, EmittedLawIsTheTargetAndVerifierMatchesIt) {
  SparseDistribution p{{0, 1, 2, 3}, {0.4L, 0.3L, 0.2L, 0.1L}};
  SparseDistribution q{{0, 1, 2, 3}, {0.1L, 0.1L, 0.4L, 0.4L}};
  const MultiDraftLaw law = ComputeMultiDraftLaw(p, q, 3);
  for (int32_t t = 0; t < 4; ++t) EXPECT_NEAR(double(law.emitted.Prob(t)), double(p.Prob(t)), 1e-15);
  // Two children, stratified: emitted law within the grid's resolution. Each coin is one threshold (midpoint grid:
  // off by at most 1/(2M) each, 1/M for two), a token's draw interval has two ends (1/D): 1/40 + 1/64 < 0.045.
  const MultiDraftLaw two = ComputeMultiDraftLaw(p, q, 2);
  const int M = 40, D = 64;
  std::vector<double> emitted(4, 0.0);
  for (int32_t a = 0; a < 4; ++a) {
    for (int32_t b = 0; b < 4; ++b) {
      for (int i = 0; i < M; ++i) {
        for (int k = 0; k < M; ++k) {
          for (int d = 0; d < D; ++d) {
            const std::vector<int32_t> children{a, b};
            const std::vector<double> coins{(i + 0.5) / M, (k + 0.5) / M};
            Result<MultiDraftOutcome> out = VerifyMultiDraft(two, q, children, coins, (d + 0.5) / D);
            ASSERT_TRUE(out.ok());
            emitted[static_cast<size_t>(out->token)] += double(q.Prob(a) * q.Prob(b)) / (double(M) * M * D);
          }
        }
      }
    }
  }
  for (int32_t t = 0; t < 4; ++t) EXPECT_NEAR(emitted[t], double(p.Prob(t)), 0.045) << "token " << t;
}

TEST(SpeculativeLaws, BadInputIsAnErrorNamingTheValue) {
  const std::vector<float> target = LogitsOf({0.5, 0.5});
  Result<ChainLaws> sum = ComputeChainLaws(Input({target, target}, {{0.9f, 0.6f}}, Params(1, -1, 1, 0)));
  ASSERT_FALSE(sum.ok());
  EXPECT_NE(sum.error().message.find("sum to"), std::string::npos) << sum.error().message;
  Result<ChainLaws> shape = ComputeChainLaws(Input({target, target}, {}, Params(1, -1, 1, 0)));
  ASSERT_FALSE(shape.ok());
  EXPECT_NE(shape.error().message.find("needs g = 1 rows"), std::string::npos) << shape.error().message;
  Result<ChainLaws> laws = ComputeChainLaws(Input({target, target}, {{1.0f, 0.0f}}, Params(1, -1, 1, 0)));
  ASSERT_TRUE(laws.ok());
  Result<ChainOutcome> zero = VerifyChain(*laws, std::vector<int32_t>{1}, 0, 0);
  ASSERT_FALSE(zero.ok());
  EXPECT_NE(zero.error().message.find("draft probability 0"), std::string::npos);
  Result<ChainOutcome> coin = VerifyChain(*laws, std::vector<int32_t>{0}, 0, 0, {std::vector<double>{1.0, 0, 0, 0}});
  ASSERT_FALSE(coin.ok());
  EXPECT_NE(coin.error().message.find("allowed: [0, 1)"), std::string::npos);
}

}  // namespace
}  // namespace samplecheck
