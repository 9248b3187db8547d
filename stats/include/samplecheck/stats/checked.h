#ifndef SAMPLECHECK_STATS_CHECKED_H_
#define SAMPLECHECK_STATS_CHECKED_H_

// Errors as values for stats/. Nothing in stats/ aborts or throws on bad input: a function that can be handed an
// invalid argument (negative or non-finite probability, alpha outside (0, 1), dof 0, ...) returns a value whose
// `error` names the bad input and the allowed range, e.g.
//   "alpha = 1.5 is outside the allowed range (0, 1)".
// An empty `error` means the value is valid.

#include <string>
#include <utility>

namespace samplecheck::stats {

// A value of type T, or a message saying why there is none.
template <typename T>
struct Checked {
  T value{};
  std::string error;  // empty when value is valid

  bool ok() const noexcept { return error.empty(); }

  static Checked Fail(std::string message) {
    Checked c;
    c.error = std::move(message);
    return c;
  }
};

// Validators shared by the stats headers. Each returns "" when the value is allowed, else a message naming
// `name`, the value, and the allowed range.
std::string CheckProbabilityOpen(const char* name, double value);      // (0, 1)
std::string CheckPositiveFinite(const char* name, double value);       // (0, inf)
std::string CheckNonNegativeFinite(const char* name, double value);    // [0, inf)

}  // namespace samplecheck::stats

#endif  // SAMPLECHECK_STATS_CHECKED_H_
