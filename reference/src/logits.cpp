#include "samplecheck/reference/logits.h"

#include <bit>
#include <cmath>
#include <cstdint>

namespace samplecheck {

std::string_view DTypeName(DType dtype) {
  switch (dtype) {
    case DType::kFloat32: return "fp32";
    case DType::kBFloat16: return "bf16";
    case DType::kFloat16: return "fp16";
  }
  return "unknown";
}

float BFloat16ToFloat(uint16_t bits) { return std::bit_cast<float>(static_cast<uint32_t>(bits) << 16); }

float Float16ToFloat(uint16_t bits) {
  const uint32_t sign = static_cast<uint32_t>(bits & 0x8000u) << 16;
  const uint32_t exponent = (bits >> 10) & 0x1fu;
  const uint32_t mantissa = bits & 0x3ffu;
  if (exponent == 0) {
    // Zero or subnormal: mantissa * 2^-24, exact in fp32.
    const float magnitude = std::ldexp(static_cast<float>(mantissa), -24);
    return sign ? -magnitude : magnitude;
  }
  if (exponent == 0x1f) return std::bit_cast<float>(sign | 0x7f800000u | (mantissa << 13));  // inf / NaN
  return std::bit_cast<float>(sign | ((exponent + 112u) << 23) | (mantissa << 13));
}

uint16_t FloatToBFloat16(float value) {
  const uint32_t bits = std::bit_cast<uint32_t>(value);
  if (std::isnan(value)) return static_cast<uint16_t>((bits >> 16) | 0x40u);  // keep it a (quiet) NaN
  const uint32_t rounding = 0x7fffu + ((bits >> 16) & 1u);                    // round to nearest even
  return static_cast<uint16_t>((bits + rounding) >> 16);
}

uint16_t FloatToFloat16(float value) {
  const uint32_t bits = std::bit_cast<uint32_t>(value);
  const uint16_t sign = static_cast<uint16_t>((bits >> 16) & 0x8000u);
  const uint32_t magnitude = bits & 0x7fffffffu;
  if (magnitude > 0x7f800000u) return static_cast<uint16_t>(sign | 0x7e00u | ((magnitude >> 13) & 0x3ffu));  // NaN
  if (magnitude >= 0x477ff000u) return static_cast<uint16_t>(sign | 0x7c00u);  // >= 65520 (and inf) -> inf
  if (magnitude >= 0x38800000u) {                                              // fp16 normal range
    const uint32_t rebased = magnitude - (112u << 23);
    return static_cast<uint16_t>(sign | ((rebased + 0x0fffu + ((rebased >> 13) & 1u)) >> 13));
  }
  // fp16 subnormal or zero: count units of 2^-24, round half to even (the default rounding mode).
  const float units = std::ldexp(std::bit_cast<float>(magnitude), 24);  // exact
  return static_cast<uint16_t>(sign | static_cast<uint16_t>(std::nearbyint(units)));
}

float LogitsView::At(int64_t i) const {
  switch (dtype) {
    case DType::kFloat32: return static_cast<const float*>(data)[i];
    case DType::kBFloat16: return BFloat16ToFloat(static_cast<const uint16_t*>(data)[i]);
    case DType::kFloat16: return Float16ToFloat(static_cast<const uint16_t*>(data)[i]);
  }
  return 0.0f;
}

}  // namespace samplecheck
