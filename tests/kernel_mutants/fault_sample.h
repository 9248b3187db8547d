// Test-only CUDA kernel mutants (compiled only into test builds, by tests/mutants when samplecheck_kernels exists):
// SampleFromLogits with one fault injected through the kernels' fault policy. The mutant kernel is the shipped
// kernel itself: kernels/src/detail/sample_kernel.cuh's SampleKernel<T, kThreads, FaultPolicy> (and the split-row
// kernel), instantiated once with a policy that reads the fault at run time and changes one customization point of
// NoFault (Params, Counter, Uniform, InvalidRowToken/Status) for each fault; KernelFault::kNone changes none and draws
// what SampleFromLogits draws (the control, asserted by mutants_cuda_test); each other value differs from it by one
// fault only. Mutant
// launches are serialized in the process and return after their stream has finished. docs/mutants.md lists the
// faults and the check that catches each.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>
#include <string_view>

#include "samplecheck/kernels/sampling.h"

namespace samplecheck::kernels::test_mutants {

enum class KernelFault : int32_t {
  kNone = 0,          // the control: SampleFromLogits as shipped
  kSeedOfRowZero,     // every batch row draws with the (seed, offset) of batch row 0 (FlashInfer seed_arr[0])
  kOffsetNotAdvanced, // the Philox counter is the batch row b, the offset never added
  kInvalidRowToken0,  // a NaN / all -inf row returns token 0 with status "sampled" (vLLM v1 argmax of NaN)
  kParamsByLogitsRow, // parameters read at the logits row row_indices[b] instead of the batch row b
                      // (FlashInfer top_p_arr[row_idx] vs top_k_arr[bx])
  kTopKPlusOne,       // top-k keeps k + 1 tokens
  kMinPFromRowZero,   // rows with min_p = 0 run min-p with batch row 0's min_p (a min-p scalar broadcast)
  kDrawMirrored,      // the draw step only: the kept set's CDF walked with 1 - u instead of u. The law of the
                      // token is unchanged (u and 1 - u are equally distributed on Philox's grid), so counts,
                      // support and every chi-square pass; the tokens are not the ones the exact sampler (and a
                      // trainer replaying the step) computes for the same seed and offset
};

std::string_view KernelFaultName(KernelFault fault);

// SampleFromLogits (kernels/sampling.h) with `fault` injected; same validation, outputs and stream semantics.
Status SampleFromLogitsWithFault(KernelFault fault, const LogitsBatch& logits, const SamplingParams& params,
                                 Profile profile, int32_t* tokens, int32_t* row_status, cudaStream_t stream);

}  // namespace samplecheck::kernels::test_mutants
