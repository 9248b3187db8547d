#include "kernels_test_support.h"

#include <cmath>
#include <random>
#include <sstream>

#include "samplecheck/reference/logits.h"
#include "samplecheck/reference/profile.h"

namespace samplecheck::kernels::testing {

bool HaveDevice() {
  int count = 0;
  return cudaGetDeviceCount(&count) == cudaSuccess && count > 0;
}

bool UnderSanitizer() {
  const char* v = std::getenv("SAMPLECHECK_UNDER_SANITIZER");
  return v != nullptr && std::string(v) == "1";
}

std::vector<float> RandomLogits(int64_t n, double sigma, uint64_t seed, double tie_step) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> normal(0.0, sigma);
  std::vector<float> row(static_cast<size_t>(n));
  for (auto& x : row) {
    double v = normal(rng);
    if (tie_step > 0) v = std::round(v / tie_step) * tie_step;
    x = static_cast<float>(v);
  }
  return row;
}

samplecheck::SamplingParams MakeParams(double temperature, int64_t top_k, double top_p, double min_p) {
  samplecheck::SamplingParams sp;
  sp.temperature = temperature;
  sp.top_k = top_k;
  sp.top_p = top_p;
  sp.min_p = min_p;
  return sp;
}

ProcessedRows RunProcessed(const std::vector<float>& logits, int64_t rows, int64_t vocab,
                           const samplecheck::SamplingParams& p, Profile profile) {
  DeviceArray<float> d_logits(logits), d_probs(rows * vocab), d_logprobs(rows * vocab), d_masked(rows * vocab);
  DeviceArray<int32_t> d_status(rows);
  LogitsBatch lb;
  lb.data = d_logits.get();
  lb.vocab = vocab;
  lb.batch = rows;
  ProcessedOutputs out;
  out.probs = d_probs.get();
  out.logprobs = d_logprobs.get();
  out.masked_logits = d_masked.get();
  out.row_status = d_status.get();
  const Status st = ComputeProcessedDistribution(lb, ToKernelParams(p), profile, out, nullptr);
  EXPECT_TRUE(st.ok()) << st.message;
  EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  return {d_probs.Download(), d_logprobs.Download(), d_masked.Download(), d_status.Download()};
}

std::vector<NamedParams> ParamGrid() {
  const auto make = [](double t, int64_t k, double p, double m) { return MakeParams(t, k, p, m); };
  return {
      {"none", make(1.0, -1, 1.0, 0.0)},
      {"top_k_50", make(1.0, 50, 1.0, 0.0)},
      {"top_p_0.9", make(1.0, -1, 0.9, 0.0)},
      {"min_p_0.05", make(1.0, -1, 1.0, 0.05)},
      {"top_k_50_top_p_0.9", make(1.0, 50, 0.9, 0.0)},
      {"all_T0.7_k200_p0.8_minp0.02", make(0.7, 200, 0.8, 0.02)},
      {"T1.5_top_p_0.5_min_p_0.1", make(1.5, 0, 0.5, 0.1)},
  };
}

samplecheck::SamplingParams WithRng(samplecheck::SamplingParams p, uint64_t seed, uint64_t offset) {
  p.seed = seed;
  p.offset = offset;
  return p;
}

kernels::SamplingParams ToKernelParams(const samplecheck::SamplingParams& p) { return kernels::ScalarParams(p); }

std::string Describe(const samplecheck::SamplingParams& p) {
  std::ostringstream os;
  os.precision(17);
  os << "{T=" << p.temperature << ", top_k=" << p.top_k << ", top_p=" << p.top_p << ", min_p=" << p.min_p
     << ", seed=" << p.seed << ", offset=" << p.offset << "}";
  return os.str();
}

samplecheck::ProcessedDistribution Reference(const std::vector<float>& row, const samplecheck::SamplingParams& p,
                                             const std::string& profile, samplecheck::AmbiguousPolicy policy) {
  const samplecheck::Profile* prof = samplecheck::FindProfile(profile);
  EXPECT_NE(prof, nullptr) << profile;
  samplecheck::ReferenceOptions options;
  options.ambiguous = policy;
  auto dist = samplecheck::ComputeDistribution(samplecheck::LogitsView::Fp32(row), p, *prof, options);
  EXPECT_TRUE(dist.ok()) << (dist.ok() ? "" : dist.error().ToString());
  return dist.ok() ? *dist : samplecheck::ProcessedDistribution{};
}

SampleResult SampleRows(const std::vector<float>& logits, int64_t rows, int64_t vocab,
                        const std::vector<samplecheck::SamplingParams>& params, Profile profile) {
  DeviceArray<float> d_logits(logits);
  DeviceArray<int32_t> d_tokens(rows), d_status(rows);
  EXPECT_EQ(static_cast<int64_t>(params.size()), rows);
  const kernels::ParamColumns columns = kernels::ParamColumns::FromRows(params);
  const kernels::SamplingParams kp = columns.View();
  LogitsBatch lb;
  lb.data = d_logits.get();
  lb.vocab = vocab;
  lb.batch = rows;
  const Status st = SampleFromLogits(lb, kp, profile, d_tokens.get(), d_status.get(), nullptr);
  EXPECT_TRUE(st.ok()) << st.message;
  EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  return {d_tokens.Download(), d_status.Download()};
}

}  // namespace samplecheck::kernels::testing
