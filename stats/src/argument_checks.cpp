#include "argument_checks.h"

#include <cmath>
#include <sstream>

namespace samplecheck::stats {
namespace {

Error Outside(const char* name, double value, const char* range) {
  std::ostringstream out;
  out << name << " = " << value << " is outside the allowed range " << range;
  return InvalidArgument(out.str());
}

}  // namespace

Status CheckProbabilityOpen(const char* name, double value) {
  if (std::isfinite(value) && value > 0.0 && value < 1.0) return Status::Ok();
  return Outside(name, value, "(0, 1)");
}

Status CheckPositiveFinite(const char* name, double value) {
  if (std::isfinite(value) && value > 0.0) return Status::Ok();
  return Outside(name, value, "(0, inf)");
}

Status CheckNonNegativeFinite(const char* name, double value) {
  if (std::isfinite(value) && value >= 0.0) return Status::Ok();
  return Outside(name, value, "[0, inf)");
}

}  // namespace samplecheck::stats
