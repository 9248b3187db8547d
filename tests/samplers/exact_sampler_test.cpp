// The exact sampler is the reference behind the Sampler interface: its draws are InverseCdfDraw of
// ComputeDistribution with the Philox uniform, its CountDraws is ExactCountDraws, its processed distribution is the
// reference's, and the interface contract holds (invalid rows -> kInvalidToken, invalid params -> kInvalidArgument).
#include "samplecheck/samplers/exact_sampler.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <numeric>

#include "harness_test_rows.h"
#include "samplecheck/reference/distribution.h"
#include "samplecheck/reference/exact_sampler.h"
#include "samplecheck/reference/philox.h"
#include "samplecheck/reference/profile.h"

namespace samplecheck::harness {
namespace {

using testing::Describe;
using testing::GaussianRow;
using testing::Params;

std::unique_ptr<Sampler> MakeExact(const char* profile) {
  auto sampler = MakeExactSampler(profile);
  EXPECT_TRUE(sampler.ok()) << sampler.error().ToString();
  return std::move(sampler).value();
}

TEST(ExactSampler, NameAndCapabilitiesNameTheProfile) {
  auto sampler = MakeExact("vllm");
  EXPECT_EQ(sampler->Name(), "exact:vllm");
  const Capabilities caps = sampler->GetCapabilities();
  EXPECT_TRUE(caps.processed_distribution);
  EXPECT_TRUE(caps.count_draws);
  EXPECT_TRUE(caps.deterministic);
  EXPECT_EQ(caps.profile, "vllm");
}

TEST(ExactSampler, UnknownProfileIsInvalidArgumentListingProfiles) {
  auto sampler = MakeExactSampler("no-such-profile");
  ASSERT_FALSE(sampler.ok());
  EXPECT_EQ(sampler.error().code, ErrorCode::kInvalidArgument);
  EXPECT_NE(sampler.error().message.find("no-such-profile"), std::string::npos) << sampler.error().message;
  EXPECT_NE(sampler.error().message.find("vllm"), std::string::npos) << sampler.error().message;
}

// Every profile, every parameter set of the grid, a batch with a row stride: token r is the reference's inverse-CDF
// draw at (seed, offset) of row r.
TEST(ExactSampler, SampleIsInverseCdfOfReferenceDistributionForEveryProfile) {
  constexpr int64_t kVocab = 50, kStride = 64;
  for (const Profile* profile : AllProfiles()) {
    auto sampler = MakeExact(std::string(profile->name).c_str());
    std::vector<SamplingParams> params;
    for (const SamplingParams& p : testing::VllmParamGrid()) {
      if (!ValidateParams(p, *profile)) params.push_back(p);
    }
    const int64_t rows = static_cast<int64_t>(params.size());
    std::vector<float> logits(static_cast<size_t>(rows * kStride), 1e30f);  // padding is never read
    for (int64_t r = 0; r < rows; ++r) {
      const auto row = GaussianRow(kVocab, static_cast<uint32_t>(r));
      std::copy(row.begin(), row.end(), logits.begin() + r * kStride);
      params[r].seed = 1000 + r;
      params[r].offset = 3 * r;
    }
    std::vector<int32_t> tokens(params.size());
    ASSERT_TRUE(sampler->Sample({logits.data(), rows, kVocab, kStride}, params, tokens).ok());
    for (int64_t r = 0; r < rows; ++r) {
      auto dist = ComputeDistribution(LogitsView::Fp32({logits.data() + r * kStride, kVocab}), params[r], *profile);
      ASSERT_TRUE(dist.ok()) << dist.error().ToString();
      EXPECT_EQ(tokens[r], InverseCdfDraw(*dist, UniformForDraw(params[r].seed, params[r].offset)))
          << "profile " << profile->name << ", row " << r << " (GaussianRow(50, " << r << ")), params "
          << Describe(params[r]);
    }
  }
}

TEST(ExactSampler, CountDrawsIsExactCountDraws) {
  auto sampler = MakeExact("vllm");
  const auto row = GaussianRow(100, 11);
  const SamplingParams params = Params(0.9, 20, 0.9, 0.01, 5, 100);
  std::vector<uint64_t> histogram(row.size(), 0), expected(row.size(), 0);
  uint64_t invalid = 0;
  ASSERT_TRUE(sampler->CountDraws(row, params, 20000, histogram, &invalid).ok());
  ASSERT_TRUE(ExactCountDraws(LogitsView::Fp32(row), params, *FindProfile("vllm"), 20000, expected).ok());
  EXPECT_EQ(histogram, expected);
  EXPECT_EQ(invalid, 0u);
}

// The default CountDraws (batches of Sample) and the native one count the same draws.
TEST(ExactSampler, NativeCountDrawsAgreesWithBatchedSample) {
  auto sampler = MakeExact("vllm");
  const auto row = GaussianRow(64, 3);
  const SamplingParams params = Params(1.1, -1, 0.85, 0.0, 99, 12345);
  std::vector<uint64_t> native(row.size(), 0), batched(row.size(), 0);
  uint64_t invalid = 0;
  ASSERT_TRUE(sampler->CountDraws(row, params, 5000, native, &invalid).ok());
  ASSERT_TRUE(sampler->Sampler::CountDraws(row, params, 5000, batched, &invalid).ok());
  EXPECT_EQ(native, batched);
  EXPECT_EQ(invalid, 0u);
}

// SampleReplicated (the campaign's batch call): K copies of a batch with their own params, drawn as Sample draws
// the copies laid out one after another; a count of params that is not K x rows is refused.
TEST(ExactSampler, SampleReplicatedIsSampleOnTheCopies) {
  auto sampler = MakeExact("vllm");
  const auto a = GaussianRow(40, 5), b = GaussianRow(40, 6);
  std::vector<float> rows(a.begin(), a.end());
  rows.insert(rows.end(), b.begin(), b.end());
  constexpr uint64_t kCopies = 6;
  std::vector<float> copies;
  std::vector<SamplingParams> params;
  for (uint64_t k = 0; k < kCopies; ++k) {
    copies.insert(copies.end(), rows.begin(), rows.end());
    params.push_back(Params(0.9, 7, 0.9, 0.0, 3, k));
    params.push_back(Params(1.3, -1, 1.0, 0.05, 4, 100 + k));
  }
  std::vector<int32_t> replicated(params.size()), sampled(params.size());
  ASSERT_TRUE(sampler->SampleReplicated(RowBatch{rows.data(), 2, 40, 40}, kCopies, params, replicated).ok());
  ASSERT_TRUE(sampler->Sample(RowBatch{copies.data(), int64_t(params.size()), 40, 40}, params, sampled).ok());
  EXPECT_EQ(replicated, sampled);
  const Status st = sampler->SampleReplicated(RowBatch{rows.data(), 2, 40, 40}, kCopies - 1, params, replicated);
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.error().code, ErrorCode::kInvalidArgument);
  EXPECT_NE(st.error().message.find("5 copies of 2 rows need 10 params"), std::string::npos) << st.error().message;
}

// The exact sampler's own SampleReplicated (each row's table looked up once a call) and SampleRepeated draw what
// Sample draws on explicit copies: filter parameters that change from one copy to the next, a row that cannot be
// sampled, and a bad parameter in the last copy, which fails the call before any token is written.
TEST(ExactSampler, ReplicatedAndRepeatedDrawWhatSampleDrawsOnCopies) {
  auto sampler = MakeExact("vllm");
  constexpr int64_t kVocab = 33;
  const auto a = GaussianRow(kVocab, 11), c = GaussianRow(kVocab, 12);
  std::vector<float> rows(a.begin(), a.end());
  rows.resize(2 * kVocab, 0.0f);
  rows[kVocab + 4] = std::nanf("");  // row 1 cannot be sampled
  rows.insert(rows.end(), c.begin(), c.end());
  constexpr uint64_t kCopies = 7;
  std::vector<float> copies;
  std::vector<SamplingParams> params;
  for (uint64_t k = 0; k < kCopies; ++k) {
    copies.insert(copies.end(), rows.begin(), rows.end());
    params.push_back(Params(0.9, -1, k == 2 || k == 3 ? 0.5 : 0.9, 0.0, 5, k));  // copies 2, 3: another top_p
    params.push_back(Params(1.0, -1, 1.0, 0.0, 6, k));
    params.push_back(Params(k == 6 ? 0.7 : 1.2, 4, 1.0, 0.0, 7, 50 + k));  // the last copy: another temperature
  }
  std::vector<int32_t> replicated(params.size(), 123), sampled(params.size(), 456);
  ASSERT_TRUE(sampler->SampleReplicated(RowBatch{rows.data(), 3, kVocab, kVocab}, kCopies, params, replicated).ok());
  ASSERT_TRUE(sampler->Sample(RowBatch{copies.data(), int64_t(params.size()), kVocab, kVocab}, params, sampled).ok());
  EXPECT_EQ(replicated, sampled);
  for (uint64_t k = 0; k < kCopies; ++k) EXPECT_EQ(replicated[k * 3 + 1], kInvalidToken);

  std::vector<int32_t> repeated(300, 123), one_by_one(300, 456);
  const SamplingParams at = Params(0.8, 9, 0.95, 0.0, 21, 1000);
  ASSERT_TRUE(sampler->SampleRepeated(a, at, repeated).ok());
  std::vector<float> row_copies;
  std::vector<SamplingParams> row_params;
  for (uint64_t i = 0; i < repeated.size(); ++i) {
    row_copies.insert(row_copies.end(), a.begin(), a.end());
    row_params.push_back(at);
    row_params.back().offset = at.offset + i;
  }
  ASSERT_TRUE(sampler->Sample(RowBatch{row_copies.data(), int64_t(row_params.size()), kVocab, kVocab}, row_params,
                              one_by_one)
                  .ok());
  EXPECT_EQ(repeated, one_by_one);

  params.back().top_p = 1.5;  // invalid in the last copy
  std::fill(replicated.begin(), replicated.end(), 123);
  const Status st = sampler->SampleReplicated(RowBatch{rows.data(), 3, kVocab, kVocab}, kCopies, params, replicated);
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.error().code, ErrorCode::kInvalidArgument);
  EXPECT_NE(st.error().message.find("row 20"), std::string::npos) << st.error().message;
  EXPECT_NE(st.error().message.find("top_p"), std::string::npos) << st.error().message;
  EXPECT_EQ(std::count(replicated.begin(), replicated.end(), 123), std::ptrdiff_t(replicated.size()))
      << "a token was written before the call failed";
  const Status bad = sampler->SampleRepeated(a, params.back(), repeated);
  EXPECT_EQ(bad.error().code, ErrorCode::kInvalidArgument);
}

TEST(ExactSampler, ProcessedDistributionIsReferenceDense) {
  auto sampler = MakeExact("hf");
  const auto row = GaussianRow(40, 8);
  const SamplingParams params = Params(0.8, 10, 0.8, 0.05);
  auto probs = sampler->ProcessedDistribution(row, params);
  ASSERT_TRUE(probs.ok()) << probs.error().ToString();
  auto dist = ComputeDistribution(LogitsView::Fp32(row), params, *FindProfile("hf"));
  ASSERT_TRUE(dist.ok());
  EXPECT_EQ(*probs, dist->Dense());
}

TEST(ExactSampler, RowsThatCannotBeSampledGetInvalidTokenOthersAreDrawn) {
  auto sampler = MakeExact("vllm");
  constexpr int64_t kVocab = 8;
  std::vector<float> logits(3 * kVocab, 0.0f);
  logits[kVocab + 2] = std::nanf("");                                              // row 1: a NaN
  std::fill(logits.begin() + 2 * kVocab, logits.end(), testing::kNegInf);          // row 2: every logit -inf
  std::vector<SamplingParams> params(3, Params(1.0, -1, 1.0, 0.0));
  std::vector<int32_t> tokens(3, 123);
  ASSERT_TRUE(sampler->Sample({logits.data(), 3, kVocab, kVocab}, params, tokens).ok());
  EXPECT_GE(tokens[0], 0);
  EXPECT_LT(tokens[0], kVocab);
  EXPECT_EQ(tokens[1], kInvalidToken);
  EXPECT_EQ(tokens[2], kInvalidToken);

  std::vector<uint64_t> histogram(kVocab, 0);
  uint64_t invalid = 0;
  ASSERT_TRUE(sampler->CountDraws({logits.data() + kVocab, kVocab}, params[1], 77, histogram, &invalid).ok());
  EXPECT_EQ(invalid, 77u);
  EXPECT_EQ(std::accumulate(histogram.begin(), histogram.end(), uint64_t{0}), 0u);
}

TEST(ExactSampler, InvalidParamsFailTheWholeCallBeforeAnyDraw) {
  auto sampler = MakeExact("vllm");
  const auto row = GaussianRow(16, 1);
  std::vector<float> logits(row);
  logits.insert(logits.end(), row.begin(), row.end());
  std::vector<SamplingParams> params = {Params(1.0, -1, 1.0, 0.0), Params(1.0, -1, 0.0, 0.0)};  // top_p = 0: invalid
  std::vector<int32_t> tokens(2, 123);
  Status st = sampler->Sample({logits.data(), 2, 16, 16}, params, tokens);
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.error().code, ErrorCode::kInvalidArgument);
  EXPECT_NE(st.error().message.find("row 1"), std::string::npos) << st.error().message;
  EXPECT_NE(st.error().message.find("top_p"), std::string::npos) << st.error().message;
  EXPECT_EQ(tokens[0], 123) << "a row was drawn before the call failed";

  std::vector<uint64_t> histogram(16, 0);
  EXPECT_EQ(sampler->CountDraws(row, params[1], 10, histogram, nullptr).error().code, ErrorCode::kInvalidArgument);
  EXPECT_EQ(sampler->ProcessedDistribution(row, params[1]).error().code, ErrorCode::kInvalidArgument);
}

TEST(ExactSampler, MismatchedSpansAreInvalidArgument) {
  auto sampler = MakeExact("vllm");
  const auto row = GaussianRow(16, 1);
  std::vector<SamplingParams> params(2);
  std::vector<int32_t> tokens(1);
  EXPECT_EQ(sampler->Sample({row.data(), 1, 16, 16}, params, tokens).error().code, ErrorCode::kInvalidArgument);
  std::vector<uint64_t> histogram(15, 0);
  EXPECT_EQ(sampler->CountDraws(row, params[0], 1, histogram, nullptr).error().code, ErrorCode::kInvalidArgument);
}

}  // namespace
}  // namespace samplecheck::harness
