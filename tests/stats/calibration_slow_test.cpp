// Larger calibration simulations (label slow, nightly; a few minutes in Release). Same conventions as
// calibration_test.cpp: fixed seeds, binomial bounds at false alarm 1e-6 per assertion.

#include <cmath>
#include <cstdio>
#include <random>
#include <vector>

#include <gtest/gtest.h>

#include "calibration_util.h"
#include "samplecheck/stats/binning.h"
#include "samplecheck/stats/goodness_of_fit.h"
#include "samplecheck/stats/multiple_testing.h"
#include "samplecheck/stats/power.h"
#include "samplecheck/stats/simulation.h"
#include "samplecheck/stats/token_check.h"

namespace samplecheck::stats {
namespace {

using testing::BinomialBounds;
using testing::CountBounds;
using testing::WorstCaseShift;

void ExpectRate(std::uint64_t rejections, std::uint64_t runs, double rate, const char* what) {
  const CountBounds b = BinomialBounds(runs, rate, 1e-6);
  std::printf("%s: %llu of %llu, expected %.4g, bounds %s\n", what, static_cast<unsigned long long>(rejections),
              static_cast<unsigned long long>(runs), rate, b.Describe().c_str());
  EXPECT_GE(rejections, b.lower) << what;
  EXPECT_LE(rejections, b.upper) << what;
}

TEST(SlowCalibrationTest, PearsonNullSizeAtAlpha001Over100000Runs) {
  // 100,000 runs resolve the size at 0.01 to +-0.0016 (5 sigma): a test of true size 0.012 fails w.p. ~0.3,
  // 0.013 w.p. > 0.95. 64 equal cells, N = 6400 (E = 100).
  const std::vector<double> p0(64, 1.0 / 64);
  std::mt19937_64 rng(0x510E0001);
  std::vector<std::uint64_t> x(64);
  std::uint64_t rejected = 0;
  std::vector<double> p_values;
  for (int run = 0; run < 100000; ++run) {
    MultinomialVariate(rng, 6400, p0, x);
    const auto r = PearsonChiSquareTest(x, p0);
    ASSERT_TRUE(r.ok()) << r.error().message;
    rejected += r->p_value < 0.01;
    p_values.push_back(r->p_value);
  }
  ExpectRate(rejected, 100000, 0.01, "Pearson null, 64 cells, alpha 0.01");
  const auto ks = KolmogorovSmirnovUniformity(p_values);
  ASSERT_TRUE(ks.ok()) << ks.error().message;
  EXPECT_GT(ks->p_value, 1e-6);
}

TEST(SlowCalibrationTest, Planned1024BinsTv1e3Alpha1e6Power099) {
  // statistics.md 5.4: 9.09e7 draws over 1024 equal bins detect the worst-case TV 1e-3 shift with power 0.99.
  const std::vector<double> p0(1024, 1.0 / 1024);
  const Result<DrawPlan> plan = PlanDrawsForTotalVariation(1e-3, 1e-6, 0.99, 1024);
  ASSERT_TRUE(plan.ok()) << plan.error().message;
  const auto N = static_cast<std::uint64_t>(std::ceil(plan->draws));
  const auto p1 = WorstCaseShift(p0, 512, 1e-3);
  std::mt19937_64 rng(0x510E0002);
  std::vector<std::uint64_t> x(1024);
  std::uint64_t rejected = 0;
  const int runs = 10000;
  for (int run = 0; run < runs; ++run) {
    MultinomialVariate(rng, N, p1, x);
    const auto r = PearsonChiSquareTest(x, p0);
    ASSERT_TRUE(r.ok()) << r.error().message;
    rejected += !r->Passes(1e-6);
  }
  ExpectRate(rejected, runs, 0.99, "Pearson power, 1024 bins, TV 1e-3, alpha 1e-6, N = 9.09e7");
}

TEST(SlowCalibrationTest, LargeVocabularyTokenCheckHoldsAlpha) {
  // V = 32768 Zipf tokens (1 in 9 forbidden), N = 2e5: head, tail and hash binnings, Holm at 0.05. 2,000 runs:
  // each binning's size within bounds of 0.05; the family no larger than 0.05.
  const std::size_t V = 32768;
  std::vector<double> p0(V);
  for (std::size_t t = 0; t < V; ++t) p0[t] = (t % 9 == 8) ? 0.0 : std::pow(t + 1.0, -1.05);
  const std::uint64_t N = 200000;
  const Result<BinningPlan> planned = PlanBinnings(p0, static_cast<double>(N));
  ASSERT_TRUE(planned.ok()) << planned.error().message;
  const BinningPlan& plan = *planned;
  ASSERT_EQ(plan.UsableBinnings().size(), 3u);
  std::mt19937_64 rng(0x510E0003);
  std::vector<std::uint64_t> counts(V);
  const int runs = 2000;
  std::uint64_t per[3] = {0, 0, 0}, family = 0;
  for (int run = 0; run < runs; ++run) {
    MultinomialVariate(rng, N, p0, counts);
    const Result<TokenCheck> c = CheckTokenCounts(plan, counts, 0.05);
    ASSERT_TRUE(c.ok()) << c.error().message;
    for (int b = 0; b < 3; ++b) per[b] += c->binnings[static_cast<std::size_t>(b)].pearson.p_value < 0.05;
    family += !c->passed;
    ASSERT_EQ(c->support_violations, 0u);
  }
  ExpectRate(per[0], runs, 0.05, "V 32768 head binning");
  ExpectRate(per[1], runs, 0.05, "V 32768 tail binning");
  ExpectRate(per[2], runs, 0.05, "V 32768 hash binning");
  EXPECT_LE(family, BinomialBounds(runs, 0.05, 1e-6).upper);
}

}  // namespace
}  // namespace samplecheck::stats
