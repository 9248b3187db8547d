// Coverage of the equivalence bounds (equivalence.h) by seeded simulation, and exactly (by enumeration) for two
// cells. Built twice (tests/stats/CMakeLists.txt): label stats with 2000 runs per configuration (~1 min in
// Release), label slow (SAMPLECHECK_EQUIVALENCE_SLOW) with 10,000 runs per configuration over more cells and
// draws; the slow run prints the table of statistics.md ("Equivalence bounds").
//
// A configuration is (K cells, N draws, a known sampler law q). Per run: x ~ Multinomial(N, q) (simulation.h),
// the bounds at alpha 0.05 and 0.01, and a miss whenever a bound is below the true distance of q. The claim is
// coverage >= 1 - alpha, i.e. misses <= alpha R; each assertion allows the binomial upper bound of alpha R at
// false alarm 1e-6 (BinomialBounds, two-sided 1e-6, upper end used), were the seed fresh. Misses of the Hellinger
// pivot alone (HellingerSquaredUpperBound of the raw T at level alpha, no floor, no split) are reported too: they
// measure how exact the asymptotic law is (about alpha R where the shift is of worst-case shape).
//
// The shifts (p0 ~ 1 / (i + 10) over K cells, so the smallest cell has N p0 >= 10 at the N used):
//   null       q = p0: nothing to miss; the median bound is what a correct sampler certifies.
//   worst      cells [0, a) of about half the mass scaled by 1 + t / m, the rest by 1 - t / (1 - m): TV = t, with
//              t = 1.5 CertifiableTotalVariation(0.05, K, N), near where a verdict is decided. Le Cam is tight here.
//   bump       the smallest cell scaled up so that its Hellinger noncentrality is that of TV t: a non-local
//              relative error (x3..x6) where the cell's E is 10..100, where a Pearson-based non-central
//              chi-square bound undercovers (reported as `Pearson miss`), local where E is large.
//   truncate   mass t removed from the tail, smallest cell first (a truncated tail as the binning sees it).
//   deflate    (only where the smallest cell has E <= 200) the last quarter of cells scaled so the smallest
//              expects ~2 draws under q: the small-count regime of the sqrt transform.

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <exception>
#include <random>
#include <string>
#include <vector>

#include <boost/math/distributions/binomial.hpp>
#include <boost/math/distributions/chi_squared.hpp>
#include <boost/math/distributions/non_central_chi_squared.hpp>
#include <gtest/gtest.h>

#include "calibration_util.h"
#include "samplecheck/stats/binning.h"
#include "samplecheck/stats/equivalence.h"
#include "samplecheck/stats/power.h"
#include "samplecheck/stats/simulation.h"

namespace samplecheck::stats {
namespace {

using testing::BinomialBounds;

#ifdef SAMPLECHECK_EQUIVALENCE_SLOW
constexpr std::uint64_t kRuns = 10000;
#else
constexpr std::uint64_t kRuns = 2000;
#endif
constexpr double kFalseAlarm = 1e-6;
constexpr double kAlphas[] = {0.05, 0.01};

std::vector<double> ZipfCells(std::size_t K) {
  std::vector<double> p(K);
  double s = 0;
  for (std::size_t i = 0; i < K; ++i) s += p[i] = 1.0 / (static_cast<double>(i) + 10.0);
  for (double& v : p) v /= s;
  return p;
}

void Normalize(std::vector<double>& q) {
  double s = 0;
  for (double v : q) s += v;
  for (double& v : q) v /= s;
}

double HellingerSquared(const std::vector<double>& p, const std::vector<double>& q) {
  long double s = 0;
  for (std::size_t i = 0; i < p.size(); ++i) {
    const long double d = std::sqrt(static_cast<long double>(q[i])) - std::sqrt(static_cast<long double>(p[i]));
    s += d * d;
  }
  return static_cast<double>(s);
}

enum class Shape { kNull, kWorst, kBump, kTruncate, kDeflate };
const char* ShapeName(Shape s) {
  switch (s) {
    case Shape::kNull: return "null";
    case Shape::kWorst: return "worst";
    case Shape::kBump: return "bump";
    case Shape::kTruncate: return "truncate";
    case Shape::kDeflate: return "deflate";
  }
  return "?";
}

std::vector<double> Shifted(const std::vector<double>& p0, Shape shape, double n, double t) {
  std::vector<double> q = p0;
  const std::size_t K = p0.size();
  switch (shape) {
    case Shape::kNull:
      break;
    case Shape::kWorst: {
      double m = 0;
      std::size_t a = 0;
      while (a + 1 < K && m + p0[a] <= 0.5) m += p0[a++];
      if (a == 0) m = p0[a++];
      for (std::size_t i = 0; i < K; ++i) q[i] *= i < a ? 1 + t / m : 1 - t / (1 - m);
      break;
    }
    case Shape::kBump: {
      // The smallest cell scaled by 1 + r, r such that its Hellinger noncentrality 4 E (sqrt(1 + r) - 1)^2 is
      // 4 N t^2, near the certifiable one: non-local (r ~ 2..5) where E is small, local where it is large.
      const double e = n * p0[K - 1];
      q[K - 1] *= std::pow(1 + t * std::sqrt(n / e), 2);
      Normalize(q);
      break;
    }
    case Shape::kTruncate: {
      // Mass t removed from the tail, smallest cell first (a truncated tail as the binning sees it).
      double left = t;
      for (std::size_t i = K; i-- > 1 && left > 0;) {
        const double take = std::min(q[i], left);
        q[i] -= take;
        left -= take;
      }
      Normalize(q);
      break;
    }
    case Shape::kDeflate: {
      const double factor = 2.0 / (n * p0[K - 1]);
      for (std::size_t i = K - std::max<std::size_t>(1, K / 4); i < K; ++i) q[i] *= factor;
      Normalize(q);
      break;
    }
  }
  return q;
}

// The naive local bound, for comparison only: lambda_U of Pearson's X^2 ~ chi'^2(K - 1, N chi2) inverted at alpha.
double PearsonNaiveChi2Upper(double x2, std::uint64_t K, double n, double alpha) {
  const double dof = static_cast<double>(K - 1);
  if (boost::math::cdf(boost::math::chi_squared(dof), x2) <= alpha) return 0.0;
  try {
    return boost::math::non_central_chi_squared::find_non_centrality(dof, x2, alpha) / n;
  } catch (const std::exception&) {
    return 0.0;
  }
}

struct Tally {
  std::uint64_t tv_miss[2] = {0, 0};
  std::uint64_t chi2_miss[2] = {0, 0};
  std::uint64_t pivot_miss[2] = {0, 0};
  std::uint64_t pearson_miss = 0;  // at 0.05
  std::uint64_t l1_wins = 0;       // at 0.05
  std::vector<double> tv_upper[2];
};

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

std::string Sci(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3g", v);
  return buf;
}

// One configuration: simulate, print a table row, assert coverage.
void RunConfiguration(std::size_t K, double n, Shape shape, std::uint64_t seed) {
  const std::vector<double> p0 = ZipfCells(K);
  ASSERT_GE(n * p0[K - 1], 10.0) << "the binning's E >= 10 is part of the stated assumption";
  const Result<double> t_cert = CertifiableTotalVariation(0.05, K, n);
  ASSERT_TRUE(t_cert.ok()) << t_cert.error().message;
  // Shifts at 1.5 times the certifiable eps: near the decision, and clear of the floor (a bound that sits exactly
  // at the true distance would make coverage a matter of rounding).
  const std::vector<double> q = Shifted(p0, shape, n, 1.5 * *t_cert);
  const double tv = *TotalVariation(p0, q);
  const double chi2 = *ChiSquareDivergence(p0, q);
  const double h2 = HellingerSquared(p0, q);
  const auto N = static_cast<std::uint64_t>(n);
  std::mt19937_64 rng(seed);
  std::vector<std::uint64_t> x(K);
  Tally tally;
  for (std::uint64_t run = 0; run < kRuns; ++run) {
    MultinomialVariate(rng, N, q, x);
    for (int a = 0; a < 2; ++a) {
      const Result<EquivalenceBound> b = EquivalenceUpperBounds(x, p0, kAlphas[a]);
      ASSERT_TRUE(b.ok()) << b.error().message;
      tally.tv_miss[a] += b->tv_upper < tv;
      tally.chi2_miss[a] += b->chi2_upper < chi2;
      tally.tv_upper[a].push_back(b->tv_upper);
      const Result<double> pivot = HellingerSquaredUpperBound(b->statistic, N, K, kAlphas[a]);
      ASSERT_TRUE(pivot.ok()) << pivot.error().message;
      tally.pivot_miss[a] += *pivot < h2;
      if (a == 0) {
        tally.l1_wins += b->tv_upper_l1 < b->tv_upper_hellinger;
        tally.pearson_miss += PearsonNaiveChi2Upper(b->chi2_point * n, K, n, kAlphas[0]) < chi2;
      }
    }
  }
  const double cert_1e4 = *CertifiableTotalVariation(1e-4, K, n);
  const double R = static_cast<double>(kRuns);
  // | K | N | shift | TV | chi2 | TV cover 0.05 | 0.01 | chi2 cover 0.05 | 0.01 | pivot miss 0.05 | 0.01 |
  // Pearson miss 0.05 | median tv_upper 0.05 | 0.01 | certifiable 1e-4 |
  std::printf("| %zu | %s | %s | %s | %s | %.4f | %.4f | %.4f | %.4f | %.4f | %.4f | %.4f | %s | %s | %s | %.2f |\n", K,
              Sci(n).c_str(), ShapeName(shape), Sci(tv).c_str(), Sci(chi2).c_str(), 1 - tally.tv_miss[0] / R,
              1 - tally.tv_miss[1] / R, 1 - tally.chi2_miss[0] / R, 1 - tally.chi2_miss[1] / R,
              tally.pivot_miss[0] / R, tally.pivot_miss[1] / R, tally.pearson_miss / R,
              Sci(Median(tally.tv_upper[0])).c_str(), Sci(Median(tally.tv_upper[1])).c_str(), Sci(cert_1e4).c_str(),
              tally.l1_wins / R);
  std::fflush(stdout);
  for (int a = 0; a < 2; ++a) {
    const std::uint64_t allowed = BinomialBounds(kRuns, kAlphas[a], kFalseAlarm).upper;
    EXPECT_LE(tally.tv_miss[a], allowed) << "TV coverage below 1 - " << kAlphas[a] << ": " << ShapeName(shape)
                                         << ", K = " << K << ", N = " << n;
    EXPECT_LE(tally.chi2_miss[a], allowed) << "chi2 coverage below 1 - " << kAlphas[a] << ": " << ShapeName(shape)
                                           << ", K = " << K << ", N = " << n;
    EXPECT_LE(tally.pivot_miss[a], allowed) << "Hellinger pivot misses above " << kAlphas[a] << ": "
                                            << ShapeName(shape) << ", K = " << K << ", N = " << n;
  }
  if (shape == Shape::kNull) {
    // The median bound of a correct sampler is the certifiable eps (the floor of T is the null median), up to the
    // small-count bias of sqrt (E T - (K - 1) ~ 0.44 sum 1 / E_i: +7.5% at K = 256, N = 1e4, where E_min = 11).
    const double ratio = Median(tally.tv_upper[0]) / *t_cert;
    EXPECT_GE(ratio, 0.98) << "K = " << K << ", N = " << n;
    EXPECT_LE(ratio, 1.10) << "K = " << K << ", N = " << n;
  }
  if (shape == Shape::kWorst && n * p0[K - 1] >= 100) {
    // Where every cell has E >= 100 the pivot is close to exact for the worst-case shift: misses near alpha R, not
    // far below (at E ~ 10 the sqrt bias makes it conservative, printed).
    EXPECT_GE(tally.pivot_miss[0], BinomialBounds(kRuns, 0.05, kFalseAlarm).lower)
        << "pivot far more conservative than its law: K = " << K << ", N = " << n;
  }
}

void PrintHeader() {
  std::printf(
      "| K | N | shift | TV | chi2 | TV cover 0.05 | TV cover 0.01 | chi2 cover 0.05 | chi2 cover 0.01 | pivot miss "
      "0.05 | pivot miss 0.01 | Pearson miss 0.05 | median tv_upper 0.05 | median tv_upper 0.01 | certifiable "
      "1e-4 | L1 wins |\n|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n");
}

constexpr Shape kShapes[] = {Shape::kNull, Shape::kWorst, Shape::kBump, Shape::kTruncate, Shape::kDeflate};

struct Grid {
  std::size_t K;
  double n;
};

void RunGrid(const std::vector<Grid>& grid, std::uint64_t seed) {
  PrintHeader();
  for (const Grid& g : grid) {
    for (const Shape s : kShapes) {
      if (s == Shape::kDeflate && (g.K == 2 || g.n * ZipfCells(g.K).back() > 200)) continue;
      RunConfiguration(g.K, g.n, s, seed++);
      if (::testing::Test::HasFatalFailure()) return;
    }
  }
}

#ifndef SAMPLECHECK_EQUIVALENCE_SLOW
TEST(EquivalenceCalibrationTest, CoverageSmallCells) { RunGrid({{2, 1e4}, {2, 1e6}, {16, 1e4}, {16, 1e6}}, 0xE0C0A000); }
TEST(EquivalenceCalibrationTest, CoverageManyCells) { RunGrid({{256, 1e4}, {1024, 1e5}}, 0xE0C0B000); }
#else
// The table of statistics.md, one test per K (so that shards can run them side by side).
TEST(EquivalenceCalibrationSlowTest, CoverageTable2Cells) { RunGrid({{2, 1e4}, {2, 1e6}, {2, 1e8}}, 0xE0C05000); }
TEST(EquivalenceCalibrationSlowTest, CoverageTable16Cells) { RunGrid({{16, 1e4}, {16, 1e6}, {16, 1e8}}, 0xE0C05100); }
TEST(EquivalenceCalibrationSlowTest, CoverageTable256Cells) {
  RunGrid({{256, 1e4}, {256, 1e6}, {256, 1e8}}, 0xE0C05200);
}
TEST(EquivalenceCalibrationSlowTest, CoverageTable1024Cells) {
  RunGrid({{1024, 1e5}, {1024, 1e7}, {1024, std::ldexp(1.0, 26)}}, 0xE0C05300);
}

TEST(EquivalenceCalibrationSlowTest, PivotAtAlpha1e3Over100000Runs) {
  // The deep tail: 100,000 runs of the worst-case shift over 16 cells at N = 1e6, the pivot at alpha 1e-3
  // (100 misses expected; bounds at false alarm 1e-6).
  const std::size_t K = 16;
  const double n = 1e6;
  const std::vector<double> p0 = ZipfCells(K);
  const std::vector<double> q = Shifted(p0, Shape::kWorst, n, 1.5 * *CertifiableTotalVariation(1e-3, K, n));
  const double h2 = HellingerSquared(p0, q), tv = *TotalVariation(p0, q);
  std::mt19937_64 rng(0xE0C05EED);
  std::vector<std::uint64_t> x(K);
  const std::uint64_t runs = 100000;
  std::uint64_t pivot = 0, tv_miss = 0;
  for (std::uint64_t run = 0; run < runs; ++run) {
    MultinomialVariate(rng, static_cast<std::uint64_t>(n), q, x);
    const Result<EquivalenceBound> b = EquivalenceUpperBounds(x, p0, 1e-3);
    ASSERT_TRUE(b.ok()) << b.error().message;
    tv_miss += b->tv_upper < tv;
    pivot += *HellingerSquaredUpperBound(b->statistic, static_cast<std::uint64_t>(n), K, 1e-3) < h2;
  }
  const auto bounds = BinomialBounds(runs, 1e-3, kFalseAlarm);
  std::printf("alpha 1e-3, 16 cells, N = 1e6, worst-case TV %.3g: pivot misses %llu, tv_upper misses %llu of %llu "
              "(bounds %s)\n", tv, static_cast<unsigned long long>(pivot), static_cast<unsigned long long>(tv_miss),
              static_cast<unsigned long long>(runs), bounds.Describe().c_str());
  EXPECT_LE(pivot, bounds.upper);
  EXPECT_LE(tv_miss, bounds.upper);
}
#endif

// Two cells: the exact miss probability sum_x Binomial(x; N, q1) [bound(x) < distance(q)] over a grid of q1,
// no simulation. Reported as the largest miss over the grid against alpha, down to alpha 1e-4.
struct ExactTwoCells {
  double worst_tv_miss = 0, worst_chi2_miss = 0, worst_pivot_miss = 0;
};
ExactTwoCells ExactCoverageTwoCells(double p, std::uint64_t n, double alpha) {
  const std::vector<double> p0 = {p, 1 - p};
  std::vector<double> tv_of(n + 1), chi2_of(n + 1), pivot_of(n + 1);
  for (std::uint64_t x = 0; x <= n; ++x) {
    const Result<EquivalenceBound> b = EquivalenceUpperBounds(std::vector<std::uint64_t>{x, n - x}, p0, alpha);
    tv_of[x] = b.ok() ? b->tv_upper : -1;
    chi2_of[x] = b.ok() ? b->chi2_upper : -1;
    pivot_of[x] = b.ok() ? *HellingerSquaredUpperBound(b->statistic, n, 2, alpha) : -1;
  }
  ExactTwoCells out;
  for (int k = 1; k < 200; ++k) {  // q1 over (0, 1), denser near p
    const double q1 = k < 100 ? p * k / 100.0 : p + (1 - p) * (k - 100) / 100.0;
    if (q1 <= 0 || q1 >= 1) continue;
    const double tv = std::fabs(q1 - p);
    const double chi2 = (q1 - p) * (q1 - p) / p + (q1 - p) * (q1 - p) / (1 - p);
    const double h2 = std::pow(std::sqrt(q1) - std::sqrt(p), 2) + std::pow(std::sqrt(1 - q1) - std::sqrt(1 - p), 2);
    const boost::math::binomial_distribution<double> law(static_cast<double>(n), q1);
    double tv_miss = 0, chi2_miss = 0, pivot_miss = 0;
    for (std::uint64_t x = 0; x <= n; ++x) {
      const double w = boost::math::pdf(law, static_cast<double>(x));
      tv_miss += tv_of[x] < tv ? w : 0;
      chi2_miss += chi2_of[x] < chi2 ? w : 0;
      pivot_miss += pivot_of[x] < h2 ? w : 0;
    }
    out.worst_tv_miss = std::max(out.worst_tv_miss, tv_miss);
    out.worst_chi2_miss = std::max(out.worst_chi2_miss, chi2_miss);
    out.worst_pivot_miss = std::max(out.worst_pivot_miss, pivot_miss);
  }
  return out;
}

TEST(EquivalenceCalibrationTest, ExactCoverageTwoCells) {
  // p0 = (0.1, 0.9) at N = 100 (E = 10, the binning's floor) and 1000; p0 = (0.5, 0.5) at N = 1000.
  // Asserted: the largest miss probability of tv_upper and chi2_upper over q1 stays at or below alpha (1.1 alpha:
  // lattice effects of 100 draws); the pivot alone is printed.
  std::printf("| p0 | N | alpha | worst TV miss | worst chi2 miss | worst pivot miss |\n|---|---|---|---|---|---|\n");
  for (const auto& [p, n] : {std::pair{0.1, 100ULL}, std::pair{0.1, 1000ULL}, std::pair{0.5, 1000ULL}}) {
    for (const double alpha : {0.05, 0.01, 1e-3, 1e-4}) {
      const ExactTwoCells e = ExactCoverageTwoCells(p, n, alpha);
      std::printf("| (%.1f, %.1f) | %llu | %g | %.3g | %.3g | %.3g |\n", p, 1 - p, static_cast<unsigned long long>(n),
                  alpha, e.worst_tv_miss, e.worst_chi2_miss, e.worst_pivot_miss);
      EXPECT_LE(e.worst_tv_miss, 1.1 * alpha) << "p = " << p << ", N = " << n << ", alpha = " << alpha;
      EXPECT_LE(e.worst_chi2_miss, 1.1 * alpha) << "p = " << p << ", N = " << n << ", alpha = " << alpha;
    }
  }
}

TEST(EquivalenceCalibrationTest, TokenLevelCoverageOverBinnings) {
  // A token distribution through PlanBinnings (at most 256 head cells): Zipf V = 4096 (1 in 9 forbidden), N = 1e6,
  // a top-p-like fast path that drops the lowest-ranked tokens holding 2e-3 of the mass (token TV 2e-3), and the
  // null. The max over the usable binnings of tv_upper must cover the max of the true binned TVs at 0.05 and 0.01; the binned TVs are at
  // most the token TV (binning loses distance), printed.
  const std::size_t V = 4096;
  std::vector<double> p0(V);
  for (std::size_t t = 0; t < V; ++t) p0[t] = (t % 9 == 8) ? 0.0 : std::pow(t + 1.0, -1.1);
  Normalize(p0);
  const double n = 1e6;
  BinningOptions options;
  options.max_head_cells = 256;  // leaves a tail for the tail and hash binnings
  const Result<BinningPlan> planned = PlanBinnings(p0, n, options);
  ASSERT_TRUE(planned.ok()) << planned.error().message;
  const BinningPlan& plan = *planned;
  ASSERT_EQ(plan.UsableBinnings().size(), 3u);
  std::vector<double> q = p0;
  double removed = 0;
  for (std::size_t r = plan.tokens_by_rank.size(); r-- > 0 && removed + p0[plan.tokens_by_rank[r]] <= 2e-3;) {
    removed += p0[plan.tokens_by_rank[r]];
    q[plan.tokens_by_rank[r]] = 0;
  }
  Normalize(q);
  const double token_tv = *TotalVariation(p0, q);
  double binned_tv = 0;
  for (const Binning* b : plan.UsableBinnings()) {
    std::vector<double> c0(b->cells.size(), 0), c1(b->cells.size(), 0);
    for (std::size_t t = 0; t < V; ++t) {
      if (b->cell_of_token[t] == kForbiddenCell) continue;
      c0[static_cast<std::size_t>(b->cell_of_token[t])] += p0[t];
      c1[static_cast<std::size_t>(b->cell_of_token[t])] += q[t];
    }
    const double tv = *TotalVariation(c0, c1);
    std::printf("%s binning: %zu cells, binned TV %.4g (token TV %.4g)\n", b->name.c_str(), b->cells.size(), tv,
                token_tv);
    EXPECT_LE(tv, token_tv + 1e-12);
    binned_tv = std::max(binned_tv, tv);
  }
  const std::uint64_t runs = kRuns / 2;
  std::mt19937_64 rng(0xE0C0C000);
  std::vector<std::uint64_t> counts(V);
  for (const bool shifted : {false, true}) {
    std::uint64_t miss[2] = {0, 0};
    std::vector<double> uppers;
    for (std::uint64_t run = 0; run < runs; ++run) {
      MultinomialVariate(rng, static_cast<std::uint64_t>(n), shifted ? q : p0, counts);
      for (int a = 0; a < 2; ++a) {
        const Result<BinnedEquivalence> eq = EquivalenceOverBinnings(plan, counts, kAlphas[a]);
        ASSERT_TRUE(eq.ok()) << eq.error().message;
        miss[a] += eq->tv_upper < (shifted ? binned_tv : 0.0);
        if (a == 0) uppers.push_back(eq->tv_upper);
      }
    }
    std::printf("token level, %s: max binned TV %.4g, misses %llu (0.05), %llu (0.01) of %llu, median max "
                "tv_upper %.4g\n", shifted ? "tail dropped" : "null", shifted ? binned_tv : 0.0,
                static_cast<unsigned long long>(miss[0]), static_cast<unsigned long long>(miss[1]),
                static_cast<unsigned long long>(runs), Median(uppers));
    EXPECT_LE(miss[0], BinomialBounds(runs, 0.05, kFalseAlarm).upper);
    EXPECT_LE(miss[1], BinomialBounds(runs, 0.01, kFalseAlarm).upper);
  }
}

}  // namespace
}  // namespace samplecheck::stats
