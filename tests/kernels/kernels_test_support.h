// Shared helpers of the kernels GPU tests: device buffers, random rows, the reference's processed distribution.
#pragma once

#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <algorithm>
#include <cstdlib>
#include <string>
#include <vector>

#include "samplecheck/kernels/param_columns.h"
#include "samplecheck/kernels/sampling.h"
#include "samplecheck/reference/distribution.h"
#include "samplecheck/reference/params.h"

namespace samplecheck::kernels::testing {

bool HaveDevice();
// SAMPLECHECK_UNDER_SANITIZER=1: compute-sanitizer runs the program; tests use smaller sizes.
bool UnderSanitizer();

#define SKIP_WITHOUT_DEVICE() \
  if (!::samplecheck::kernels::testing::HaveDevice()) GTEST_SKIP() << "no CUDA device (run scripts/gpu-test on the device machine)"

#define ASSERT_CUDA(call) ASSERT_EQ((call), cudaSuccess) << #call
#define ASSERT_KOK(call)                         \
  do {                                           \
    const ::samplecheck::kernels::Status sc_st = (call); \
    ASSERT_TRUE(sc_st.ok()) << #call << ": " << sc_st.message; \
  } while (0)

template <class T>
class DeviceArray {
 public:
  explicit DeviceArray(size_t n) : n_(n) {
    if (cudaMalloc(reinterpret_cast<void**>(&ptr_), std::max<size_t>(n, 1) * sizeof(T)) != cudaSuccess) ptr_ = nullptr;
  }
  explicit DeviceArray(const std::vector<T>& host) : DeviceArray(host.size()) { Upload(host); }
  ~DeviceArray() {
    if (ptr_) cudaFree(ptr_);
  }
  DeviceArray(const DeviceArray&) = delete;
  DeviceArray& operator=(const DeviceArray&) = delete;
  T* get() const { return ptr_; }
  size_t size() const { return n_; }
  void Upload(const std::vector<T>& host) { cudaMemcpy(ptr_, host.data(), host.size() * sizeof(T), cudaMemcpyHostToDevice); }
  std::vector<T> Download() const {
    std::vector<T> host(n_);
    cudaMemcpy(host.data(), ptr_, n_ * sizeof(T), cudaMemcpyDeviceToHost);
    return host;
  }

 private:
  T* ptr_ = nullptr;
  size_t n_;
};

// Logits ~ N(0, sigma^2), seeded; `tie_step` > 0 rounds them to multiples of it (heavy ties).
std::vector<float> RandomLogits(int64_t n, double sigma, uint64_t seed, double tie_step = 0.0);

// Named parameter sets of the benchmark grid and a few more.
struct NamedParams {
  std::string name;
  samplecheck::SamplingParams params;
};
std::vector<NamedParams> ParamGrid();

// Filter parameters (seed and offset 0).
samplecheck::SamplingParams MakeParams(double temperature, int64_t top_k, double top_p, double min_p = 0.0);

// ComputeProcessedDistribution of `rows` contiguous fp32 rows (host), scalar params, downloaded.
struct ProcessedRows {
  std::vector<float> probs, logprobs, masked;
  std::vector<int32_t> status;
};
ProcessedRows RunProcessed(const std::vector<float>& logits, int64_t rows, int64_t vocab,
                           const samplecheck::SamplingParams& p, Profile profile);

samplecheck::SamplingParams WithRng(samplecheck::SamplingParams p, uint64_t seed, uint64_t offset);
kernels::SamplingParams ToKernelParams(const samplecheck::SamplingParams& p);
std::string Describe(const samplecheck::SamplingParams& p);

// The reference distribution of an fp32 row (fails the test on error).
samplecheck::ProcessedDistribution Reference(const std::vector<float>& row, const samplecheck::SamplingParams& p,
                                             const std::string& profile,
                                             samplecheck::AmbiguousPolicy policy = samplecheck::AmbiguousPolicy::kAsComputed);

// Samples `rows` contiguous fp32 rows (host) with per-row params on the device.
struct SampleResult {
  std::vector<int32_t> tokens;
  std::vector<int32_t> status;
};
SampleResult SampleRows(const std::vector<float>& logits, int64_t rows, int64_t vocab,
                        const std::vector<samplecheck::SamplingParams>& params, Profile profile);

inline Profile ProfileOf(const std::string& name) {
  Profile p = Profile::kVllm;
  ParseProfile(name, &p);
  return p;
}

}  // namespace samplecheck::kernels::testing
