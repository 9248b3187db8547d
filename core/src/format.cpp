#include "samplecheck/core/format.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
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

std::string FormatSignificant(double v, int significant) {
  char buf[48];
  std::snprintf(buf, sizeof buf, "%.*g", std::clamp(significant, 1, 17), v);
  return buf;
}

std::string FormatExact(double v) { return FormatSignificant(v, 17); }

std::string FormatShortest(double v) {
  if (!std::isfinite(v)) return FormatSignificant(v, 17);
  for (int digits = 1; digits < 17; ++digits) {
    std::string text = FormatSignificant(v, digits);
    if (std::strtod(text.c_str(), nullptr) == v) return text;
  }
  return FormatSignificant(v, 17);
}

std::string FormatReadable(double v, int significant) {
  significant = std::clamp(significant, 1, 17);
  if (std::isfinite(v) && v >= std::pow(10.0, significant)) return FormatMantissaExponent(v, significant);
  return FormatSignificant(v, significant);
}

std::string FormatCount(double count) {
  if (!(count >= 0) || !std::isfinite(count)) return FormatSignificant(count);
  if (count < 1e5) {
    char buf[48];
    std::snprintf(buf, sizeof buf, "%.0f", count);
    return buf;
  }
  return FormatMantissaExponent(count, 3);
}

std::string FormatNeededCount(double count) {
  if (!(count < 1e4)) return FormatMantissaExponent(count, 2);
  return std::to_string(static_cast<uint64_t>(std::ceil(count)));
}

}  // namespace samplecheck
