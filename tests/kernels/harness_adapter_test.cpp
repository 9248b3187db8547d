// The `cuda` sampler of the harness: Sample, ProcessedDistribution and the CountDraws fast path through the
// Sampler interface, against the exact sampler.
#include <chrono>
#include <cmath>
#include <cstdio>

#include "kernels_test_support.h"
#include "samplecheck/samplers/cuda_sampler.h"
#include "samplecheck/samplers/exact_sampler.h"

namespace samplecheck::kernels::testing {
namespace {

class HarnessAdapterTest : public ::testing::TestWithParam<std::string> {};

TEST_P(HarnessAdapterTest, CudaSamplerAgreesWithExactSampler) {
  SKIP_WITHOUT_DEVICE();
  const std::string profile = GetParam();
  auto cuda = samplecheck::harness::MakeCudaSampler(profile);
  ASSERT_TRUE(cuda.ok()) << cuda.error().ToString();
  auto exact = samplecheck::harness::MakeExactSampler(profile);
  ASSERT_TRUE(exact.ok());
  EXPECT_EQ((*cuda)->Name(), "cuda:" + profile);
  EXPECT_TRUE((*cuda)->GetCapabilities().count_draws);
  const int64_t vocab = 4000, rows = 16;
  std::vector<float> logits;
  std::vector<samplecheck::SamplingParams> params;
  const auto grid = ParamGrid();
  for (int64_t r = 0; r < rows; ++r) {
    auto row = RandomLogits(vocab, 2.0, 700 + r);
    logits.insert(logits.end(), row.begin(), row.end());
    params.push_back(WithRng(grid[r % grid.size()].params, r, r));
  }
  samplecheck::harness::RowBatch batch{logits.data(), rows, vocab, vocab};
  std::vector<int32_t> got(rows), want(rows);
  ASSERT_TRUE((*cuda)->Sample(batch, params, got).ok());
  ASSERT_TRUE((*exact)->Sample(batch, params, want).ok());
  int same = 0;
  for (int64_t r = 0; r < rows; ++r) same += got[r] == want[r];
  EXPECT_GE(same, rows - 1);

  // Bad params: the same rejection as the exact sampler.
  auto bad = params;
  bad[3].top_p = 2.0;
  const samplecheck::Status st = (*cuda)->Sample(batch, bad, got);
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.error().code, samplecheck::ErrorCode::kInvalidArgument);
  EXPECT_NE(st.error().message.find("row 3: top_p = 2"), std::string::npos) << st.error().message;

  // Processed distribution within 1e-6.
  std::vector<float> row(logits.begin(), logits.begin() + vocab);
  auto pd = (*cuda)->ProcessedDistribution(row, params[2]);
  auto pe = (*exact)->ProcessedDistribution(row, params[2]);
  ASSERT_TRUE(pd.ok() && pe.ok());
  for (int64_t i = 0; i < vocab; ++i) ASSERT_NEAR((*pd)[i], (*pe)[i], 1e-6) << i;
}

// The fast path: 10^8 draws at V = 128256 (10^6 under the sanitizer), histogram total = draws; the time is printed
// (bench/ measures speed; no test asserts one).
TEST_P(HarnessAdapterTest, CountDrawsFastPathIsFast) {
  SKIP_WITHOUT_DEVICE();
  const std::string profile = GetParam();
  auto cuda = samplecheck::harness::MakeCudaSampler(profile);
  ASSERT_TRUE(cuda.ok());
  const int64_t vocab = 128256;
  const uint64_t draws = UnderSanitizer() ? 1000000 : 100000000;
  const auto row = RandomLogits(vocab, 2.0, 1);
  samplecheck::SamplingParams p;
  p.top_k = 50;
  p.top_p = 0.9;
  std::vector<uint64_t> hist(vocab, 0);
  uint64_t invalid = 0;
  const auto t0 = std::chrono::steady_clock::now();
  ASSERT_TRUE((*cuda)->CountDraws(row, p, draws, hist, &invalid).ok());
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::printf("cuda:%s CountDraws %llu draws at V=%lld: %.3f s\n", profile.c_str(),
              static_cast<unsigned long long>(draws), static_cast<long long>(vocab), seconds);
  uint64_t total = 0;
  for (uint64_t h : hist) total += h;
  EXPECT_EQ(total, draws);
  EXPECT_EQ(invalid, 0u);
}

// The batch cases' call: copies of a batch read through the row indirection (each row sent once) draw exactly what
// Sample draws on the copies made on the host (the default of the Sampler interface), token for token.
TEST_P(HarnessAdapterTest, SampleReplicatedEqualsSampleOnCopies) {
  SKIP_WITHOUT_DEVICE();
  const std::string profile = GetParam();
  auto cuda = samplecheck::harness::MakeCudaSampler(profile, 0);
  ASSERT_TRUE(cuda.ok()) << cuda.error().ToString();
  const int64_t vocab = 3000, rows = 5;
  const uint64_t replicas = 37;
  std::vector<float> logits;
  std::vector<samplecheck::SamplingParams> params;
  const auto grid = ParamGrid();
  for (int64_t r = 0; r < rows; ++r) {
    auto row = RandomLogits(vocab, 2.0, 900 + r);
    logits.insert(logits.end(), row.begin(), row.end());
  }
  for (uint64_t k = 0; k < replicas; ++k) {
    for (int64_t r = 0; r < rows; ++r) params.push_back(WithRng(grid[r % grid.size()].params, 40 + r, k));
  }
  const samplecheck::harness::RowBatch batch{logits.data(), rows, vocab, vocab};
  std::vector<int32_t> through_index(params.size()), on_copies(params.size());
  samplecheck::harness::Sampler& sampler = **cuda;
  ASSERT_TRUE(sampler.SampleReplicated(batch, replicas, params, through_index).ok());
  ASSERT_TRUE(sampler.Sampler::SampleReplicated(batch, replicas, params, on_copies).ok());
  EXPECT_EQ(through_index, on_copies);
  // A wrong count of params is refused, naming the counts.
  const samplecheck::Status st =
      sampler.SampleReplicated(batch, replicas + 1, params, through_index);
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.error().message.find("need 190 params"), std::string::npos) << st.error().message;
}

// --devices: a sampler per device; a device the host does not have is refused, naming the count.
TEST_P(HarnessAdapterTest, DeviceOutsideTheHostIsRefused) {
  SKIP_WITHOUT_DEVICE();
  auto bad = samplecheck::harness::MakeCudaSampler(GetParam(), 4096);
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().code, samplecheck::ErrorCode::kInvalidArgument);
  EXPECT_NE(bad.error().message.find("CUDA device 4096 does not exist"), std::string::npos) << bad.error().message;
}

INSTANTIATE_TEST_SUITE_P(Profiles, HarnessAdapterTest, ::testing::Values("vllm", "hf"));

}  // namespace
}  // namespace samplecheck::kernels::testing
