#include "samplecheck/stats/simulation.h"

#include <algorithm>
#include <cmath>

namespace samplecheck::stats {
namespace {

// Inversion by sequential search from 0; expected cost O(n p). Requires p <= 0.5 and n p < ~30 so that
// (1 - p)^n does not underflow.
std::uint64_t BinomialByInversion(std::mt19937_64& rng, std::uint64_t n, double p) {
  if (n == 0 || p <= 0.0) return 0;
  const double q = 1.0 - p;
  const double ratio = p / q;
  double pk = std::exp(static_cast<double>(n) * std::log1p(-p));  // P(X = 0)
  double u = UniformOpen01(rng);
  std::uint64_t k = 0;
  while (u > pk && k < n) {
    u -= pk;
    pk *= ratio * static_cast<double>(n - k) / static_cast<double>(k + 1);
    ++k;
    if (pk <= 0.0) break;  // rounding left u above the remaining mass: stop at the current k
  }
  return k;
}

}  // namespace

double UniformOpen01(std::mt19937_64& rng) {
  const std::uint64_t bits = rng() >> 11;
  return (static_cast<double>(bits) + 0.5) * 0x1.0p-53;
}

double StandardNormal(std::mt19937_64& rng) {
  for (;;) {
    const double x = 2.0 * UniformOpen01(rng) - 1.0;
    const double y = 2.0 * UniformOpen01(rng) - 1.0;
    const double s = x * x + y * y;
    if (s > 0.0 && s < 1.0) return x * std::sqrt(-2.0 * std::log(s) / s);
  }
}

double GammaVariate(std::mt19937_64& rng, double shape) {
  if (shape < 1.0) {
    const double g = GammaVariate(rng, shape + 1.0);
    return g * std::pow(UniformOpen01(rng), 1.0 / shape);
  }
  const double d = shape - 1.0 / 3.0;
  const double c = 1.0 / std::sqrt(9.0 * d);
  for (;;) {
    double x, v;
    do {
      x = StandardNormal(rng);
      v = 1.0 + c * x;
    } while (v <= 0.0);
    v = v * v * v;
    const double u = UniformOpen01(rng);
    if (u < 1.0 - 0.0331 * (x * x) * (x * x)) return d * v;
    if (std::log(u) < 0.5 * x * x + d * (1.0 - v + std::log(v))) return d * v;
  }
}

double BetaVariate(std::mt19937_64& rng, double a, double b) {
  const double x = GammaVariate(rng, a);
  const double y = GammaVariate(rng, b);
  return x / (x + y);
}

std::uint64_t BinomialVariate(std::mt19937_64& rng, std::uint64_t n, double p) {
  if (!(p > 0.0) || n == 0) return 0;
  if (p >= 1.0) return n;
  std::uint64_t result = 0;
  for (;;) {
    if (n == 0) return result;
    const bool flip = p > 0.5;
    const double small = flip ? 1.0 - p : p;
    if (static_cast<double>(n) * small < 30.0) {
      const std::uint64_t k = BinomialByInversion(rng, n, small);
      return result + (flip ? n - k : k);
    }
    // The i-th smallest of n uniforms decides on which side of p the count lies.
    const std::uint64_t i = n / 2 + 1;
    const double x = BetaVariate(rng, static_cast<double>(i), static_cast<double>(n - i + 1));
    if (p < x) {
      n = i - 1;
      p = p / x;
    } else {
      result += i;
      n = n - i;
      p = (p - x) / (1.0 - x);
    }
    p = std::clamp(p, 0.0, 1.0);
  }
}

void MultinomialVariate(std::mt19937_64& rng, std::uint64_t n, std::span<const double> probabilities,
                        std::span<std::uint64_t> counts) {
  long double remaining_mass = 0;
  for (double q : probabilities) remaining_mass += q > 0.0 ? q : 0.0;
  std::uint64_t remaining = n;
  const std::size_t K = std::min(probabilities.size(), counts.size());
  for (std::size_t i = 0; i < K; ++i) {
    const double q = probabilities[i] > 0.0 ? probabilities[i] : 0.0;
    if (remaining == 0 || q == 0.0 || remaining_mass <= 0) {
      counts[i] = 0;
    } else {
      const double cond = static_cast<double>(std::min<long double>(1.0L, q / remaining_mass));
      counts[i] = BinomialVariate(rng, remaining, cond);
    }
    remaining -= counts[i];
    remaining_mass -= q;
  }
  // Rounding may leave draws unassigned; give them to the last positive cell (never a zero-weight one).
  if (remaining > 0) {
    for (std::size_t i = K; i-- > 0;) {
      if (probabilities[i] > 0.0) {
        counts[i] += remaining;
        break;
      }
    }
  }
}

std::vector<std::uint64_t> MultinomialVariate(std::mt19937_64& rng, std::uint64_t n,
                                              std::span<const double> probabilities) {
  std::vector<std::uint64_t> counts(probabilities.size(), 0);
  MultinomialVariate(rng, n, probabilities, counts);
  return counts;
}

}  // namespace samplecheck::stats
