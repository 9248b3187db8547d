// Regression tests of the stats_fuzzer findings (fuzz/corpus/stats/regress-*): extreme but allowed arguments that
// made Boost.Math throw through the stats API (terminating the program), a draw total that wrapped 2^64, and an
// inverted Clopper-Pearson interval. Each call must return a value satisfying its contract or an error naming
// its inputs; none may throw. Deterministic.

#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "samplecheck/stats/chi_square.h"
#include "samplecheck/stats/exact_tests.h"
#include "samplecheck/stats/goodness_of_fit.h"
#include "samplecheck/stats/two_sample.h"

namespace samplecheck::stats {
namespace {

constexpr std::uint64_t kMax = std::numeric_limits<std::uint64_t>::max();

// A critical value is finite and >= 0, or an error naming dof and alpha.
void ExpectCriticalValueOrError(std::uint64_t dof, double alpha) {
  Result<double> c = InternalError("not evaluated");
  ASSERT_NO_THROW(c = ChiSquareCriticalValue(dof, alpha)) << "dof " << dof << " alpha " << alpha;
  if (c.ok()) {
    EXPECT_TRUE(std::isfinite(*c) && *c >= 0) << "dof " << dof << " alpha " << alpha << ": " << *c;
  } else {
    EXPECT_NE(c.error().message.find("dof = " + std::to_string(dof)), std::string::npos) << c.error().message;
    EXPECT_NE(c.error().message.find("alpha = "), std::string::npos) << c.error().message;
  }
}

// An interval with 0 <= lower <= k / n <= upper <= 1, or an error naming k and n.
void ExpectIntervalOrError(std::uint64_t k, std::uint64_t n, double confidence) {
  Result<Interval> ci = InternalError("not evaluated");
  ASSERT_NO_THROW(ci = ClopperPearsonInterval(k, n, confidence)) << k << " / " << n << " at " << confidence;
  if (ci.ok()) {
    const long double phat = static_cast<long double>(k) / static_cast<long double>(n);
    EXPECT_LE(0.0, ci->lower) << k << " / " << n << " at " << confidence;
    EXPECT_LE(ci->lower, ci->upper) << k << " / " << n << " at " << confidence;
    EXPECT_LE(static_cast<long double>(ci->lower), phat) << k << " / " << n << " at " << confidence;
    EXPECT_LE(phat, static_cast<long double>(ci->upper)) << k << " / " << n << " at " << confidence;
    EXPECT_LE(ci->upper, 1.0) << k << " / " << n << " at " << confidence;
  } else {
    EXPECT_NE(ci.error().message.find("k = " + std::to_string(k)), std::string::npos) << ci.error().message;
    EXPECT_NE(ci.error().message.find("n = " + std::to_string(n)), std::string::npos) << ci.error().message;
  }
}

// chi-square-p-value-throws-tgamma-overflow: tgamma(dof / 2) overflowed for dof >= 3510 at statistic 0.
TEST(StatsFuzzRegressionTest, ChiSquarePValueOfZeroIsOneForEveryDof) {
  for (std::uint64_t dof : {std::uint64_t{1}, std::uint64_t{2}, std::uint64_t{3509}, std::uint64_t{3510},
                            std::uint64_t{3511}, std::uint64_t{4095}, std::uint64_t{1} << 32,
                            std::uint64_t{1007046422740}, kMax}) {
    Result<double> p = InternalError("not evaluated");
    ASSERT_NO_THROW(p = ChiSquarePValue(0.0, dof)) << dof;
    ASSERT_TRUE(p.ok()) << dof << ": " << p.error().message;
    EXPECT_EQ(*p, 1.0) << dof;
  }
  // Just above 0 the tail is still 1 (Boost's tgamma(dof / 2) overflowed there too), for every practical dof.
  for (std::uint64_t dof : {std::uint64_t{3510}, std::uint64_t{4095}, std::uint64_t{1000000}, std::uint64_t{1} << 32}) {
    for (double x : {std::numeric_limits<double>::denorm_min(), 1e-300, 1e-10}) {
      const Result<double> tiny = ChiSquarePValue(x, dof);
      ASSERT_TRUE(tiny.ok()) << dof << " " << x << ": " << tiny.error().message;
      EXPECT_EQ(*tiny, 1.0) << dof << " " << x;
    }
  }
  // Huge dof: a p-value in [0, 1] or an error naming the inputs.
  for (double x : {1e-300, 1e11, 2e11}) {
    const Result<double> p = ChiSquarePValue(x, 100000000000ULL);
    if (p.ok()) {
      EXPECT_TRUE(*p >= 0.0 && *p <= 1.0) << x << ": " << *p;
    } else {
      EXPECT_NE(p.error().message.find("dof = 100000000000"), std::string::npos) << p.error().message;
    }
  }
}

// The same finding through ordinary data: an exact fit over 4096 cells, a gate against an identical baseline.
TEST(StatsFuzzRegressionTest, ExactFitOverManyCellsHasPValueOne) {
  const std::size_t cells = 4096;
  const std::vector<std::uint64_t> observed(cells, 25);
  const std::vector<double> probabilities(cells, 1.0 / cells);
  for (const Result<GoodnessOfFit>& g :
       {PearsonChiSquareTest(observed, probabilities), GTest(observed, probabilities)}) {
    ASSERT_TRUE(g.ok()) << g.error().message;
    EXPECT_EQ(g->dof, cells - 1);
    EXPECT_EQ(g->statistic, 0.0);
    EXPECT_EQ(g->p_value, 1.0);
  }
  const Result<TwoSample> two = TwoSampleChiSquareTest(observed, observed);
  ASSERT_TRUE(two.ok()) << two.error().message;
  EXPECT_EQ(two->statistic, 0.0);
  EXPECT_EQ(two->p_value, 1.0);
}

// chi-square-critical-value-throws-series / -lower-gamma: the quantile for dof >= ~1e11.
TEST(StatsFuzzRegressionTest, ChiSquareCriticalValueOfHugeDofIsAValueOrAnError) {
  ExpectCriticalValueOrError(2942883191908346071ULL, 4.9e-324);
  ExpectCriticalValueOrError(186489007111556ULL, std::nextafter(1.0, 0.0));
  for (std::uint64_t dof : {std::uint64_t{1}, std::uint64_t{3510}, std::uint64_t{1} << 32,
                            std::uint64_t{100000000000}, std::uint64_t{1} << 53, kMax}) {
    for (double alpha : {std::numeric_limits<double>::denorm_min(), 1e-300, 1e-12, 0.05, 0.5,
                         std::nextafter(1.0, 0.0)}) {
      ExpectCriticalValueOrError(dof, alpha);
    }
  }
  // The practical range is unaffected: dof up to 2^32 (a binning has at most 2^32 cells) evaluates.
  for (std::uint64_t dof : {std::uint64_t{1}, std::uint64_t{4095}, std::uint64_t{1} << 32}) {
    const Result<double> c = ChiSquareCriticalValue(dof, 1e-12);
    ASSERT_TRUE(c.ok()) << dof << ": " << c.error().message;
    const Result<double> back = ChiSquarePValue(*c, dof);
    ASSERT_TRUE(back.ok()) << back.error().message;
    EXPECT_NEAR(*back, 1e-12, 1e-18) << dof;
  }
}

// clopper-pearson-throws-series-lower / -series-upper / -lower-gamma / -newton.
TEST(StatsFuzzRegressionTest, ClopperPearsonOfHugeNOrExtremeConfidenceIsAValueOrAnError) {
  ExpectIntervalOrError(280547269345535ULL, 281474976710655ULL, 3.5e-15);
  ExpectIntervalOrError(217020518514230019ULL, 18442240474082181379ULL, 0.0079);
  ExpectIntervalOrError(144115188075855654ULL, 18401708079084208131ULL, 1 - 2.3e-10);
  ExpectIntervalOrError(3182967511908513956ULL, 14447934633438620786ULL, 2.5e-321);
}

// clopper-pearson-inverted-interval: Boost returned [0.62355943903579869, 0.62355943903296573].
TEST(StatsFuzzRegressionTest, ClopperPearsonIsNeverInverted) {
  const Result<Interval> ci = ClopperPearsonInterval(5052140530564789790ULL, 8102099357862791648ULL, 0.0039);
  if (ci.ok()) {
    EXPECT_LE(ci->lower, ci->upper);
  } else {
    EXPECT_NE(ci.error().message.find("could not be evaluated"), std::string::npos) << ci.error().message;
  }
  ExpectIntervalOrError(5052140530564789790ULL, 8102099357862791648ULL, 0.0039);
}

// A grid of the extremes: every call is a valid interval or an error; ordinary sizes still evaluate.
TEST(StatsFuzzRegressionTest, ClopperPearsonGridOfExtremes) {
  // (Huge n, as in the findings above, takes Boost up to seconds per call before it gives up: not gridded.)
  for (std::uint64_t n : {std::uint64_t{1}, std::uint64_t{2}, std::uint64_t{10}, std::uint64_t{1000000},
                          std::uint64_t{1} << 40}) {
    for (std::uint64_t k : {std::uint64_t{0}, std::uint64_t{1}, n / 3, n / 2, n - 1, n}) {
      for (double confidence : {std::numeric_limits<double>::denorm_min(), 1e-300, 1e-15, 0.5, 0.95, 1 - 1e-10,
                                std::nextafter(1.0, 0.0)}) {
        ExpectIntervalOrError(k, n, confidence);
      }
    }
  }
  for (std::uint64_t n : {std::uint64_t{10}, std::uint64_t{1000000}}) {
    const Result<Interval> ci = ClopperPearsonInterval(n / 2, n, 0.95);
    ASSERT_TRUE(ci.ok()) << ci.error().message;
    EXPECT_LT(ci->lower, 0.5);
    EXPECT_GT(ci->upper, 0.5);
  }
}

// max-abs-z-throws-binomial-cdf: the draw total wrapped 2^64, so the binomial had k > n.
TEST(StatsFuzzRegressionTest, CountsSummingPast2To64AreAnError) {
  const std::vector<std::uint64_t> observed = {360287970189639680ULL, 18446744073709551614ULL, 7};
  const std::vector<double> probabilities = {0.25, 0.5, 0.25};
  const std::vector<std::size_t> cells = {0, 1, 2};
  Result<MaxAbsZ> z = InternalError("not evaluated");
  ASSERT_NO_THROW(z = MaxAbsZTest(observed, probabilities, cells, 1e-3));
  ASSERT_FALSE(z.ok());
  EXPECT_NE(z.error().message.find("2^64"), std::string::npos) << z.error().message;
  EXPECT_FALSE(PearsonChiSquareTest(observed, probabilities).ok());
  EXPECT_FALSE(GTest(observed, probabilities).ok());
  EXPECT_FALSE(ExactMultinomialTest(observed, probabilities).ok());
  EXPECT_FALSE(MonteCarloPearsonTest(observed, probabilities, 4, 1).ok());
  // Counts of zero-probability cells too (the support violations would wrap).
  const std::vector<double> with_zero = {0.0, 0.0, 1.0, 1.0};
  const std::vector<std::uint64_t> forbidden = {kMax, 1, 3, 4};
  EXPECT_FALSE(PearsonChiSquareTest(forbidden, with_zero).ok());
  // Two arms whose totals (or a pooled bin) wrap.
  EXPECT_FALSE(TwoSampleChiSquareTest(std::vector<std::uint64_t>{kMax, 5}, std::vector<std::uint64_t>{1, 5}).ok());
  EXPECT_FALSE(TwoSampleChiSquareTest(std::vector<std::uint64_t>{kMax - 1, 1}, std::vector<std::uint64_t>{3, 4}).ok());
  // Right at the limit it still evaluates.
  const std::vector<std::uint64_t> at_limit = {kMax / 2, kMax / 2 + 1};
  const std::vector<double> halves = {0.5, 0.5};
  const Result<GoodnessOfFit> pearson = PearsonChiSquareTest(at_limit, halves);
  ASSERT_TRUE(pearson.ok()) << pearson.error().message;
  EXPECT_EQ(pearson->draws, kMax);
}

}  // namespace
}  // namespace samplecheck::stats
