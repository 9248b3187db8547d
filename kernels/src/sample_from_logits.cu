// SampleFromLogits: one token per row. Profiles `vllm` and `hf` (reference/ profile.h; docs/kernels.md).
//
// The launcher (detail/sample_launch.cuh) picks the split-row kernel (detail/split_sample_kernel.cuh: a
// thread-block cluster per row, the row on chip) or the single-block kernel (detail/sample_kernel.cuh), both with
// the default fault policy NoFault; test-only mutants (tests/kernel_mutants/) launch the same kernels with a fault
// policy.
#include "detail/sample_launch.cuh"

namespace samplecheck::kernels {

Status SampleFromLogits(const LogitsBatch& logits, const SamplingParams& params, Profile profile, int32_t* tokens,
                        int32_t* row_status, cudaStream_t stream) {
  return detail::LaunchSample<detail::NoFault>(logits, params, profile, tokens, row_status, stream);
}

Status SampleFromLogits(const LogitsBatch& logits, const DeviceSamplingParams& params, Profile profile,
                        int32_t* tokens, int32_t* row_status, cudaStream_t stream) {
  return detail::LaunchSample<detail::NoFault>(logits, params, profile, tokens, row_status, stream);
}

}  // namespace samplecheck::kernels
