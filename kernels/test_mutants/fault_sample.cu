// The fault policy is a template parameter of the kernel: one instantiation per KernelFault, the fault-free one
// identical to SampleKernel of kernels/src/sample_from_logits.cu.
#include "fault_sample.h"

#include "detail/launch.h"
#include "detail/philox_uniform.cuh"
#include "detail/row_plan.cuh"

namespace samplecheck::kernels::test_mutants {
namespace {

using namespace samplecheck::kernels::detail;

template <KernelFault kFault>
__device__ __forceinline__ DeviceRowParams FaultyParams(const DeviceParams& params, int64_t b, int64_t r) {
  DeviceRowParams p = params.At(kFault == KernelFault::kParamsByLogitsRow ? r : b);
  if constexpr (kFault == KernelFault::kParamsByLogitsRow) {
    const DeviceRowParams own = params.At(b);
    p.seed = own.seed;  // only the filter parameters come from the wrong row
    p.offset = own.offset;
  }
  if constexpr (kFault == KernelFault::kTopKPlusOne) {
    if (p.top_k > 0) p.top_k += 1;
  }
  if constexpr (kFault == KernelFault::kMinPFromRowZero) {
    if (p.min_p == 0.0) p.min_p = params.At(0).min_p;
  }
  if constexpr (kFault == KernelFault::kSeedOfRowZero) {
    p.seed = params.At(0).seed;
    p.offset = params.At(0).offset;
  }
  if constexpr (kFault == KernelFault::kOffsetNotAdvanced) {
    p.offset = static_cast<uint64_t>(b);
  }
  return p;
}

template <class T, int kThreads, KernelFault kFault>
__global__ void __launch_bounds__(kThreads)
    FaultSampleKernel(const T* logits, BatchGeometry geometry, DeviceParams params, int32_t profile, int32_t* tokens,
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
  const DeviceRowParams p = FaultyParams<kFault>(params, b, r);
  Planner planner(storage);
  const RowPlan plan = planner.Plan(row, geometry.vocab, p, profile);
  int32_t token = kInvalidToken;
  int32_t status = plan.status;
  if (plan.status == kStatusGreedy) {
    token = plan.greedy_token;
  } else if (plan.status == kStatusSampled) {
    const uint64_t target = DrawTarget(UniformForDraw(p.seed, p.offset), plan.kept_mass);
    token = planner.Cdf().Draw(row, geometry.vocab, plan.softmax, plan.threshold_key, target);
  } else if (kFault == KernelFault::kInvalidRowToken0 && plan.status == kStatusInvalid) {
    token = 0;
    status = kStatusSampled;
  }
  if (threadIdx.x == 0) {
    tokens[b] = token;
    if (row_status) row_status[b] = status;
  }
}

template <KernelFault kFault>
void Launch(const LogitsBatch& logits, const BatchGeometry& geometry, const DeviceParams& device_params,
            Profile profile, int32_t* tokens, int32_t* row_status, cudaStream_t stream) {
  DispatchDType(logits.dtype, [&](auto type_tag) {
    using T = std::remove_const_t<std::remove_pointer_t<decltype(type_tag)>>;
    FaultSampleKernel<T, kBlockThreads, kFault><<<static_cast<unsigned>(logits.batch), kBlockThreads, 0, stream>>>(
        static_cast<const T*>(logits.data), geometry, device_params, ProfileCode(profile), tokens, row_status);
  });
}

}  // namespace

std::string_view KernelFaultName(KernelFault fault) {
  switch (fault) {
    case KernelFault::kNone: return "cuda:none";
    case KernelFault::kSeedOfRowZero: return "cuda:seed-reused-across-rows";
    case KernelFault::kOffsetNotAdvanced: return "cuda:offset-not-advanced";
    case KernelFault::kInvalidRowToken0: return "cuda:nan-row-token-0";
    case KernelFault::kParamsByLogitsRow: return "cuda:params-by-logits-row";
    case KernelFault::kTopKPlusOne: return "cuda:topk-plus-one";
    case KernelFault::kMinPFromRowZero: return "cuda:minp-from-row-zero";
  }
  return "cuda:unknown";
}

Status SampleFromLogitsWithFault(KernelFault fault, const LogitsBatch& logits, const SamplingParams& params,
                                 Profile profile, int32_t* tokens, int32_t* row_status, cudaStream_t stream) {
  Status st = ValidateBatch(logits, params, profile);
  if (!st.ok()) return st;
  if (tokens == nullptr) return {ErrorCode::kInvalidArgument, "tokens output is null"};
  DeviceParams device_params{};
  st = UploadParams(params, logits.batch, stream, &device_params);
  if (!st.ok()) return st;
  const BatchGeometry geometry = GeometryOf(logits);
  switch (fault) {
    case KernelFault::kNone: Launch<KernelFault::kNone>(logits, geometry, device_params, profile, tokens, row_status, stream); break;
    case KernelFault::kSeedOfRowZero: Launch<KernelFault::kSeedOfRowZero>(logits, geometry, device_params, profile, tokens, row_status, stream); break;
    case KernelFault::kOffsetNotAdvanced: Launch<KernelFault::kOffsetNotAdvanced>(logits, geometry, device_params, profile, tokens, row_status, stream); break;
    case KernelFault::kInvalidRowToken0: Launch<KernelFault::kInvalidRowToken0>(logits, geometry, device_params, profile, tokens, row_status, stream); break;
    case KernelFault::kParamsByLogitsRow: Launch<KernelFault::kParamsByLogitsRow>(logits, geometry, device_params, profile, tokens, row_status, stream); break;
    case KernelFault::kTopKPlusOne: Launch<KernelFault::kTopKPlusOne>(logits, geometry, device_params, profile, tokens, row_status, stream); break;
    case KernelFault::kMinPFromRowZero: Launch<KernelFault::kMinPFromRowZero>(logits, geometry, device_params, profile, tokens, row_status, stream); break;
  }
  st = CudaError(cudaGetLastError(), "FaultSampleKernel launch");
  ReleaseParams(device_params, stream);
  return st;
}

}  // namespace samplecheck::kernels::test_mutants
