// Philox4x32-10 against the Random123 known-answer vectors (Random123 tests/kat_vectors, "philox4x32 10" lines:
// counter words, key words, expected output words), and the uniform of philox.h.
#include "samplecheck/reference/philox.h"

#include <gtest/gtest.h>

#include <cmath>
#include <set>

namespace samplecheck {
namespace {

struct KnownAnswer {
  PhiloxBlock counter;
  uint32_t key0, key1;
  PhiloxBlock expected;
};

TEST(Philox4x32_10, MatchesRandom123KnownAnswerVectors) {
  const KnownAnswer vectors[] = {
      {{0x00000000, 0x00000000, 0x00000000, 0x00000000}, 0x00000000, 0x00000000,
       {0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8}},
      {{0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff}, 0xffffffff, 0xffffffff,
       {0x408f276d, 0x41c83b0e, 0xa20bc7c6, 0x6d5451fd}},
      {{0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344}, 0xa4093822, 0x299f31d0,
       {0xd16cfe09, 0x94fdcceb, 0x5001e420, 0x24126ea1}},
  };
  for (const KnownAnswer& v : vectors) {
    EXPECT_EQ(Philox4x32_10(v.counter, v.key0, v.key1), v.expected) << std::hex << v.counter[0] << " " << v.key0;
  }
}

TEST(UniformForDraw, IsTheDocumentedFunctionOfTheBlock) {
  const uint64_t seed = 0x0123456789abcdefull;
  const uint64_t offset = 0xfedcba9876543210ull;
  const PhiloxBlock block = Philox4x32_10({0x76543210u, 0xfedcba98u, 0u, 0u}, 0x89abcdefu, 0x01234567u);
  const uint64_t bits = (static_cast<uint64_t>(block[0]) << 32 | block[1]) >> 12;
  EXPECT_EQ(UniformForDraw(seed, offset), (static_cast<double>(bits) + 0.5) * std::ldexp(1.0, -52));
}

TEST(UniformForDraw, ExtremeBitPatternsStayStrictlyInsideTheUnitInterval) {
  // The formula's two ends, computed the way UniformForDraw computes them: exact in double, never 0 or 1.
  const double lowest = (static_cast<double>(0) + 0.5) * std::ldexp(1.0, -52);
  const double highest = (static_cast<double>((uint64_t{1} << 52) - 1) + 0.5) * std::ldexp(1.0, -52);
  EXPECT_EQ(lowest, std::ldexp(1.0, -53));
  EXPECT_EQ(highest, 1.0 - std::ldexp(1.0, -53));
  EXPECT_LT(highest, 1.0);
}

TEST(UniformForDraw, StaysInsideTheOpenUnitIntervalAndDependsOnSeedAndOffset) {
  std::set<double> seen;
  for (uint64_t offset = 0; offset < 20000; ++offset) {
    const double u = UniformForDraw(42, offset);
    ASSERT_GT(u, 0.0);
    ASSERT_LT(u, 1.0);
    seen.insert(u);
  }
  EXPECT_EQ(seen.size(), 20000u);
  EXPECT_NE(UniformForDraw(1, 0), UniformForDraw(2, 0));
  EXPECT_NE(UniformForDraw(1, 1ull << 32), UniformForDraw(1, 0));  // the high counter word counts
  EXPECT_NE(UniformForDraw(1ull << 32, 0), UniformForDraw(0, 0));  // so does the high key word
  EXPECT_EQ(UniformForDraw(7, 99), UniformForDraw(7, 99));
  // The extreme 53-bit values: 0 maps to 2^-54 > 0; 2^53 - 1 rounds to exactly 1.0 (documented in philox.h).
  EXPECT_EQ((0.0 + 0.5) * std::ldexp(1.0, -53), std::ldexp(1.0, -54));
  EXPECT_EQ((std::ldexp(1.0, 53) - 1 + 0.5) * std::ldexp(1.0, -53), 1.0);
}

}  // namespace
}  // namespace samplecheck
