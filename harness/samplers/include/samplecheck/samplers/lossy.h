// `--sampler lossy:<spec>` and `--verifier lossy:<spec>`: any sampler or verifier declared lossy (an approximation of
// its profile by design: Medusa typical acceptance, a relaxed threshold, an approximate top-p pivot). The wrapper
// forwards every call and adds Capabilities::lossy (VerifierCapabilities::lossy); a campaign then states the
// measured distance to the profile instead of a pass/fail of equality, and `samplecheck gate --max-tv T` judges
// that distance (docs/campaigns.md, "Lossy samplers and verifiers"). A sampler of this program may also set the
// capability itself.
#pragma once

#include <memory>

#include "samplecheck/samplers/sampler.h"
#include "samplecheck/samplers/verifier.h"

namespace samplecheck::harness {

std::unique_ptr<Sampler> MakeLossySampler(std::unique_ptr<Sampler> inner);
std::unique_ptr<Verifier> MakeLossyVerifier(std::unique_ptr<Verifier> inner);

}  // namespace samplecheck::harness
