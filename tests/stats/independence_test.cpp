// The contingency test of independence (stats/independence.h) and its coarse cells.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "samplecheck/stats/independence.h"
#include "samplecheck/stats/simulation.h"

namespace samplecheck::stats {
namespace {

TEST(CoarseCells, EqualMassCellsEachAboveTheLeastMassAndForbiddenTokensOutside) {
  const std::vector<double> p0 = {0.4, 0.2, 0.2, 0.1, 0.05, 0.05, 0.0};
  const std::vector<int32_t> cells = CoarseCells(p0, 4, 10000);
  EXPECT_EQ(cells[6], kNoCell);
  EXPECT_EQ(cells[0], 0);
  std::vector<double> mass(4, 0.0);
  int32_t used = 0;
  for (size_t t = 0; t < p0.size(); ++t) {
    if (cells[t] < 0) continue;
    used = std::max(used, cells[t] + 1);
    mass[static_cast<size_t>(cells[t])] += p0[t];
  }
  EXPECT_GE(used, 3);
  for (int32_t c = 0; c < used; ++c) EXPECT_GE(mass[static_cast<size_t>(c)], std::sqrt(5.0 / 10000));
  // Few draws merge everything into one cell: no test possible.
  const std::vector<double> peaked = {0.99, 0.01};
  const std::vector<int32_t> few = CoarseCells(peaked, 8, 10);
  EXPECT_EQ(few[0], few[1]);
}

// Under independence the test's size is alpha: 2000 seeded runs at alpha 0.01 reject between 7 and 36 times
// (two-sided binomial bounds at false-alarm 1e-6 around 20).
TEST(Independence, SizeMatchesAlphaUnderIndependence) {
  std::mt19937_64 rng(7);
  const std::vector<double> pa = {0.5, 0.3, 0.2}, pb = {0.25, 0.25, 0.25, 0.25};
  int rejections = 0;
  for (int run = 0; run < 2000; ++run) {
    std::vector<int32_t> a(2000), b(2000);
    for (size_t i = 0; i < a.size(); ++i) {
      const double u = UniformOpen01(rng), v = UniformOpen01(rng);
      a[i] = u < 0.5 ? 0 : u < 0.8 ? 1 : 2;
      b[i] = static_cast<int32_t>(v * 4);
    }
    auto r = IndependenceChiSquareTest(a, b);
    ASSERT_TRUE(r.ok()) << r.error().message;
    EXPECT_EQ(r->dof, 6u);
    rejections += r->p_value < 0.01;
  }
  EXPECT_GE(rejections, 7);
  EXPECT_LE(rejections, 36);
}

TEST(Independence, IdenticalSequencesAreRejectedAndBadInputIsAnError) {
  std::mt19937_64 rng(3);
  std::vector<int32_t> a(1000);
  for (int32_t& x : a) x = static_cast<int32_t>(UniformOpen01(rng) * 3);
  auto same = IndependenceChiSquareTest(a, a);  // a reused seed: both rows draw the same token every time
  ASSERT_TRUE(same.ok());
  EXPECT_LT(same->p_value, 1e-100);
  EXPECT_FALSE(IndependenceChiSquareTest(a, std::vector<int32_t>(10, 0)).ok());
  auto constant = IndependenceChiSquareTest(a, std::vector<int32_t>(1000, 0));
  ASSERT_FALSE(constant.ok());
  EXPECT_NE(constant.error().message.find("2 x 2"), std::string::npos) << constant.error().message;
}

}  // namespace
}  // namespace samplecheck::stats
