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

// kInvalidArgument when `profile` is not one the kernels implement (vllm, hf), or `device` is not a CUDA device of
// this host; kCuda when no CUDA device is usable. device -1: the current device. Every call of the sampler runs on
// its device (it selects it first), so samplers of several devices may be used from one thread or several.
Result<std::unique_ptr<Sampler>> MakeCudaSampler(std::string_view profile, int device = -1);

}  // namespace samplecheck::harness
