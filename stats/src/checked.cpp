#include "samplecheck/stats/checked.h"

#include <cmath>
#include <sstream>

namespace samplecheck::stats {
namespace {

std::string Describe(const char* name, double value, const char* range) {
  std::ostringstream out;
  out << name << " = " << value << " is outside the allowed range " << range;
  return out.str();
}

}  // namespace

std::string CheckProbabilityOpen(const char* name, double value) {
  if (std::isfinite(value) && value > 0.0 && value < 1.0) return {};
  return Describe(name, value, "(0, 1)");
}

std::string CheckPositiveFinite(const char* name, double value) {
  if (std::isfinite(value) && value > 0.0) return {};
  return Describe(name, value, "(0, inf)");
}

std::string CheckNonNegativeFinite(const char* name, double value) {
  if (std::isfinite(value) && value >= 0.0) return {};
  return Describe(name, value, "[0, inf)");
}

}  // namespace samplecheck::stats
