// Host side shared by the launchers: the packed per-row parameters the kernels read, their upload, dtype dispatch
// and CUDA error conversion. Host-only (compiled by nvcc in the .cu launchers).
#pragma once

#include <cuda_runtime_api.h>

#include <string>
#include <type_traits>
#include <vector>

#include "samplecheck/kernels/sampling.h"
#include "row_plan.cuh"

namespace samplecheck::kernels::detail {

// Threads per block; one block plans one row. A batch that leaves SMs idle (batch <= SM count) gets blocks of
// kWideBlockThreads: a single row's passes are bound by the loads one block keeps in flight, and twice the threads
// keep twice as many. A batch that fills the GPU keeps kBlockThreads (two blocks share an SM). Results do not
// depend on the choice: every reduction is exact or order-independent (row_values.cuh).
inline constexpr int kBlockThreads = 512;
inline constexpr int kWideBlockThreads = 1024;

inline bool WantsWideBlocks(int64_t batch) {
  int device = 0;
  int sms = 0;
  if (cudaGetDevice(&device) != cudaSuccess) return false;
  if (cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device) != cudaSuccess) return false;
  return batch <= sms;
}

// Calls f(std::integral_constant<int, threads>{}) with the block size for a batch of `batch` rows.
template <class F>
void DispatchBlockThreads(int64_t batch, F&& f) {
  if (WantsWideBlocks(batch)) {
    f(std::integral_constant<int, kWideBlockThreads>{});
  } else {
    f(std::integral_constant<int, kBlockThreads>{});
  }
}

inline Status CudaError(cudaError_t err, const char* what) {
  if (err == cudaSuccess) return Status::Ok();
  return {ErrorCode::kCuda, std::string(what) + ": " + cudaGetErrorName(err) + " (" + cudaGetErrorString(err) + ")"};
}

inline int32_t ProfileCode(Profile profile) { return profile == Profile::kVllm ? kProfileVllm : kProfileHf; }

inline DeviceRowParams ToDevice(const RowParams& p) {
  return {p.temperature, p.top_p, p.min_p, p.top_k, p.seed, p.offset};
}

inline bool AnyPerRow(const SamplingParams& p) {
  return p.temperature.values || p.top_k.values || p.top_p.values || p.min_p.values || p.seed.values ||
         p.offset.values;
}

// Device parameters for a batch: scalars in the kernel argument, or a stream-ordered upload of per-row values
// (freed in stream order by ReleaseParams).
inline Status UploadParams(const SamplingParams& params, int64_t batch, cudaStream_t stream, DeviceParams* out) {
  out->scalar = ToDevice(RowParamsAt(params, 0));
  out->per_row = nullptr;
  if (!AnyPerRow(params)) return Status::Ok();
  std::vector<DeviceRowParams> host(static_cast<size_t>(batch));
  for (int64_t b = 0; b < batch; ++b) host[b] = ToDevice(RowParamsAt(params, b));
  DeviceRowParams* dev = nullptr;
  Status st = CudaError(cudaMallocAsync(reinterpret_cast<void**>(&dev), host.size() * sizeof(DeviceRowParams), stream),
                        "cudaMallocAsync(params)");
  if (!st.ok()) return st;
  st = CudaError(cudaMemcpyAsync(dev, host.data(), host.size() * sizeof(DeviceRowParams), cudaMemcpyHostToDevice,
                                 stream),
                 "cudaMemcpyAsync(params)");
  // A pageable source is staged before cudaMemcpyAsync returns, so `host` may go out of scope now.
  out->per_row = dev;
  return st;
}

inline void ReleaseParams(const DeviceParams& params, cudaStream_t stream) {
  if (params.per_row) cudaFreeAsync(const_cast<DeviceRowParams*>(params.per_row), stream);
}

// Calls f(static_cast<const T*>(nullptr)) with T the element type of dtype.
template <class F>
void DispatchDType(DType dtype, F&& f) {
  switch (dtype) {
    case DType::kFloat32: f(static_cast<const float*>(nullptr)); break;
    case DType::kBFloat16: f(static_cast<const __nv_bfloat16*>(nullptr)); break;
    case DType::kFloat16: f(static_cast<const __half*>(nullptr)); break;
  }
}

// The logits row of batch row b: (row_indices ? row_indices[b] : b), or -1 when that is out of range.
__device__ __forceinline__ int64_t LogitsRowOf(const int32_t* row_indices, int64_t b, int64_t logits_rows) {
  const int64_t r = row_indices ? static_cast<int64_t>(row_indices[b]) : b;
  return (r < 0 || r >= logits_rows) ? -1 : r;
}

struct BatchGeometry {
  int64_t vocab;
  int64_t row_stride;
  int64_t logits_rows;
  const int32_t* row_indices;
};

inline BatchGeometry GeometryOf(const LogitsBatch& l) {
  return {l.vocab, l.row_stride ? l.row_stride : l.vocab, l.logits_rows ? l.logits_rows : l.batch, l.row_indices};
}

}  // namespace samplecheck::kernels::detail
