// simulation.h: the deterministic variates behind every seeded simulation. The distribution checks use fixed
// seeds; each states the false-alarm rate it would have with a fresh seed.

#include "samplecheck/stats/simulation.h"

#include <cmath>
#include <random>
#include <vector>

#include <boost/math/distributions/binomial.hpp>
#include <gtest/gtest.h>

#include "samplecheck/stats/goodness_of_fit.h"

namespace samplecheck::stats {
namespace {

TEST(SimulationStabilityTest, Mt19937_64IsTheStandardSequence) {
  // [rand.predef]: the 10000th consecutive invocation of a default-constructed mt19937_64 yields this value.
  std::mt19937_64 rng;
  rng.discard(9999);
  EXPECT_EQ(rng(), 9981545732273789042ULL);
}

TEST(SimulationStabilityTest, UniformIsInOpenIntervalAndBitExact) {
  std::mt19937_64 rng(1);
  std::mt19937_64 raw(1);
  for (int i = 0; i < 1000; ++i) {
    const double u = UniformOpen01(rng);
    EXPECT_GT(u, 0.0);
    EXPECT_LT(u, 1.0);
    EXPECT_EQ(u, (static_cast<double>(raw() >> 11) + 0.5) * 0x1.0p-53);
  }
}

TEST(SimulationStabilityTest, SameSeedSameMultinomial) {
  const std::vector<double> p = {0.5, 0.0, 0.25, 0.125, 0.125};
  std::mt19937_64 a(42), b(42);
  for (int i = 0; i < 100; ++i) {
    const auto x = MultinomialVariate(a, 1'000'000, p);
    EXPECT_EQ(x, MultinomialVariate(b, 1'000'000, p));
    std::uint64_t sum = 0;
    for (auto c : x) sum += c;
    EXPECT_EQ(sum, 1'000'000u);
    EXPECT_EQ(x[1], 0u) << "a zero-weight cell must never be drawn";
  }
}

// Pearson goodness of fit of `samples` Binomial(n, p) variates against the exact pmf, cells merged from both
// tails until each expects >= 10. Returns the p-value (0 after a failed expectation when the test is an error).
double BinomialGoodnessOfFit(std::uint64_t n, double p, std::uint64_t samples, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<std::uint64_t> hist(n + 1, 0);
  for (std::uint64_t i = 0; i < samples; ++i) ++hist[BinomialVariate(rng, n, p)];
  const boost::math::binomial_distribution<double> d(static_cast<double>(n), p);
  std::vector<double> probs;
  std::vector<std::uint64_t> observed;
  double mass = 0;
  std::uint64_t count = 0;
  for (std::uint64_t k = 0; k <= n; ++k) {
    mass += boost::math::pdf(d, static_cast<double>(k));
    count += hist[k];
    if (mass * static_cast<double>(samples) >= 10 &&
        boost::math::cdf(boost::math::complement(d, static_cast<double>(k))) * static_cast<double>(samples) >= 10) {
      probs.push_back(mass);
      observed.push_back(count);
      mass = 0;
      count = 0;
    }
  }
  probs.back() += mass;  // the upper tail joins the last cell
  observed.back() += count;
  const Result<GoodnessOfFit> fit = PearsonChiSquareTest(observed, probs);
  EXPECT_TRUE(fit.ok()) << fit.error().message;
  return fit.ok() ? fit->p_value : 0.0;  // an error also fails the caller's p-value check
}

TEST(BinomialVariateTest, MatchesExactPmfInEveryRegime) {
  // Each check: 200,000 variates, Pearson X^2 against the exact pmf at alpha 1e-6 (false alarm 1e-6 per check
  // with a fresh seed; 7 checks). Power: a sampler off by 1% in the mean at n p = 400 shifts X^2 by ~400.
  EXPECT_GT(BinomialGoodnessOfFit(20, 0.3, 200000, 101), 1e-6);       // inversion
  EXPECT_GT(BinomialGoodnessOfFit(1000, 0.02, 200000, 102), 1e-6);    // inversion, n p = 20
  EXPECT_GT(BinomialGoodnessOfFit(1000, 0.4, 200000, 103), 1e-6);     // order-statistic splitting
  EXPECT_GT(BinomialGoodnessOfFit(1000, 0.97, 200000, 104), 1e-6);    // symmetry + splitting
  EXPECT_GT(BinomialGoodnessOfFit(100000, 0.5, 200000, 105), 1e-6);   // deep splitting
  EXPECT_GT(BinomialGoodnessOfFit(100000, 1e-4, 200000, 106), 1e-6);  // inversion, n p = 10
  EXPECT_GT(BinomialGoodnessOfFit(61, 0.5, 200000, 107), 1e-6);       // splitting down to inversion
}

TEST(BinomialVariateTest, HugeNHasTheRightMeanAndVariance) {
  // n = 1e12, p = 0.3: 20,000 variates. z-tests of mean and variance at |z| < 5 (false alarm 6e-7 each).
  std::mt19937_64 rng(7);
  const double n = 1e12, p = 0.3, mean = n * p, var = n * p * (1 - p);
  const int R = 20000;
  double s = 0, s2 = 0;
  for (int i = 0; i < R; ++i) {
    const double z = (static_cast<double>(BinomialVariate(rng, 1'000'000'000'000ULL, p)) - mean) / std::sqrt(var);
    s += z;
    s2 += z * z;
  }
  EXPECT_LT(std::fabs(s / R) * std::sqrt(R), 5.0);
  EXPECT_LT(std::fabs(s2 / R - 1.0) / std::sqrt(2.0 / R), 5.0);
  EXPECT_EQ(BinomialVariate(rng, 0, 0.5), 0u);
  EXPECT_EQ(BinomialVariate(rng, 10, 0.0), 0u);
  EXPECT_EQ(BinomialVariate(rng, 10, 1.0), 10u);
}

}  // namespace
}  // namespace samplecheck::stats
