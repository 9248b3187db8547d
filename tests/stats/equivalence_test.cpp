// equivalence.h: hand-worked values, independent evaluations of the inversion, monotonicity, edge cases and
// errors. Deterministic (no simulation; the coverage is measured in equivalence_calibration_test.cpp).

#include "samplecheck/stats/equivalence.h"

#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include <boost/math/special_functions/gamma.hpp>
#include <gtest/gtest.h>

#include "samplecheck/stats/binning.h"
#include "samplecheck/stats/goodness_of_fit.h"
#include "samplecheck/stats/power.h"

namespace samplecheck::stats {
namespace {

bool Mentions(const Error& e, const std::string& what) { return e.message.find(what) != std::string::npos; }

// P(chi'^2(1, lambda) <= x) in closed form: Phi(sqrt x - sqrt lambda) - Phi(-sqrt x - sqrt lambda).
double NonCentralCdfDof1(double lambda, double x) {
  if (x <= 0) return 0;
  const double a = std::sqrt(x), m = std::sqrt(lambda);
  return 0.5 * std::erfc(-(a - m) / std::sqrt(2.0)) - 0.5 * std::erfc((a + m) / std::sqrt(2.0));
}

// P(chi'^2(k, lambda) <= x) as the Poisson(lambda / 2) mixture of central chi^2(k + 2 j) cdfs (gamma_p), summed
// until the Poisson weights are negligible: independent of Boost's non-central code.
double NonCentralCdfPoissonMixture(double k, double lambda, double x) {
  if (x <= 0) return 0;
  const double mu = lambda / 2;
  double sum = 0;
  for (int j = 0; j < 100000; ++j) {
    const double w = std::exp(-mu + j * std::log(mu) - std::lgamma(j + 1.0));
    sum += w * boost::math::gamma_p((k + 2 * j) / 2, x / 2);
    if (j > mu && w < 1e-300) break;
  }
  return sum;
}

// The H_U^2 solving P(chi'^2(k, N(4h - h^2)) <= T - N h^2) = alpha by plain bisection on `cdf`.
template <typename Cdf>
double BisectHellinger(double t, double n, double alpha, Cdf cdf) {
  double lo = 0, hi = 2;
  for (int i = 0; i < 200; ++i) {
    const double h = 0.5 * (lo + hi);
    (cdf(n * (4 * h - h * h), t - n * h * h) > alpha ? lo : hi) = h;
  }
  return 0.5 * (lo + hi);
}

TEST(EquivalenceTest, HellingerInversionMatchesClosedFormAtOneDof) {
  for (const double t : {0.5, 3.0, 20.0, 1e3, 1e5}) {
    for (const double alpha : {0.05, 1e-4}) {
      const double n = 1e6;
      const Result<double> h2 = HellingerSquaredUpperBound(t, 1000000, 2, alpha);
      ASSERT_TRUE(h2.ok()) << h2.error().message;
      const double expected = BisectHellinger(t, n, alpha, NonCentralCdfDof1);
      EXPECT_NEAR(*h2, expected, 1e-8 * expected + 1e-300) << "T = " << t << ", alpha = " << alpha;
    }
  }
}

TEST(EquivalenceTest, HellingerInversionMatchesPoissonMixtureAt15Dof) {
  for (const double t : {15.0, 40.0, 300.0}) {
    const Result<double> h2 = HellingerSquaredUpperBound(t, 100000, 16, 1e-3);
    ASSERT_TRUE(h2.ok()) << h2.error().message;
    const double expected = BisectHellinger(t, 1e5, 1e-3, [](double lambda, double x) {
      return NonCentralCdfPoissonMixture(15, lambda, x);
    });
    EXPECT_NEAR(*h2, expected, 1e-7 * expected) << "T = " << t;
  }
}

TEST(EquivalenceTest, HellingerInversionEdges) {
  // T in the lower alpha-tail of chi^2(K - 1) even at H = 0: the bound is 0 (P(0 < H) = 0 when H = 0).
  EXPECT_EQ(*HellingerSquaredUpperBound(0.0, 1000, 4, 0.05), 0.0);
  // The largest T = 8 N (disjoint supports seen): at most 2.
  const Result<double> top = HellingerSquaredUpperBound(8000.0, 1000, 4, 0.05);
  ASSERT_TRUE(top.ok()) << top.error().message;
  EXPECT_LE(*top, 2.0);
  EXPECT_GT(*top, 1.9);
  // Larger T, larger bound; smaller alpha, larger bound.
  EXPECT_LT(*HellingerSquaredUpperBound(100, 100000, 16, 0.05), *HellingerSquaredUpperBound(120, 100000, 16, 0.05));
  EXPECT_LT(*HellingerSquaredUpperBound(100, 100000, 16, 0.05), *HellingerSquaredUpperBound(100, 100000, 16, 1e-4));
  // Huge N and a gross deviation evaluate (lambda ~ 1e9).
  const Result<double> big = HellingerSquaredUpperBound(4e8, 1000000000, 1024, 1e-6);
  ASSERT_TRUE(big.ok()) << big.error().message;
  EXPECT_GT(*big, 0.09);
  EXPECT_LT(*big, 0.11);
}

TEST(EquivalenceTest, LeCam) {
  EXPECT_EQ(TotalVariationFromHellingerSquared(0.0), 0.0);
  EXPECT_EQ(TotalVariationFromHellingerSquared(-1.0), 0.0);
  EXPECT_EQ(TotalVariationFromHellingerSquared(2.0), 1.0);
  EXPECT_DOUBLE_EQ(TotalVariationFromHellingerSquared(1.0), std::sqrt(0.75));
  // The worst-case shift (halves scaled by 1 +- 2 tv): TV = tv, and Le Cam gives back tv to first order.
  const double tv = 1e-3;
  const double h2 = 0.5 * std::pow(std::sqrt(1 + 2 * tv) - 1, 2) + 0.5 * std::pow(std::sqrt(1 - 2 * tv) - 1, 2);
  EXPECT_NEAR(TotalVariationFromHellingerSquared(h2), tv, 1e-6 * tv);
}

TEST(EquivalenceTest, HandWorkedTwoCells) {
  // p0 = (1/2, 1/2), N = 100, x = (60, 40): tv_point 0.1, X^2 = 4, chi2_point 0.04,
  // T = 4 ((sqrt 60 - sqrt 50)^2 + (sqrt 40 - sqrt 50)^2) = 4.0408...
  const std::vector<std::uint64_t> x = {60, 40};
  const std::vector<double> p0 = {1.0, 1.0};  // weights; normalized
  const Result<EquivalenceBound> b = EquivalenceUpperBounds(x, p0, 0.05);
  ASSERT_TRUE(b.ok()) << b.error().message;
  const double t = 4 * (std::pow(std::sqrt(60.0) - std::sqrt(50.0), 2) + std::pow(std::sqrt(40.0) - std::sqrt(50.0), 2));
  EXPECT_NEAR(b->statistic, t, 1e-12);
  EXPECT_NEAR(b->tv_point, 0.1, 1e-15);
  EXPECT_NEAR(b->chi2_point, 0.04, 1e-15);
  EXPECT_NEAR(b->hellinger2_point, t / 400, 1e-15);
  EXPECT_EQ(b->draws, 100u);
  EXPECT_EQ(b->cells, 2u);
  EXPECT_EQ(b->alpha, 0.05);
  // The Hellinger part is the inversion of T at 0.9 alpha, through Le Cam.
  const double h2 = BisectHellinger(t, 100, 0.045, NonCentralCdfDof1);
  EXPECT_NEAR(b->hellinger2_upper, h2, 1e-8 * h2);
  EXPECT_NEAR(b->tv_upper_hellinger, std::sqrt(h2 * (1 - h2 / 4)), 1e-8);
  // The L1 part: 0.1 + sqrt((ln 2 + ln(1 / 0.005)) / 200).
  EXPECT_NEAR(b->tv_upper_l1, 0.1 + std::sqrt((std::log(2.0) + std::log(200.0)) / 200), 1e-12);
  EXPECT_DOUBLE_EQ(b->tv_upper, std::min(b->tv_upper_hellinger, b->tv_upper_l1));
  EXPECT_GT(b->tv_upper, b->tv_point);
  EXPECT_LT(b->tv_upper, 0.3);
  EXPECT_GT(b->chi2_upper, b->chi2_point);
  EXPECT_FALSE(b->tv_method.empty());
  EXPECT_FALSE(b->chi2_method.empty());
}

TEST(EquivalenceTest, PlugInsMatchPearson) {
  const std::vector<std::uint64_t> x = {120, 260, 310, 90, 220};
  const std::vector<double> p0 = {0.1, 0.25, 0.3, 0.1, 0.25};
  const Result<EquivalenceBound> b = EquivalenceUpperBounds(x, p0, 0.01);
  ASSERT_TRUE(b.ok()) << b.error().message;
  const auto pearson = PearsonChiSquareTest(x, p0);
  ASSERT_TRUE(pearson.ok()) << pearson.error().message;
  EXPECT_NEAR(b->chi2_point, pearson->statistic / 1000, 1e-12);
  std::vector<double> phat;
  for (auto c : x) phat.push_back(c / 1000.0);
  EXPECT_NEAR(b->tv_point, *TotalVariation(p0, phat), 1e-15);
}

TEST(EquivalenceTest, CorrectSamplerHeadline) {
  // statistics.md: alpha 1e-4, 1024 cells, N = 2^26: a correct sampler's median bound is 8.36e-4; 4.69e7 draws
  // certify TV 1e-3 (median); 4.88e6 certify 1e-3 over 2 cells.
  const Result<double> eps = CertifiableTotalVariation(1e-4, 1024, std::ldexp(1.0, 26));
  ASSERT_TRUE(eps.ok()) << eps.error().message;
  EXPECT_NEAR(*eps, 8.36e-4, 0.005e-4);
  const Result<double> n = DrawsToCertifyTotalVariation(1e-3, 1e-4, 1024);
  ASSERT_TRUE(n.ok()) << n.error().message;
  EXPECT_NEAR(*n, 4.69e7, 0.005e7);
  EXPECT_NEAR(*DrawsToCertifyTotalVariation(1e-3, 1e-4, 2), 4.88e6, 0.005e6);
  // The two are inverse to each other, at every probability.
  for (const double p : {0.5, 0.9, 0.99}) {
    for (const std::uint64_t cells : {2ULL, 16ULL, 4097ULL}) {
      const Result<double> draws = DrawsToCertifyTotalVariation(2e-3, 1e-6, cells, p);
      ASSERT_TRUE(draws.ok()) << draws.error().message;
      const Result<double> back = CertifiableTotalVariation(1e-6, cells, *draws, p);
      ASSERT_TRUE(back.ok()) << back.error().message;
      EXPECT_NEAR(*back, 2e-3, 1e-9) << cells << " cells, probability " << p;
    }
  }
  // The rate: eps ~ 1 / sqrt(N) at fixed K; more cells cost ~ K^(1/4).
  const double at_n = *CertifiableTotalVariation(1e-4, 256, 1e6);
  EXPECT_NEAR(*CertifiableTotalVariation(1e-4, 256, 1e8) / at_n, 0.1, 1e-3);
  EXPECT_GT(*CertifiableTotalVariation(1e-4, 1024, 1e6), at_n);
  EXPECT_GT(*CertifiableTotalVariation(1e-4, 256, 1e6, 0.99), at_n);
}

TEST(EquivalenceTest, ExactExpectedCountsEarnOnlyTheMedianCertificate) {
  // x = N p0 exactly: T = 0, floored at the median of chi^2(K - 1), so the bound is the median one.
  const std::vector<double> p0 = {0.125, 0.125, 0.25, 0.5};
  const std::vector<std::uint64_t> x = {125000, 125000, 250000, 500000};
  const Result<EquivalenceBound> b = EquivalenceUpperBounds(x, p0, 1e-3);
  ASSERT_TRUE(b.ok()) << b.error().message;
  EXPECT_EQ(b->statistic, 0.0);
  EXPECT_EQ(b->tv_point, 0.0);
  EXPECT_NEAR(b->tv_upper_hellinger, *CertifiableTotalVariation(1e-3, 4, 1e6), 1e-12);
  EXPECT_GT(b->tv_upper, 0.0);
}

TEST(EquivalenceTest, GrossDeviationsAreBoundedNotCertified) {
  // Every draw in one of two equal cells: true TV of that law 0.5.
  const std::vector<std::uint64_t> x = {1000000, 0};
  const std::vector<double> p0 = {0.5, 0.5};
  const Result<EquivalenceBound> b = EquivalenceUpperBounds(x, p0, 1e-6);
  ASSERT_TRUE(b.ok()) << b.error().message;
  EXPECT_GE(b->tv_upper, 0.5);
  EXPECT_LE(b->tv_upper, 0.51);
  EXPECT_GE(b->chi2_upper, 1.0);  // chi2((1, 0) || (1/2, 1/2)) = 1
  // A truncated tail (mass 0.01 in 10 cells never drawn): the L1 part wins, close to the truncated mass.
  std::vector<double> q0(100, 0.01);
  std::vector<std::uint64_t> y(100, 101010);
  for (int i = 90; i < 100; ++i) y[static_cast<std::size_t>(i)] = 0;
  const Result<EquivalenceBound> t = EquivalenceUpperBounds(y, q0, 1e-4);
  ASSERT_TRUE(t.ok()) << t.error().message;
  EXPECT_GE(t->tv_upper, 0.1);
  EXPECT_LT(t->tv_upper_l1, t->tv_upper_hellinger);
  EXPECT_EQ(t->tv_upper, t->tv_upper_l1);
  EXPECT_NE(t->tv_method.find("L1"), std::string::npos);
}

TEST(EquivalenceTest, MoreDrawsTighterBounds) {
  // The same proportions at 10x the draws: the bound shrinks about sqrt(10)-fold near the null.
  const std::vector<double> p0 = {0.2, 0.3, 0.5};
  const Result<EquivalenceBound> small = EquivalenceUpperBounds(std::vector<std::uint64_t>{20010, 29990, 50000}, p0, 1e-3);
  const Result<EquivalenceBound> large =
      EquivalenceUpperBounds(std::vector<std::uint64_t>{200100, 299900, 500000}, p0, 1e-3);
  ASSERT_TRUE(small.ok() && large.ok());
  EXPECT_LT(large->tv_upper, small->tv_upper / 2.5);
  EXPECT_LT(large->chi2_upper, small->chi2_upper / 5);
}

TEST(EquivalenceTest, InvalidInputsAreErrors) {
  const std::vector<std::uint64_t> x = {10, 20};
  const std::vector<double> p0 = {0.5, 0.5};
  auto r = EquivalenceUpperBounds(x, std::vector<double>{0.5, 0.25, 0.25}, 0.05);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code, ErrorCode::kInvalidArgument);
  EXPECT_TRUE(Mentions(r.error(), "observed.size() = 2 differs from p0_cells.size() = 3")) << r.error().message;
  r = EquivalenceUpperBounds(std::vector<std::uint64_t>{5}, std::vector<double>{1.0}, 0.05);
  ASSERT_FALSE(r.ok());
  EXPECT_TRUE(Mentions(r.error(), "cells = 1 is outside the allowed range [2, 2^32]")) << r.error().message;
  for (const double alpha : {0.0, 1.0, -0.1, std::nan("")}) {
    r = EquivalenceUpperBounds(x, p0, alpha);
    ASSERT_FALSE(r.ok());
    EXPECT_TRUE(Mentions(r.error(), "alpha = ")) << r.error().message;
    EXPECT_TRUE(Mentions(r.error(), "is outside the allowed range (0, 1)")) << r.error().message;
  }
  for (const double bad : {0.0, -1.0, std::numeric_limits<double>::infinity(), std::nan("")}) {
    r = EquivalenceUpperBounds(x, std::vector<double>{0.5, bad}, 0.05);
    ASSERT_FALSE(r.ok());
    EXPECT_TRUE(Mentions(r.error(), "p0_cells[1] = ")) << r.error().message;
    EXPECT_TRUE(Mentions(r.error(), "outside the allowed range (0, inf)")) << r.error().message;
  }
  r = EquivalenceUpperBounds(std::vector<std::uint64_t>{0, 0}, p0, 0.05);
  ASSERT_FALSE(r.ok());
  EXPECT_TRUE(Mentions(r.error(), "draws = 0")) << r.error().message;
  const std::uint64_t big = std::numeric_limits<std::uint64_t>::max() - 1;
  r = EquivalenceUpperBounds(std::vector<std::uint64_t>{big, 5}, p0, 0.05);
  ASSERT_FALSE(r.ok());
  EXPECT_TRUE(Mentions(r.error(), "sum past 2^64 - 1")) << r.error().message;

  EXPECT_TRUE(Mentions(HellingerSquaredUpperBound(-1, 10, 2, 0.05).error(), "statistic = -1 is outside"));
  EXPECT_TRUE(Mentions(HellingerSquaredUpperBound(81, 10, 2, 0.05).error(), "[0, 8 N = 80]"));
  EXPECT_TRUE(Mentions(HellingerSquaredUpperBound(1, 0, 2, 0.05).error(), "draws = 0"));
  EXPECT_TRUE(Mentions(HellingerSquaredUpperBound(1, 10, 1, 0.05).error(), "cells = 1"));

  EXPECT_TRUE(Mentions(CertifiableTotalVariation(0.05, 16, 0.5).error(), "draws = 0.5 is outside the allowed range [1, inf)"));
  EXPECT_TRUE(Mentions(CertifiableTotalVariation(0.05, 16, 1e6, 0.4).error(), "probability = 0.4 is outside the allowed range [0.5, 1)"));
  EXPECT_TRUE(Mentions(CertifiableTotalVariation(0.05, 16, 1e6, 1.0).error(), "probability = 1"));
  EXPECT_TRUE(Mentions(CertifiableTotalVariation(2.0, 16, 1e6).error(), "alpha = 2"));
  EXPECT_TRUE(Mentions(CertifiableTotalVariation(0.05, 0, 1e6).error(), "cells = 0"));
  for (const double eps : {0.0, 1.0, -1e-3, std::nan("")}) {
    const auto d = DrawsToCertifyTotalVariation(eps, 0.05, 16);
    ASSERT_FALSE(d.ok());
    EXPECT_TRUE(Mentions(d.error(), "eps = ")) << d.error().message;
    EXPECT_TRUE(Mentions(d.error(), "is outside the allowed range (0, 1)")) << d.error().message;
  }
  EXPECT_TRUE(Mentions(DrawsToCertifyTotalVariation(0.01, 0.05, (1ULL << 32) + 1).error(), "cells = 4294967297"));
}

TEST(EquivalenceTest, JudgeCertifiesLacksDrawsOrPointsAtADistance) {
  const std::vector<double> p0 = {0.25, 0.25, 0.25, 0.25};
  // A correct-looking sampler with 4e6 draws: certified at eps 0.01 (the bound is ~1.2e-3).
  const Result<EquivalenceBound> good =
      EquivalenceUpperBounds(std::vector<std::uint64_t>{1000100, 999900, 1000300, 999700}, p0, 1e-4);
  ASSERT_TRUE(good.ok()) << good.error().message;
  const Result<EquivalenceVerdict> ok = JudgeEquivalence({&*good, 1}, 0.01);
  ASSERT_TRUE(ok.ok()) << ok.error().message;
  EXPECT_TRUE(ok->certified);
  EXPECT_FALSE(ok->lacks_draws);
  EXPECT_EQ(ok->message.rfind("certified: binned TV <= ", 0), 0u) << ok->message;
  // The same sampler at eps 1e-4: 4e6 draws are far too few (a correct sampler needs ~1e9).
  const Result<EquivalenceVerdict> few = JudgeEquivalence({&*good, 1}, 1e-4);
  ASSERT_TRUE(few.ok()) << few.error().message;
  EXPECT_FALSE(few->certified);
  EXPECT_TRUE(few->lacks_draws);
  EXPECT_GT(few->draws_to_certify, 1e8);
  EXPECT_EQ(few->message.rfind("inconclusive for lack of draws", 0), 0u) << few->message;
  // A sampler 2% off on 4e6 draws: enough draws for eps 0.01, but the data show a distance.
  const Result<EquivalenceBound> off =
      EquivalenceUpperBounds(std::vector<std::uint64_t>{1080000, 920000, 1000000, 1000000}, p0, 1e-4);
  ASSERT_TRUE(off.ok()) << off.error().message;
  const Result<EquivalenceVerdict> bad = JudgeEquivalence({&*off, 1}, 0.01);
  ASSERT_TRUE(bad.ok()) << bad.error().message;
  EXPECT_FALSE(bad->certified);
  EXPECT_FALSE(bad->lacks_draws);
  EXPECT_EQ(bad->message.rfind("inconclusive: binned TV upper bound", 0), 0u) << bad->message;
  // Several bounds: the verdict takes the largest.
  const std::vector<EquivalenceBound> both = {*good, *off};
  const Result<EquivalenceVerdict> joint = JudgeEquivalence(both, 0.01);
  ASSERT_TRUE(joint.ok());
  EXPECT_FALSE(joint->certified);
  EXPECT_EQ(joint->tv_upper, off->tv_upper);
  // Errors.
  EXPECT_TRUE(Mentions(JudgeEquivalence({}, 0.01).error(), "bounds is empty"));
  EXPECT_TRUE(Mentions(JudgeEquivalence(both, 0.0).error(), "eps = 0 is outside the allowed range (0, 1)"));
}

TEST(EquivalenceTest, OverBinningsTakesTheMaxAndCountsViolations) {
  // Zipf tokens with holes (p0 = 0 every 9th token), V = 400, planned N = 20000: three usable binnings.
  std::vector<double> p0(400);
  for (std::size_t t = 0; t < p0.size(); ++t) p0[t] = (t % 9 == 8) ? 0.0 : std::pow(t + 1.0, -1.1);
  const Result<BinningPlan> plan = PlanBinnings(p0, 20000);
  ASSERT_TRUE(plan.ok()) << plan.error().message;
  double total = 0;
  for (double v : p0) total += v;
  std::vector<std::uint64_t> counts(p0.size());
  for (std::size_t t = 0; t < p0.size(); ++t) counts[t] = static_cast<std::uint64_t>(std::llround(20000 * p0[t] / total));
  counts[8] = 3;  // three draws of a forbidden token
  const Result<BinnedEquivalence> eq = EquivalenceOverBinnings(*plan, counts, 1e-3);
  ASSERT_TRUE(eq.ok()) << eq.error().message;
  ASSERT_EQ(eq->binnings.size(), 3u);
  EXPECT_EQ(eq->binnings[0].binning, "head");
  EXPECT_EQ(eq->binnings[1].binning, "tail");
  EXPECT_EQ(eq->binnings[2].binning, "hash");
  EXPECT_EQ(eq->support_violations, 3u);
  double max_tv = 0, max_chi2 = 0;
  for (const auto& b : eq->binnings) {
    max_tv = std::max(max_tv, b.tv_upper);
    max_chi2 = std::max(max_chi2, b.chi2_upper);
    EXPECT_EQ(b.cells, plan->UsableBinnings()[&b - eq->binnings.data()]->cells.size());
  }
  EXPECT_EQ(eq->tv_upper, max_tv);
  EXPECT_EQ(eq->chi2_upper, max_chi2);
  EXPECT_EQ(eq->binnings[eq->worst].tv_upper, max_tv);
  const Result<EquivalenceVerdict> v = JudgeEquivalence(eq->binnings, 0.5);
  ASSERT_TRUE(v.ok());
  EXPECT_TRUE(v->certified);
  EXPECT_EQ(v->worst_binning, eq->binnings[eq->worst].binning);

  // Wrong histogram size; too few draws for any binning; one support token (distance 0 on the support).
  EXPECT_TRUE(Mentions(EquivalenceOverBinnings(*plan, std::vector<std::uint64_t>(3), 1e-3).error(),
                       "token_counts.size() = 3 differs from the vocabulary size 400"));
  const Result<BinningPlan> tiny = PlanBinnings(std::vector<double>(100, 1.0), 15);
  ASSERT_TRUE(tiny.ok()) << tiny.error().message;
  const auto none = EquivalenceOverBinnings(*tiny, std::vector<std::uint64_t>(100, 0), 1e-3);
  ASSERT_FALSE(none.ok());
  EXPECT_TRUE(Mentions(none.error(), "no usable binning")) << none.error().message;
  const Result<BinningPlan> one = PlanBinnings(std::vector<double>{0.0, 1.0, 0.0}, 1000);
  ASSERT_TRUE(one.ok()) << one.error().message;
  const auto single = EquivalenceOverBinnings(*one, std::vector<std::uint64_t>{0, 1000, 0}, 1e-3);
  ASSERT_TRUE(single.ok()) << single.error().message;
  EXPECT_TRUE(single->binnings.empty());
  EXPECT_EQ(single->tv_upper, 0.0);
}

// A dominant token whose rest cannot make a cell (p0_rest N < 10; a generated case of standard on an H100 had 9583
// support tokens and 1.5e7 draws and no binning): the two cells {top, rest}, exact Clopper-Pearson, plus the rest's
// mass bound the token-level TV. A correct sampler is certified far below 1e-3; a sampler that moves 1e-4 of mass
// off the top token is not certified below it.
TEST(EquivalenceTest, ADominantTokenIsBoundedByTwoExactCells) {
  std::vector<double> p0(1000, 1e-10);
  p0[7] = 1.0;  // rest mass ~1e-7: 1.5 expected draws at N = 1.5e7
  const double n = 1.5e7;
  const Result<BinningPlan> plan = PlanBinnings(p0, n);
  ASSERT_TRUE(plan.ok()) << plan.error().message;
  ASSERT_TRUE(plan->UsableBinnings().empty());
  EXPECT_NEAR(plan->rest_probability, 999e-10 / (1 + 999e-10), 1e-18);  // normalized
  std::vector<std::uint64_t> counts(1000, 0);
  counts[7] = 15000000 - 2;
  counts[3] = 2;
  const auto eq = EquivalenceOverBinnings(*plan, counts, 1e-6);
  ASSERT_TRUE(eq.ok()) << eq.error().message;
  ASSERT_EQ(eq->binnings.size(), 1u);
  EXPECT_EQ(eq->binnings[0].binning, "top");
  EXPECT_GT(eq->tv_upper, plan->rest_probability);
  EXPECT_LT(eq->tv_upper, 3e-6);  // ~ (2 + ln(1/alpha)) / N
  const Result<EquivalenceVerdict> v = JudgeEquivalence(eq->binnings, 1e-3);
  ASSERT_TRUE(v.ok());
  EXPECT_TRUE(v->certified) << v->message;

  counts[7] = 15000000 - 1500;  // 1e-4 of the mass moved off the top token
  counts[3] = 1500;
  const auto off = EquivalenceOverBinnings(*plan, counts, 1e-6);
  ASSERT_TRUE(off.ok()) << off.error().message;
  EXPECT_GE(off->tv_upper, 1e-4);  // covers the true distance
  const Result<EquivalenceVerdict> w = JudgeEquivalence(off->binnings, 1e-4);
  ASSERT_TRUE(w.ok());
  EXPECT_FALSE(w->certified) << w->message;
}

}  // namespace
}  // namespace samplecheck::stats
