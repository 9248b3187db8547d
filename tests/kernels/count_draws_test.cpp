// CountDraws, the harness fast path: the same tokens as SampleFromLogits with offset + i (one row replicated by
// index indirection), the same histogram as the exact CPU sampler up to CDF-boundary cases, and a chi-square
// goodness-of-fit check against the reference probabilities.
#include <cmath>
#include <cstdio>

#include "kernels_test_support.h"
#include "samplecheck/reference/exact_sampler.h"
#include "samplecheck/reference/logits.h"
#include "samplecheck/reference/profile.h"
#include "samplecheck/stats/goodness_of_fit.h"

namespace samplecheck::kernels::testing {
namespace {

class CountDrawsTest : public ::testing::TestWithParam<std::string> {};

std::vector<uint64_t> DeviceCount(const std::vector<float>& row, const samplecheck::SamplingParams& p, Profile profile,
                                  uint64_t draws, int32_t* status_out = nullptr) {
  DeviceArray<float> d_row(row);
  DeviceArray<uint64_t> d_hist(std::vector<uint64_t>(row.size(), 0));
  DeviceArray<int32_t> d_status(1);
  DeviceRow dr{DType::kFloat32, d_row.get(), static_cast<int64_t>(row.size())};
  const RowParams rp{p.temperature, p.top_k, p.top_p, p.min_p, p.seed, p.offset};
  const Status st = CountDraws(dr, rp, profile, draws, d_hist.get(), d_status.get(), nullptr);
  EXPECT_TRUE(st.ok()) << st.message;
  EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  if (status_out) *status_out = d_status.Download()[0];
  return d_hist.Download();
}

// Draw i of CountDraws is exactly the token SampleFromLogits gives the row with offset + i: the row replicated
// through row_indices (all 0), offsets per batch row.
TEST_P(CountDrawsTest, SameTokensAsSampleFromLogitsWithIndexReplication) {
  SKIP_WITHOUT_DEVICE();
  const std::string profile = GetParam();
  const int64_t vocab = UnderSanitizer() ? 1000 : 128256;
  const int64_t draws = UnderSanitizer() ? 64 : 2048;
  for (const NamedParams& np : ParamGrid()) {
    const auto row = RandomLogits(vocab, 2.0, 77);
    const auto p = WithRng(np.params, 1234, 1ull << 33);
    const auto hist = DeviceCount(row, p, ProfileOf(profile), draws);
    DeviceArray<float> d_row(row);
    DeviceArray<int32_t> d_indices(std::vector<int32_t>(draws, 0)), d_tokens(draws);
    std::vector<uint64_t> offsets(draws);
    for (int64_t i = 0; i < draws; ++i) offsets[i] = p.offset + i;
    kernels::SamplingParams kp = ToKernelParams(p);
    kp.offset.values = offsets.data();
    LogitsBatch lb;
    lb.data = d_row.get();
    lb.vocab = vocab;
    lb.logits_rows = 1;
    lb.batch = draws;
    lb.row_indices = d_indices.get();
    ASSERT_KOK(SampleFromLogits(lb, kp, ProfileOf(profile), d_tokens.get(), nullptr, nullptr));
    std::vector<uint64_t> from_sample(vocab, 0);
    for (int32_t t : d_tokens.Download()) {
      ASSERT_TRUE(t >= 0 && t < vocab);
      ++from_sample[t];
    }
    EXPECT_EQ(hist, from_sample) << np.name;
  }
}

// The device histogram equals ExactCountDraws' except where u falls within ~1e-6 of a CDF boundary (fp32 weights
// vs long double): at most 1 draw in 2,000 may move, on rows without ambiguous tokens.
TEST_P(CountDrawsTest, HistogramMatchesExactCountDraws) {
  SKIP_WITHOUT_DEVICE();
  const std::string profile = GetParam();
  const int64_t vocab = UnderSanitizer() ? 1000 : 32000;
  const uint64_t draws = UnderSanitizer() ? 2000 : 200000;
  for (const NamedParams& np : ParamGrid()) {
    const auto row = RandomLogits(vocab, 1.5, 99);
    const auto p = WithRng(np.params, 77, 5);
    if (!Reference(row, p, profile).ambiguous.empty()) continue;
    const auto got = DeviceCount(row, p, ProfileOf(profile), draws);
    std::vector<uint64_t> exact(vocab, 0);
    ASSERT_TRUE(samplecheck::ExactCountDraws(samplecheck::LogitsView::Fp32(row), p,
                                             *samplecheck::FindProfile(profile), draws, exact)
                    .ok());
    uint64_t moved = 0;
    for (int64_t i = 0; i < vocab; ++i) moved += got[i] > exact[i] ? got[i] - exact[i] : 0;
    EXPECT_LE(moved * 2000, draws) << np.name << ": " << moved << " draws moved";
    if (moved) std::printf("%s %s: %llu of %llu draws moved\n", profile.c_str(), np.name.c_str(),
                           static_cast<unsigned long long>(moved), static_cast<unsigned long long>(draws));
  }
}

// Pearson chi-square of 10^6 device draws (2*10^5 under the sanitizer) against the reference probabilities,
// fixed seed. alpha = 1e-6: a correct sampler fails with probability 1e-6 (and, with the fixed seed, never
// flakes); power: a 1% skew of a 0.1-probability token moves X^2 by ~ (0.001 n)^2 / (0.1 n) = 10 at n = 10^6,
// so this check is a guard against gross errors; the harness's campaigns do the fine power.
// Assumption: every expected count >= 10 (cells below are pooled into one tail cell; asserted).
TEST_P(CountDrawsTest, ChiSquareAgainstReference) {
  SKIP_WITHOUT_DEVICE();
  const std::string profile = GetParam();
  const uint64_t draws = UnderSanitizer() ? 200000 : 1000000;
  const int64_t vocab = 1000;
  const auto row = RandomLogits(vocab, 1.0, 2024);
  for (const NamedParams& np : ParamGrid()) {
    const auto p = WithRng(np.params, 31337, 0);
    const auto dist = Reference(row, p, profile);
    const auto got = DeviceCount(row, p, ProfileOf(profile), draws);
    // Cells with expected count < 10 are pooled into one tail cell (chosen from the probabilities alone, before
    // looking at the counts); zero-probability cells stay separate so a draw there is a support violation.
    const auto dense = dist.Dense();
    std::vector<double> probs;
    std::vector<uint64_t> observed;
    double tail_p = 0;
    uint64_t tail_o = 0;
    for (int64_t i = 0; i < vocab; ++i) {
      if (dense[i] > 0 && dense[i] * static_cast<double>(draws) < 10.0) {
        tail_p += dense[i];
        tail_o += got[i];
      } else {
        probs.push_back(dense[i]);
        observed.push_back(got[i]);
      }
    }
    if (tail_p * static_cast<double>(draws) >= 10.0) {
      probs.push_back(tail_p);
      observed.push_back(tail_o);
    } else if (tail_p > 0 && !probs.empty()) {  // too small to stand alone: fold into the last positive cell
      for (size_t c = probs.size(); c-- > 0;) {
        if (probs[c] > 0) {
          probs[c] += tail_p;
          observed[c] += tail_o;
          break;
        }
      }
    }
    const auto checked = samplecheck::stats::PearsonChiSquareTest(observed, probs);
    ASSERT_TRUE(checked.ok()) << checked.error().message;
    const samplecheck::stats::GoodnessOfFit& fit = *checked;
    if (fit.dof == 0) continue;
    ASSERT_GE(fit.min_expected, 10.0) << np.name;
    EXPECT_EQ(fit.support_violations, 0u) << np.name;
    EXPECT_TRUE(fit.Passes(1e-6)) << profile << " " << np.name << ": X^2 = " << fit.statistic << ", dof "
                                  << fit.dof << ", p = " << fit.p_value;
  }
}

// Greedy and invalid rows: all draws on the greedy token; an invalid row adds nothing and reports kRowInvalid.
TEST_P(CountDrawsTest, GreedyAndInvalidRows) {
  SKIP_WITHOUT_DEVICE();
  const std::string profile = GetParam();
  auto row = RandomLogits(500, 1.0, 3);
  row[321] = 50.0f;
  samplecheck::SamplingParams p;
  p.temperature = 0.0;
  int32_t status = -7;
  auto hist = DeviceCount(row, p, ProfileOf(profile), 12345, &status);
  EXPECT_EQ(status, kRowGreedy);
  EXPECT_EQ(hist[321], 12345u);
  row[7] = std::nanf("");
  p.temperature = 1.0;
  hist = DeviceCount(row, p, ProfileOf(profile), 1000, &status);
  EXPECT_EQ(status, kRowInvalid);
  for (uint64_t h : hist) ASSERT_EQ(h, 0u);
}

INSTANTIATE_TEST_SUITE_P(Profiles, CountDrawsTest, ::testing::Values("vllm", "hf"));

}  // namespace
}  // namespace samplecheck::kernels::testing
