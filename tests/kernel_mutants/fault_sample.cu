// The fault policy is the FaultPolicy template parameter of the shipped kernels and of their launcher
// (kernels/src/detail/sample_launch.cuh's LaunchSample: the split-row SplitSampleKernel or the single-block
// SampleKernel, as SampleFromLogits picks): one instantiation per KernelFault, each overriding one customization
// point of NoFault; KernelFault::kNone overrides none, so it is the shipped launch.
#include "fault_sample.h"

#include "detail/sample_launch.cuh"

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
  __device__ __forceinline__ static double Uniform(double u) {
    // u = (bits + 0.5) 2^-52 with bits < 2^52, so 1 - u is exactly the grid point of 2^52 - 1 - bits
    return kFault == KernelFault::kDrawMirrored ? 1.0 - u : u;
  }
  __device__ __forceinline__ static int32_t InvalidRowToken() {
    return kFault == KernelFault::kInvalidRowToken0 ? 0 : kInvalidToken;
  }
  __device__ __forceinline__ static int32_t InvalidRowStatus() {
    return kFault == KernelFault::kInvalidRowToken0 ? kStatusSampled : kStatusInvalid;
  }
};

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
    case KernelFault::kDrawMirrored: return "cuda:draw-step-mirrored";
  }
  return "cuda:unknown";
}

Status SampleFromLogitsWithFault(KernelFault fault, const LogitsBatch& logits, const SamplingParams& params,
                                 Profile profile, int32_t* tokens, int32_t* row_status, cudaStream_t stream) {
  auto launch = [&](auto policy) {
    return LaunchSample<decltype(policy)>(logits, params, profile, tokens, row_status, stream);
  };
  switch (fault) {
    case KernelFault::kNone: return launch(FaultPolicy<KernelFault::kNone>{});
    case KernelFault::kSeedOfRowZero: return launch(FaultPolicy<KernelFault::kSeedOfRowZero>{});
    case KernelFault::kOffsetNotAdvanced: return launch(FaultPolicy<KernelFault::kOffsetNotAdvanced>{});
    case KernelFault::kInvalidRowToken0: return launch(FaultPolicy<KernelFault::kInvalidRowToken0>{});
    case KernelFault::kParamsByLogitsRow: return launch(FaultPolicy<KernelFault::kParamsByLogitsRow>{});
    case KernelFault::kTopKPlusOne: return launch(FaultPolicy<KernelFault::kTopKPlusOne>{});
    case KernelFault::kMinPFromRowZero: return launch(FaultPolicy<KernelFault::kMinPFromRowZero>{});
    case KernelFault::kDrawMirrored: return launch(FaultPolicy<KernelFault::kDrawMirrored>{});
  }
  return {ErrorCode::kInvalidArgument, "unknown kernel fault"};
}

}  // namespace samplecheck::kernels::test_mutants
