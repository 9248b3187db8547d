// The cuda sampler over another kernel launcher: for programs that link samplecheck::kernels themselves (the
// test-only kernel mutants of tests/kernel_mutants register theirs through it). Needs the CUDA runtime headers
// and kernels/sampling.h, which cuda_sampler.h does not.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>

#include "samplecheck/samplers/sampler.h"
#include "samplecheck/kernels/sampling.h"
#include "samplecheck/core/error.h"

namespace samplecheck::harness {

// A launcher with the contract of kernels::SampleFromLogits (the test-only kernel mutants of tests/kernel_mutants:
// the shipped kernel with one fault injected).
using CudaSampleLaunch =
    std::function<kernels::Status(const kernels::LogitsBatch& logits, const kernels::SamplingParams& params,
                                  kernels::Profile profile, int32_t* tokens, int32_t* row_status, cudaStream_t stream)>;

// How a launcher-backed cuda sampler counts draws.
enum class CudaCountPath {
  kLauncher,  // CountDraws through the launcher too (the row uploaded once, batches of index-replicated rows with
              // offsets offset + i, counted on the host)
  kFastPath,  // CountDraws through the shipped counting fast path (kernels::CountDraws), Sample alone through the
              // launcher: what a fault in the draw step of the sampling kernel looks like to a campaign
};

// The cuda sampler drawing through `launch` instead of SampleFromLogits, reported as `name`; CountDraws as `count`
// says. No processed distribution (the launcher only samples).
Result<std::unique_ptr<Sampler>> MakeCudaSampler(std::string_view profile, std::string name, CudaSampleLaunch launch,
                                                 CudaCountPath count = CudaCountPath::kLauncher);

}  // namespace samplecheck::harness
