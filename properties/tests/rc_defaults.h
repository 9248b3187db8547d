// The RapidCheck parameters of the property tests: RC_PARAMS when set (scripts/properties-nightly, a replay),
// else the fixed CI defaults of rc_defaults.cpp, installed before RapidCheck reads its configuration.
#pragma once

#include <string>

#include "samplecheck/properties/suite.h"

namespace samplecheck::properties::testing {

// The CI defaults: a fixed seed and the case count that keeps `ctest -L property` under 5 minutes on 2 cores.
inline constexpr const char* kDefaultRcParams = "seed=20260401 max_success=200";

// PropertyOptions from RapidCheck's configuration (RC_PARAMS or the defaults), with the `reproduce=` value of
// RC_PARAMS when there is one.
PropertyOptions OptionsFromRcParams();

// The value of RC_PARAMS the test runs with (for replay lines).
std::string RcParams();

}  // namespace samplecheck::properties::testing
