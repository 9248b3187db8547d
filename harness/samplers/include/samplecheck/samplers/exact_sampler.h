// `--sampler exact[:profile]`: the reference's exact CPU sampler behind the Sampler interface. It draws by inverse
// CDF over the exact processed distribution (reference/exact_sampler.h) with the Philox uniform of
// reference/philox.h, so it is the known-good sampler every campaign passes on, and the sampler whose draws the
// example plugin and the Python reference client reproduce token for token.
//
// Capabilities: processed_distribution (the reference distribution, dense), count_draws (ExactCountDraws),
// deterministic, profile = the profile it was made for.
#pragma once

#include <memory>
#include <string_view>

#include "samplecheck/samplers/sampler.h"
#include "samplecheck/core/error.h"

namespace samplecheck::harness {

// kInvalidArgument when no profile is named `profile` (the message lists the profiles).
Result<std::unique_ptr<Sampler>> MakeExactSampler(std::string_view profile);

}  // namespace samplecheck::harness
