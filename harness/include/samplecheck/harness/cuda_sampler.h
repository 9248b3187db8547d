// `--sampler cuda[:profile]`: samplecheck's CUDA kernels (kernels/, samplecheck::kernels) behind the Sampler
// interface, for the profiles `vllm` and `hf`. Built only when CUDA is (SAMPLECHECK_HAVE_CUDA).
//
// Capabilities: processed_distribution (the kernels' renormalized probabilities), count_draws (the device fast
// path: the row's CDF is built once on the GPU, each draw is one Philox block and a binary search, the histogram
// stays on the device until one copy back), deterministic, profile = the profile it was made for.
// Parameters are validated with reference/'s ValidateParams first, so the cuda and exact samplers reject the same
// values with the same messages.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>

#include "samplecheck/harness/sampler.h"
#include "samplecheck/kernels/sampling.h"
#include "samplecheck/reference/error.h"

namespace samplecheck::harness {

// kInvalidArgument when `profile` is not one the kernels implement (vllm, hf); kCuda when no CUDA device is usable.
Result<std::unique_ptr<Sampler>> MakeCudaSampler(std::string_view profile);

// A launcher with the contract of kernels::SampleFromLogits (the test-only kernel mutants of kernels/test_mutants:
// the shipped kernel with one fault injected).
using CudaSampleLaunch =
    std::function<kernels::Status(const kernels::LogitsBatch& logits, const kernels::SamplingParams& params,
                                  kernels::Profile profile, int32_t* tokens, int32_t* row_status, cudaStream_t stream)>;

// The cuda sampler drawing through `launch` instead of SampleFromLogits, reported as `name`. Sample and CountDraws
// both go through the launcher (CountDraws: the row uploaded once, batches of index-replicated rows with offsets
// offset + i, counted on the host); no processed distribution (the launcher only samples).
Result<std::unique_ptr<Sampler>> MakeCudaSampler(std::string_view profile, std::string name, CudaSampleLaunch launch);

}  // namespace samplecheck::harness
