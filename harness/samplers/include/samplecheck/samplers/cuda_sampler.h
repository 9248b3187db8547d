// `--sampler cuda[:profile]`: samplecheck's CUDA kernels (kernels/, samplecheck::kernels) behind the Sampler
// interface, for the profiles `vllm` and `hf`. Built only when CUDA is (SAMPLECHECK_HAVE_CUDA).
//
// Capabilities: processed_distribution (the kernels' renormalized probabilities), count_draws (the device fast
// path: the row's CDF is built once on the GPU, each draw is one Philox block and a binary search, the histogram
// stays on the device until one copy back), deterministic, profile = the profile it was made for.
// Parameters are validated with reference/'s ValidateParams first, so the cuda and exact samplers reject the same
// values with the same messages.
#pragma once

#include <memory>
#include <string_view>

#include "samplecheck/samplers/sampler.h"
#include "samplecheck/core/error.h"

namespace samplecheck::harness {

// kInvalidArgument when `profile` is not one the kernels implement (vllm, hf); kCuda when no CUDA device is usable.
Result<std::unique_ptr<Sampler>> MakeCudaSampler(std::string_view profile);

}  // namespace samplecheck::harness
