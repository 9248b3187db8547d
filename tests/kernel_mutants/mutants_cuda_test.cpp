// CUDA kernel mutants (label gpu; skipped without a device). Each mutant is SampleFromLogits with one fault
// (fault_sample.h); each test runs the check meant for it on the mutant and on the fault-free control
// (KernelFault::kNone), and asserts that the control passes and the mutant is caught:
//   seed-reused-across-rows   stream independence: equal tokens of adjacent rows (distinct offsets) of a
//                             high-entropy row; E ~ 0.2 under the null, fail above 8 (Poisson tail < 1e-9)
//   offset-not-advanced       the same rows at offsets 0..B-1 and B..2B-1 agree at ~0.2 positions; fail above 8
//   nan-row-token-0           NaN and all -inf rows must give kInvalidToken and status kRowInvalid
//   params-by-logits-row      support: every token inside the reference kept set of its own batch row's
//                             parameters (row_indices reversed, top_k per batch row)
//   topk-plus-one             support against the reference top-k set
//   minp-from-row-zero        Pearson X^2 (2 cells, alpha 1e-6) of the min_p = 0 rows against the full softmax
//   draw-step-mirrored        token-for-token agreement with the shipped kernel at the same (seed, offset); its
//                             law is the shipped one (Pearson, 2 cells, passes at alpha 1e-6), which is why only
//                             the campaign's agreement check can catch it
// The control must also draw token for token what SampleFromLogits draws.
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "fault_sample.h"
#include "samplecheck/kernels/param_columns.h"
#include "samplecheck/reference/distribution.h"
#include "samplecheck/stats/goodness_of_fit.h"

namespace samplecheck::kernels::test_mutants {
namespace {

bool HaveDevice() {
  int count = 0;
  return cudaGetDeviceCount(&count) == cudaSuccess && count > 0;
}

#define SKIP_WITHOUT_DEVICE() \
  if (!HaveDevice()) GTEST_SKIP() << "no CUDA device (run scripts/gpu-test on the device machine)"

template <class T>
class Device {
 public:
  explicit Device(const std::vector<T>& host) : n_(host.size()) {
    cudaMalloc(reinterpret_cast<void**>(&ptr_), std::max<size_t>(n_, 1) * sizeof(T));
    cudaMemcpy(ptr_, host.data(), n_ * sizeof(T), cudaMemcpyHostToDevice);
  }
  explicit Device(size_t n) : Device(std::vector<T>(n)) {}
  ~Device() { cudaFree(ptr_); }
  Device(const Device&) = delete;
  Device& operator=(const Device&) = delete;
  T* get() const { return ptr_; }
  std::vector<T> Download() const {
    std::vector<T> host(n_);
    cudaMemcpy(host.data(), ptr_, n_ * sizeof(T), cudaMemcpyDeviceToHost);
    return host;
  }

 private:
  T* ptr_ = nullptr;
  size_t n_;
};

// Logits ~ N(0, sigma^2) from a splitmix64 stream (Box-Muller), reproducible everywhere.
std::vector<float> GaussianRow(int64_t vocab, double sigma, uint64_t seed) {
  std::vector<float> row(static_cast<size_t>(vocab));
  uint64_t s = seed;
  auto next = [&s]() {
    uint64_t z = (s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return ((z ^ (z >> 31)) >> 11) * 0x1p-53 + 0x1p-54;
  };
  for (float& x : row) x = static_cast<float>(sigma * std::sqrt(-2 * std::log(next())) * std::cos(2 * M_PI * next()));
  return row;
}

struct Batch {
  std::vector<float> logits;  // logits_rows x vocab
  int64_t vocab = 0;
  int64_t logits_rows = 0;
  std::vector<int32_t> row_indices;  // empty: identity
  ParamColumns params;  // one entry per batch row

  int64_t batch() const { return params.rows(); }
  samplecheck::SamplingParams RowParams(int64_t b) const {
    return {params.temperature[b], params.top_k[b], params.top_p[b], params.min_p[b], params.seed[b],
            params.offset[b]};
  }
  std::vector<float> LogitsOf(int64_t b) const {
    const int64_t r = row_indices.empty() ? b : row_indices[b];
    return {logits.begin() + r * vocab, logits.begin() + (r + 1) * vocab};
  }
};

// `rows` copies of `row` with identical params and offsets first_offset + b.
Batch Replicated(const std::vector<float>& row, int64_t rows, samplecheck::SamplingParams p, uint64_t first_offset) {
  Batch batch;
  batch.vocab = static_cast<int64_t>(row.size());
  batch.logits_rows = rows;
  for (int64_t b = 0; b < rows; ++b) {
    batch.logits.insert(batch.logits.end(), row.begin(), row.end());
    p.offset = first_offset + static_cast<uint64_t>(b);
    batch.params.Append(p);
  }
  return batch;
}

struct Drawn {
  std::vector<int32_t> tokens;
  std::vector<int32_t> status;
};

// fault < 0: the shipped SampleFromLogits; else the mutant kernel.
Drawn Draw(const Batch& batch, int fault) {
  Device<float> logits(batch.logits);
  Device<int32_t> indices(batch.row_indices.empty() ? std::vector<int32_t>{0} : batch.row_indices);
  Device<int32_t> tokens(static_cast<size_t>(batch.batch()));
  Device<int32_t> status(static_cast<size_t>(batch.batch()));
  LogitsBatch l;
  l.data = logits.get();
  l.vocab = batch.vocab;
  l.logits_rows = batch.logits_rows;
  l.batch = batch.batch();
  l.row_indices = batch.row_indices.empty() ? nullptr : indices.get();
  const SamplingParams p = batch.params.View();
  const Status st = fault < 0 ? SampleFromLogits(l, p, Profile::kVllm, tokens.get(), status.get(), nullptr)
                              : SampleFromLogitsWithFault(static_cast<KernelFault>(fault), l, p, Profile::kVllm,
                                                          tokens.get(), status.get(), nullptr);
  EXPECT_TRUE(st.ok()) << st.message;
  EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  return {tokens.Download(), status.Download()};
}

// Draws outside the reference kept set of each batch row's own parameters (ambiguous tokens allowed).
int64_t SupportViolations(const Batch& batch, const std::vector<int32_t>& tokens) {
  const samplecheck::Profile& vllm = *samplecheck::FindProfile("vllm");
  int64_t violations = 0;
  for (int64_t b = 0; b < batch.batch(); ++b) {
    const std::vector<float> row = batch.LogitsOf(b);
    auto dist = samplecheck::ComputeDistribution(samplecheck::LogitsView::Fp32(row), batch.RowParams(b), vllm);
    if (!dist.ok()) continue;
    const int32_t t = tokens[b];
    if (t < 0 || t >= batch.vocab || !(dist->IsKept(t) || dist->IsAmbiguous(t))) ++violations;
  }
  return violations;
}

int64_t EqualPositions(const std::vector<int32_t>& a, const std::vector<int32_t>& b, size_t shift) {
  int64_t equal = 0;
  for (size_t i = 0; i + shift < a.size() && i + shift < b.size(); ++i) equal += a[i] == b[i + shift];
  return equal;
}

constexpr int kControl = static_cast<int>(KernelFault::kNone);
constexpr int64_t kMaxCoincidences = 8;  // E ~ 0.2 under the null; P(Poisson(0.2) > 8) < 1e-9

TEST(CudaMutants, ControlDrawsWhatSampleFromLogitsDraws) {
  SKIP_WITHOUT_DEVICE();
  Batch batch = Replicated(GaussianRow(4096, 2.0, 1), 256, {0.8, 50, 0.9, 0.0, 7, 0}, 0);
  for (int64_t b = 0; b < batch.batch(); ++b) {
    batch.params.top_k[b] = b % 3 == 0 ? -1 : 10 + b;
    batch.params.min_p[b] = b % 5 == 0 ? 0.02 : 0.0;
  }
  EXPECT_EQ(Draw(batch, -1).tokens, Draw(batch, kControl).tokens);
}

TEST(CudaMutants, SeedReusedAcrossRowsIsCaughtByStreamIndependence) {
  SKIP_WITHOUT_DEVICE();
  const Batch batch = Replicated(GaussianRow(4096, 0.5, 2), 512, {1.0, -1, 1.0, 0.0, 11, 0}, 0);
  const auto control = Draw(batch, kControl).tokens;
  const auto mutant = Draw(batch, static_cast<int>(KernelFault::kSeedOfRowZero)).tokens;
  EXPECT_LE(EqualPositions(control, control, 1), kMaxCoincidences) << "control: adjacent rows agree too often";
  EXPECT_GT(EqualPositions(mutant, mutant, 1), kMaxCoincidences) << "cuda:seed-reused-across-rows survives";
}

TEST(CudaMutants, OffsetNotAdvancedIsCaughtByStreamIndependenceAcrossSteps) {
  SKIP_WITHOUT_DEVICE();
  const std::vector<float> row = GaussianRow(4096, 0.5, 3);
  const Batch step0 = Replicated(row, 512, {1.0, -1, 1.0, 0.0, 12, 0}, 0);
  const Batch step1 = Replicated(row, 512, {1.0, -1, 1.0, 0.0, 12, 0}, 512);
  const int fault = static_cast<int>(KernelFault::kOffsetNotAdvanced);
  EXPECT_LE(EqualPositions(Draw(step0, kControl).tokens, Draw(step1, kControl).tokens, 0), kMaxCoincidences);
  EXPECT_GT(EqualPositions(Draw(step0, fault).tokens, Draw(step1, fault).tokens, 0), kMaxCoincidences)
      << "cuda:offset-not-advanced survives";
}

TEST(CudaMutants, NanRowTokenZeroIsCaughtByTheInvalidRowContract) {
  SKIP_WITHOUT_DEVICE();
  std::vector<float> row = GaussianRow(256, 1.0, 4);
  Batch batch = Replicated(row, 3, {1.0, -1, 1.0, 0.0, 13, 0}, 0);
  batch.logits[256 + 17] = std::numeric_limits<float>::quiet_NaN();
  std::fill(batch.logits.begin() + 512, batch.logits.end(), -std::numeric_limits<float>::infinity());
  const Drawn control = Draw(batch, kControl);
  const Drawn mutant = Draw(batch, static_cast<int>(KernelFault::kInvalidRowToken0));
  for (int b : {1, 2}) {
    EXPECT_EQ(control.tokens[b], kInvalidToken);
    EXPECT_EQ(control.status[b], kRowInvalid);
  }
  EXPECT_TRUE(mutant.tokens[1] != kInvalidToken || mutant.tokens[2] != kInvalidToken)
      << "cuda:nan-row-token-0 survives";
}

TEST(CudaMutants, ParamsByLogitsRowIsCaughtBySupportUnderIndexIndirection) {
  SKIP_WITHOUT_DEVICE();
  Batch batch = Replicated(GaussianRow(4096, 0.5, 5), 512, {1.0, -1, 1.0, 0.0, 14, 0}, 0);
  for (int64_t b = 0; b < batch.batch(); ++b) {
    batch.row_indices.push_back(static_cast<int32_t>(batch.batch() - 1 - b));
    batch.params.top_k[b] = b < 256 ? 2 : -1;
  }
  EXPECT_EQ(SupportViolations(batch, Draw(batch, kControl).tokens), 0);
  EXPECT_GT(SupportViolations(batch, Draw(batch, static_cast<int>(KernelFault::kParamsByLogitsRow)).tokens), 0)
      << "cuda:params-by-logits-row survives";
}

TEST(CudaMutants, TopKPlusOneIsCaughtBySupport) {
  SKIP_WITHOUT_DEVICE();
  const Batch batch = Replicated(GaussianRow(1024, 1.0, 6), 4096, {1.0, 5, 1.0, 0.0, 15, 0}, 0);
  EXPECT_EQ(SupportViolations(batch, Draw(batch, kControl).tokens), 0);
  EXPECT_GT(SupportViolations(batch, Draw(batch, static_cast<int>(KernelFault::kTopKPlusOne)).tokens), 0)
      << "cuda:topk-plus-one survives";
}

TEST(CudaMutants, MinPFromRowZeroIsCaughtByPearson) {
  SKIP_WITHOUT_DEVICE();
  std::vector<float> row(64);
  for (size_t i = 0; i < row.size(); ++i) row[i] = -0.1f * static_cast<float>(i);
  Batch batch = Replicated(row, 4096, {1.0, -1, 1.0, 0.0, 16, 0}, 0);
  batch.params.min_p[0] = 0.5;
  // Two cells for the min_p = 0 rows: tokens min-p 0.5 would keep (x >= ln 0.5) and the rest, from the softmax.
  double head = 0, total = 0;
  for (float x : row) {
    total += std::exp(double(x));
    if (double(x) >= std::log(0.5)) head += std::exp(double(x));
  }
  const std::vector<double> expected = {head / total, 1 - head / total};
  auto pearson_p = [&](const std::vector<int32_t>& tokens) {
    std::vector<uint64_t> observed(2, 0);
    for (size_t b = 1; b < tokens.size(); ++b) ++observed[double(row[tokens[b]]) >= std::log(0.5) ? 0 : 1];
    const auto fit = stats::PearsonChiSquareTest(observed, expected);
    EXPECT_TRUE(fit.ok()) << fit.error().message;
    return fit.ok() ? fit->p_value : 0.0;
  };
  EXPECT_GT(pearson_p(Draw(batch, kControl).tokens), 1e-6);
  EXPECT_LT(pearson_p(Draw(batch, static_cast<int>(KernelFault::kMinPFromRowZero)).tokens), 1e-6)
      << "cuda:minp-from-row-zero survives";
}

TEST(CudaMutants, DrawMirroredKeepsTheLawButNotTheTokens) {
  SKIP_WITHOUT_DEVICE();
  const int mirrored = static_cast<int>(KernelFault::kDrawMirrored);
  // Single-block kernels (B = 4096 > SM count, no top-k): the law holds, the tokens do not.
  const std::vector<float> row = GaussianRow(4096, 2.0, 7);
  const Batch batch = Replicated(row, 4096, {1.0, -1, 1.0, 0.0, 17, 0}, 0);
  const std::vector<int32_t> shipped = Draw(batch, kControl).tokens;
  const std::vector<int32_t> mutant = Draw(batch, mirrored).tokens;
  EXPECT_LT(EqualPositions(shipped, mutant, 0), static_cast<int64_t>(mutant.size() / 8))
      << "cuda:draw-step-mirrored draws the shipped tokens";
  // Two cells: tokens whose logit is above the row's median and the rest, from the full softmax.
  std::vector<float> sorted = row;
  std::nth_element(sorted.begin(), sorted.begin() + sorted.size() / 2, sorted.end());
  const float median = sorted[sorted.size() / 2];
  double head = 0, total = 0;
  for (float x : row) {
    total += std::exp(double(x));
    if (x > median) head += std::exp(double(x));
  }
  std::vector<uint64_t> observed(2, 0);
  for (int32_t t : mutant) ++observed[row[static_cast<size_t>(t)] > median ? 0 : 1];
  const std::vector<double> expected = {head / total, 1 - head / total};
  const auto fit = stats::PearsonChiSquareTest(observed, expected);
  ASSERT_TRUE(fit.ok()) << fit.error().message;
  EXPECT_GT(fit->p_value, 1e-6) << "the mirrored draw step should keep the law";

  // Split-row kernels (a few rows of V = 128256 through index indirection, top-k 50 and top-p 0.9).
  Batch wide;
  wide.logits = GaussianRow(128256, 3.0, 8);
  wide.vocab = 128256;
  wide.logits_rows = 1;
  for (int64_t b = 0; b < 16; ++b) {
    wide.row_indices.push_back(0);
    wide.params.Append(samplecheck::SamplingParams{1.0, b % 2 == 0 ? 50 : -1, 0.9, 0.0, 18, static_cast<uint64_t>(b)});
  }
  EXPECT_LT(EqualPositions(Draw(wide, kControl).tokens, Draw(wide, mirrored).tokens, 0), 8)
      << "cuda:draw-step-mirrored draws the shipped tokens on the split-row path";
}

}  // namespace
}  // namespace samplecheck::kernels::test_mutants
