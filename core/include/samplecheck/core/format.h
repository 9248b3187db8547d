// Numbers as people read them in reports and messages: 2.75e9, not 2.75e+09 or "2.75e+03M".
#pragma once

#include <string>

namespace samplecheck {

// v as <mantissa>e<exponent> with `significant` significant digits and no trailing zeros ("1.81e9", "2e7",
// "1.763e4"); a mantissa that rounds to 10 moves to the next exponent (9.996e9 at 3 digits is "1e10"). Non-positive
// or non-finite v is written as ostream writes it. significant in [1, 17].
std::string FormatMantissaExponent(double v, int significant);

}  // namespace samplecheck
