// Argument checks shared by the stats sources (private to stats/). Each returns Ok when the value is allowed, else
// kInvalidArgument with a message naming `name`, the value and the allowed range:
//   "alpha = 1.5 is outside the allowed range (0, 1)".
#pragma once

#include "samplecheck/core/error.h"

namespace samplecheck::stats {

Status CheckProbabilityOpen(const char* name, double value);    // (0, 1)
Status CheckPositiveFinite(const char* name, double value);     // (0, inf)
Status CheckNonNegativeFinite(const char* name, double value);  // [0, inf)

}  // namespace samplecheck::stats
