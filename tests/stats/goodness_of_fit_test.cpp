// goodness_of_fit.h against hand-worked examples. Deterministic.

#include "samplecheck/stats/goodness_of_fit.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include <gtest/gtest.h>

namespace samplecheck::stats {
namespace {

// chi-square(3) upper tail in closed form: erfc(sqrt(x/2)) + sqrt(2x/pi) exp(-x/2).
double UpperTailDof3(double x) {
  return std::erfc(std::sqrt(x / 2)) + std::sqrt(2 * x / M_PI) * std::exp(-x / 2);
}

TEST(PearsonChiSquareTest, MendelPeasTextbookExample) {
  // Mendel's dihybrid cross, 9:3:3:1: X^2 = 0.470, dof 3, p = 0.925 (printed in most textbooks).
  const std::vector<std::uint64_t> observed = {315, 108, 101, 32};
  const std::vector<double> p = {9, 3, 3, 1};  // weights, normalized inside
  const Result<GoodnessOfFit> r = PearsonChiSquareTest(observed, p);
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_NEAR(r->statistic, 0.470024, 1e-6);
  EXPECT_EQ(r->dof, 3u);
  EXPECT_NEAR(r->p_value, UpperTailDof3(r->statistic), 1e-12);
  EXPECT_NEAR(r->p_value, 0.925, 5e-4);
  EXPECT_EQ(r->draws, 556u);
  EXPECT_NEAR(r->min_expected, 34.75, 1e-9);
  EXPECT_TRUE(r->Passes(0.05));
}

TEST(PearsonChiSquareTest, HandWorkedSmallExample) {
  // E = {20, 20, 20, 40}: X^2 = 4/20 + 4/20 = 0.4.
  const std::vector<std::uint64_t> observed = {18, 22, 20, 40};
  const std::vector<double> p = {0.2, 0.2, 0.2, 0.4};
  const Result<GoodnessOfFit> r = PearsonChiSquareTest(observed, p);
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_NEAR(r->statistic, 0.4, 1e-12);
  EXPECT_NEAR(r->p_value, UpperTailDof3(0.4), 1e-12);
  // G = 2 (18 ln 0.9 + 22 ln 1.1).
  const Result<GoodnessOfFit> g = GTest(observed, p);
  ASSERT_TRUE(g.ok()) << g.error().message;
  EXPECT_NEAR(g->statistic, 2 * (18 * std::log(0.9) + 22 * std::log(1.1)), 1e-12);
  EXPECT_NEAR(g->p_value, UpperTailDof3(g->statistic), 1e-12);
  const auto residuals = StandardizedResiduals(observed, p);
  ASSERT_EQ(residuals.size(), 4u);
  EXPECT_NEAR(residuals[0], -2 / std::sqrt(20.0), 1e-12);
  EXPECT_NEAR(residuals[1], 2 / std::sqrt(20.0), 1e-12);
  EXPECT_NEAR(residuals[2], 0.0, 1e-12);
  EXPECT_NEAR(residuals[3], 0.0, 1e-12);
}

TEST(PearsonChiSquareTest, GrossMisfitGivesTinyButNonZeroPValue) {
  const std::vector<std::uint64_t> observed = {100000, 0};
  const std::vector<double> p = {0.5, 0.5};
  const Result<GoodnessOfFit> r = PearsonChiSquareTest(observed, p);
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_NEAR(r->statistic, 100000.0, 1e-6);
  EXPECT_EQ(r->p_value, 0.0);  // underflows honestly to 0 at X^2 = 1e5, never NaN
  EXPECT_FALSE(r->Passes(1e-6));
  const Result<GoodnessOfFit> moderate = PearsonChiSquareTest(std::vector<std::uint64_t>{600, 400}, p);
  ASSERT_TRUE(moderate.ok()) << moderate.error().message;
  EXPECT_GT(moderate->p_value, 0.0);
  EXPECT_LT(moderate->p_value, 1e-9);  // X^2 = 40, 1 - cdf would still be representable here, but far tails not
}

TEST(PearsonChiSquareTest, ZeroProbabilityCellWithDrawsIsASupportViolationNotAnInfinitePValue) {
  // The Pyro bug: a count in a zero-probability cell produced an infinite statistic and the test passed.
  const std::vector<std::uint64_t> observed = {50, 50, 1};
  const std::vector<double> p = {0.5, 0.5, 0.0};
  for (const Result<GoodnessOfFit>& r : {PearsonChiSquareTest(observed, p), GTest(observed, p)}) {
    ASSERT_TRUE(r.ok()) << r.error().message;
    EXPECT_EQ(r->support_violations, 1u);
    EXPECT_EQ(r->dof, 1u);
    EXPECT_TRUE(std::isfinite(r->statistic));
    EXPECT_TRUE(std::isfinite(r->p_value));
    EXPECT_EQ(r->draws, 100u);
    EXPECT_NEAR(r->p_value, 1.0, 1e-12);
    EXPECT_FALSE(r->Passes(1e-6)) << "a support violation must fail whatever the p-value";
  }
  const auto residuals = StandardizedResiduals(observed, p);
  EXPECT_EQ(residuals[2], 0.0);
}

TEST(PearsonChiSquareTest, InvalidInputIsAnErrorValue) {
  const std::vector<std::uint64_t> o = {1, 2};
  EXPECT_FALSE(PearsonChiSquareTest(o, std::vector<double>{0.5}).ok());
  // The error message of an invalid test ("" when the result is unexpectedly valid, which fails the search below).
  auto error_of = [](const Result<GoodnessOfFit>& r) { return r.ok() ? std::string() : r.error().message; };
  EXPECT_NE(error_of(PearsonChiSquareTest(o, std::vector<double>{0.5, -0.5})).find("probabilities[1] = -0.5"),
            std::string::npos);
  EXPECT_NE(error_of(PearsonChiSquareTest(o, std::vector<double>{0.0, 0.0})).find("sum to 0"), std::string::npos);
  EXPECT_NE(error_of(PearsonChiSquareTest(o, std::vector<double>{1.0, 0.0})).find("dof = 0"), std::string::npos);
  // No draws: no evidence, p = 1 (not an error).
  const auto empty = PearsonChiSquareTest(std::vector<std::uint64_t>{0, 0}, std::vector<double>{0.5, 0.5});
  ASSERT_TRUE(empty.ok()) << empty.error().message;
  EXPECT_EQ(empty->p_value, 1.0);
}

// P(X >= k) for X ~ Binomial(n, p), summed term by term in long double (independent of Boost).
double UpperBinomialTail(int n, double p, int k) {
  long double s = 0;
  for (int j = k; j <= n; ++j) {
    s += std::exp(std::lgamma(n + 1.0L) - std::lgamma(j + 1.0L) - std::lgamma(n - j + 1.0L) +
                  j * std::log(static_cast<long double>(p)) + (n - j) * std::log1p(-static_cast<long double>(p)));
  }
  return static_cast<double>(s);
}

TEST(MaxAbsZTest, HandWorkedExampleWithExactTailsAndBonferroni) {
  // n = 1000, p = {0.5, 0.3, 0.2}: cell 0 is 60 above its mean, z = 60 / sqrt(250) = 3.795.
  const std::vector<std::uint64_t> observed = {560, 260, 180};
  const std::vector<double> p = {0.5, 0.3, 0.2};
  const std::vector<std::size_t> cells = {0, 1, 2};
  const Result<MaxAbsZ> r = MaxAbsZTest(observed, p, cells, 0.05);
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r->cell, 0u);
  EXPECT_NEAR(r->z, 60 / std::sqrt(250.0), 1e-12);
  EXPECT_EQ(r->m, 3u);
  EXPECT_NEAR(r->threshold, 2.39398, 1e-4);  // z_{0.05 / 6}, reported
  // p = 3 * 2 * P(Binomial(1000, 1/2) >= 560).
  EXPECT_NEAR(r->p_value, 3 * 2 * UpperBinomialTail(1000, 0.5, 560), 1e-9);
  EXPECT_FALSE(r->Passes());
  // Only cells 1 and 2: cell 1 (z = -2.76) is the most extreme; 2 * 2 * P(X <= 260) = 0.0128 > 0.01.
  const std::vector<std::size_t> some = {1, 2};
  const Result<MaxAbsZ> s = MaxAbsZTest(observed, p, some, 0.01);
  ASSERT_TRUE(s.ok()) << s.error().message;
  EXPECT_EQ(s->cell, 1u);
  EXPECT_LT(s->z, 0.0);
  EXPECT_NEAR(s->threshold, 2.807, 1e-3);  // z_{0.01/4}
  EXPECT_NEAR(s->p_value, 2 * 2 * (1 - UpperBinomialTail(1000, 0.3, 261)), 1e-9);
  EXPECT_TRUE(s->Passes());
  EXPECT_FALSE(MaxAbsZTest(observed, p, std::vector<std::size_t>{5}, 0.01).ok());
}

// The screen (Chernoff above, Ash's lemma below) only skips cells that cannot hold the smallest tail: over random
// cells of probabilities from 1e-9 to 0.5 and counts near and far from their means, the test's cell and p-value
// equal a brute-force evaluation of every cell's exact two-sided tail.
TEST(MaxAbsZTest, ScreenedCellsGiveTheBruteForceResult) {
  uint64_t state = 0x5EEDu;
  auto next = [&state]() {  // splitmix64
    uint64_t z = (state += 0x9E3779B97F4A7C15ULL);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
  };
  auto uniform = [&next]() { return double(next() >> 11) * 0x1.0p-53; };
  for (int trial = 0; trial < 200; ++trial) {
    const int cells = 2 + int(next() % 40);
    const int n = 50 + int(next() % 1500);
    std::vector<double> w(cells);
    double total = 0;
    for (double& x : w) total += (x = std::pow(10.0, -9.0 * uniform()));
    std::vector<double> p(cells);
    std::vector<std::uint64_t> observed(cells);
    int left = n;
    for (int i = 0; i < cells; ++i) {
      p[i] = w[i] / total;
      const double mean = n * p[i];
      const int shift = int(next() % 4) == 0 ? int(next() % 9) - 2 : 0;  // most near the mean, some off
      observed[i] = std::uint64_t(std::clamp(int(std::lround(mean)) + shift, 0, left));
      left -= int(observed[i]);
    }
    observed[0] += std::uint64_t(left);
    std::uint64_t drawn = 0;
    for (std::uint64_t o : observed) drawn += o;
    std::vector<std::size_t> all(cells);
    for (int i = 0; i < cells; ++i) all[i] = std::size_t(i);
    const Result<MaxAbsZ> r = MaxAbsZTest(observed, p, all, 0.01);
    ASSERT_TRUE(r.ok()) << r.error().message;
    double brute = 2.0;
    for (int i = 0; i < cells; ++i) {
      const int k = int(observed[i]);
      const double upper = UpperBinomialTail(int(drawn), p[i], k);
      const double lower = 1.0 - UpperBinomialTail(int(drawn), p[i], k + 1);
      brute = std::min(brute, std::min(1.0, 2.0 * std::min(lower, upper)));
    }
    EXPECT_NEAR(r->p_value, std::min(1.0, brute * cells), 1e-9 + 1e-6 * r->p_value) << "trial " << trial;
  }
}

}  // namespace
}  // namespace samplecheck::stats
