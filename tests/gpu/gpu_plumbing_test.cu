// The GPU plumbing test: a kernel built here with nvcc runs on the device machine and computes the right thing.
// Without a CUDA device it reports as skipped (ctest "Skipped"), never as passed.
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

namespace {

__global__ void SquareIndices(uint64_t* out, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = static_cast<uint64_t>(i) * static_cast<uint64_t>(i);
}

bool HaveDevice() {
  int count = 0;
  return cudaGetDeviceCount(&count) == cudaSuccess && count > 0;
}

TEST(GpuPlumbing, KernelRunsAndReturnsSquares) {
  if (!HaveDevice()) GTEST_SKIP() << "no CUDA device on this machine (run scripts/gpu-test on the device machine)";
  cudaDeviceProp prop{};
  ASSERT_EQ(cudaGetDeviceProperties(&prop, 0), cudaSuccess);
  std::printf("device 0: %s, sm_%d%d, %d SMs\n", prop.name, prop.major, prop.minor, prop.multiProcessorCount);
  constexpr int n = 1 << 20;
  uint64_t* d = nullptr;
  ASSERT_EQ(cudaMalloc(&d, n * sizeof(uint64_t)), cudaSuccess);
  SquareIndices<<<(n + 255) / 256, 256>>>(d, n);
  ASSERT_EQ(cudaGetLastError(), cudaSuccess);
  std::vector<uint64_t> h(n);
  ASSERT_EQ(cudaMemcpy(h.data(), d, n * sizeof(uint64_t), cudaMemcpyDeviceToHost), cudaSuccess);
  ASSERT_EQ(cudaFree(d), cudaSuccess);
  for (int i = 0; i < n; ++i) ASSERT_EQ(h[i], static_cast<uint64_t>(i) * i) << "at index " << i;
}

}  // namespace
