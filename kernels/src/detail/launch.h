// Host side shared by every launcher: one helper (LaunchRows) that validates, uploads the per-row parameters,
// dispatches the dtype, launches, converts the CUDA error and releases the upload; the choice between the
// split-row kernels (a thread-block cluster per row, split_row_planner.cuh) and the single-block kernels
// (row_plan.cuh); the cluster launch itself. Host-only (compiled by nvcc in the .cu launchers).
#pragma once

#include <cuda_runtime_api.h>

#include <algorithm>
#include <atomic>
#include <string>
#include <type_traits>
#include <vector>

#include "samplecheck/kernels/sampling.h"
#include "path_override.h"
#include "row_plan.cuh"
#include "split_row_planner.cuh"

namespace samplecheck::kernels::detail {

// Threads per block of the single-block kernels; one block plans one row. A batch that leaves SMs idle (batch <=
// SM count) gets blocks of kWideBlockThreads: a single row's passes are bound by the loads one block keeps in
// flight, and twice the threads keep twice as many. Results do not depend on the choice: every reduction is exact
// or order-independent (row_values.cuh).
inline constexpr int kBlockThreads = 512;
inline constexpr int kWideBlockThreads = 1024;

inline Status CudaError(cudaError_t err, const char* what) {
  if (err == cudaSuccess) return Status::Ok();
  return {ErrorCode::kCuda, std::string(what) + ": " + cudaGetErrorName(err) + " (" + cudaGetErrorString(err) + ")"};
}

// The current device's SM count and opt-in shared memory per block, read once per device.
struct DeviceLimits {
  int device = 0;
  int sms = 0;
  int max_smem_per_block = 0;
};

inline Status CurrentDeviceLimits(DeviceLimits* out) {
  constexpr int kMaxDevices = 64;
  static std::atomic<int> sms_cache[kMaxDevices];
  static std::atomic<int> smem_cache[kMaxDevices];
  int device = 0;
  Status st = CudaError(cudaGetDevice(&device), "cudaGetDevice");
  if (!st.ok()) return st;
  out->device = device;
  if (device >= 0 && device < kMaxDevices && sms_cache[device].load(std::memory_order_relaxed) > 0) {
    out->sms = sms_cache[device].load(std::memory_order_relaxed);
    out->max_smem_per_block = smem_cache[device].load(std::memory_order_relaxed);
    return Status::Ok();
  }
  st = CudaError(cudaDeviceGetAttribute(&out->sms, cudaDevAttrMultiProcessorCount, device),
                 "cudaDeviceGetAttribute(multiprocessors)");
  if (!st.ok()) return st;
  st = CudaError(cudaDeviceGetAttribute(&out->max_smem_per_block, cudaDevAttrMaxSharedMemoryPerBlockOptin, device),
                 "cudaDeviceGetAttribute(shared memory per block)");
  if (!st.ok()) return st;
  if (device >= 0 && device < kMaxDevices) {
    smem_cache[device].store(out->max_smem_per_block, std::memory_order_relaxed);
    sms_cache[device].store(out->sms, std::memory_order_relaxed);
  }
  return Status::Ok();
}

// Calls f(std::integral_constant<int, threads>{}) with the single-block kernels' block size for `batch` rows.
template <class F>
void DispatchBlockThreads(int64_t batch, const DeviceLimits& limits, F&& f) {
  if (batch <= limits.sms) {
    f(std::integral_constant<int, kWideBlockThreads>{});
  } else {
    f(std::integral_constant<int, kBlockThreads>{});
  }
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
// (freed in stream order by ReleaseParams). On failure nothing stays allocated.
inline Status UploadParams(const SamplingParams& params, int64_t batch, cudaStream_t stream, DeviceParams* out) {
  *out = DeviceParams{};
  out->scalar = ToDevice(RowParamsAt(params, 0));
  if (!AnyPerRow(params)) return Status::Ok();
  std::vector<DeviceRowParams> host(static_cast<size_t>(batch));
  for (int64_t b = 0; b < batch; ++b) host[b] = ToDevice(RowParamsAt(params, b));
  DeviceRowParams* dev = nullptr;
  const size_t bytes = host.size() * sizeof(DeviceRowParams);
  Status st = CudaError(cudaMallocAsync(reinterpret_cast<void**>(&dev), bytes, stream), "cudaMallocAsync(params)");
  if (!st.ok()) return st;
  // A pageable source is staged before cudaMemcpyAsync returns, so `host` may go out of scope after it.
  st = CudaError(cudaMemcpyAsync(dev, host.data(), bytes, cudaMemcpyHostToDevice, stream), "cudaMemcpyAsync(params)");
  if (!st.ok()) {
    cudaFreeAsync(dev, stream);  // the copy failed: release the allocation here, nothing refers to it
    return st;
  }
  out->per_row = dev;
  return Status::Ok();
}

// Whether any row may cut its kept set by rank or mass, top-k or top-p (the launch policy's question:
// device-resident arrays are unknown, so yes).
inline bool AnyRankOrMassCut(const SamplingParams& p, int64_t batch) {
  if (!p.top_k.values && p.top_k.scalar > 0) return true;
  if (!p.top_p.values && p.top_p.scalar < 1.0) return true;
  for (int64_t b = 0; b < batch; ++b) {
    if ((p.top_k.values && p.top_k.values[b] > 0) || (p.top_p.values && p.top_p.values[b] < 1.0)) return true;
  }
  return false;
}
inline bool AnyRankOrMassCut(const DeviceSamplingParams& p, int64_t /*batch*/) {
  return p.top_k != nullptr || p.top_p != nullptr || p.scalar.top_k > 0 || p.scalar.top_p < 1.0;
}

// DeviceSamplingParams: nothing to upload. The scalars in use (fields without a device array) are validated on
// the host; the device arrays are validated row by row in the kernel (check_on_device).
inline Status DeviceResidentParams(const DeviceSamplingParams& params, Profile profile, DeviceParams* out) {
  RowParams in_use = params.scalar;
  const RowParams defaults{};
  if (params.temperature) in_use.temperature = defaults.temperature;
  if (params.top_k) in_use.top_k = defaults.top_k;
  if (params.top_p) in_use.top_p = defaults.top_p;
  if (params.min_p) in_use.min_p = defaults.min_p;
  const Status st = ValidateRowParams(in_use, profile);
  if (!st.ok()) return st;
  *out = DeviceParams{};
  out->scalar = ToDevice(params.scalar);
  out->columns = {params.temperature, params.top_k, params.top_p, params.min_p, params.seed, params.offset};
  out->check_on_device = params.temperature || params.top_k || params.top_p || params.min_p;
  return Status::Ok();
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

// ---- Path choice ------------------------------------------------------------------------------------------------

// The split of a row over a cluster: `cluster` CTAs of kSplitThreads threads, slices of slice_len elements,
// smem bytes of dynamic shared memory each; cluster == 0: the single-block kernels.
struct RowSplit {
  int cluster = 0;
  int64_t slice_len = 0;
  size_t smem = 0;
};

// Which kernels win where (measured on an H100, docs/performance.md): the split-row kernels while the batch
// leaves SMs to spare (batch <= SM count) for every filter, and at every batch when top-k or top-p is on (select
// first; top-p's passes after the crossing bin visit only the vectors that can hold a kept token); beyond that,
// with neither, the single-block kernels (whose passes stream the row from L2/HBM with no cluster barriers) are as
// fast or faster (none and min-p within 5%).

// Policy: every CTA's slice fits in shared memory (the smallest cluster that fits); slices of at most ~64 KiB;
// enough CTAs to cover the SMs when the batch is small (at most 16 per row: Hopper's non-portable cluster limit);
// and at least 2,048 elements per CTA. cluster16_capacity: how many 16-CTA clusters the GPU runs at once (0:
// none); a batch beyond it takes 8. any_cut: some row may have top-k or top-p on (unknown counts as on).
inline RowSplit ChooseRowSplit(int64_t vocab, int64_t batch, size_t element_bytes, size_t fixed_smem,
                               const DeviceLimits& limits, int cluster16_capacity, bool any_cut = true) {
  const int override_value = PathOverride();
  if (override_value < 0) return {};
  if (override_value == kPathAuto && batch > limits.sms && !any_cut) return {};
  auto bytes_for = [&](int c) {
    return fixed_smem + static_cast<size_t>(SplitSliceBytes(SplitSliceLength(vocab, c), static_cast<int64_t>(element_bytes)));
  };
  auto fits = [&](int c) { return bytes_for(c) <= static_cast<size_t>(limits.max_smem_per_block); };
  int fit = 1;
  while (fit <= kMaxClusterSize && !fits(fit)) fit *= 2;
  if (fit > kMaxClusterSize) return {};
  int c = fit;
  if (override_value > 0) {
    c = override_value;
    if (c > kMaxClusterSize || (c & (c - 1)) != 0 || !fits(c)) return {};
    if (c == kMaxClusterSize && cluster16_capacity == 0) return {};
  } else {
    int preferred = 1;
    while (preferred < kMaxClusterSize &&
           static_cast<double>(vocab) * static_cast<double>(element_bytes) / preferred > 64.0 * 1024.0) {
      preferred *= 2;
    }
    int fill = 1;
    while (fill < kMaxClusterSize && batch * fill < limits.sms) fill *= 2;
    c = std::max(fit, std::max(preferred, fill));
    while (c > fit && SplitSliceLength(vocab, c) < 2048) c /= 2;
    if (c == kMaxClusterSize && batch > cluster16_capacity) c = fits(8) ? 8 : 0;
    if (c == 0) return {};
  }
  return {c, SplitSliceLength(vocab, c), bytes_for(c)};
}

// Raises a kernel's dynamic shared-memory limit to the device maximum and allows 16-CTA clusters, once per kernel
// and device.
template <auto kKernel>
Status PrepareSplitKernel(const DeviceLimits& limits) {
  constexpr int kMaxDevices = 64;
  static std::atomic<bool> done[kMaxDevices];
  const bool cacheable = limits.device >= 0 && limits.device < kMaxDevices;
  if (cacheable && done[limits.device].load(std::memory_order_acquire)) return Status::Ok();
  Status st = CudaError(cudaFuncSetAttribute(kKernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                             limits.max_smem_per_block),
                        "cudaFuncSetAttribute(max dynamic shared memory)");
  if (!st.ok()) return st;
  st = CudaError(cudaFuncSetAttribute(kKernel, cudaFuncAttributeNonPortableClusterSizeAllowed, 1),
                 "cudaFuncSetAttribute(non-portable cluster size)");
  if (!st.ok()) return st;
  if (cacheable) done[limits.device].store(true, std::memory_order_release);
  return Status::Ok();
}

// How many 16-CTA clusters of kKernel with `smem` bytes each can be resident at once (0 when none can), cached
// per kernel, device and smem size (the last one asked).
template <auto kKernel>
int Cluster16Capacity(const DeviceLimits& limits, size_t smem, int threads) {
  constexpr int kMaxDevices = 64;
  static std::atomic<long long> cache[kMaxDevices];  // (smem << 16) | (capacity + 1); 0 = unknown
  const bool cacheable = limits.device >= 0 && limits.device < kMaxDevices;
  if (cacheable) {
    const long long c = cache[limits.device].load(std::memory_order_relaxed);
    if (c != 0 && static_cast<size_t>(c >> 16) == smem) return static_cast<int>((c & 0xffff) - 1);
  }
  cudaLaunchConfig_t config = {};
  config.gridDim = dim3(kMaxClusterSize);
  config.blockDim = dim3(threads);
  config.dynamicSmemBytes = smem;
  cudaLaunchAttribute attribute;
  attribute.id = cudaLaunchAttributeClusterDimension;
  attribute.val.clusterDim.x = kMaxClusterSize;
  attribute.val.clusterDim.y = 1;
  attribute.val.clusterDim.z = 1;
  config.attrs = &attribute;
  config.numAttrs = 1;
  int clusters = 0;
  if (cudaOccupancyMaxActiveClusters(&clusters, kKernel, &config) != cudaSuccess) {
    cudaGetLastError();  // not supported: no 16-CTA clusters
    clusters = 0;
  }
  if (clusters > 0xfffe) clusters = 0xfffe;
  if (cacheable) cache[limits.device].store((static_cast<long long>(smem) << 16) | (clusters + 1), std::memory_order_relaxed);
  return clusters;
}

// The split for kKernel (a split-row kernel of kSplitThreads threads over elements of element_bytes).
template <auto kKernel>
Status PlanRowSplit(int64_t vocab, int64_t batch, size_t element_bytes, const DeviceLimits& limits,
                    RowSplit* split, bool any_cut = true) {
  constexpr size_t kFixed = SplitSharedBytes<kSplitThreads>();
  Status st = PrepareSplitKernel<kKernel>(limits);
  if (!st.ok()) return st;
  const size_t smem16 =
      kFixed + static_cast<size_t>(SplitSliceBytes(SplitSliceLength(vocab, kMaxClusterSize), static_cast<int64_t>(element_bytes)));
  const int capacity16 =
      smem16 <= static_cast<size_t>(limits.max_smem_per_block) ? Cluster16Capacity<kKernel>(limits, smem16, kSplitThreads) : 0;
  *split = ChooseRowSplit(vocab, batch, element_bytes, kFixed, limits, capacity16, any_cut);
  return Status::Ok();
}

// Launches a split-row kernel: batch * cluster CTAs, clusters of `cluster` along x.
template <class... KernelArgs, class... Args>
Status LaunchSplitKernel(void (*kernel)(KernelArgs...), const RowSplit& split, int64_t batch, cudaStream_t stream,
                         const char* what, Args&&... args) {
  cudaLaunchConfig_t config = {};
  config.gridDim = dim3(static_cast<unsigned>(batch * split.cluster));
  config.blockDim = dim3(kSplitThreads);
  config.dynamicSmemBytes = split.smem;
  config.stream = stream;
  cudaLaunchAttribute attribute;
  attribute.id = cudaLaunchAttributeClusterDimension;
  attribute.val.clusterDim.x = static_cast<unsigned>(split.cluster);
  attribute.val.clusterDim.y = 1;
  attribute.val.clusterDim.z = 1;
  config.attrs = &attribute;
  config.numAttrs = 1;
  return CudaError(cudaLaunchKernelEx(&config, kernel, std::forward<Args>(args)...), what);
}

// ---- The one launch helper --------------------------------------------------------------------------------------

// Every batch launcher: validate (the batch and params, then the launcher's own outputs: check()), resolve the
// parameters (host arrays uploaded in stream order, or device-resident ones), run launch(type_tag, device_params)
// with type_tag a null `const T*` for the logits' dtype (it launches and returns the launch's Status), check the
// last CUDA error, release the upload (stream-ordered, also after a failed launch).
template <class Params, class Check, class Launch>
Status LaunchRows(const LogitsBatch& logits, const Params& params, Profile profile, cudaStream_t stream,
                  const char* what, Check&& check, Launch&& launch) {
  DeviceParams device_params{};
  Status st;
  if constexpr (std::is_same_v<Params, DeviceSamplingParams>) {
    st = ValidateBatch(logits, SamplingParams{}, profile);
    if (st.ok()) st = check();
    if (st.ok()) st = DeviceResidentParams(params, profile, &device_params);
  } else {
    st = ValidateBatch(logits, params, profile);
    if (st.ok()) st = check();
    if (st.ok()) st = UploadParams(params, logits.batch, stream, &device_params);
  }
  if (!st.ok()) return st;
  DispatchDType(logits.dtype, [&](auto type_tag) { st = launch(type_tag, device_params); });
  if (st.ok()) st = CudaError(cudaGetLastError(), what);
  ReleaseParams(device_params, stream);
  return st;
}

}  // namespace samplecheck::kernels::detail
