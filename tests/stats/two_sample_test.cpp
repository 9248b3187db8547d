// two_sample.h against hand-worked examples and the 2 x k contingency-table form. Deterministic.

#include "samplecheck/stats/two_sample.h"

#include <cmath>
#include <vector>

#include <gtest/gtest.h>

#include "samplecheck/stats/chi_square.h"

namespace samplecheck::stats {
namespace {

TEST(TwoSampleChiSquareTest, EqualArmsHandWorked) {
  // K1 = K2 = 1: X^2 = (10 - 20)^2 / 30 + 0 + (30 - 20)^2 / 50 = 10/3 + 2, dof 2, p = exp(-X^2 / 2).
  const std::vector<std::uint64_t> r = {10, 20, 30};
  const std::vector<std::uint64_t> s = {20, 20, 20};
  const Result<TwoSample> t = TwoSampleChiSquareTest(r, s);
  ASSERT_TRUE(t.ok()) << t.error().message;
  EXPECT_NEAR(t->statistic, 10.0 / 3.0 + 2.0, 1e-12);
  EXPECT_EQ(t->dof, 2u);
  EXPECT_NEAR(t->p_value, std::exp(-t->statistic / 2), 1e-12);
  EXPECT_NEAR(t->effective_draws, 30.0, 1e-12);
  EXPECT_EQ(t->min_pooled, 30u);
}

TEST(TwoSampleChiSquareTest, UnequalArmsEqualContingencyTableStatistic) {
  const std::vector<std::uint64_t> r = {10, 20, 30, 0, 7};
  const std::vector<std::uint64_t> s = {40, 35, 45, 0, 30};
  const Result<TwoSample> t = TwoSampleChiSquareTest(r, s);
  ASSERT_TRUE(t.ok()) << t.error().message;
  // Homogeneity X^2 of the 2 x k table with expected (row total)(column total)/grand total.
  double nr = 0, ns = 0;
  for (std::size_t i = 0; i < r.size(); ++i) nr += r[i], ns += s[i];
  double x2 = 0;
  for (std::size_t i = 0; i < r.size(); ++i) {
    const double col = static_cast<double>(r[i] + s[i]);
    if (col == 0) continue;
    const double er = col * nr / (nr + ns), es = col * ns / (nr + ns);
    x2 += (r[i] - er) * (r[i] - er) / er + (s[i] - es) * (s[i] - es) / es;
  }
  EXPECT_NEAR(t->statistic, x2, 1e-10);
  EXPECT_EQ(t->nonempty_bins, 4u);
  EXPECT_EQ(t->dof, 3u);  // empty bins do not count
  const auto p = ChiSquarePValue(x2, 3);
  ASSERT_TRUE(p.ok()) << p.error().message;
  EXPECT_NEAR(t->p_value, *p, 1e-12);
  EXPECT_NEAR(t->effective_draws, nr * ns / (nr + ns), 1e-9);
}

TEST(TwoSampleChiSquareTest, IdenticalArmsGiveZeroAndErrorsAreValues) {
  const std::vector<std::uint64_t> r = {5, 6, 7};
  const Result<TwoSample> same = TwoSampleChiSquareTest(r, r);
  ASSERT_TRUE(same.ok()) << same.error().message;
  EXPECT_EQ(same->statistic, 0.0);
  EXPECT_EQ(same->p_value, 1.0);
  EXPECT_FALSE(TwoSampleChiSquareTest(r, std::vector<std::uint64_t>{1, 2}).ok());
  EXPECT_FALSE(TwoSampleChiSquareTest(r, std::vector<std::uint64_t>{0, 0, 0}).ok());
  EXPECT_FALSE(TwoSampleChiSquareTest(std::vector<std::uint64_t>{5, 0}, std::vector<std::uint64_t>{3, 0}).ok());
}

TEST(TwoSamplePlanTest, EqualArmsNeedTwiceTheOneSampleDrawsEach) {
  const Result<DrawPlan> one = PlanDrawsForDivergence(4e-6, 1e-6, 0.99, 16);
  const Result<DrawPlan> two = PlanTwoSampleDrawsPerArm(4e-6, 1e-6, 0.99, 16);
  ASSERT_TRUE(one.ok()) << one.error().message;
  ASSERT_TRUE(two.ok()) << two.error().message;
  EXPECT_NEAR(two->draws, 2 * one->draws, 1e-6 * one->draws);
}

}  // namespace
}  // namespace samplecheck::stats
