// The exact CPU sampler: draws from the reference distribution by inverse CDF over the kept tokens in ascending
// token-id order, with the uniform of philox.h. It is the known-good sampler of the harness and of CI.
//
//   token = the first kept token t (ascending id) whose inclusive cumulative probability exceeds u.
#pragma once

#include <cstdint>
#include <span>

#include "samplecheck/reference/distribution.h"

namespace samplecheck {

// The token drawn from `dist` with uniform u in (0, 1).
int32_t InverseCdfDraw(const ProcessedDistribution& dist, double u);

// Counts `draws` draws of one row (draw i with offset params.offset + i) into histogram (size vocab, added to).
// Returns the error of ComputeDistribution, if any.
Status ExactCountDraws(const LogitsView& row, const SamplingParams& params, const Profile& profile, uint64_t draws,
                       std::span<uint64_t> histogram);

}  // namespace samplecheck
