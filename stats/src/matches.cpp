#include "samplecheck/stats/matches.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include <boost/math/distributions/binomial.hpp>

namespace samplecheck::stats {
namespace {

bool IsProbability(double p) { return p >= 0.0 && p <= 1.0; }  // false for NaN

}  // namespace

Result<double> PoissonBinomialUpperTail(std::span<const double> probs, uint64_t k) {
  constexpr size_t kMaxPairs = 100000;
  if (probs.size() > kMaxPairs) {
    return InvalidArgument("PoissonBinomialUpperTail: " + std::to_string(probs.size()) + " pairs; at most " +
                           std::to_string(kMaxPairs));
  }
  for (size_t i = 0; i < probs.size(); ++i) {
    if (!IsProbability(probs[i])) {
      return InvalidArgument("PoissonBinomialUpperTail: probs[" + std::to_string(i) + "] = " +
                             std::to_string(probs[i]) + " is outside [0, 1]");
    }
  }
  if (k == 0) return 1.0;
  if (k > probs.size()) return 0.0;
  // pmf[j] = P(M = j) over the pairs seen so far.
  std::vector<long double> pmf(probs.size() + 1, 0.0L);
  pmf[0] = 1.0L;
  size_t seen = 0;
  for (double p : probs) {
    ++seen;
    for (size_t j = seen; j > 0; --j) pmf[j] = pmf[j] * (1.0L - p) + pmf[j - 1] * p;
    pmf[0] *= 1.0L - p;
  }
  long double tail = 0.0L;
  for (size_t j = static_cast<size_t>(k); j <= probs.size(); ++j) tail += pmf[j];
  return std::clamp(static_cast<double>(tail), 0.0, 1.0);
}

Result<double> BinomialUpperTail(uint64_t n, double p, uint64_t k) {
  if (!IsProbability(p)) return InvalidArgument("BinomialUpperTail: p = " + std::to_string(p) + " is outside [0, 1]");
  if (k == 0) return 1.0;
  if (k > n) return 0.0;
  if (p == 0.0) return 0.0;
  if (p == 1.0) return 1.0;
  try {
    const boost::math::binomial_distribution<double> bin(static_cast<double>(n), p);
    // P(X >= k) = 1 - P(X <= k - 1)
    return std::clamp(boost::math::cdf(boost::math::complement(bin, static_cast<double>(k - 1))), 0.0, 1.0);
  } catch (const std::exception& e) {
    return InvalidArgument(std::string("BinomialUpperTail: ") + e.what());
  }
}

uint64_t MatchesNeededForPower(double pi, double alpha) {
  if (!(pi < 1.0) || !(alpha > 0.0 && alpha < 1.0)) return std::numeric_limits<uint64_t>::max();
  if (pi <= 0.0) return 1;
  const double n = std::ceil(std::log(alpha) / std::log(pi));
  return n < 1.8e19 ? std::max<uint64_t>(1, static_cast<uint64_t>(n)) : std::numeric_limits<uint64_t>::max();
}

}  // namespace samplecheck::stats
