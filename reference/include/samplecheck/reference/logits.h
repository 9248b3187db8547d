// A view of one logits row as stored by an engine: fp32, bf16 or fp16. The reference widens every element
// exactly (bf16 and fp16 are exactly representable in fp32 and long double), so a row's meaning never depends on
// how it was stored.
#pragma once

#include <cstdint>
#include <span>
#include <string_view>

namespace samplecheck {

enum class DType { kFloat32, kBFloat16, kFloat16 };

std::string_view DTypeName(DType dtype);

// Exact conversions of the 16-bit storage formats (round trip is exact for every bit pattern, NaN payloads aside).
float BFloat16ToFloat(uint16_t bits);
float Float16ToFloat(uint16_t bits);
uint16_t FloatToBFloat16(float value);  // round to nearest even
uint16_t FloatToFloat16(float value);   // round to nearest even

struct LogitsView {
  DType dtype = DType::kFloat32;
  const void* data = nullptr;  // vocab elements of dtype, contiguous
  int64_t vocab = 0;

  static LogitsView Fp32(std::span<const float> row) { return {DType::kFloat32, row.data(), (int64_t)row.size()}; }
  static LogitsView Bf16(std::span<const uint16_t> row) { return {DType::kBFloat16, row.data(), (int64_t)row.size()}; }
  static LogitsView Fp16(std::span<const uint16_t> row) { return {DType::kFloat16, row.data(), (int64_t)row.size()}; }

  // Element i as fp32 (exact for every dtype).
  float At(int64_t i) const;
};

}  // namespace samplecheck
