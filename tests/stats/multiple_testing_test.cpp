// multiple_testing.h against hand-worked examples, Benjamini & Hochberg (1995)'s own example and printed
// Kolmogorov-Smirnov critical values. Deterministic.

#include "samplecheck/stats/multiple_testing.h"

#include <cmath>
#include <cstdint>
#include <vector>

#include <gtest/gtest.h>

namespace samplecheck::stats {
namespace {

TEST(HolmBonferroniTest, HandWorkedFourPValues) {
  // Sorted 0.005, 0.01, 0.03, 0.04 against 0.05/4, 0.05/3, 0.05/2, 0.05/1: 0.03 > 0.025 stops the step-down.
  const std::vector<double> p = {0.01, 0.04, 0.03, 0.005};
  const auto r = HolmBonferroni(p, 0.05);
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r->rejected, (std::vector<bool>{true, false, false, true}));
  EXPECT_EQ(r->rejections, 2u);
  // Adjusted: 0.005*4 = 0.02, 0.01*3 = 0.03, max(0.03, 0.03*2) = 0.06, max(0.06, 0.04) = 0.06.
  const std::vector<double> adjusted = {0.03, 0.06, 0.06, 0.02};
  for (std::size_t i = 0; i < 4; ++i) EXPECT_NEAR(r->adjusted_p_values[i], adjusted[i], 1e-15) << i;
}

TEST(BenjaminiHochbergTest, HandWorkedFourPValues) {
  // m p / i over the sorted list: 0.02, 0.02, 0.04, 0.04; all <= 0.05, so all four are rejected at q = 0.05.
  const std::vector<double> p = {0.01, 0.04, 0.03, 0.005};
  const auto r = BenjaminiHochberg(p, 0.05);
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r->rejections, 4u);
  const std::vector<double> adjusted = {0.02, 0.04, 0.04, 0.02};
  for (std::size_t i = 0; i < 4; ++i) EXPECT_NEAR(r->adjusted_p_values[i], adjusted[i], 1e-15) << i;
  const auto strict = BenjaminiHochberg(p, 0.03);
  ASSERT_TRUE(strict.ok()) << strict.error().message;
  EXPECT_EQ(strict->rejected, (std::vector<bool>{true, false, false, true}));
}

TEST(BenjaminiHochbergTest, OriginalPaperExampleRejectsFourWhereHolmRejectsThree) {
  // Benjamini & Hochberg (1995), section 4: 15 p-values, q = 0.05: BH rejects the 4 smallest, Bonferroni 3.
  const std::vector<double> p = {0.0001, 0.0004, 0.0019, 0.0095, 0.0201, 0.0278, 0.0298, 0.0344,
                                 0.0459, 0.3240, 0.4262, 0.5719, 0.6528, 0.7590, 1.0000};
  const auto bh = BenjaminiHochberg(p, 0.05);
  ASSERT_TRUE(bh.ok()) << bh.error().message;
  EXPECT_EQ(bh->rejections, 4u);
  for (std::size_t i = 0; i < p.size(); ++i) EXPECT_EQ(bh->rejected[i], i < 4) << i;
  const auto holm = HolmBonferroni(p, 0.05);
  ASSERT_TRUE(holm.ok()) << holm.error().message;
  EXPECT_EQ(holm->rejections, 3u);
}

TEST(MultipleTestingTest, EdgeCasesAndErrors) {
  const auto holm_empty = HolmBonferroni(std::vector<double>{}, 0.05);
  const auto bh_empty = BenjaminiHochberg(std::vector<double>{}, 0.05);
  ASSERT_TRUE(holm_empty.ok()) << holm_empty.error().message;
  ASSERT_TRUE(bh_empty.ok()) << bh_empty.error().message;
  EXPECT_EQ(holm_empty->rejections, 0u);
  EXPECT_EQ(bh_empty->rejections, 0u);
  const auto bad_p = HolmBonferroni(std::vector<double>{0.5, 1.5}, 0.05);
  ASSERT_FALSE(bad_p.ok());
  EXPECT_NE(bad_p.error().message.find("p_values[1] = 1.5"), std::string::npos) << bad_p.error().message;
  const auto bad_q = BenjaminiHochberg(std::vector<double>{0.5}, 0.0);
  ASSERT_FALSE(bad_q.ok());
  EXPECT_NE(bad_q.error().message.find("q = 0"), std::string::npos) << bad_q.error().message;
  EXPECT_FALSE(HolmBonferroni(std::vector<double>{NAN}, 0.05).ok());
  // A single p-value: Holm is the plain test.
  const auto below = HolmBonferroni(std::vector<double>{0.049}, 0.05);
  const auto above = HolmBonferroni(std::vector<double>{0.051}, 0.05);
  ASSERT_TRUE(below.ok()) << below.error().message;
  ASSERT_TRUE(above.ok()) << above.error().message;
  EXPECT_TRUE(below->rejected[0]);
  EXPECT_FALSE(above->rejected[0]);
}

TEST(KolmogorovSmirnovTest, SingleObservationClosedForm) {
  // n = 1: D = max(u, 1 - u), P(D >= d) = 2 (1 - d) for d >= 1/2.
  const auto r = KolmogorovSmirnovUniformity(std::vector<double>{0.3});
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_NEAR(r->statistic, 0.7, 1e-15);
  EXPECT_NEAR(r->p_value, 0.6, 1e-12);
}

TEST(KolmogorovSmirnovTest, PrintedCriticalValuesHaveTailProbabilityAlpha) {
  // Two-sided one-sample KS critical values (Miller 1956 / Massey 1951 tables): alpha 0.05 -> n = 5: 0.56328,
  // n = 10: 0.40925, n = 20: 0.29408; alpha 0.01 -> n = 10: 0.48893. Asymptotic 1.3581 / sqrt(n) at 0.05.
  struct Critical {
    double d;
    std::uint64_t n;
    double alpha, tolerance;
  };
  for (const Critical c : {Critical{0.56328, 5, 0.05, 2e-4}, Critical{0.40925, 10, 0.05, 2e-4},
                           Critical{0.29408, 20, 0.05, 2e-4}, Critical{0.48893, 10, 0.01, 1e-4},
                           Critical{1.3581 / 100.0, 10000, 0.05, 1e-3}, Critical{1.6276 / 100.0, 10000, 0.01, 3e-4}}) {
    const auto p = KolmogorovSmirnovPValue(c.d, c.n);
    ASSERT_TRUE(p.ok()) << p.error().message;
    EXPECT_NEAR(*p, c.alpha, c.tolerance) << "d " << c.d << " n " << c.n;
  }
  // Continuity between the exact (n <= 1000) and asymptotic regimes.
  const auto exact = KolmogorovSmirnovPValue(1.3581 / std::sqrt(1000.0), 1000);
  const auto asymptotic = KolmogorovSmirnovPValue(1.3581 / std::sqrt(1001.0), 1001);
  ASSERT_TRUE(exact.ok()) << exact.error().message;
  ASSERT_TRUE(asymptotic.ok()) << asymptotic.error().message;
  EXPECT_NEAR(*exact, *asymptotic, 2e-3);
  const auto tiny = KolmogorovSmirnovPValue(0.0001, 100);
  ASSERT_TRUE(tiny.ok()) << tiny.error().message;
  EXPECT_EQ(*tiny, 1.0);
  EXPECT_FALSE(KolmogorovSmirnovPValue(1.5, 10).ok());
}

TEST(KolmogorovSmirnovTest, EvenlySpreadPValuesPassAndPiledUpOnesFail) {
  std::vector<double> even(1000), piled(1000);
  for (std::size_t i = 0; i < 1000; ++i) {
    even[i] = (static_cast<double>(i) + 0.5) / 1000.0;
    piled[i] = even[i] * even[i];  // too many small p-values: a miscalibrated test
  }
  const auto even_test = KolmogorovSmirnovUniformity(even);
  const auto piled_test = KolmogorovSmirnovUniformity(piled);
  ASSERT_TRUE(even_test.ok()) << even_test.error().message;
  ASSERT_TRUE(piled_test.ok()) << piled_test.error().message;
  EXPECT_GT(even_test->p_value, 0.999);
  EXPECT_LT(piled_test->p_value, 1e-12);
  EXPECT_FALSE(KolmogorovSmirnovUniformity(std::vector<double>{}).ok());
}

}  // namespace
}  // namespace samplecheck::stats
