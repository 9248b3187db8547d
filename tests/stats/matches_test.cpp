// stats/matches.h: the exact tails of the match counts of the stream checks, against hand-worked values and each
// other, and the draws the stream checks need for power 1 against a stream that repeats itself; the exact lower tail
// of a two-cell fit (exact_tests.h).
#include "samplecheck/stats/matches.h"

#include "samplecheck/stats/exact_tests.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <vector>

namespace samplecheck::stats {
namespace {

TEST(Matches, PoissonBinomialHandWorked) {
  // Two pairs of 1/2 and 1/4: P(M = 2) = 1/8, P(M = 1) = 1/2 * 3/4 + 1/2 * 1/4 = 1/2.
  const std::vector<double> probs{0.5, 0.25};
  EXPECT_DOUBLE_EQ(*PoissonBinomialUpperTail(probs, 0), 1.0);
  EXPECT_DOUBLE_EQ(*PoissonBinomialUpperTail(probs, 1), 0.625);
  EXPECT_DOUBLE_EQ(*PoissonBinomialUpperTail(probs, 2), 0.125);
  EXPECT_DOUBLE_EQ(*PoissonBinomialUpperTail(probs, 3), 0.0);
}

TEST(Matches, PoissonBinomialWithEqualProbabilitiesIsBinomial) {
  const std::vector<double> probs(200, 0.03);
  for (uint64_t k : {0, 1, 3, 6, 10, 20, 200}) {
    const double a = *PoissonBinomialUpperTail(probs, k);
    const double b = *BinomialUpperTail(200, 0.03, k);
    EXPECT_NEAR(a, b, 1e-12 + 1e-9 * b) << "k = " << k;
  }
}

TEST(Matches, EveryPairMatchingHasTheProductAsItsPValue) {
  // The power statement of matches.h: a stream that repeats itself (M = n) gets p = prod pi.
  const std::vector<double> probs{0.5, 0.4, 0.9, 0.25};
  EXPECT_NEAR(*PoissonBinomialUpperTail(probs, 4), 0.5 * 0.4 * 0.9 * 0.25, 1e-15);
  EXPECT_NEAR(*BinomialUpperTail(30, 0.5, 30), std::pow(0.5, 30), 1e-20);
}

TEST(Matches, CertainAndImpossiblePairs) {
  EXPECT_DOUBLE_EQ(*PoissonBinomialUpperTail(std::vector<double>{1.0, 1.0}, 2), 1.0);
  EXPECT_DOUBLE_EQ(*PoissonBinomialUpperTail(std::vector<double>{0.0, 0.0}, 1), 0.0);
  EXPECT_DOUBLE_EQ(*BinomialUpperTail(10, 0.0, 1), 0.0);
  EXPECT_DOUBLE_EQ(*BinomialUpperTail(10, 1.0, 10), 1.0);
}

TEST(Matches, BadProbabilitiesAreErrorsNamingTheValue) {
  const auto bad = PoissonBinomialUpperTail(std::vector<double>{0.5, 1.5}, 1);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message.find("probs[1]"), std::string::npos) << bad.error().message;
  EXPECT_FALSE(PoissonBinomialUpperTail(std::vector<double>{std::nan("")}, 1).ok());
  EXPECT_FALSE(BinomialUpperTail(5, -0.1, 1).ok());
}

TEST(Matches, DrawsNeededForPowerAgainstARepeatingStream) {
  EXPECT_EQ(MatchesNeededForPower(0.5, 1e-6), 20u);  // 2^-20 = 9.5e-7
  EXPECT_LE(std::pow(0.9, double(MatchesNeededForPower(0.9, 1e-8))), 1e-8);
  EXPECT_GT(std::pow(0.9, double(MatchesNeededForPower(0.9, 1e-8) - 1)), 1e-8);
  EXPECT_EQ(MatchesNeededForPower(1.0, 1e-6), std::numeric_limits<uint64_t>::max());
}

// A two-cell fit's lower tail counts the atom of a perfect fit: at p = 1/2 and n = 8192, X = 4096 has probability
// sqrt(2 / (pi n)) ~ 0.0088, where the chi-square lower tail of X^2 = 0 says 0 (a false alarm of the "fit too good"
// test in 0.9% of such cases).
TEST(Matches, TwoCellFitLowerTailCountsThePerfectFit) {
  const double atom = *ExactTwoCellFitLowerTail(4096, 8192, 0.5);
  EXPECT_NEAR(atom, std::sqrt(2.0 / (M_PI * 8192)), 1e-4);
  EXPECT_DOUBLE_EQ(*ExactTwoCellFitLowerTail(4000, 8192, 0.5), *ExactTwoCellFitLowerTail(4192, 8192, 0.5));
  EXPECT_GT(*ExactTwoCellFitLowerTail(3000, 8192, 0.5), 0.999999);
  EXPECT_FALSE(ExactTwoCellFitLowerTail(9000, 8192, 0.5).ok());
  EXPECT_FALSE(ExactTwoCellFitLowerTail(1, 10, 1.0).ok());
}

}  // namespace
}  // namespace samplecheck::stats
