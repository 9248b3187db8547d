// power.h against statistics.md 5.2-5.4 (values computed there with Boost.Math 1.74 and printed to 3
// significant figures). Deterministic.

#include "samplecheck/stats/power.h"

#include <cmath>
#include <string>
#include <vector>

#include <gtest/gtest.h>

namespace samplecheck::stats {
namespace {

struct PlanRow {
  std::uint64_t cells;
  double lambda_1e3, draws_1e3;  // alpha 1e-3
  double lambda_1e6, draws_1e6;  // alpha 1e-6
};
// statistics.md 5.4: TV = 1e-3, power 0.99, divergence 4 TV^2 = 4e-6; cells = dof + 1.
constexpr PlanRow kTable[] = {
    {2, 31.5, 7.9e6, 52.1, 1.30e7},
    {16, 55.2, 1.38e7, 80.8, 2.02e7},
    {256, 149, 3.73e7, 203, 5.07e7},
    {1024, 272, 6.81e7, 364, 9.09e7},
    {150001, 2995, 7.5e8, 3922, 9.8e8},
};

// Values printed with 3 significant figures: half a unit in the 3rd figure of the smallest mantissa (1.30) is
// 0.4%; 0.65% leaves slack for the table's own rounding of N = lambda / 4e-6.
double PrintedTolerance(double v) { return 0.0065 * v; }

TEST(PlanDrawsTest, MatchesStatisticsMdTableAtAlpha1e6) {
  for (const auto& row : kTable) {
    const Result<DrawPlan> plan = PlanDrawsForTotalVariation(1e-3, 1e-6, 0.99, row.cells);
    ASSERT_TRUE(plan.ok()) << plan.error().message;
    EXPECT_NEAR(plan->noncentrality, row.lambda_1e6, PrintedTolerance(row.lambda_1e6)) << row.cells << " cells";
    EXPECT_NEAR(plan->draws, row.draws_1e6, PrintedTolerance(row.draws_1e6)) << row.cells << " cells";
  }
}

TEST(PlanDrawsTest, MatchesStatisticsMdTableAtAlpha1e3) {
  for (const auto& row : kTable) {
    const Result<DrawPlan> plan = PlanDrawsForTotalVariation(1e-3, 1e-3, 0.99, row.cells);
    ASSERT_TRUE(plan.ok()) << plan.error().message;
    EXPECT_NEAR(plan->noncentrality, row.lambda_1e3, PrintedTolerance(row.lambda_1e3)) << row.cells << " cells";
    // 7.9e6 and 7.5e8 carry 2 figures.
    EXPECT_NEAR(plan->draws, row.draws_1e3, 0.007 * row.draws_1e3) << row.cells << " cells";
  }
}

TEST(PlanDrawsTest, HeadlineNumbersOfTheIssue) {
  // About 1.30e7 draws for 2 bins, 2.02e7 for 16, 9.09e7 for 1024 (TV 1e-3, power 0.99, alpha 1e-6).
  const Result<DrawPlan> two = PlanDrawsForTotalVariation(1e-3, 1e-6, 0.99, 2);
  const Result<DrawPlan> sixteen = PlanDrawsForTotalVariation(1e-3, 1e-6, 0.99, 16);
  const Result<DrawPlan> k1024 = PlanDrawsForTotalVariation(1e-3, 1e-6, 0.99, 1024);
  ASSERT_TRUE(two.ok()) << two.error().message;
  ASSERT_TRUE(sixteen.ok()) << sixteen.error().message;
  ASSERT_TRUE(k1024.ok()) << k1024.error().message;
  EXPECT_NEAR(two->draws, 1.30e7, 0.005e7);
  EXPECT_NEAR(sixteen->draws, 2.02e7, 0.005e7);
  EXPECT_NEAR(k1024->draws, 9.09e7, 0.005e7);
}

TEST(PlanDrawsTest, OtherAlternativesOfStatisticsMd53) {
  // dof 1, alpha 1e-6, power 0.99: lambda = 52.1. Dropped token p = 1e-3 -> N ~ 5.2e4; +1% on p = 0.01 -> 5.2e7.
  const Result<DrawPlan> dropped = PlanDrawsForDivergence(1e-3, 1e-6, 0.99, 2);
  const Result<DrawPlan> one_percent = PlanDrawsForDivergence(1e-6, 1e-6, 0.99, 2);
  ASSERT_TRUE(dropped.ok()) << dropped.error().message;
  ASSERT_TRUE(one_percent.ok()) << one_percent.error().message;
  EXPECT_NEAR(dropped->draws, 5.21e4, 0.01 * 5.21e4);
  EXPECT_NEAR(one_percent->draws, 5.21e7, 0.01 * 5.21e7);
}

TEST(PowerOfRunTest, InvertsThePlan) {
  for (std::uint64_t cells : {2u, 16u, 256u, 1024u}) {
    for (double power : {0.5, 0.9, 0.99}) {
      const Result<DrawPlan> plan = PlanDrawsForTotalVariation(1e-3, 1e-6, power, cells);
      ASSERT_TRUE(plan.ok()) << plan.error().message;
      const auto achieved = PowerOfRunForTotalVariation(1e-3, 1e-6, cells, plan->draws);
      ASSERT_TRUE(achieved.ok()) << achieved.error().message;
      EXPECT_NEAR(*achieved, power, 1e-6) << cells << " cells";
    }
  }
  // Power grows with draws; a run of half the planned size has much less power.
  const Result<DrawPlan> plan16 = PlanDrawsForTotalVariation(1e-3, 1e-6, 0.99, 16);
  ASSERT_TRUE(plan16.ok()) << plan16.error().message;
  const double n = plan16->draws;
  const auto half = PowerOfRunForTotalVariation(1e-3, 1e-6, 16, n / 2);
  const auto twice = PowerOfRunForTotalVariation(1e-3, 1e-6, 16, n * 2);
  ASSERT_TRUE(half.ok()) << half.error().message;
  ASSERT_TRUE(twice.ok()) << twice.error().message;
  EXPECT_LT(*half, 0.7);
  EXPECT_GT(*twice, 0.9999);
}

TEST(DivergenceTest, WorstCaseShiftHasDivergenceFourTvSquared) {
  // p1 = p0 scaled by (1 + 2d) on half the mass and (1 - 2d) on the other half: TV = d, chi2 = 4 d^2.
  const std::vector<double> p0 = {0.25, 0.125, 0.125, 0.3, 0.2};  // halves: {0, 1, 2} and {3, 4}
  const double d = 0.01;
  std::vector<double> p1 = p0;
  for (int i = 0; i < 3; ++i) p1[static_cast<std::size_t>(i)] *= 1 + 2 * d;
  for (int i = 3; i < 5; ++i) p1[static_cast<std::size_t>(i)] *= 1 - 2 * d;
  const auto tv = TotalVariation(p0, p1);
  const auto chi2 = ChiSquareDivergence(p0, p1);
  ASSERT_TRUE(tv.ok()) << tv.error().message;
  ASSERT_TRUE(chi2.ok()) << chi2.error().message;
  EXPECT_NEAR(*tv, d, 1e-15);
  EXPECT_NEAR(*chi2, 4 * d * d, 1e-15);
  EXPECT_DOUBLE_EQ(WorstCaseDivergenceForTotalVariation(d), 4 * d * d);
  // Mass on a p0 = 0 cell is a support leak, not a divergence.
  const auto leak = ChiSquareDivergence(std::vector<double>{0.5, 0.5, 0.0}, std::vector<double>{0.5, 0.4, 0.1});
  ASSERT_FALSE(leak.ok());
  EXPECT_NE(leak.error().message.find("support leak"), std::string::npos) << leak.error().message;
}

TEST(PlanDrawsTest, InvalidValuesNameTheValueAndRange) {
  // The error message of an invalid plan ("" when the plan is unexpectedly valid, which fails the search below).
  auto error_of = [](const Result<DrawPlan>& plan) { return plan.ok() ? std::string() : plan.error().message; };
  EXPECT_NE(error_of(PlanDrawsForTotalVariation(0.0, 1e-6, 0.99, 2)).find("tv = 0"), std::string::npos);
  EXPECT_NE(error_of(PlanDrawsForTotalVariation(0.7, 1e-6, 0.99, 2)).find("(0, 0.5]"), std::string::npos);
  EXPECT_NE(error_of(PlanDrawsForTotalVariation(1e-3, 0.0, 0.99, 2)).find("alpha = 0"), std::string::npos);
  EXPECT_NE(error_of(PlanDrawsForTotalVariation(1e-3, 0.01, 0.005, 2)).find("power = 0.005"), std::string::npos);
  EXPECT_NE(error_of(PlanDrawsForTotalVariation(1e-3, 0.01, 1.0, 2)).find("power = 1"), std::string::npos);
  EXPECT_NE(error_of(PlanDrawsForTotalVariation(1e-3, 0.01, 0.9, 1)).find("cells = 1"), std::string::npos);
  EXPECT_FALSE(PowerOfRun(4e-6, 1e-6, 16, 0.0).ok());
  EXPECT_FALSE(PowerOfRun(4e-6, 1e-6, 16, NAN).ok());
}

}  // namespace
}  // namespace samplecheck::stats
