// The fault policy is the FaultPolicy template parameter of the shipped kernels and of their launcher
// (kernels/src/detail/sample_launch.cuh's LaunchSample: the split-row SplitSampleKernel or the single-block
// SampleKernel, as SampleFromLogits picks). One instantiation serves every fault: RuntimeFault reads the fault
// from a device variable at each customization point of NoFault, so a fault changes one point and the others stay
// the identity. KernelFault::kNone changes none, so it must draw what SampleFromLogits draws (mutants_cuda_test
// asserts it token for token): the control that the run-time policy is the shipped kernel but for the fault.
//
// One instantiation, not one per fault, because the launcher instantiates every kernel of both paths for every
// dtype and block size: eight copies took 13 minutes of one core to compile (.ninja_log of a fresh clone), one
// takes what sample_from_logits.cu takes.
#include "fault_sample.h"

#include <mutex>

#include "detail/sample_launch.cuh"

namespace samplecheck::kernels::test_mutants {
namespace {

using namespace samplecheck::kernels::detail;

// The fault of the launch in flight (per device). SampleFromLogitsWithFault writes it before the launch and
// waits for the launch to end before another may write it.
__device__ int32_t g_fault;

__device__ __forceinline__ bool Is(KernelFault fault) { return g_fault == static_cast<int32_t>(fault); }

// KernelFault as a SampleKernel fault policy: each fault changes one customization point of NoFault.
struct RuntimeFault : NoFault {
  __device__ __forceinline__ static DeviceRowParams Params(const DeviceParams& params, int64_t b, int64_t r) {
    if (Is(KernelFault::kParamsByLogitsRow)) {
      DeviceRowParams p = params.At(r);
      const DeviceRowParams own = params.At(b);
      p.seed = own.seed;  // only the filter parameters come from the wrong row
      p.offset = own.offset;
      return p;
    }
    DeviceRowParams p = params.At(b);
    if (Is(KernelFault::kTopKPlusOne) && p.top_k > 0) p.top_k += 1;
    if (Is(KernelFault::kMinPFromRowZero) && p.min_p == 0.0) p.min_p = params.At(0).min_p;
    if (Is(KernelFault::kSeedOfRowZero)) {
      p.seed = params.At(0).seed;
      p.offset = params.At(0).offset;
    }
    return p;
  }
  __device__ __forceinline__ static uint64_t Counter(const DeviceRowParams& p, int64_t b) {
    return Is(KernelFault::kOffsetNotAdvanced) ? static_cast<uint64_t>(b) : p.offset;
  }
  __device__ __forceinline__ static double Uniform(double u) {
    // u = (bits + 0.5) 2^-52 with bits < 2^52, so 1 - u is exactly the grid point of 2^52 - 1 - bits
    return Is(KernelFault::kDrawMirrored) ? 1.0 - u : u;
  }
  __device__ __forceinline__ static int32_t InvalidRowToken() {
    return Is(KernelFault::kInvalidRowToken0) ? 0 : kInvalidToken;
  }
  __device__ __forceinline__ static int32_t InvalidRowStatus() {
    return Is(KernelFault::kInvalidRowToken0) ? kStatusSampled : kStatusInvalid;
  }
};

Status FromCuda(cudaError_t err, const char* what) {
  if (err == cudaSuccess) return Status::Ok();
  return {ErrorCode::kCuda, std::string(what) + ": " + cudaGetErrorString(err)};
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
    case KernelFault::kDrawMirrored: return "cuda:draw-step-mirrored";
  }
  return "cuda:unknown";
}

Status SampleFromLogitsWithFault(KernelFault fault, const LogitsBatch& logits, const SamplingParams& params,
                                 Profile profile, int32_t* tokens, int32_t* row_status, cudaStream_t stream) {
  if (KernelFaultName(fault) == "cuda:unknown") {
    return {ErrorCode::kInvalidArgument,
            "unknown kernel fault " + std::to_string(static_cast<int32_t>(fault)) + " (known: 0 to 7)"};
  }
  // One mutant launch at a time in the process: the fault lives in a device variable, written on the launch's
  // stream before the kernel and not written again until the kernel has ended.
  static std::mutex mutex;
  const std::lock_guard<std::mutex> lock(mutex);
  const int32_t code = static_cast<int32_t>(fault);
  Status st = FromCuda(cudaMemcpyToSymbolAsync(g_fault, &code, sizeof(code), 0, cudaMemcpyHostToDevice, stream),
                       "kernel fault: cudaMemcpyToSymbolAsync");
  if (!st.ok()) return st;
  st = LaunchSample<RuntimeFault>(logits, params, profile, tokens, row_status, stream);
  const Status synced = FromCuda(cudaStreamSynchronize(stream), "kernel fault: cudaStreamSynchronize");
  return st.ok() ? synced : st;
}

}  // namespace samplecheck::kernels::test_mutants
