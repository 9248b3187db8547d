// SampleFromLogits: one token per row. Profiles `vllm` and `hf` (reference/ profile.h; docs/kernels.md).
//
// The kernel (one thread block per batch row, then one inverse-CDF draw) is detail/sample_kernel.cuh's
// SampleKernel with the default fault policy NoFault; test-only mutants (tests/kernel_mutants/) instantiate the
// same kernel with a fault policy.
#include "detail/launch.h"
#include "detail/sample_kernel.cuh"

namespace samplecheck::kernels {

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
    DispatchBlockThreads(logits.batch, [&](auto threads) {
      SampleKernel<T, threads()><<<static_cast<unsigned>(logits.batch), threads(), 0, stream>>>(
          static_cast<const T*>(logits.data), geometry, device_params, ProfileCode(profile), tokens, row_status);
    });
  });
  st = CudaError(cudaGetLastError(), "SampleKernel launch");
  ReleaseParams(device_params, stream);
  return st;
}

}  // namespace samplecheck::kernels
