// SampleFromLogits against the reference: support containment on every draw, the same token as the exact CPU
// sampler for the same (seed, offset), batch invariance, seeded determinism, greedy, invalid rows and params,
// strided rows, index indirection, bf16/fp16 inputs and 64-bit index math.
#include <cmath>
#include <cstdio>
#include <limits>

#include "kernels_test_support.h"
#include "samplecheck/reference/exact_sampler.h"
#include "samplecheck/reference/logits.h"
#include "samplecheck/reference/philox.h"

namespace samplecheck::kernels::testing {
namespace {

constexpr float kInf = std::numeric_limits<float>::infinity();
constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();

class SampleTest : public ::testing::TestWithParam<std::string> {};

// Every draw is in the reference's kept set (ambiguous tokens counted in), and equals the exact sampler's draw
// for the same (seed, offset) except on rows with ambiguous tokens. A mismatch on an unambiguous row can only
// come from a CDF boundary within ~1e-6 of u (fp32 weights vs long double): the test accepts at most 1 in 500.
TEST_P(SampleTest, EveryDrawInKeptSetAndSameTokenAsExactSampler) {
  SKIP_WITHOUT_DEVICE();
  const std::string profile = GetParam();
  const int64_t vocab = UnderSanitizer() ? 3000 : 128256;
  const int64_t rows = UnderSanitizer() ? 4 : 24;
  int64_t compared = 0, mismatched = 0;
  for (const NamedParams& np : ParamGrid()) {
    std::vector<float> logits;
    std::vector<samplecheck::SamplingParams> params;
    for (int64_t r = 0; r < rows; ++r) {
      const double sigma = r % 3 == 0 ? 1.0 : (r % 3 == 1 ? 3.0 : 2.0);
      const double tie = r % 4 == 3 ? 0.25 : 0.0;
      auto row = RandomLogits(vocab, sigma, 1000 + r, tie);
      logits.insert(logits.end(), row.begin(), row.end());
      params.push_back(WithRng(np.params, 42 + r, 7 * r));
    }
    const SampleResult got = SampleRows(logits, rows, vocab, params, ProfileOf(profile));
    for (int64_t r = 0; r < rows; ++r) {
      std::vector<float> row(logits.begin() + r * vocab, logits.begin() + (r + 1) * vocab);
      const auto dist = Reference(row, params[r], profile);
      const int32_t token = got.tokens[r];
      ASSERT_EQ(got.status[r], kRowSampled) << np.name << " row " << r;
      ASSERT_TRUE(token >= 0 && token < vocab) << np.name << " row " << r << " token " << token;
      ASSERT_TRUE(dist.IsKept(token) || dist.IsAmbiguous(token))
          << "support violation: profile " << profile << " " << np.name << " row " << r << " token " << token
          << " params " << Describe(params[r]);
      if (!dist.ambiguous.empty()) continue;
      ++compared;
      const int32_t exact = InverseCdfDraw(dist, UniformForDraw(params[r].seed, params[r].offset));
      if (exact != token) {
        ++mismatched;
        std::printf("note (tolerated up to 1/500): %s %s row %lld: cuda %d, exact %d\n", profile.c_str(),
                    np.name.c_str(), static_cast<long long>(r), token, exact);
      }
    }
  }
  EXPECT_GT(compared, 0);
  EXPECT_LE(mismatched * 500, compared) << mismatched << " of " << compared << " draws differ from the exact sampler";
}

// A row's token depends only on its logits, params, seed and offset: alone (B=1), or at position 5 of a batch
// of 13 other rows with other params, it is the same; and the same call twice gives the same tokens.
TEST_P(SampleTest, BatchInvarianceAndSeededDeterminism) {
  SKIP_WITHOUT_DEVICE();
  const std::string profile = GetParam();
  const int64_t vocab = UnderSanitizer() ? 2000 : 32000;
  const int64_t rows = 14;
  const int trials = UnderSanitizer() ? 2 : 16;
  const auto grid = ParamGrid();
  for (int trial = 0; trial < trials; ++trial) {
    std::vector<float> logits;
    std::vector<samplecheck::SamplingParams> params;
    for (int64_t r = 0; r < rows; ++r) {
      auto row = RandomLogits(vocab, 2.0, 5000 + trial * 100 + r);
      logits.insert(logits.end(), row.begin(), row.end());
      params.push_back(WithRng(grid[(trial + r) % grid.size()].params, 9 + trial, 1000 + r));
    }
    const SampleResult batch = SampleRows(logits, rows, vocab, params, ProfileOf(profile));
    const SampleResult again = SampleRows(logits, rows, vocab, params, ProfileOf(profile));
    EXPECT_EQ(batch.tokens, again.tokens) << "trial " << trial;
    const int64_t r = 5;
    std::vector<float> alone(logits.begin() + r * vocab, logits.begin() + (r + 1) * vocab);
    const SampleResult single = SampleRows(alone, 1, vocab, {params[r]}, ProfileOf(profile));
    EXPECT_EQ(single.tokens[0], batch.tokens[r]) << "trial " << trial << " " << Describe(params[r]);
  }
}

// Temperature 0 (vllm: T < 1e-5; hf: top_p = 0 too) is greedy: the lowest id among tied maxima.
TEST_P(SampleTest, GreedyIsLowestIdAmongTiedMaxima) {
  SKIP_WITHOUT_DEVICE();
  const std::string profile = GetParam();
  const int64_t vocab = 5000;
  auto row = RandomLogits(vocab, 1.0, 77);
  row[4321] = 9.0f;
  row[1234] = 9.0f;
  row[3000] = 9.0f;
  std::vector<samplecheck::SamplingParams> params;
  samplecheck::SamplingParams p;
  p.temperature = 0.0;
  params.push_back(p);
  if (profile == "vllm") {
    p.temperature = 5e-6;
    params.push_back(p);
  } else {
    p.temperature = 1.0;
    p.top_p = 0.0;
    params.push_back(p);
  }
  std::vector<float> logits;
  for (size_t i = 0; i < params.size(); ++i) logits.insert(logits.end(), row.begin(), row.end());
  const SampleResult got = SampleRows(logits, params.size(), vocab, params, ProfileOf(profile));
  for (size_t i = 0; i < params.size(); ++i) {
    EXPECT_EQ(got.tokens[i], 1234) << Describe(params[i]);
    EXPECT_EQ(got.status[i], kRowGreedy);
    EXPECT_EQ(Reference(row, params[i], profile).kept, std::vector<int32_t>{1234});
  }
}

// NaN anywhere or every logit -inf: token -1 and kRowInvalid (greedy rows too), never token 0; the other rows of
// the batch are untouched. A +inf row keeps only its +inf tokens.
TEST_P(SampleTest, InvalidRowsGetTheInvalidMarker) {
  SKIP_WITHOUT_DEVICE();
  const std::string profile = GetParam();
  const int64_t vocab = 3000;
  std::vector<std::vector<float>> rows;
  rows.push_back(RandomLogits(vocab, 1.0, 1));
  rows.back()[17] = kNaN;  // one NaN
  rows.push_back(std::vector<float>(vocab, -kInf));  // all -inf
  rows.push_back(RandomLogits(vocab, 1.0, 2));       // valid
  rows.push_back(std::vector<float>(vocab, kNaN));   // all NaN
  rows.push_back(RandomLogits(vocab, 1.0, 3));
  rows.back()[100] = kInf;
  rows.back()[2000] = kInf;  // +inf row
  std::vector<float> logits;
  for (auto& r : rows) logits.insert(logits.end(), r.begin(), r.end());
  for (double t : {1.0, 0.0}) {
    samplecheck::SamplingParams p;
    p.temperature = t;
    p.top_p = 0.9;
    p.min_p = t > 0 ? 0.01 : 0.0;
    std::vector<samplecheck::SamplingParams> params;
    for (size_t r = 0; r < rows.size(); ++r) params.push_back(WithRng(p, 3, r));
    const SampleResult got = SampleRows(logits, rows.size(), vocab, params, ProfileOf(profile));
    for (int r : {0, 1, 3}) {
      EXPECT_EQ(got.tokens[r], kInvalidToken) << "row " << r << " T=" << t;
      EXPECT_EQ(got.status[r], kRowInvalid) << "row " << r << " T=" << t;
    }
    EXPECT_GE(got.tokens[2], 0);
    EXPECT_TRUE(got.tokens[4] == 100 || got.tokens[4] == 2000) << got.tokens[4];
  }
  // Many seeds on the +inf row: both +inf tokens, nothing else.
  std::vector<float> many;
  std::vector<samplecheck::SamplingParams> params;
  for (int i = 0; i < 64; ++i) {
    many.insert(many.end(), rows[4].begin(), rows[4].end());
    params.push_back(WithRng({}, 11, i));
  }
  const SampleResult got = SampleRows(many, 64, vocab, params, ProfileOf(profile));
  int hits100 = 0;
  for (int32_t t : got.tokens) {
    ASSERT_TRUE(t == 100 || t == 2000) << t;
    hits100 += t == 100;
  }
  EXPECT_GT(hits100, 10);
  EXPECT_LT(hits100, 54);
}

// Invalid parameters fail the call with kInvalidArgument naming the value and the range; nothing is launched
// (the poisoned output stays untouched).
TEST_P(SampleTest, InvalidParamsRejectedBeforeLaunch) {
  SKIP_WITHOUT_DEVICE();
  const std::string profile = GetParam();
  const Profile prof = ProfileOf(profile);
  const int64_t vocab = 100;
  DeviceArray<float> d_logits(RandomLogits(vocab, 1.0, 5));
  DeviceArray<int32_t> d_tokens(std::vector<int32_t>{12345});
  LogitsBatch lb;
  lb.data = d_logits.get();
  lb.vocab = vocab;
  lb.batch = 1;
  struct Bad {
    samplecheck::SamplingParams p;
    std::string expect;
  };
  std::vector<Bad> bad;
  auto with = [](auto f) {
    samplecheck::SamplingParams p;
    f(p);
    return p;
  };
  bad.push_back({with([](auto& p) { p.top_p = 1.5; }), "top_p = 1.5"});
  bad.push_back({with([](auto& p) { p.min_p = -0.1; }), "min_p = -0.10000000000000001"});
  bad.push_back({with([](auto& p) { p.top_k = -2; }), "top_k = -2"});
  bad.push_back({with([](auto& p) { p.temperature = std::nan(""); }), "temperature = nan"});
  bad.push_back({with([](auto& p) { p.temperature = -1; }), "temperature = -1"});
  if (profile == "vllm") {
    bad.push_back({with([](auto& p) { p.top_p = 0.0; }), "top_p = 0 is outside (0, 1]"});
    bad.push_back({with([](auto& p) { p.temperature = 2.5; }), "temperature = 2.5 is outside [0, 2]"});
  }
  for (const Bad& b : bad) {
    const Status st = SampleFromLogits(lb, ToKernelParams(b.p), prof, d_tokens.get(), nullptr, nullptr);
    EXPECT_EQ(st.code, ErrorCode::kInvalidArgument) << Describe(b.p);
    EXPECT_NE(st.message.find(b.expect), std::string::npos) << st.message;
    EXPECT_NE(st.message.find("profile " + profile), std::string::npos) << st.message;
    // The reference rejects the same values.
    EXPECT_TRUE(samplecheck::ValidateParams(b.p, *samplecheck::FindProfile(profile)).has_value()) << Describe(b.p);
  }
  ASSERT_CUDA(cudaDeviceSynchronize());
  EXPECT_EQ(d_tokens.Download()[0], 12345);
}

// Strided rows (padding filled with NaN, which must never be read), index indirection (a permutation with
// repeats, params indexed by batch row), an out-of-range index (kRowBadIndex), and the same tokens as the
// contiguous computation.
TEST_P(SampleTest, StridedRowsAndIndexIndirection) {
  SKIP_WITHOUT_DEVICE();
  const std::string profile = GetParam();
  const Profile prof = ProfileOf(profile);
  const int64_t vocab = UnderSanitizer() ? 1500 : 50000;
  const int64_t stride = vocab + 77;
  const int64_t logits_rows = 6;
  std::vector<float> strided(logits_rows * stride, kNaN);
  std::vector<std::vector<float>> rows;
  for (int64_t r = 0; r < logits_rows; ++r) {
    rows.push_back(RandomLogits(vocab, 2.0, 900 + r));
    std::copy(rows[r].begin(), rows[r].end(), strided.begin() + r * stride);
  }
  const std::vector<int32_t> indices = {3, 0, 5, 3, 1, 6, -1, 2};  // 6 and -1 are out of range
  const int64_t batch = indices.size();
  std::vector<samplecheck::SamplingParams> params;
  const auto grid = ParamGrid();
  for (int64_t b = 0; b < batch; ++b) params.push_back(WithRng(grid[b % grid.size()].params, 100 + b, 3 * b));
  DeviceArray<float> d_logits(strided);
  DeviceArray<int32_t> d_indices(indices), d_tokens(batch), d_status(batch);
  const kernels::ParamColumns columns = kernels::ParamColumns::FromRows(params);
  const kernels::SamplingParams kp = columns.View();
  LogitsBatch lb;
  lb.data = d_logits.get();
  lb.vocab = vocab;
  lb.row_stride = stride;
  lb.logits_rows = logits_rows;
  lb.batch = batch;
  lb.row_indices = d_indices.get();
  ASSERT_KOK(SampleFromLogits(lb, kp, prof, d_tokens.get(), d_status.get(), nullptr));
  const auto tokens = d_tokens.Download();
  const auto status = d_status.Download();
  for (int64_t b = 0; b < batch; ++b) {
    const int32_t r = indices[b];
    if (r < 0 || r >= logits_rows) {
      EXPECT_EQ(tokens[b], kInvalidToken);
      EXPECT_EQ(status[b], kRowBadIndex);
      continue;
    }
    const SampleResult contiguous = SampleRows(rows[r], 1, vocab, {params[b]}, prof);
    EXPECT_EQ(tokens[b], contiguous.tokens[0]) << "batch row " << b << " logits row " << r;
    const auto dist = Reference(rows[r], params[b], profile);
    EXPECT_TRUE(dist.IsKept(tokens[b]) || dist.IsAmbiguous(tokens[b])) << b;
  }
}

// bf16 and fp16 logits: the same tokens as the exactly widened fp32 row, inside the reference's kept set of the
// 16-bit row.
TEST_P(SampleTest, HalfPrecisionInputsMatchWidenedRows) {
  SKIP_WITHOUT_DEVICE();
  const std::string profile = GetParam();
  const Profile prof = ProfileOf(profile);
  const int64_t vocab = UnderSanitizer() ? 2000 : 151936;
  for (DType dtype : {DType::kBFloat16, DType::kFloat16}) {
    for (const NamedParams& np : ParamGrid()) {
      const auto raw = RandomLogits(vocab, 2.0, 31);
      std::vector<uint16_t> bits(vocab);
      std::vector<float> widened(vocab);
      for (int64_t i = 0; i < vocab; ++i) {
        bits[i] = dtype == DType::kBFloat16 ? samplecheck::FloatToBFloat16(raw[i]) : samplecheck::FloatToFloat16(raw[i]);
        widened[i] = dtype == DType::kBFloat16 ? samplecheck::BFloat16ToFloat(bits[i]) : samplecheck::Float16ToFloat(bits[i]);
      }
      const int64_t rows = 8;
      std::vector<uint16_t> batch_bits;
      std::vector<float> batch_wide;
      std::vector<samplecheck::SamplingParams> params;
      for (int64_t r = 0; r < rows; ++r) {
        batch_bits.insert(batch_bits.end(), bits.begin(), bits.end());
        batch_wide.insert(batch_wide.end(), widened.begin(), widened.end());
        params.push_back(WithRng(np.params, 5, 1000 * r));
      }
      DeviceArray<uint16_t> d_bits(batch_bits);
      DeviceArray<int32_t> d_tokens(rows);
      std::vector<uint64_t> offsets(rows);
      for (int64_t r = 0; r < rows; ++r) offsets[r] = params[r].offset;
      kernels::SamplingParams kp = ToKernelParams(params[0]);
      kp.offset.values = offsets.data();
      LogitsBatch lb;
      lb.dtype = dtype;
      lb.data = d_bits.get();
      lb.vocab = vocab;
      lb.batch = rows;
      ASSERT_KOK(SampleFromLogits(lb, kp, prof, d_tokens.get(), nullptr, nullptr));
      const auto tokens = d_tokens.Download();
      const SampleResult wide = SampleRows(batch_wide, rows, vocab, params, prof);
      EXPECT_EQ(tokens, wide.tokens) << np.name;
      const auto dist = Reference(widened, params[0], profile);
      for (int32_t t : tokens) EXPECT_TRUE(dist.IsKept(t) || dist.IsAmbiguous(t)) << np.name << " token " << t;
    }
  }
}

// 64-bit index math: bf16 rows of V = 2^20 with a batch of 2100 rows (2.2e9 elements, past 2^31): the last
// row, the only non-constant one, samples the same token as when it is alone.
TEST_P(SampleTest, LargeBatchTimesVocabBeyondInt32) {
  SKIP_WITHOUT_DEVICE();
  if (UnderSanitizer()) GTEST_SKIP() << "4.4 GB of logits: too slow under compute-sanitizer";
  const std::string profile = GetParam();
  const Profile prof = ProfileOf(profile);
  const int64_t vocab = kMaxVocab;
  const int64_t rows = 2100;
  uint16_t* d = nullptr;
  if (cudaMalloc(&d, rows * vocab * sizeof(uint16_t)) != cudaSuccess) GTEST_SKIP() << "not enough device memory";
  ASSERT_CUDA(cudaMemset(d, 0, rows * vocab * sizeof(uint16_t)));
  const auto raw = RandomLogits(vocab, 3.0, 4242);
  std::vector<uint16_t> last(vocab);
  for (int64_t i = 0; i < vocab; ++i) last[i] = samplecheck::FloatToBFloat16(raw[i]);
  ASSERT_CUDA(cudaMemcpy(d + (rows - 1) * vocab, last.data(), vocab * sizeof(uint16_t), cudaMemcpyHostToDevice));
  samplecheck::SamplingParams p = WithRng(ParamGrid()[4].params, 8, 8);
  DeviceArray<int32_t> d_tokens(rows);
  LogitsBatch lb;
  lb.dtype = DType::kBFloat16;
  lb.data = d;
  lb.vocab = vocab;
  lb.batch = rows;
  ASSERT_KOK(SampleFromLogits(lb, ToKernelParams(p), prof, d_tokens.get(), nullptr, nullptr));
  const auto tokens = d_tokens.Download();
  lb.data = d + (rows - 1) * vocab;
  lb.batch = 1;
  ASSERT_KOK(SampleFromLogits(lb, ToKernelParams(p), prof, d_tokens.get(), nullptr, nullptr));
  const auto alone = d_tokens.Download();
  cudaFree(d);
  EXPECT_EQ(tokens[rows - 1], alone[0]);
  EXPECT_GE(tokens[0], 0);
  EXPECT_LT(tokens[0], vocab);
}

INSTANTIATE_TEST_SUITE_P(Profiles, SampleTest, ::testing::Values("vllm", "hf"));

}  // namespace
}  // namespace samplecheck::kernels::testing
