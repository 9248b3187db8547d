// core/format.h: every way samplecheck writes a number for people. The pinned strings are what the reports,
// messages and tables printed before these functions replaced their local copies (ostream precision N, "%.Ng").
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <limits>
#include <sstream>
#include <vector>

#include "samplecheck/core/format.h"

namespace samplecheck {
namespace {

// What `os.precision(p); os << v` writes: the text the replaced local formatters produced.
std::string Ostream(double v, int precision) {
  std::ostringstream os;
  os.precision(precision);
  os << v;
  return os.str();
}

std::vector<double> Values() {
  const double inf = std::numeric_limits<double>::infinity();
  std::vector<double> v = {0.0, -0.0, 0.05, 1e-5, 0.1, 1.0 / 3, 0.5, 1.0, 2.0, 86400, 1e4, 9999.7, 1e5, 123456.7};
  for (double x : {2.75e9, 1e300, -1.5e-7, -42.125, 4.9e-324, 1.7976931348623157e308}) v.push_back(x);
  for (double x : {inf, -inf, std::nan(""), -std::nan("")}) v.push_back(x);
  for (int i = -12; i <= 12; ++i) v.push_back(1.2345678901234567 * std::pow(10.0, i));
  return v;
}

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

TEST(FormatTest, SignificantIsPrintfG) {
  EXPECT_EQ(FormatSignificant(0.05), "0.05");
  EXPECT_EQ(FormatSignificant(1e-5), "1e-05");
  EXPECT_EQ(FormatSignificant(1.5e6), "1.5e+06");
  EXPECT_EQ(FormatSignificant(86400), "86400");
  EXPECT_EQ(FormatSignificant(1.0 / 3), "0.333333");
  EXPECT_EQ(FormatSignificant(1.0 / 3, 3), "0.333");
  EXPECT_EQ(FormatSignificant(-0.671234567, 4), "-0.6712");
  EXPECT_EQ(FormatSignificant(12345.678, 3), "1.23e+04");
  EXPECT_EQ(FormatSignificant(INFINITY), "inf");
  EXPECT_EQ(FormatSignificant(-INFINITY, 3), "-inf");
  EXPECT_EQ(FormatSignificant(std::nan("")), "nan");
  EXPECT_EQ(FormatSignificant(-std::nan("")), "-nan");  // the sign of a NaN is kept, as ostream keeps it
  EXPECT_EQ(FormatSignificant(0.1, 0), "0.1");          // clamped to [1, 17]
  EXPECT_EQ(FormatSignificant(0.1, 40), "0.10000000000000001");
}

// The replaced formatters were ostreams of precision 6 (the default), 4 and 17, and "%.*g" at 2 to 8 digits.
TEST(FormatTest, SignificantWritesWhatAnOstreamWrites) {
  for (double v : Values()) {
    std::ostringstream plain;
    plain << v;
    EXPECT_EQ(FormatSignificant(v), plain.str()) << v;
    for (int p = 1; p <= 17; ++p) EXPECT_EQ(FormatSignificant(v, p), Ostream(v, p)) << v << " at " << p;
  }
}

TEST(FormatTest, ExactReadsBackAsTheSameDouble) {
  EXPECT_EQ(FormatExact(0.1), "0.10000000000000001");
  EXPECT_EQ(FormatExact(0.5), "0.5");
  EXPECT_EQ(FormatExact(2.0), "2");
  EXPECT_EQ(FormatExact(1e-3), "0.001");
  EXPECT_EQ(FormatExact(86400), "86400");
  EXPECT_EQ(FormatExact(INFINITY), "inf");
  for (double v : Values()) {
    EXPECT_EQ(FormatExact(v), Ostream(v, 17)) << v;
    if (std::isfinite(v)) {
      EXPECT_EQ(std::strtod(FormatExact(v).c_str(), nullptr), v) << FormatExact(v);
    }
  }
}

TEST(FormatTest, ShortestReadsBackExactlyWithTheFewestDigits) {
  EXPECT_EQ(FormatShortest(0.0016), "0.0016");
  EXPECT_EQ(FormatShortest(0.1), "0.1");
  EXPECT_EQ(FormatShortest(1.0 / 3.0), "0.3333333333333333");
  EXPECT_EQ(FormatShortest(0.1 + 0.2), "0.30000000000000004");
  EXPECT_EQ(FormatShortest(0.012500000000000001), "0.0125");
  EXPECT_EQ(FormatShortest(INFINITY), "inf");
  for (double v : {1e-3, 2.5e-3, 0.0125, 0.5, 7.0 / 9.0, 1e-300}) {
    EXPECT_EQ(std::strtod(FormatShortest(v).c_str(), nullptr), v) << FormatShortest(v);
  }
}

// stats/equivalence's messages: %.4g, with the readable exponent from 10^4 up.
TEST(FormatTest, ReadableSwitchesToMantissaExponentWhereGWouldWriteEPlus) {
  EXPECT_EQ(FormatReadable(0.012345678, 4), "0.01235");
  EXPECT_EQ(FormatReadable(0.05, 4), "0.05");
  EXPECT_EQ(FormatReadable(1e-5, 4), "1e-05");
  EXPECT_EQ(FormatReadable(9999, 4), "9999");
  EXPECT_EQ(FormatReadable(9999.7, 4), "1e+04");  // below 10^4: %g rounds it up, as before
  EXPECT_EQ(FormatReadable(1e4, 4), "1e4");
  EXPECT_EQ(FormatReadable(17630.4, 4), "1.763e4");
  EXPECT_EQ(FormatReadable(2.75e9, 4), "2.75e9");
  EXPECT_EQ(FormatReadable(INFINITY, 4), "inf");
  EXPECT_EQ(FormatReadable(std::nan(""), 4), "nan");
  for (double v : Values()) {
    const std::string old = std::isfinite(v) && v >= 1e4 ? FormatMantissaExponent(v, 4) : Ostream(v, 4);
    EXPECT_EQ(FormatReadable(v, 4), old) << v;
  }
}

// Reports' summaries, the HTML and the session's plan lines.
TEST(FormatTest, CountIsExactBelowOneHundredThousand) {
  EXPECT_EQ(FormatCount(0), "0");
  EXPECT_EQ(FormatCount(1), "1");
  EXPECT_EQ(FormatCount(65536), "65536");
  EXPECT_EQ(FormatCount(99999), "99999");
  EXPECT_EQ(FormatCount(1234.4), "1234");  // a rate (draws/s) rounds to the nearest
  EXPECT_EQ(FormatCount(1e5), "1e5");
  EXPECT_EQ(FormatCount(210000), "2.1e5");
  EXPECT_EQ(FormatCount(1.81e9), "1.81e9");
  EXPECT_EQ(FormatCount(4096000000.0), "4.1e9");
  EXPECT_EQ(FormatCount(-3), "-3");
  EXPECT_EQ(FormatCount(-0.5), "-0.5");
  EXPECT_EQ(FormatCount(INFINITY), "inf");
  EXPECT_EQ(FormatCount(std::nan("")), "nan");
}

// The mutation score's "needed" column: draws or cases for power 0.99, rounded up while they are few.
TEST(FormatTest, NeededCountRoundsUpBelowTenThousand) {
  EXPECT_EQ(FormatNeededCount(0), "0");
  EXPECT_EQ(FormatNeededCount(1), "1");
  EXPECT_EQ(FormatNeededCount(36.2), "37");
  EXPECT_EQ(FormatNeededCount(4.6051701859880909), "5");
  EXPECT_EQ(FormatNeededCount(9999.5), "10000");
  EXPECT_EQ(FormatNeededCount(1e4), "1e4");
  EXPECT_EQ(FormatNeededCount(214567.8), "2.1e5");
  EXPECT_EQ(FormatNeededCount(2.75e9), "2.8e9");
  EXPECT_EQ(FormatNeededCount(INFINITY), "inf");
}

}  // namespace
}  // namespace samplecheck
