#ifndef SAMPLECHECK_TESTS_STATS_CALIBRATION_UTIL_H_
#define SAMPLECHECK_TESTS_STATS_CALIBRATION_UTIL_H_

// Helpers for the seeded calibration simulations: binomial acceptance bounds for a rejection count, and the
// worst-case total-variation shift of statistics.md 5.2.

#include <cmath>
#include <cstdint>
#include <sstream>
#include <string>
#include <vector>

#include <boost/math/distributions/binomial.hpp>

namespace samplecheck::stats::testing {

// Rejection counts out of `runs` that a test of true rejection rate `rate` produces with probability at least
// 1 - false_alarm: [quantile(false_alarm / 2), quantile(complement(false_alarm / 2))] of Binomial(runs, rate).
struct CountBounds {
  std::uint64_t lower = 0;
  std::uint64_t upper = 0;
  std::string Describe() const {
    std::ostringstream out;
    out << "[" << lower << ", " << upper << "]";
    return out.str();
  }
};
inline CountBounds BinomialBounds(std::uint64_t runs, double rate, double false_alarm) {
  const boost::math::binomial_distribution<double> d(static_cast<double>(runs), rate);
  CountBounds b;
  b.lower = static_cast<std::uint64_t>(boost::math::quantile(d, false_alarm / 2));
  b.upper = static_cast<std::uint64_t>(boost::math::quantile(boost::math::complement(d, false_alarm / 2)));
  return b;
}

// Probability that Binomial(runs, rate) falls inside `bounds`: the miss probability of the calibration check
// against a miscalibrated test of that true rate is this value.
inline double ProbabilityInside(std::uint64_t runs, double rate, CountBounds bounds) {
  const boost::math::binomial_distribution<double> d(static_cast<double>(runs), rate);
  const double below = bounds.lower == 0 ? 0.0 : boost::math::cdf(d, static_cast<double>(bounds.lower) - 1.0);
  const double above = boost::math::cdf(boost::math::complement(d, static_cast<double>(bounds.upper)));
  return 1.0 - below - above;
}

// The worst-case shift at total variation tv: p0 scaled by (1 + 2 tv) on cells [0, half) and by (1 - 2 tv) on the
// rest, where the first `half` cells carry exactly half the mass (chi2 divergence = 4 tv^2).
inline std::vector<double> WorstCaseShift(const std::vector<double>& p0, std::size_t half, double tv) {
  std::vector<double> p1 = p0;
  for (std::size_t i = 0; i < p1.size(); ++i) p1[i] *= i < half ? 1 + 2 * tv : 1 - 2 * tv;
  return p1;
}

}  // namespace samplecheck::stats::testing

#endif  // SAMPLECHECK_TESTS_STATS_CALIBRATION_UTIL_H_
