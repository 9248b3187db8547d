// FormatMantissaExponent: the readable counts of reports, mutation tables and equivalence messages.
#include <gtest/gtest.h>

#include <cmath>

#include "samplecheck/core/format.h"

namespace samplecheck {
namespace {

TEST(FormatTest, MantissaExponentReadsLikeAPerson) {
  EXPECT_EQ(FormatMantissaExponent(1.81e9, 3), "1.81e9");
  EXPECT_EQ(FormatMantissaExponent(2.75e9, 3), "2.75e9");
  EXPECT_EQ(FormatMantissaExponent(2e7, 2), "2e7");
  EXPECT_EQ(FormatMantissaExponent(2.1e6, 2), "2.1e6");
  EXPECT_EQ(FormatMantissaExponent(17630.4, 4), "1.763e4");
  EXPECT_EQ(FormatMantissaExponent(9.996e9, 3), "1e10");  // the mantissa rounds to 10: next exponent
  EXPECT_EQ(FormatMantissaExponent(123456, 1), "1e5");
  EXPECT_EQ(FormatMantissaExponent(0.00123, 2), "1.2e-3");
  EXPECT_EQ(FormatMantissaExponent(0, 3), "0");
  EXPECT_EQ(FormatMantissaExponent(-5, 3), "-5");
  EXPECT_EQ(FormatMantissaExponent(INFINITY, 3), "inf");
}

}  // namespace
}  // namespace samplecheck
