// The fault policy is the FaultPolicy template parameter of the shipped kernel (kernels/src/detail/
// sample_kernel.cuh's SampleKernel): one instantiation per KernelFault, each overriding one customization point of
// NoFault; KernelFault::kNone overrides none, so it is the shipped kernel.
#include "fault_sample.h"

#include "detail/launch.h"
#include "detail/sample_kernel.cuh"

namespace samplecheck::kernels::test_mutants {
namespace {

using namespace samplecheck::kernels::detail;

// KernelFault as a SampleKernel fault policy: each fault changes one customization point of NoFault.
template <KernelFault kFault>
struct FaultPolicy : NoFault {
  __device__ __forceinline__ static DeviceRowParams Params(const DeviceParams& params, int64_t b, int64_t r) {
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
    return p;
  }
  __device__ __forceinline__ static uint64_t Counter(const DeviceRowParams& p, int64_t b) {
    return kFault == KernelFault::kOffsetNotAdvanced ? static_cast<uint64_t>(b) : p.offset;
  }
  __device__ __forceinline__ static int32_t InvalidRowToken() {
    return kFault == KernelFault::kInvalidRowToken0 ? 0 : kInvalidToken;
  }
  __device__ __forceinline__ static int32_t InvalidRowStatus() {
    return kFault == KernelFault::kInvalidRowToken0 ? kStatusSampled : kStatusInvalid;
  }
};

template <KernelFault kFault>
void Launch(const LogitsBatch& logits, const BatchGeometry& geometry, const DeviceParams& device_params,
            Profile profile, int32_t* tokens, int32_t* row_status, cudaStream_t stream) {
  DispatchDType(logits.dtype, [&](auto type_tag) {
    using T = std::remove_const_t<std::remove_pointer_t<decltype(type_tag)>>;
    SampleKernel<T, kBlockThreads, FaultPolicy<kFault>><<<static_cast<unsigned>(logits.batch), kBlockThreads, 0, stream>>>(
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
  st = CudaError(cudaGetLastError(), "SampleKernel<FaultPolicy> launch");
  ReleaseParams(device_params, stream);
  return st;
}

}  // namespace samplecheck::kernels::test_mutants
