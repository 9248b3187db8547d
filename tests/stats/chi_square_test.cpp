// Critical values and p-values of chi_square.h against printed tables and independent closed forms.
// Deterministic (no randomness): no false-alarm rate beyond the stated tolerances.

#include "samplecheck/stats/chi_square.h"

#include <cmath>
#include <cstdint>
#include <vector>

#include <gtest/gtest.h>

namespace samplecheck::stats {
namespace {

// Upper critical values chi^2_{dof}(confidence), confidence 0.90 .. 0.999, as printed (3 decimals) in the
// standard tables (NIST/SEMATECH e-Handbook 1.3.6.7.4; Abramowitz & Stegun table 26.8; dof 1000 from
// Pearson & Hartley-style extended tables).
constexpr double kConfidence[] = {0.90, 0.95, 0.975, 0.99, 0.995, 0.999};
struct TableRow {
  std::uint64_t dof;
  double value[6];
};
constexpr TableRow kPrintedTable[] = {
    {1, {2.706, 3.841, 5.024, 6.635, 7.879, 10.828}},
    {2, {4.605, 5.991, 7.378, 9.210, 10.597, 13.816}},
    {3, {6.251, 7.815, 9.348, 11.345, 12.838, 16.266}},
    {4, {7.779, 9.488, 11.143, 13.277, 14.860, 18.467}},
    {5, {9.236, 11.070, 12.833, 15.086, 16.750, 20.515}},
    {6, {10.645, 12.592, 14.449, 16.812, 18.548, 22.458}},
    {7, {12.017, 14.067, 16.013, 18.475, 20.278, 24.322}},
    {8, {13.362, 15.507, 17.535, 20.090, 21.955, 26.124}},
    {9, {14.684, 16.919, 19.023, 21.666, 23.589, 27.877}},
    {10, {15.987, 18.307, 20.483, 23.209, 25.188, 29.588}},
    {15, {22.307, 24.996, 27.488, 30.578, 32.801, 37.697}},
    {20, {28.412, 31.410, 34.170, 37.566, 39.997, 45.315}},
    {25, {34.382, 37.652, 40.646, 44.314, 46.928, 52.620}},
    {30, {40.256, 43.773, 46.979, 50.892, 53.672, 59.703}},
    {40, {51.805, 55.758, 59.342, 63.691, 66.766, 73.402}},
    {50, {63.167, 67.505, 71.420, 76.154, 79.490, 86.661}},
    {60, {74.397, 79.082, 83.298, 88.379, 91.952, 99.607}},
    {70, {85.527, 90.531, 95.023, 100.425, 104.215, 112.317}},
    {80, {96.578, 101.879, 106.629, 112.329, 116.321, 124.839}},
    {90, {107.565, 113.145, 118.136, 124.116, 128.299, 137.208}},
    {100, {118.498, 124.342, 129.561, 135.807, 140.169, 149.449}},
    {1000, {1057.724, 1074.679, 1089.531, 1106.969, 1118.948, 1143.917}},
};

// Far-tail critical values, confidence 0.9999 .. 0.999999, as printed for dof 1 and 2 (dof 2 is -2 ln(alpha)).
constexpr double kFarConfidence[] = {0.9999, 0.99999, 0.999999};
constexpr TableRow kPrintedFarTable[] = {
    {1, {15.137, 19.511, 23.928}},
    {2, {18.421, 23.026, 27.631}},
};

// Printed to 3 decimals: half a unit in the last place, relative to the smallest entry, is < 2e-4.
constexpr double kPrintedRelativeTolerance = 2e-4;

// Independent closed forms, in long double.
// Even dof 2m: Q(x) = exp(-x/2) sum_{j<m} (x/2)^j / j!   (Poisson tail identity), summed in log space.
long double UpperTailEvenDof(std::uint64_t dof, long double x) {
  const std::uint64_t m = dof / 2;
  const long double h = x / 2;
  long double max_log = -INFINITY;
  std::vector<long double> logs(m);
  for (std::uint64_t j = 0; j < m; ++j) {
    logs[j] = -h + static_cast<long double>(j) * std::log(h) - std::lgamma(static_cast<long double>(j) + 1);
    max_log = std::max(max_log, logs[j]);
  }
  long double s = 0;
  for (long double l : logs) s += std::exp(l - max_log);
  return std::exp(max_log) * s;
}
// dof 1: Q(x) = erfc(sqrt(x / 2)).
long double UpperTailDof1(long double x) { return std::erfc(std::sqrt(x / 2)); }

long double UpperTail(std::uint64_t dof, long double x) {
  return dof == 1 ? UpperTailDof1(x) : UpperTailEvenDof(dof, x);
}

// Critical value by bisection on the closed form (Q is decreasing in x).
long double IndependentCriticalValue(std::uint64_t dof, long double alpha) {
  long double lo = 0, hi = 10 * static_cast<long double>(dof) + 200;
  for (int i = 0; i < 200; ++i) {
    const long double mid = (lo + hi) / 2;
    if (UpperTail(dof, mid) > alpha) lo = mid; else hi = mid;
  }
  return (lo + hi) / 2;
}

// Wilson-Hilferty: chi^2 ~ dof (1 - 2/(9 dof) + z sqrt(2/(9 dof)))^3. A coarse sanity check only.
double WilsonHilferty(std::uint64_t dof, double z) {
  const double k = static_cast<double>(dof);
  const double t = 1.0 - 2.0 / (9.0 * k) + z * std::sqrt(2.0 / (9.0 * k));
  return k * t * t * t;
}

TEST(ChiSquareCriticalValueTest, MatchesPrintedTableDof1To1000Confidence90To999) {
  for (const auto& row : kPrintedTable) {
    for (int c = 0; c < 6; ++c) {
      const auto v = ChiSquareCriticalValue(row.dof, 1.0 - kConfidence[c]);
      ASSERT_TRUE(v.ok()) << v.error().message;
      EXPECT_NEAR(*v, row.value[c], kPrintedRelativeTolerance * row.value[c])
          << "dof " << row.dof << " confidence " << kConfidence[c];
    }
  }
}

TEST(ChiSquareCriticalValueTest, MatchesPrintedFarTailTable) {
  for (const auto& row : kPrintedFarTable) {
    for (int c = 0; c < 3; ++c) {
      const auto v = ChiSquareCriticalValue(row.dof, 1.0 - kFarConfidence[c]);
      ASSERT_TRUE(v.ok()) << v.error().message;
      EXPECT_NEAR(*v, row.value[c], kPrintedRelativeTolerance * row.value[c])
          << "dof " << row.dof << " confidence " << kFarConfidence[c];
    }
  }
}

TEST(ChiSquareCriticalValueTest, MatchesClosedFormForDof1AndEvenDofUpTo1000AtAlphaDownTo1e12) {
  const std::uint64_t dofs[] = {1, 2, 4, 10, 16, 50, 100, 254, 500, 1000};
  const double alphas[] = {0.1, 0.05, 0.01, 1e-3, 1e-4, 1e-5, 1e-6, 1e-9, 1e-12};
  for (auto dof : dofs) {
    for (double alpha : alphas) {
      const auto v = ChiSquareCriticalValue(dof, alpha);
      ASSERT_TRUE(v.ok()) << v.error().message;
      const double expected = static_cast<double>(IndependentCriticalValue(dof, alpha));
      EXPECT_NEAR(*v, expected, 1e-9 * expected) << "dof " << dof << " alpha " << alpha;
    }
  }
}

TEST(ChiSquareCriticalValueTest, AgreesWithWilsonHilfertyForLargeDof) {
  // Wilson-Hilferty is accurate to well under 1% for dof >= 30 at these confidences.
  const auto z = NormalUpperQuantile(1e-6);
  ASSERT_TRUE(z.ok()) << z.error().message;
  for (std::uint64_t dof : {30u, 100u, 255u, 1000u, 150000u}) {
    const auto v = ChiSquareCriticalValue(dof, 1e-6);
    ASSERT_TRUE(v.ok()) << v.error().message;
    EXPECT_NEAR(*v, WilsonHilferty(dof, *z), 1e-2 * *v) << "dof " << dof;
  }
}

TEST(ChiSquarePValueTest, RoundTripsThroughCriticalValue) {
  for (std::uint64_t dof : {1u, 3u, 15u, 255u, 1023u, 150000u}) {
    for (double alpha : {0.5, 0.01, 1e-6, 1e-12}) {
      const auto crit = ChiSquareCriticalValue(dof, alpha);
      ASSERT_TRUE(crit.ok()) << crit.error().message;
      const auto p = ChiSquarePValue(*crit, dof);
      ASSERT_TRUE(p.ok()) << p.error().message;
      EXPECT_NEAR(*p, alpha, 1e-8 * alpha) << "dof " << dof;
    }
  }
}

TEST(ChiSquarePValueTest, KeepsPrecisionFarBelowDoubleEpsilon) {
  // 1 - cdf would return exactly 0 for all of these; the complement keeps full relative precision.
  struct Case { std::uint64_t dof; double x; };
  for (const Case c : {Case{2, 100.0}, Case{2, 1000.0}, Case{1, 200.0}, Case{10, 300.0}, Case{1000, 2500.0}}) {
    const auto p = ChiSquarePValue(c.x, c.dof);
    ASSERT_TRUE(p.ok()) << p.error().message;
    const double expected = static_cast<double>(UpperTail(c.dof, c.x));
    ASSERT_GT(expected, 0.0);
    ASSERT_LT(expected, 1e-20);
    EXPECT_NEAR(*p, expected, 1e-9 * expected) << "dof " << c.dof << " x " << c.x;
  }
  // dof 2: Q(x) = exp(-x/2) exactly.
  const auto dof2 = ChiSquarePValue(100.0, 2);
  ASSERT_TRUE(dof2.ok()) << dof2.error().message;
  EXPECT_NEAR(*dof2, std::exp(-50.0), 1e-12 * std::exp(-50.0));
}

TEST(ChiSquarePValueTest, InvalidInputIsAnErrorValueNamingTheRange) {
  const auto dof0 = ChiSquarePValue(1.0, 0);
  ASSERT_FALSE(dof0.ok());
  EXPECT_NE(dof0.error().message.find("dof = 0"), std::string::npos) << dof0.error().message;
  EXPECT_FALSE(ChiSquarePValue(-1.0, 3).ok());
  EXPECT_FALSE(ChiSquarePValue(NAN, 3).ok());
  EXPECT_FALSE(ChiSquareCriticalValue(3, 0.0).ok());
  EXPECT_FALSE(ChiSquareCriticalValue(3, 1.0).ok());
  const auto bad = ChiSquareCriticalValue(3, 1.5);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message.find("alpha = 1.5"), std::string::npos) << bad.error().message;
  EXPECT_NE(bad.error().message.find("(0, 1)"), std::string::npos) << bad.error().message;
}

TEST(NormalThresholdTest, BonferroniThresholdsMatchStatisticsMd) {
  // statistics.md 5.3: z* = 3.29 (alpha 1e-3, m = 1), 5.16 (alpha 1e-3, m = 4096), 6.33 (alpha 1e-6, m = 4096).
  const auto z1 = BonferroniTwoSidedZThreshold(1e-3, 1);
  const auto z4096 = BonferroniTwoSidedZThreshold(1e-3, 4096);
  const auto z4096_1e6 = BonferroniTwoSidedZThreshold(1e-6, 4096);
  ASSERT_TRUE(z1.ok()) << z1.error().message;
  ASSERT_TRUE(z4096.ok()) << z4096.error().message;
  ASSERT_TRUE(z4096_1e6.ok()) << z4096_1e6.error().message;
  EXPECT_NEAR(*z1, 3.2905, 1e-3);
  EXPECT_NEAR(*z4096, 5.16, 5e-3);
  EXPECT_NEAR(*z4096_1e6, 6.33, 5e-3);
  // Printed normal table: z_{0.025} = 1.960, z_{0.005} = 2.576.
  const auto q025 = NormalUpperQuantile(0.025);
  const auto q005 = NormalUpperQuantile(0.005);
  ASSERT_TRUE(q025.ok()) << q025.error().message;
  ASSERT_TRUE(q005.ok()) << q005.error().message;
  EXPECT_NEAR(*q025, 1.95996, 1e-5);
  EXPECT_NEAR(*q005, 2.57583, 1e-5);
  EXPECT_NEAR(NormalTwoSidedPValue(1.959964), 0.05, 1e-6);
  EXPECT_NEAR(NormalTwoSidedPValue(-1.959964), 0.05, 1e-6);
  EXPECT_FALSE(BonferroniTwoSidedZThreshold(1e-3, 0).ok());
}

}  // namespace
}  // namespace samplecheck::stats
