// The read+write floor of docs/performance.md: device-to-device copy bandwidth, measured once per benchmark run
// (1 GiB copied 12 times, the first 2 discarded, the median of the rest). Header-only: both benchmarks include it.
#pragma once

#include <cuda_runtime.h>

#include <algorithm>
#include <cstddef>
#include <vector>

namespace samplecheck::bench {

// Bytes moved per second (read + write) by cudaMemcpyAsync device-to-device; 0 when the buffers cannot be had.
inline double CopyBytesPerSecond(size_t bytes = size_t{1} << 30) {
  void *a = nullptr, *b = nullptr;
  double rate = 0.0;
  if (cudaMalloc(&a, bytes) == cudaSuccess && cudaMalloc(&b, bytes) == cudaSuccess &&
      cudaMemset(a, 1, bytes) == cudaSuccess) {
    cudaEvent_t e0, e1;
    cudaEventCreate(&e0);
    cudaEventCreate(&e1);
    std::vector<float> ms;
    for (int i = 0; i < 12; ++i) {
      cudaEventRecord(e0);
      cudaMemcpyAsync(b, a, bytes, cudaMemcpyDeviceToDevice);
      cudaEventRecord(e1);
      cudaEventSynchronize(e1);
      float t = 0;
      cudaEventElapsedTime(&t, e0, e1);
      if (i >= 2) ms.push_back(t);
    }
    std::sort(ms.begin(), ms.end());
    if (ms[ms.size() / 2] > 0) rate = 2.0 * double(bytes) / (double(ms[ms.size() / 2]) * 1e-3);
    cudaEventDestroy(e0);
    cudaEventDestroy(e1);
  }
  cudaFree(a);
  cudaFree(b);
  return rate;
}

}  // namespace samplecheck::bench
