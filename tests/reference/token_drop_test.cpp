// ExplainTokenDrop: which stage of a profile's own pipeline drops a token, with the numbers it compared, on the
// discriminating vectors of docs/semantics.md where the profile families disagree (the order of the filters, what
// top-p sees, the temperature's place, the tie rules), and DescribeTokenDrop's words for each stage.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "samplecheck/reference/distribution.h"
#include "samplecheck/reference/explain.h"
#include "test_rows.h"

namespace samplecheck {
namespace {

using testing::LogitsOf;
using testing::Params;

TokenDrop Drop(const std::vector<float>& row, const SamplingParams& params, std::string_view profile, int32_t token) {
  const Profile* p = FindProfile(profile);
  EXPECT_NE(p, nullptr) << profile;
  if (p == nullptr) return {};
  Result<TokenDrop> drop = ExplainTokenDrop(LogitsView::Fp32(row), params, *p, token);
  EXPECT_TRUE(drop.ok()) << profile << " token " << token << ": " << (drop.ok() ? "" : drop.error().ToString());
  return drop.ok() ? *drop : TokenDrop{};
}

// The stage agrees with the profile's kept set (ComputeDistribution): kKept exactly for the kept tokens.
void ExpectAgreesWithKeptSet(const std::vector<float>& row, const SamplingParams& params, std::string_view profile) {
  const Profile* p = FindProfile(profile);
  ASSERT_NE(p, nullptr);
  Result<ProcessedDistribution> dist = ComputeDistribution(LogitsView::Fp32(row), params, *p);
  ASSERT_TRUE(dist.ok());
  for (int32_t t = 0; t < static_cast<int32_t>(row.size()); ++t) {
    EXPECT_EQ(Drop(row, params, profile, t).stage == DropStage::kKept, dist->IsKept(t)) << profile << " token " << t;
  }
}

// V5: [0.35, 0.25, 0.20, 0.05, 0.03 x 5], k = 4, top_p = 0.82. Top-k first then top-p on the renormalized top 4
// (vllm, flashinfer-topk-first): the mass ahead of token 3 is 0.80 / 0.85 = 0.941 >= 0.82, top-p drops it. Joint
// (flashinfer-joint): top-p sees the full p, the mass ahead of token 3 is 0.80 < 0.82, it is kept. Token 4 is rank
// 5 in every profile: top-k drops it.
TEST(TokenDrop, TopKFirstAgainstJoint) {
  const std::vector<float> row = LogitsOf({0.35, 0.25, 0.20, 0.05, 0.03, 0.03, 0.03, 0.03, 0.03});
  const SamplingParams params = Params(1, 4, 0.82, 0);
  for (const char* profile : {"vllm", "flashinfer-topk-first"}) {
    const TokenDrop d = Drop(row, params, profile, 3);
    EXPECT_EQ(d.stage, DropStage::kTopP) << profile;
    EXPECT_NEAR(d.mass_ahead, 0.80 / 0.85, 1e-6) << profile;
    EXPECT_EQ(d.stage_input, 4) << profile;
    EXPECT_EQ(d.rank, 4) << profile;
    EXPECT_NEAR(d.reference_prob, 0.05, 1e-6) << profile;
    EXPECT_EQ(DescribeTokenDrop(d, params), "top-p drops it: the mass ahead of it is 0.941 >= top_p 0.82") << profile;
  }
  EXPECT_EQ(Drop(row, params, "flashinfer-joint", 3).stage, DropStage::kKept);
  for (const char* profile : {"vllm", "flashinfer-topk-first", "flashinfer-joint"}) {
    const TokenDrop d = Drop(row, params, profile, 4);
    EXPECT_EQ(d.stage, DropStage::kTopK) << profile;
    EXPECT_EQ(d.rank, 5) << profile;
    EXPECT_EQ(DescribeTokenDrop(d, params), "top-k 4 drops it (rank 5)") << profile;
    ExpectAgreesWithKeptSet(row, params, profile);
  }
}

// V4: [0.4, 0.3, 0.2, 0.1], top_p = 0.75, min_p = 0.3. Min-p first (vllm): token 3's p / p_max = 0.25 < 0.3, min-p
// drops it; top-p then sees [0.4, 0.3, 0.2] / 0.9 and the mass ahead of token 2 is 0.7 / 0.9 = 0.778 >= 0.75.
// Top-p first (hf: top-k, top-p, min-p): the mass ahead of token 3 on the full p is 0.9 >= 0.75, top-p drops it
// before min-p runs; token 2 (mass ahead 0.7) is kept.
TEST(TokenDrop, MinPBeforeTopPAgainstAfter) {
  const std::vector<float> row = LogitsOf({0.4, 0.3, 0.2, 0.1});
  const SamplingParams params = Params(1, -1, 0.75, 0.3);
  const TokenDrop vllm3 = Drop(row, params, "vllm", 3);
  EXPECT_EQ(vllm3.stage, DropStage::kMinP);
  EXPECT_NEAR(vllm3.ratio_to_max, 0.25, 1e-6);
  EXPECT_EQ(DescribeTokenDrop(vllm3, params), "min-p drops it: p / p_max = 0.25 < min_p 0.3");
  const TokenDrop vllm2 = Drop(row, params, "vllm", 2);
  EXPECT_EQ(vllm2.stage, DropStage::kTopP);
  EXPECT_NEAR(vllm2.mass_ahead, 0.7 / 0.9, 1e-6);
  EXPECT_EQ(vllm2.stage_input, 3);

  const TokenDrop hf3 = Drop(row, params, "hf", 3);
  EXPECT_EQ(hf3.stage, DropStage::kTopP);
  EXPECT_NEAR(hf3.mass_ahead, 0.9, 1e-6);
  EXPECT_EQ(hf3.stage_input, 4);
  EXPECT_EQ(Drop(row, params, "hf", 2).stage, DropStage::kKept);
  for (const char* profile : {"vllm", "hf", "sglang-torch", "tokenspeed", "trtllm-cuda"}) {
    ExpectAgreesWithKeptSet(row, params, profile);
  }
}

// V6: temperature before the filters (vllm) against after them (llama-cpp). [0.5, 0.375, 0.125] at T = 0.5, top_p
// 0.6: vllm's top-p sees p^2 / sum = [0.615, 0.346, 0.038] and drops token 1 (mass ahead 0.615 >= 0.6);
// llama.cpp's top-p sees the T = 1 p (mass ahead 0.5) and keeps it. The reference probability is the row's at T in
// both: 0.346.
TEST(TokenDrop, TemperaturePlacement) {
  const std::vector<float> row = LogitsOf({0.5, 0.375, 0.125});
  const SamplingParams params = Params(0.5, -1, 0.6, 0);
  const TokenDrop vllm = Drop(row, params, "vllm", 1);
  EXPECT_EQ(vllm.stage, DropStage::kTopP);
  EXPECT_NEAR(vllm.mass_ahead, 0.25 / 0.40625, 1e-6);
  EXPECT_NEAR(vllm.reference_prob, 0.140625 / 0.40625, 1e-6);
  const TokenDrop llama = Drop(row, params, "llama-cpp", 1);
  EXPECT_EQ(llama.stage, DropStage::kKept);
  EXPECT_NEAR(llama.reference_prob, 0.140625 / 0.40625, 1e-6);
  EXPECT_EQ(Drop(row, params, "llama-cpp", 2).stage, DropStage::kTopP);
}

// V2: four tied tokens, k = 2. Tie-keeping profiles (vllm) keep all four; exact-k profiles (sglang-torch,
// tokenspeed) keep the two lowest ids and trim tokens 2 and 3 from the k-th token's tie group.
TEST(TokenDrop, TopKTies) {
  const std::vector<float> row = LogitsOf({0.25, 0.25, 0.25, 0.25});
  const SamplingParams params = Params(1, 2, 1.0, 0);
  EXPECT_EQ(Drop(row, params, "vllm", 3).stage, DropStage::kKept);
  for (const char* profile : {"sglang-torch", "tokenspeed"}) {
    const TokenDrop d = Drop(row, params, profile, 3);
    EXPECT_EQ(d.stage, DropStage::kTopK) << profile;
    EXPECT_TRUE(d.top_k_tied) << profile;
    EXPECT_EQ(DescribeTokenDrop(d, params), "top-k 2 drops it (rank 4, tied with rank 2 and trimmed by id)");
  }
}

// V2': [0.4, 0.3, 0.3], top_p = 0.5: a sort-based profile (vllm) cuts the tie group of tokens 1 and 2 by position;
// the pivot profile (flashinfer-topk-first) keeps the whole group.
TEST(TokenDrop, TopPTies) {
  const std::vector<float> row = LogitsOf({0.4, 0.3, 0.3});
  const SamplingParams params = Params(1, -1, 0.5, 0);
  const TokenDrop vllm = Drop(row, params, "vllm", 2);
  EXPECT_EQ(vllm.stage, DropStage::kTopP);
  EXPECT_NEAR(vllm.mass_ahead, 0.7, 1e-6);
  EXPECT_EQ(Drop(row, params, "flashinfer-topk-first", 2).stage, DropStage::kKept);
}

TEST(TokenDrop, NoWeightGreedyAndErrors) {
  const float minus_inf = -std::numeric_limits<float>::infinity();
  const std::vector<float> row = {1.0f, 0.5f, minus_inf};
  const TokenDrop masked = Drop(row, Params(1, -1, 1.0, 0), "vllm", 2);
  EXPECT_EQ(masked.stage, DropStage::kNoWeight);
  EXPECT_EQ(masked.reference_prob, 0.0);
  EXPECT_EQ(Drop(row, Params(1, -1, 0.9, 0), "vllm", 2).stage, DropStage::kNoWeight);

  const TokenDrop greedy = Drop(row, Params(0, -1, 1.0, 0), "vllm", 1);
  EXPECT_EQ(greedy.stage, DropStage::kGreedy);
  EXPECT_EQ(greedy.greedy_token, 0);
  EXPECT_EQ(DescribeTokenDrop(greedy, Params(0, -1, 1.0, 0)), "the greedy path keeps token 0 alone");
  EXPECT_EQ(Drop(row, Params(0, -1, 1.0, 0), "vllm", 0).stage, DropStage::kKept);

  const Profile& vllm = *FindProfile("vllm");
  Result<TokenDrop> outside = ExplainTokenDrop(LogitsView::Fp32(row), Params(1, -1, 1.0, 0), vllm, 3);
  ASSERT_FALSE(outside.ok());
  EXPECT_EQ(outside.error().code, ErrorCode::kInvalidArgument);
  EXPECT_NE(outside.error().message.find("token 3 is outside the row's vocabulary [0, 3)"), std::string::npos);
  Result<TokenDrop> invalid = ExplainTokenDrop(LogitsView::Fp32(row), Params(1, -1, 1.5, 0), vllm, 0);
  EXPECT_FALSE(invalid.ok());
}

}  // namespace
}  // namespace samplecheck
