// CountDraws: the harness's fast path. N draws of one row, counted on the device, under the profiles `vllm` and
// `hf` (reference/ profile.h; docs/kernels.md).
//
// Kernel 1 (one block): BlockRowPlanner plans the row once (passes 0-8, detail/row_plan.cuh) and writes the
// inclusive fixed-point CDF over token ids, cdf[i] = sum of kept masses of tokens <= i (BlockInverseCdf::WriteCdf:
// the same integers Draw scans), and a RowSummary.
// Kernel 2 (grid): draw i: u = UniformForDraw(seed, offset + i), target = floor(u * S), token = the first i with
// cdf[i] > target (binary search), histogram[token] += 1 (warp-aggregated atomics).
// Invariant: draw i yields exactly the token SampleFromLogits yields for the row with offset + i.
#include "detail/launch.h"
#include "detail/philox_uniform.cuh"
#include "detail/row_plan.cuh"

namespace samplecheck::kernels {
namespace detail {
namespace {

struct RowSummary {
  int32_t status;
  int32_t greedy_token;
  uint64_t kept_mass;
};

template <class T, int kThreads>
__global__ void __launch_bounds__(kThreads)
    BuildCdfKernel(const T* row, int64_t vocab, DeviceRowParams params, int32_t profile, uint64_t* cdf,
                   RowSummary* summary) {
  using Planner = BlockRowPlanner<kThreads>;
  __shared__ typename Planner::TempStorage storage;
  Planner planner(storage);
  const RowPlan plan = planner.Plan(row, vocab, params, profile);
  if (plan.status == kStatusSampled) planner.Cdf().WriteCdf(row, vocab, plan.softmax, plan.kept, cdf);
  if (threadIdx.x == 0) *summary = RowSummary{plan.status, plan.greedy_token, plan.kept_mass};
}

__global__ void DrawKernel(const uint64_t* cdf, int64_t vocab, const RowSummary* summary, uint64_t seed,
                           uint64_t offset, uint64_t draws, unsigned long long* histogram) {
  const RowSummary s = *summary;
  if (s.status == kStatusInvalid) return;
  const uint64_t stride = static_cast<uint64_t>(gridDim.x) * blockDim.x;
  const uint64_t first = static_cast<uint64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (s.status == kStatusGreedy) {
    if (first == 0) atomicAdd(&histogram[s.greedy_token], static_cast<unsigned long long>(draws));
    return;
  }
  // Every lane runs the same number of iterations so the warp-wide match below sees the whole warp.
  const uint64_t rounds = (draws + stride - 1) / stride;
  for (uint64_t k = 0; k < rounds; ++k) {
    const uint64_t i = first + k * stride;
    int32_t token = -1;
    if (i < draws) {
      const uint64_t target = DrawTarget(UniformForDraw(seed, offset + i), s.kept_mass);
      int64_t lo = 0, hi = vocab - 1;  // cdf[vocab - 1] = S > target
      while (lo < hi) {
        const int64_t mid = (lo + hi) >> 1;
        if (cdf[mid] > target) hi = mid; else lo = mid + 1;
      }
      token = static_cast<int32_t>(lo);
    }
    const unsigned peers = __match_any_sync(0xffffffffu, token);
    const int leader = __ffs(peers) - 1;
    if (token >= 0 && (threadIdx.x & 31) == leader) atomicAdd(&histogram[token], __popc(peers));
  }
}

}  // namespace
}  // namespace detail

Status CountDraws(const DeviceRow& row, const RowParams& params, Profile profile, uint64_t draws,
                  uint64_t* histogram, int32_t* row_status, cudaStream_t stream) {
  using namespace detail;
  if (row.data == nullptr) return {ErrorCode::kInvalidArgument, "row data is null"};
  if (histogram == nullptr) return {ErrorCode::kInvalidArgument, "histogram is null"};
  if (row.vocab < 1 || row.vocab > kMaxVocab) {
    return {ErrorCode::kInvalidArgument,
            "vocab = " + std::to_string(row.vocab) + " is outside [1, " + std::to_string(kMaxVocab) + "]"};
  }
  Status st = ValidateRowParams(params, profile);
  if (!st.ok()) return st;
  uint64_t* cdf = nullptr;
  RowSummary* summary = nullptr;
  st = CudaError(cudaMallocAsync(reinterpret_cast<void**>(&cdf), row.vocab * sizeof(uint64_t), stream),
                 "cudaMallocAsync(cdf)");
  if (!st.ok()) return st;
  st = CudaError(cudaMallocAsync(reinterpret_cast<void**>(&summary), sizeof(RowSummary), stream),
                 "cudaMallocAsync(summary)");
  if (!st.ok()) return st;
  DispatchDType(row.dtype, [&](auto type_tag) {
    using T = std::remove_const_t<std::remove_pointer_t<decltype(type_tag)>>;
    BuildCdfKernel<T, kWideBlockThreads><<<1, kWideBlockThreads, 0, stream>>>(
        static_cast<const T*>(row.data), row.vocab, ToDevice(params), ProfileCode(profile), cdf, summary);
  });
  st = CudaError(cudaGetLastError(), "BuildCdfKernel launch");
  if (st.ok() && draws > 0) {
    int device = 0, sms = 132;
    cudaGetDevice(&device);
    cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device);
    constexpr int kDrawThreads = 256;
    const uint64_t wanted = (draws + kDrawThreads - 1) / kDrawThreads;
    const unsigned blocks = static_cast<unsigned>(std::min<uint64_t>(wanted, static_cast<uint64_t>(sms) * 16));
    DrawKernel<<<blocks, kDrawThreads, 0, stream>>>(cdf, row.vocab, summary, params.seed, params.offset, draws,
                                                   reinterpret_cast<unsigned long long*>(histogram));
    st = CudaError(cudaGetLastError(), "DrawKernel launch");
  }
  if (st.ok() && row_status) {
    st = CudaError(cudaMemcpyAsync(row_status, &summary->status, sizeof(int32_t), cudaMemcpyDeviceToDevice, stream),
                   "cudaMemcpyAsync(row_status)");
  }
  cudaFreeAsync(cdf, stream);
  cudaFreeAsync(summary, stream);
  return st;
}

}  // namespace samplecheck::kernels
