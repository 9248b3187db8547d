// SampleFromLogits: one token per row. Profiles `vllm` and `hf` (reference/ profile.h; docs/kernels.md).
//
// One thread block per batch row (BlockRowPlanner: passes 0-8, see detail/row_plan.cuh), then one draw:
//   u = UniformForDraw(seed, offset); target = floor(u * S); token = the first kept token in ascending id order
//   whose inclusive cumulative fixed-point mass exceeds target (BlockInverseCdf::Draw).
// Invariant: the token depends only on the row's logits, its parameters, seed and offset: each row is planned by
// its own block with integer (order-independent) sums, so neither the batch size, the row's position nor the
// other rows change it. Invalid rows get kInvalidToken, never token 0 and never an id >= vocab.
#include "detail/launch.h"
#include "detail/philox_uniform.cuh"
#include "detail/row_plan.cuh"

namespace samplecheck::kernels {
namespace detail {
namespace {

template <class T, int kThreads>
__global__ void __launch_bounds__(kThreads)
    SampleKernel(const T* logits, BatchGeometry geometry, DeviceParams params, int32_t profile, int32_t* tokens,
                 int32_t* row_status) {
  using Planner = BlockRowPlanner<kThreads>;
  __shared__ typename Planner::TempStorage storage;
  const int64_t b = blockIdx.x;
  const int64_t r = LogitsRowOf(geometry.row_indices, b, geometry.logits_rows);
  if (r < 0) {
    if (threadIdx.x == 0) {
      tokens[b] = kInvalidToken;
      if (row_status) row_status[b] = kStatusBadIndex;
    }
    return;
  }
  const T* row = logits + r * geometry.row_stride;
  const DeviceRowParams p = params.At(b);
  Planner planner(storage);
  const RowPlan plan = planner.Plan(row, geometry.vocab, p, profile);
  int32_t token = kInvalidToken;
  if (plan.status == kStatusGreedy) {
    token = plan.greedy_token;
  } else if (plan.status == kStatusSampled) {
    const uint64_t target = DrawTarget(UniformForDraw(p.seed, p.offset), plan.kept_mass);
    token = planner.Cdf().Draw(row, geometry.vocab, plan.softmax, plan.threshold_key, target);
  }
  if (threadIdx.x == 0) {
    tokens[b] = token;
    if (row_status) row_status[b] = plan.status;
  }
}

}  // namespace
}  // namespace detail

Status SampleFromLogits(const LogitsBatch& logits, const SamplingParams& params, Profile profile, int32_t* tokens,
                        int32_t* row_status, cudaStream_t stream) {
  using namespace detail;
  Status st = ValidateBatch(logits, params, profile);
  if (!st.ok()) return st;
  if (tokens == nullptr) return {ErrorCode::kInvalidArgument, "tokens output is null"};
  DeviceParams device_params{};
  st = UploadParams(params, logits.batch, stream, &device_params);
  if (!st.ok()) return st;
  const BatchGeometry geometry = GeometryOf(logits);
  DispatchDType(logits.dtype, [&](auto type_tag) {
    using T = std::remove_const_t<std::remove_pointer_t<decltype(type_tag)>>;
    SampleKernel<T, kBlockThreads><<<static_cast<unsigned>(logits.batch), kBlockThreads, 0, stream>>>(
        static_cast<const T*>(logits.data), geometry, device_params, ProfileCode(profile), tokens, row_status);
  });
  st = CudaError(cudaGetLastError(), "SampleKernel launch");
  ReleaseParams(device_params, stream);
  return st;
}

}  // namespace samplecheck::kernels
