// Numbers as people read them in reports and messages: 2.75e9, not 2.75e+09 or "2.75e+03M". Every library formats
// its numbers here, one function per way of writing them; pick by what the reader needs:
//   FormatSignificant      a measured or configured value in a message ("%.6g": 0.05, 1e-05, 1.5e+06)
//   FormatExact            a value the reader may paste back (17 digits: reads back as the same double)
//   FormatReadable         a statistic that may be large (%.Ng, but 1.763e4 where %g writes 1.763e+04)
//   FormatCount            a count of draws or cases (65536, 1.81e9)
//   FormatNeededCount      an estimate of the draws or cases needed (rounded up: 37, 2.1e5)
//   FormatMantissaExponent the building block of the last three
#pragma once

#include <string>

namespace samplecheck {

// v as <mantissa>e<exponent> with `significant` significant digits and no trailing zeros ("1.81e9", "2e7",
// "1.763e4"); a mantissa that rounds to 10 moves to the next exponent (9.996e9 at 3 digits is "1e10"). Non-positive
// or non-finite v is written as ostream writes it. significant in [1, 17].
std::string FormatMantissaExponent(double v, int significant);

// v as printf's "%.<significant>g" writes it, which is also what an ostream of that precision writes: "0.05",
// "1e-05", "1.5e+06", "inf", "-inf", "nan" (a NaN keeps its sign: "-nan"). significant is clamped to [1, 17]; the
// default 6 is an ostream's, so FormatSignificant(v) is the text of `os << v`.
std::string FormatSignificant(double v, int significant = 6);

// v with 17 significant digits (FormatSignificant(v, 17)): the text reads back as the same double, 0.1 is
// "0.10000000000000001". For messages that quote a value as the program holds it: a bound, a value refused.
std::string FormatExact(double v);
// The fewest significant digits (%g) that read back as v exactly: 0.0016 for the double nearest 0.0016, where
// FormatExact writes 0.0016000000000000001. For values a person retypes (a reproduce line's --tv).
std::string FormatShortest(double v);

// FormatSignificant(v, significant) for v below 10^significant; a finite v at or above it, which %g would write
// with a "e+04" exponent, as FormatMantissaExponent(v, significant) ("1.763e4"). significant in [1, 17].
std::string FormatReadable(double v, int significant);

// A count for people: exact below 100000 ("65536", rounded to the nearest whole number), else three digits and a
// power of ten ("1.81e9", "2.1e5"). A negative or non-finite count is written as FormatSignificant writes it.
std::string FormatCount(double count);

// An estimate of the draws or cases needed (a power plan's): below 10000 the whole number at or above it ("37" for
// 36.2), else two digits and a power of ten ("2.1e5"; FormatMantissaExponent rounds these to the nearest). A
// non-finite estimate is written as ostream writes it ("inf"); count must not be negative.
std::string FormatNeededCount(double count);

}  // namespace samplecheck
