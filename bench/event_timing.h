// CUDA-event timing shared by the comparison benchmarks (sampler_compare.cu, verify_chain_compare.cu): `warmup`
// untimed calls, then `iters` calls each between two events; the median, p10 and p90 in microseconds. A CUDA error
// ends the process with its name (a benchmark has no one to return it to). Header-only.
#pragma once

#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <vector>

namespace samplecheck::bench {

#define SC_BENCH_CHECK_CUDA(call)                                                                \
  do {                                                                                           \
    const cudaError_t e_ = (call);                                                               \
    if (e_ != cudaSuccess) {                                                                     \
      std::fprintf(stderr, "%s:%d %s: %s\n", __FILE__, __LINE__, #call, cudaGetErrorString(e_)); \
      std::exit(1);                                                                              \
    }                                                                                            \
  } while (0)

struct Stats {
  double median, p10, p90;  // microseconds
};

inline Stats Summarize(std::vector<float> ms) {
  std::sort(ms.begin(), ms.end());
  auto at = [&](double q) { return 1e3 * ms[std::min(ms.size() - 1, static_cast<size_t>(q * ms.size()))]; };
  return {at(0.5), at(0.1), at(0.9)};
}

// Events around each call of fn (which enqueues on stream).
inline Stats TimeCalls(cudaStream_t stream, int warmup, int iters, const std::function<void()>& fn) {
  cudaEvent_t a, b;
  SC_BENCH_CHECK_CUDA(cudaEventCreate(&a));
  SC_BENCH_CHECK_CUDA(cudaEventCreate(&b));
  for (int i = 0; i < warmup; ++i) fn();
  SC_BENCH_CHECK_CUDA(cudaStreamSynchronize(stream));
  std::vector<float> ms;
  for (int i = 0; i < iters; ++i) {
    SC_BENCH_CHECK_CUDA(cudaEventRecord(a, stream));
    fn();
    SC_BENCH_CHECK_CUDA(cudaEventRecord(b, stream));
    SC_BENCH_CHECK_CUDA(cudaEventSynchronize(b));
    float t = 0;
    SC_BENCH_CHECK_CUDA(cudaEventElapsedTime(&t, a, b));
    ms.push_back(t);
  }
  SC_BENCH_CHECK_CUDA(cudaGetLastError());
  cudaEventDestroy(a);
  cudaEventDestroy(b);
  return Summarize(std::move(ms));
}

}  // namespace samplecheck::bench
