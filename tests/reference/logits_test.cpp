// Exact widening and round-to-nearest-even narrowing of the 16-bit storage formats.
#include "samplecheck/reference/logits.h"

#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <limits>

namespace samplecheck {
namespace {

TEST(StorageFormats, EveryBf16AndFp16BitPatternRoundTrips) {
  for (uint32_t bits = 0; bits <= 0xffff; ++bits) {
    const auto b = static_cast<uint16_t>(bits);
    const float bf = BFloat16ToFloat(b);
    const float hf = Float16ToFloat(b);
    if (!std::isnan(bf)) {
      EXPECT_EQ(FloatToBFloat16(bf), b) << std::hex << bits;
    }
    if (!std::isnan(hf)) {
      EXPECT_EQ(FloatToFloat16(hf), b) << std::hex << bits;
    }
    if (std::isnan(bf)) {
      EXPECT_TRUE(std::isnan(BFloat16ToFloat(FloatToBFloat16(bf))));
    }
    if (std::isnan(hf)) {
      EXPECT_TRUE(std::isnan(Float16ToFloat(FloatToFloat16(hf))));
    }
  }
}

TEST(StorageFormats, KnownValues) {
  EXPECT_EQ(Float16ToFloat(0x3c00), 1.0f);
  EXPECT_EQ(Float16ToFloat(0x7bff), 65504.0f);
  EXPECT_EQ(Float16ToFloat(0x0001), std::ldexp(1.0f, -24));
  EXPECT_EQ(Float16ToFloat(0xfc00), -std::numeric_limits<float>::infinity());
  EXPECT_EQ(BFloat16ToFloat(0x3f80), 1.0f);
  EXPECT_EQ(BFloat16ToFloat(0xff80), -std::numeric_limits<float>::infinity());
  EXPECT_EQ(FloatToFloat16(65520.0f), 0x7c00);            // rounds to inf
  EXPECT_EQ(FloatToFloat16(65519.0f), 0x7bff);            // rounds to the largest finite
  EXPECT_EQ(FloatToFloat16(std::ldexp(1.0f, -25)), 0x0000);  // half of the smallest subnormal: ties to even (0)
  EXPECT_EQ(FloatToFloat16(std::ldexp(1.5f, -25)), 0x0001);
  EXPECT_EQ(FloatToFloat16(1.0f + std::ldexp(1.0f, -11)), 0x3c00);  // tie to even
  EXPECT_EQ(FloatToFloat16(1.0f + std::ldexp(3.0f, -11)), 0x3c02);  // tie to even (up)
  EXPECT_EQ(FloatToBFloat16(std::bit_cast<float>(0x3f808000u)), 0x3f80);  // tie to even
  EXPECT_EQ(FloatToBFloat16(std::bit_cast<float>(0x3f818000u)), 0x3f82);
  EXPECT_EQ(FloatToBFloat16(std::numeric_limits<float>::max()), 0x7f80);  // rounds to inf
}

TEST(LogitsView, AtWidensEachDtype) {
  const float f32[] = {1.5f, -2.0f};
  const uint16_t bf16[] = {0x3fc0, 0xc000};
  const uint16_t fp16[] = {0x3e00, 0xc000};
  for (const LogitsView& view : {LogitsView::Fp32(f32), LogitsView::Bf16(bf16), LogitsView::Fp16(fp16)}) {
    EXPECT_EQ(view.At(0), 1.5f) << DTypeName(view.dtype);
    EXPECT_EQ(view.At(1), -2.0f) << DTypeName(view.dtype);
  }
  EXPECT_EQ(DTypeName(DType::kFloat32), "fp32");
  EXPECT_EQ(DTypeName(DType::kBFloat16), "bf16");
  EXPECT_EQ(DTypeName(DType::kFloat16), "fp16");
}

}  // namespace
}  // namespace samplecheck
