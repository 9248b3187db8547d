// Calibration of the stats/ checks by seeded simulation (label stats; ~10 s in Release).
//
// Each test runs R >= 10,000 simulated runs with a fixed std::mt19937_64 seed and the deterministic variates of
// simulation.h, counts rejections, and asserts the count lies inside the binomial bounds of the rate the theory
// promises:
//   false-alarm rate of each assertion: 1e-6 (two-sided binomial bounds at 1e-6), were the seed fresh;
//   power of each null-calibration assertion: it fails a test whose true size is 0.07 instead of 0.05 (or 0.03)
//   with probability > 0.99 (computed and printed by ProbabilityInside; R = 10,000 at alpha 0.05).

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
#include "samplecheck/stats/sequential.h"
#include "samplecheck/stats/simulation.h"
#include "samplecheck/stats/token_check.h"
#include "samplecheck/stats/two_sample.h"

namespace samplecheck::stats {
namespace {

using testing::BinomialBounds;
using testing::CountBounds;
using testing::ProbabilityInside;
using testing::WorstCaseShift;

constexpr std::uint64_t kRuns = 10000;
constexpr double kFalseAlarm = 1e-6;

// 16 cells, weights 1..8 twice: cells [0, 8) carry exactly half the mass.
std::vector<double> SixteenCells() {
  std::vector<double> p;
  for (int half = 0; half < 2; ++half) {
    for (int w = 1; w <= 8; ++w) p.push_back(w / 72.0);
  }
  return p;
}

void ExpectRate(std::uint64_t rejections, std::uint64_t runs, double rate, const char* what) {
  const CountBounds b = BinomialBounds(runs, rate, kFalseAlarm);
  std::printf("%s: %llu of %llu rejected, expected rate %.4g, bounds %s\n", what,
              static_cast<unsigned long long>(rejections), static_cast<unsigned long long>(runs), rate,
              b.Describe().c_str());
  EXPECT_GE(rejections, b.lower) << what << ": rate " << static_cast<double>(rejections) / runs
                                 << " is below the binomial bounds " << b.Describe() << " of " << rate;
  EXPECT_LE(rejections, b.upper) << what << ": rate " << static_cast<double>(rejections) / runs
                                 << " is above the binomial bounds " << b.Describe() << " of " << rate;
}

TEST(CalibrationTest, BoundsHavePowerAgainstMiscalibration) {
  // The null checks below accept [lower, upper] around alpha = 0.05; a test of true size 0.07 or 0.03 would pass
  // them with probability < 0.01.
  const CountBounds b = BinomialBounds(kRuns, 0.05, kFalseAlarm);
  EXPECT_LT(ProbabilityInside(kRuns, 0.07, b), 0.01);
  EXPECT_LT(ProbabilityInside(kRuns, 0.03, b), 0.01);
}

TEST(CalibrationTest, PearsonNullRejectionRateIsAlpha16Cells) {
  // H0 true: 16 cells, N = 85,000 (the plan for TV 0.01 at alpha 0.01, power 0.9). Size checked at 0.05 and
  // 0.01; the p-values must also be U(0, 1) (KS at 1e-6).
  const auto p0 = SixteenCells();
  const std::uint64_t N = 85000;
  std::mt19937_64 rng(0xCA11B000);
  std::uint64_t at05 = 0, at01 = 0;
  std::vector<double> p_values;
  std::vector<std::uint64_t> x(p0.size());
  for (std::uint64_t run = 0; run < kRuns; ++run) {
    MultinomialVariate(rng, N, p0, x);
    const auto r = PearsonChiSquareTest(x, p0);
    ASSERT_TRUE(r.ok()) << r.error().message;
    at05 += r->p_value < 0.05;
    at01 += r->p_value < 0.01;
    p_values.push_back(r->p_value);
  }
  ExpectRate(at05, kRuns, 0.05, "Pearson null, 16 cells, alpha 0.05");
  ExpectRate(at01, kRuns, 0.01, "Pearson null, 16 cells, alpha 0.01");
  const auto ks = KolmogorovSmirnovUniformity(p_values);
  ASSERT_TRUE(ks.ok()) << ks.error().message;
  EXPECT_GT(ks->p_value, kFalseAlarm) << "Pearson p-values are not uniform under H0: D = " << ks->statistic;
}

TEST(CalibrationTest, PearsonPowerReachesPlan16Cells) {
  // Planted worst-case shift of TV 0.01 and the planned N for alpha 0.01, power 0.9: the rejection rate must
  // be within the binomial bounds of 0.9.
  const auto p0 = SixteenCells();
  const Result<DrawPlan> plan = PlanDrawsForTotalVariation(0.01, 0.01, 0.9, 16);
  ASSERT_TRUE(plan.ok()) << plan.error().message;
  const auto N = static_cast<std::uint64_t>(std::ceil(plan->draws));
  const auto p1 = WorstCaseShift(p0, 8, 0.01);
  std::mt19937_64 rng(0xCA11B001);
  std::uint64_t rejected = 0;
  std::vector<std::uint64_t> x(p0.size());
  for (std::uint64_t run = 0; run < kRuns; ++run) {
    MultinomialVariate(rng, N, p1, x);
    const auto r = PearsonChiSquareTest(x, p0);
    ASSERT_TRUE(r.ok()) << r.error().message;
    rejected += !r->Passes(0.01);
  }
  std::printf("planned N = %llu\n", static_cast<unsigned long long>(N));
  ExpectRate(rejected, kRuns, plan->power, "Pearson power, 16 cells, TV 0.01, alpha 0.01");
}

TEST(CalibrationTest, HeadlinePlanTwoCellsTv1e3Alpha1e6Power099) {
  // statistics.md 5.4: 1.30e7 draws detect TV 1e-3 over 2 cells at alpha 1e-6 with power 0.99.
  const std::vector<double> p0 = {0.5, 0.5};
  const Result<DrawPlan> plan = PlanDrawsForTotalVariation(1e-3, 1e-6, 0.99, 2);
  ASSERT_TRUE(plan.ok()) << plan.error().message;
  const auto N = static_cast<std::uint64_t>(std::ceil(plan->draws));
  const auto p1 = WorstCaseShift(p0, 1, 1e-3);
  std::mt19937_64 rng(0xCA11B002);
  std::uint64_t rejected = 0, null_rejected = 0;
  std::vector<std::uint64_t> x(2);
  for (std::uint64_t run = 0; run < kRuns; ++run) {
    MultinomialVariate(rng, N, p1, x);
    const auto alternative = PearsonChiSquareTest(x, p0);
    ASSERT_TRUE(alternative.ok()) << alternative.error().message;
    rejected += !alternative->Passes(1e-6);
    MultinomialVariate(rng, N, p0, x);
    const auto null_fit = PearsonChiSquareTest(x, p0);
    ASSERT_TRUE(null_fit.ok()) << null_fit.error().message;
    null_rejected += !null_fit->Passes(1e-6);
  }
  ExpectRate(rejected, kRuns, 0.99, "Pearson power, 2 cells, TV 1e-3, alpha 1e-6, N = 1.30e7");
  EXPECT_LE(null_rejected, 1u) << "at alpha 1e-6 10,000 null runs should (P = 0.99995) reject at most once";
}

// Zipf token distribution with forbidden holes, as a sampler's processed distribution looks.
std::vector<double> ZipfTokens(std::size_t V) {
  std::vector<double> p(V);
  for (std::size_t t = 0; t < V; ++t) p[t] = (t % 9 == 8) ? 0.0 : std::pow(t + 1.0, -1.1);
  return p;
}

TEST(CalibrationTest, TokenLevelChecksHoldAlphaUnderNull) {
  // H0 true at the token level: V = 400 (44 forbidden), N = 20,000, the three binnings of binning.h. Each
  // binning's Pearson size at 0.05 must match; the Holm family (3 binnings + max-|z|) must not exceed 0.05;
  // no support violation may ever appear.
  const auto p0 = ZipfTokens(400);
  const std::uint64_t N = 20000;
  const Result<BinningPlan> planned = PlanBinnings(p0, static_cast<double>(N));
  ASSERT_TRUE(planned.ok()) << planned.error().message;
  const BinningPlan& plan = *planned;
  ASSERT_EQ(plan.UsableBinnings().size(), 3u);
  std::printf("cells: head %zu, tail %zu, hash %zu\n", plan.head.cells.size(), plan.tail.cells.size(),
              plan.hash.cells.size());
  std::mt19937_64 rng(0xCA11B003);
  std::vector<std::uint64_t> counts(p0.size());
  std::uint64_t per_binning[3] = {0, 0, 0}, family = 0, z_rejections = 0, violations = 0;
  for (std::uint64_t run = 0; run < kRuns; ++run) {
    MultinomialVariate(rng, N, p0, counts);
    const Result<TokenCheck> checked = CheckTokenCounts(plan, counts, 0.05);
    ASSERT_TRUE(checked.ok()) << checked.error().message;
    const TokenCheck& check = *checked;
    for (int b = 0; b < 3; ++b) per_binning[b] += check.binnings[static_cast<std::size_t>(b)].pearson.p_value < 0.05;
    family += !check.passed;
    z_rejections += !check.head_z.Passes();
    violations += check.support_violations;
  }
  ExpectRate(per_binning[0], kRuns, 0.05, "token level, head binning, alpha 0.05");
  ExpectRate(per_binning[1], kRuns, 0.05, "token level, tail binning, alpha 0.05");
  ExpectRate(per_binning[2], kRuns, 0.05, "token level, hash binning, alpha 0.05");
  // Holm and Bonferroni-max-|z| are conservative: only the upper bound applies.
  EXPECT_LE(family, BinomialBounds(kRuns, 0.05, kFalseAlarm).upper) << "family-wise rate " << family;
  EXPECT_LE(z_rejections, BinomialBounds(kRuns, 0.05, kFalseAlarm).upper) << "max-|z| rate " << z_rejections;
  std::printf("family rejections %llu, max-|z| rejections %llu\n", static_cast<unsigned long long>(family),
              static_cast<unsigned long long>(z_rejections));
  EXPECT_EQ(violations, 0u);
}

TEST(CalibrationTest, TokenLevelTailTiltMutantIsCaughtAtPredictedPower) {
  // Mutant: the tail (tokens outside the head) is tilted, its first half of mass in rank order scaled by
  // (1 + eps) and the second half by (1 - eps), eps = 20% (the shape of a tail-mass error in a top-p/min-p
  // kernel; the symmetric tilt keeps sum p1/p0 over the cells at K, so the non-central chi-square holds). The tail binning's binned divergence
  // predicts the power of its Pearson test at the Bonferroni level 0.05 / 4; the simulated rate must reach it
  // (less the stated approximation slack), and the Holm family (at least as powerful) too.
  const auto p0 = ZipfTokens(400);
  const std::uint64_t N = 20000;
  const double eps = 0.2;
  const Result<BinningPlan> planned = PlanBinnings(p0, static_cast<double>(N));
  ASSERT_TRUE(planned.ok()) << planned.error().message;
  const BinningPlan& plan = *planned;
  ASSERT_TRUE(plan.tail.usable());
  double tail_mass = 0;
  for (std::size_t r = plan.head_tokens; r < plan.tokens_by_rank.size(); ++r) {
    tail_mass += p0[plan.tokens_by_rank[r]];
  }
  std::vector<double> p1 = p0;
  double up_mass = 0, down_mass = 0;
  std::size_t split = plan.head_tokens;
  for (double acc = 0; split < plan.tokens_by_rank.size() && acc < tail_mass / 2; ++split) {
    acc += p0[plan.tokens_by_rank[split]];
  }
  for (std::size_t r = plan.head_tokens; r < plan.tokens_by_rank.size(); ++r) {
    (r < split ? up_mass : down_mass) += p0[plan.tokens_by_rank[r]];
  }
  for (std::size_t r = plan.head_tokens; r < plan.tokens_by_rank.size(); ++r) {
    const std::uint32_t t = plan.tokens_by_rank[r];
    p1[t] *= r < split ? 1 + eps : 1 - eps * up_mass / down_mass;  // tail mass preserved
  }
  // Binned divergence of the mutant on the tail binning.
  std::vector<double> q0(plan.tail.cells.size(), 0), q1(plan.tail.cells.size(), 0);
  for (std::size_t t = 0; t < p0.size(); ++t) {
    const auto c = plan.tail.cell_of_token[t];
    if (c == kForbiddenCell) continue;
    q0[static_cast<std::size_t>(c)] += p0[t];
    q1[static_cast<std::size_t>(c)] += p1[t];
  }
  const auto divergence = ChiSquareDivergence(q0, q1);
  ASSERT_TRUE(divergence.ok()) << divergence.error().message;
  const auto predicted = PowerOfRun(*divergence, 0.05 / 4, plan.tail.cells.size(), static_cast<double>(N));
  ASSERT_TRUE(predicted.ok()) << predicted.error().message;
  std::printf("tail cells %zu, tail divergence %.4g, predicted power %.4f\n", plan.tail.cells.size(),
              *divergence, *predicted);
  ASSERT_GT(*predicted, 0.5);
  ASSERT_LT(*predicted, 0.995) << "choose a mutant whose power the simulation can resolve";
  std::mt19937_64 rng(0xCA11B004);
  std::vector<std::uint64_t> counts(p0.size());
  std::uint64_t family = 0, tail_alone = 0;
  for (std::uint64_t run = 0; run < kRuns; ++run) {
    MultinomialVariate(rng, N, p1, counts);
    const Result<TokenCheck> checked = CheckTokenCounts(plan, counts, 0.05);
    ASSERT_TRUE(checked.ok()) << checked.error().message;
    const TokenCheck& check = *checked;
    family += !check.passed;
    tail_alone += check.binnings[1].pearson.p_value < 0.05 / 4;
  }
  // The non-central chi-square is a local approximation: for this 20% tilt with cells of E ~ 10 it is optimistic
  // by about 4 points (simulated 0.725 against 0.763 predicted with this seed). Assert the simulated power is
  // within the binomial bounds of the prediction less 0.06, and not above those of the prediction (a power
  // above the theory would point at a broken statistic or sampler).
  const CountBounds slack = BinomialBounds(kRuns, *predicted - 0.06, kFalseAlarm);
  const CountBounds exact = BinomialBounds(kRuns, *predicted, kFalseAlarm);
  std::printf("tail binning alone: %llu of %llu rejected, accepted range [%llu, %llu]\n",
              static_cast<unsigned long long>(tail_alone), static_cast<unsigned long long>(kRuns),
              static_cast<unsigned long long>(slack.lower), static_cast<unsigned long long>(exact.upper));
  EXPECT_GE(tail_alone, slack.lower);
  EXPECT_LE(tail_alone, exact.upper);
  EXPECT_GE(family, slack.lower);
  std::printf("family rejections %llu\n", static_cast<unsigned long long>(family));
}

TEST(CalibrationTest, TwoSampleNullSizeAndPlannedPower) {
  const auto p0 = SixteenCells();
  std::mt19937_64 rng(0xCA11B005);
  std::vector<std::uint64_t> r(16), s(16);
  // Null: both arms from p0, 50,000 draws each. Size at 0.05.
  std::uint64_t null_rejected = 0;
  for (std::uint64_t run = 0; run < kRuns; ++run) {
    MultinomialVariate(rng, 50000, p0, r);
    MultinomialVariate(rng, 50000, p0, s);
    const Result<TwoSample> t = TwoSampleChiSquareTest(r, s);
    ASSERT_TRUE(t.ok()) << t.error().message;
    null_rejected += !t->Passes(0.05);
  }
  ExpectRate(null_rejected, kRuns, 0.05, "two-sample null, alpha 0.05");
  // Alternative: arm S shifted by TV 0.01 (worst case); per-arm draws from PlanTwoSampleDrawsPerArm, power 0.9.
  const Result<DrawPlan> plan = PlanTwoSampleDrawsPerArm(4 * 0.01 * 0.01, 0.01, 0.9, 16);
  ASSERT_TRUE(plan.ok()) << plan.error().message;
  const auto n = static_cast<std::uint64_t>(std::ceil(plan->draws));
  const auto p1 = WorstCaseShift(p0, 8, 0.01);
  std::uint64_t rejected = 0;
  for (std::uint64_t run = 0; run < kRuns; ++run) {
    MultinomialVariate(rng, n, p0, r);
    MultinomialVariate(rng, n, p1, s);
    const Result<TwoSample> t = TwoSampleChiSquareTest(r, s);
    ASSERT_TRUE(t.ok()) << t.error().message;
    rejected += !t->Passes(0.01);
  }
  ExpectRate(rejected, kRuns, 0.9, "two-sample power, TV 0.01, alpha 0.01, planned per-arm draws");
}

TEST(CalibrationTest, EProcessIsAnytimeValidAndStopsEarlyUnderAlternative) {
  // Ville: P(ever E >= 1/alpha) <= alpha under H0, looking after each of 50 batches of 500 draws (8 cells,
  // alpha 0.05). Only the upper bound applies (Ville is an inequality). Both update modes.
  std::vector<double> p0 = {1, 2, 3, 4, 4, 3, 2, 1};
  for (double& x : p0) x /= 20;
  std::mt19937_64 rng(0xCA11B006);
  std::vector<std::uint64_t> batch(p0.size());
  for (Update update : {Update::kPerDraw, Update::kPerBatch}) {
    std::uint64_t crossed = 0;
    for (std::uint64_t run = 0; run < kRuns; ++run) {
      auto created = EProcess::Create(p0, 0.05, Estimator::kKrichevskyTrofimov, update);
      ASSERT_TRUE(created.ok()) << created.error().message;
      EProcess e = *created;
      for (int b = 0; b < 50 && !e.rejected(); ++b) {
        MultinomialVariate(rng, 500, p0, batch);
        const Status observed = e.Observe(batch);
        ASSERT_TRUE(observed.ok()) << observed.error().message;
      }
      crossed += e.rejected();
    }
    std::printf("e-process (%s) null crossings: %llu of %llu\n", update == Update::kPerDraw ? "per draw" : "per batch",
                static_cast<unsigned long long>(crossed), static_cast<unsigned long long>(kRuns));
    EXPECT_LE(crossed, BinomialBounds(kRuns, 0.05, kFalseAlarm).upper);
  }
  // Alternative: worst-case shift of TV 0.05 (KL ~ 0.005 nats per draw): by 25,000 draws ln E ~ 125 - 35 nats
  // of regret >> ln 20, so (almost) every run stops, and well before the end.
  const auto p1 = WorstCaseShift(p0, 4, 0.05);  // cells [0, 4) carry half the mass
  std::uint64_t stopped = 0;
  double draws_at_stop = 0;
  for (std::uint64_t run = 0; run < 1000; ++run) {
    auto created = EProcess::Create(p0, 0.05);
    ASSERT_TRUE(created.ok()) << created.error().message;
    EProcess e = *created;
    for (int b = 0; b < 50 && !e.rejected(); ++b) {
      MultinomialVariate(rng, 500, p1, batch);
      const Status observed = e.Observe(batch);
      ASSERT_TRUE(observed.ok()) << observed.error().message;
    }
    stopped += e.rejected();
    draws_at_stop += static_cast<double>(e.draws_at_rejection());
  }
  std::printf("e-process alternative: %llu of 1000 stopped, mean draws at stop %.0f\n",
              static_cast<unsigned long long>(stopped), draws_at_stop / 1000);
  EXPECT_GE(stopped, 995u);
  EXPECT_LT(draws_at_stop / 1000, 12500.0);
}

}  // namespace
}  // namespace samplecheck::stats
