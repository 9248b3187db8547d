// multiple_testing.h against hand-worked examples, Benjamini & Hochberg (1995)'s own example and printed
// Kolmogorov-Smirnov critical values. Deterministic.

#include "samplecheck/stats/multiple_testing.h"

#include <cmath>
#include <vector>

#include <gtest/gtest.h>

namespace samplecheck::stats {
namespace {

TEST(HolmBonferroniTest, HandWorkedFourPValues) {
  // Sorted 0.005, 0.01, 0.03, 0.04 against 0.05/4, 0.05/3, 0.05/2, 0.05/1: 0.03 > 0.025 stops the step-down.
  const std::vector<double> p = {0.01, 0.04, 0.03, 0.005};
  const auto r = HolmBonferroni(p, 0.05);
  ASSERT_TRUE(r.ok()) << r.error;
  EXPECT_EQ(r.rejected, (std::vector<bool>{true, false, false, true}));
  EXPECT_EQ(r.rejections, 2u);
  // Adjusted: 0.005*4 = 0.02, 0.01*3 = 0.03, max(0.03, 0.03*2) = 0.06, max(0.06, 0.04) = 0.06.
  const std::vector<double> adjusted = {0.03, 0.06, 0.06, 0.02};
  for (std::size_t i = 0; i < 4; ++i) EXPECT_NEAR(r.adjusted_p_values[i], adjusted[i], 1e-15) << i;
}

TEST(BenjaminiHochbergTest, HandWorkedFourPValues) {
  // m p / i over the sorted list: 0.02, 0.02, 0.04, 0.04; all <= 0.05, so all four are rejected at q = 0.05.
  const std::vector<double> p = {0.01, 0.04, 0.03, 0.005};
  const auto r = BenjaminiHochberg(p, 0.05);
  ASSERT_TRUE(r.ok()) << r.error;
  EXPECT_EQ(r.rejections, 4u);
  const std::vector<double> adjusted = {0.02, 0.04, 0.04, 0.02};
  for (std::size_t i = 0; i < 4; ++i) EXPECT_NEAR(r.adjusted_p_values[i], adjusted[i], 1e-15) << i;
  const auto strict = BenjaminiHochberg(p, 0.03);
  EXPECT_EQ(strict.rejected, (std::vector<bool>{true, false, false, true}));
}

TEST(BenjaminiHochbergTest, OriginalPaperExampleRejectsFourWhereHolmRejectsThree) {
  // Benjamini & Hochberg (1995), section 4: 15 p-values, q = 0.05: BH rejects the 4 smallest, Bonferroni 3.
  const std::vector<double> p = {0.0001, 0.0004, 0.0019, 0.0095, 0.0201, 0.0278, 0.0298, 0.0344,
                                 0.0459, 0.3240, 0.4262, 0.5719, 0.6528, 0.7590, 1.0000};
  const auto bh = BenjaminiHochberg(p, 0.05);
  EXPECT_EQ(bh.rejections, 4u);
  for (std::size_t i = 0; i < p.size(); ++i) EXPECT_EQ(bh.rejected[i], i < 4) << i;
  const auto holm = HolmBonferroni(p, 0.05);
  EXPECT_EQ(holm.rejections, 3u);
}

TEST(MultipleTestingTest, EdgeCasesAndErrors) {
  EXPECT_EQ(HolmBonferroni(std::vector<double>{}, 0.05).rejections, 0u);
  EXPECT_EQ(BenjaminiHochberg(std::vector<double>{}, 0.05).rejections, 0u);
  EXPECT_NE(HolmBonferroni(std::vector<double>{0.5, 1.5}, 0.05).error.find("p_values[1] = 1.5"),
            std::string::npos);
  EXPECT_NE(BenjaminiHochberg(std::vector<double>{0.5}, 0.0).error.find("q = 0"), std::string::npos);
  EXPECT_FALSE(HolmBonferroni(std::vector<double>{NAN}, 0.05).ok());
  // A single p-value: Holm is the plain test.
  EXPECT_TRUE(HolmBonferroni(std::vector<double>{0.049}, 0.05).rejected[0]);
  EXPECT_FALSE(HolmBonferroni(std::vector<double>{0.051}, 0.05).rejected[0]);
}

TEST(KolmogorovSmirnovTest, SingleObservationClosedForm) {
  // n = 1: D = max(u, 1 - u), P(D >= d) = 2 (1 - d) for d >= 1/2.
  const auto r = KolmogorovSmirnovUniformity(std::vector<double>{0.3});
  ASSERT_TRUE(r.ok()) << r.error;
  EXPECT_NEAR(r.statistic, 0.7, 1e-15);
  EXPECT_NEAR(r.p_value, 0.6, 1e-12);
}

TEST(KolmogorovSmirnovTest, PrintedCriticalValuesHaveTailProbabilityAlpha) {
  // Two-sided one-sample KS critical values (Miller 1956 / Massey 1951 tables): alpha 0.05 -> n = 5: 0.56328,
  // n = 10: 0.40925, n = 20: 0.29408; alpha 0.01 -> n = 10: 0.48893. Asymptotic 1.3581 / sqrt(n) at 0.05.
  EXPECT_NEAR(KolmogorovSmirnovPValue(0.56328, 5).value, 0.05, 2e-4);
  EXPECT_NEAR(KolmogorovSmirnovPValue(0.40925, 10).value, 0.05, 2e-4);
  EXPECT_NEAR(KolmogorovSmirnovPValue(0.29408, 20).value, 0.05, 2e-4);
  EXPECT_NEAR(KolmogorovSmirnovPValue(0.48893, 10).value, 0.01, 1e-4);
  EXPECT_NEAR(KolmogorovSmirnovPValue(1.3581 / 100.0, 10000).value, 0.05, 1e-3);
  EXPECT_NEAR(KolmogorovSmirnovPValue(1.6276 / 100.0, 10000).value, 0.01, 3e-4);
  // Continuity between the exact (n <= 1000) and asymptotic regimes.
  EXPECT_NEAR(KolmogorovSmirnovPValue(1.3581 / std::sqrt(1000.0), 1000).value,
              KolmogorovSmirnovPValue(1.3581 / std::sqrt(1001.0), 1001).value, 2e-3);
  EXPECT_EQ(KolmogorovSmirnovPValue(0.0001, 100).value, 1.0);
  EXPECT_FALSE(KolmogorovSmirnovPValue(1.5, 10).ok());
}

TEST(KolmogorovSmirnovTest, EvenlySpreadPValuesPassAndPiledUpOnesFail) {
  std::vector<double> even(1000), piled(1000);
  for (std::size_t i = 0; i < 1000; ++i) {
    even[i] = (static_cast<double>(i) + 0.5) / 1000.0;
    piled[i] = even[i] * even[i];  // too many small p-values: a miscalibrated test
  }
  EXPECT_GT(KolmogorovSmirnovUniformity(even).p_value, 0.999);
  EXPECT_LT(KolmogorovSmirnovUniformity(piled).p_value, 1e-12);
  EXPECT_FALSE(KolmogorovSmirnovUniformity(std::vector<double>{}).ok());
}

}  // namespace
}  // namespace samplecheck::stats
