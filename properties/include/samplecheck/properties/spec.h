// The speculation-invariance properties (docs/properties.md, docs/speculative.md), RapidCheck properties over any
// verifier (samplers/verifier.h): the exact verifier in ctest (label property), the CUDA verifier later under the
// gpu label.
//   spec-marginal-is-target     the reference's laws, for any target row, profile, parameters and draft q: the
//                               emitted marginal equals p_j (1e-15), beta_j = 1 - TV(p_j, q_j), the length law sums
//                               to 1 (exact: no sampling)
//   spec-stratified-marginal    the verifier under test, g = 1, scripted coins and draw uniforms on an M x M grid,
//                               drafts weighted by q: the emitted law is p within the grid's resolution 1.5 / M
//   spec-no-zero-emission       any scripted stream (u = 0, 2^-53, 1 - 2^-53, random) and any drafts of positive q:
//                               every emitted token has p_j > 0 and accepted positions emit their draft token
//   spec-greedy-rule            greedy targets: accepted iff the draft token is the argmax (lowest id among tied
//                               maxima), the emitted token is the argmax, whatever the coin
#pragma once

#include <string>
#include <vector>

#include "samplecheck/properties/suite.h"
#include "samplecheck/reference/profile.h"
#include "samplecheck/samplers/verifier.h"

namespace samplecheck::properties {

struct SpecPropertyInfo {
  std::string name;
  std::string checks;
  std::string bug_class;
};
const std::vector<SpecPropertyInfo>& SpecProperties();

// One property against `verifier` under `profile`: the PropertyResult of suite.h (the replay line names the
// RapidCheck seed and reproduce string).
PropertyResult RunSpecProperty(harness::Verifier& verifier, const Profile& profile, const std::string& name,
                               const PropertyOptions& options);

}  // namespace samplecheck::properties
