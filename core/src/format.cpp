#include "samplecheck/core/format.h"

#include <algorithm>
#include <cmath>
#include <sstream>

namespace samplecheck {

std::string FormatMantissaExponent(double v, int significant) {
  significant = std::clamp(significant, 1, 17);
  std::ostringstream out;
  out.precision(significant);
  if (!(v > 0) || !std::isfinite(v)) {
    out << v;
    return out.str();
  }
  int exponent = static_cast<int>(std::floor(std::log10(v)));
  const double scale = std::pow(10.0, significant - 1);
  double mantissa = std::round(v / std::pow(10.0, exponent) * scale) / scale;
  if (mantissa >= 10) {
    mantissa /= 10;
    ++exponent;
  }
  out << mantissa << "e" << exponent;
  return out.str();
}

}  // namespace samplecheck
