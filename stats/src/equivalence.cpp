#include "samplecheck/stats/equivalence.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <exception>
#include <limits>
#include <numeric>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include <boost/math/distributions/chi_squared.hpp>
#include <boost/math/distributions/non_central_chi_squared.hpp>
#include <boost/math/special_functions/erf.hpp>
#include <boost/math/tools/roots.hpp>

#include "argument_checks.h"
#include "samplecheck/core/format.h"
#include "samplecheck/stats/exact_tests.h"

namespace samplecheck::stats {
namespace {

constexpr std::uint64_t kMaxCells = 1ULL << 32;
// The share of alpha spent on the (asymptotic) Hellinger inversion; the rest goes to the exact parts.
constexpr double kHellingerShare = 0.9;

Status CheckCells(std::uint64_t cells) {
  if (cells >= 2 && cells <= kMaxCells) return Status::Ok();
  std::ostringstream msg;
  msg << "cells = " << cells << " is outside the allowed range [2, 2^32]: a binning needs at least two cells";
  return InvalidArgument(msg.str());
}

Status CheckProbability(double probability) {
  if (std::isfinite(probability) && probability >= 0.5 && probability < 1.0) return Status::Ok();
  std::ostringstream msg;
  msg << "probability = " << probability << " is outside the allowed range [0.5, 1)";
  return InvalidArgument(msg.str());
}

Status CheckEps(double eps) {
  if (std::isfinite(eps) && eps > 0.0 && eps < 1.0) return Status::Ok();
  std::ostringstream msg;
  msg << "eps = " << eps << " is outside the allowed range (0, 1)";
  return InvalidArgument(msg.str());
}

// Boost.Math calls are wrapped as in chi_square.cpp: an exception or a non-finite value becomes an error naming
// the inputs; nothing throws out of stats/.
template <typename F>
Result<double> Evaluate(const std::string& what, F&& f) {
  try {
    const double v = f();
    if (std::isfinite(v)) return v;
    return InvalidArgument(what + " could not be evaluated: Boost.Math returned a non-finite value");
  } catch (const std::exception& e) {
    return InvalidArgument(what + " could not be evaluated: " + e.what());
  }
}

// P(chi'^2(dof, lambda) <= x), 0 for x <= 0. Throws (Boost) where it cannot evaluate; callers wrap it.
double NonCentralCdf(double dof, double lambda, double x) {
  if (!(x > 0.0)) return 0.0;
  if (lambda <= 0.0) return boost::math::cdf(boost::math::chi_squared(dof), x);
  return boost::math::cdf(boost::math::non_central_chi_squared(dof, lambda), x);
}

// The squared Hellinger distance h2 with 4 h2 - h2^2 = v, v in [0, 4] (h2 in [0, 2]), without cancellation.
double HellingerSquaredOfV(double v) {
  v = std::clamp(v, 0.0, 4.0);
  return v / (2.0 + std::sqrt(4.0 - v));
}

// The law of T under a distance v = 4 H^2 - H^4 (= 4 TV_LeCam^2), N draws: chi'^2(k, N v) + N H^4.
// Returns P(T <= t).
double LawOfT(double dof, double draws, double v, double t) {
  const double h2 = HellingerSquaredOfV(v);
  return NonCentralCdf(dof, draws * v, t - draws * h2 * h2);
}

// The v in [0, 4] with P(T <= t | v) = alpha (decreasing in v); 0 when even v = 0 puts t in the lower alpha-tail,
// 4 when even v = 4 does not. Solved in lambda = N v with TOMS 748 to ~1e-12 relative.
double InvertLawOfT(double dof, double draws, double t, double alpha) {
  auto g = [&](double lambda) { return LawOfT(dof, draws, lambda / draws, t) - alpha; };
  if (g(0.0) <= 0.0) return 0.0;
  const double lambda_max = 4.0 * draws;  // H^2 = 2: disjoint supports
  // First guess from the normal approximation chi'^2(k, lambda) ~ N(k + lambda, 2 (k + 2 lambda)): the lambda with
  // k + lambda - z sqrt(2 (k + 2 lambda)) = t, i.e. u = lambda + k - t solving u^2 - 4 z^2 u - z^2 (4 t - 2 k) = 0.
  // Then bracket around it, widening geometrically (the cdf costs O(sqrt(lambda)) terms, so few evaluations
  // matter where lambda is large).
  const double z = std::sqrt(2.0) * boost::math::erfc_inv(2.0 * alpha);  // P(Z > z) = alpha
  const double z2 = z * z;
  const double disc = 4.0 * z2 * z2 + z2 * (4.0 * t - 2.0 * dof);
  const double guess = disc > 0.0 ? std::max(0.0, 2.0 * z2 + std::sqrt(disc) + t - dof) : 0.0;
  double lo = 0.0, hi = 0.0;
  double step = std::max(8.0, 0.125 * guess);
  if (guess > 0.0 && g(std::min(guess, lambda_max)) > 0.0) {
    lo = std::min(guess, lambda_max);
    for (hi = std::min(lambda_max, lo + step); g(hi) > 0.0; hi = std::min(lambda_max, lo + step)) {
      if (hi >= lambda_max) return 4.0;
      lo = hi;
      step *= 2.0;
    }
  } else {
    hi = std::min(guess, lambda_max);
    for (lo = std::max(0.0, hi - step); lo > 0.0 && g(lo) <= 0.0; lo = std::max(0.0, hi - step)) {
      hi = lo;
      step *= 2.0;
    }
    if (hi == 0.0) hi = std::min(lambda_max, 8.0);
    while (g(hi) > 0.0) {  // only when the guess was 0 and lambda_max is tiny or the guess far off
      if (hi >= lambda_max) return 4.0;
      lo = hi;
      hi = std::min(lambda_max, 2.0 * hi);
    }
  }
  std::uintmax_t iterations = 200;
  const auto r = boost::math::tools::toms748_solve(g, lo, hi, boost::math::tools::eps_tolerance<double>(36),
                                                   iterations);
  return std::clamp(0.5 * (r.first + r.second), 0.0, lambda_max) / draws;
}

// One-sided per-cell bounds on q from x of N draws at level a each side (closed forms, exact for the binomial):
//   upper U: Chernoff's lower tail P(x <= N q - s) <= exp(-s^2 / (2 N q)), solved for q: the larger root of
//            q - sqrt(2 L q / N) = p_hat, L = ln(1 / a);
//   lower L: Bernstein's upper tail P(x - N q >= s) <= exp(-s^2 / (2 (N q + s / 3))), solved at q = p_hat - t.
struct CellInterval {
  double lower = 0.0;
  double upper = 1.0;
};
CellInterval CellBounds(std::uint64_t x, std::uint64_t n, double log_inv_a) {
  const double N = static_cast<double>(n);
  const double p_hat = static_cast<double>(x) / N;
  const double r = std::sqrt(2.0 * log_inv_a / N);
  const double sqrt_u = 0.5 * (r + std::sqrt(r * r + 4.0 * p_hat));
  CellInterval c;
  c.upper = std::min(1.0, sqrt_u * sqrt_u);
  const double b = 4.0 * log_inv_a / 3.0;
  const double t = (-b + std::sqrt(b * b + 8.0 * N * log_inv_a * p_hat)) / (2.0 * N);
  c.lower = std::max(0.0, p_hat - t);
  return c;
}

// ln(2^K - 2) = K ln 2 + ln(1 - 2^(1 - K)), K >= 2 (ln 2 for K = 2).
double LogProperSubsets(std::uint64_t K) {
  const double tail = K < 64 ? std::log1p(-std::ldexp(1.0, 1 - static_cast<int>(K))) : 0.0;
  return static_cast<double>(K) * std::log(2.0) + tail;
}

// 4 significant digits; counts from 1e4 on as 1.763e4 (never 1.763e+04).
}  // namespace

double TotalVariationFromHellingerSquared(double h2) {
  if (!(h2 > 0.0)) return 0.0;
  if (h2 >= 2.0) return 1.0;
  return std::min(1.0, std::sqrt(h2 * (1.0 - h2 / 4.0)));
}

Result<double> HellingerSquaredUpperBound(double statistic, std::uint64_t draws, std::uint64_t cells, double alpha) {
  if (Status st = CheckCells(cells); !st.ok()) return st.error();
  if (Status st = CheckProbabilityOpen("alpha", alpha); !st.ok()) return st.error();
  if (draws == 0) return InvalidArgument("draws = 0 is outside the allowed range [1, inf)");
  const double N = static_cast<double>(draws);
  if (!(std::isfinite(statistic) && statistic >= 0.0 && statistic <= 8.0 * N * (1.0 + 1e-12))) {
    std::ostringstream msg;
    msg.precision(17);
    msg << "statistic = " << statistic << " is outside the allowed range [0, 8 N = " << 8.0 * N << "]";
    return InvalidArgument(msg.str());
  }
  std::ostringstream what;
  what.precision(17);
  what << "HellingerSquaredUpperBound(statistic = " << statistic << ", draws = " << draws << ", cells = " << cells
       << ", alpha = " << alpha << ")";
  const double dof = static_cast<double>(cells - 1);
  auto v = Evaluate(what.str(), [&] { return InvertLawOfT(dof, N, statistic, alpha); });
  if (!v.ok()) return v.error();
  return HellingerSquaredOfV(*v);
}

Result<EquivalenceBound> EquivalenceUpperBounds(std::span<const std::uint64_t> observed,
                                                std::span<const double> p0_cells, double alpha) {
  if (observed.size() != p0_cells.size()) {
    std::ostringstream msg;
    msg << "observed.size() = " << observed.size() << " differs from p0_cells.size() = " << p0_cells.size();
    return InvalidArgument(msg.str());
  }
  if (Status st = CheckCells(observed.size()); !st.ok()) return st.error();
  if (Status st = CheckProbabilityOpen("alpha", alpha); !st.ok()) return st.error();
  const std::size_t K = observed.size();
  long double p_total = 0;
  for (std::size_t i = 0; i < K; ++i) {
    if (!(std::isfinite(p0_cells[i]) && p0_cells[i] > 0.0)) {
      std::ostringstream msg;
      msg << "p0_cells[" << i << "] = " << p0_cells[i]
          << " is outside the allowed range (0, inf): every cell of a binning has positive mass (tokens of p0 = 0 "
             "belong to no cell)";
      return InvalidArgument(msg.str());
    }
    p_total += p0_cells[i];
  }
  std::uint64_t n = 0;
  for (std::size_t i = 0; i < K; ++i) {
    if (observed[i] > std::numeric_limits<std::uint64_t>::max() - n) {
      return InvalidArgument("the observed counts sum past 2^64 - 1");
    }
    n += observed[i];
  }
  if (n == 0) return InvalidArgument("draws = 0 (the observed counts sum to 0) is outside the allowed range [1, inf)");

  EquivalenceBound b;
  b.draws = n;
  b.cells = K;
  b.alpha = alpha;
  const long double N = static_cast<long double>(n);
  std::vector<double> p(K);
  long double t = 0, tv = 0, chi2 = 0;
  for (std::size_t i = 0; i < K; ++i) {
    const long double pi = p0_cells[i] / p_total;
    p[i] = static_cast<double>(pi);
    const long double x = static_cast<long double>(observed[i]);
    const long double e = N * pi;
    // (sqrt x - sqrt e)^2 = (x - e)^2 / (sqrt x + sqrt e)^2, free of cancellation.
    const long double s = std::sqrt(x) + std::sqrt(e);
    t += (x - e) * (x - e) / (s * s);
    tv += std::fabs(x - e);
    chi2 += (x - e) * (x - e) / e;
  }
  b.statistic = static_cast<double>(4 * t);
  b.tv_point = static_cast<double>(tv / (2 * N));
  b.chi2_point = static_cast<double>(chi2 / N);
  b.hellinger2_point = static_cast<double>(t / N);

  // The level is split: alpha_H = 0.9 alpha for the Hellinger inversion (asymptotic), 0.1 alpha for the exact
  // part (the L1 deviation bound of TV, the per-cell bounds of chi2). A union bound makes each result valid at alpha.
  const double alpha_h = kHellingerShare * alpha;
  const double alpha_exact = alpha - alpha_h;
  // T is floored at the median of its null law chi^2(K - 1) before the inversion. H_U grows with T, so the floor
  // only raises the bound (coverage is kept) and it never certifies more than a typical correct sampler does: a
  // fit too good to be random (a stratified or low-discrepancy stream, exact expected counts) earns no certificate
  // beyond the median one (it fails its own check, the lower tail of X^2, elsewhere).
  auto floor = Evaluate("the median of chi-square(K - 1)", [&] {
    return boost::math::median(boost::math::chi_squared(static_cast<double>(K - 1)));
  });
  if (!floor.ok()) return floor.error();
  const double t_inverted = std::clamp(b.statistic, *floor, 8.0 * static_cast<double>(n));
  auto h2 = HellingerSquaredUpperBound(t_inverted, n, K, alpha_h);
  if (!h2.ok()) return h2.error();
  b.hellinger2_upper = *h2;

  // Total variation: the smaller of Le Cam's TV <= H sqrt(1 - H^2/4) at H_U and the L1 deviation bound
  // TV(q, p0) <= TV(p_hat, p0) + max_A (q(A) - p_hat(A)) <= tv_point + sqrt((ln(2^K - 2) + ln(1/a)) / (2 N))
  // (Hoeffding over the 2^K - 2 proper subsets A, one-sided; Weissman et al. 2003), exact at level a.
  b.tv_upper_hellinger = TotalVariationFromHellingerSquared(*h2);
  const double log_subsets = LogProperSubsets(K);
  b.tv_upper_l1 = std::min(1.0, b.tv_point + std::sqrt((log_subsets + std::log(1.0 / alpha_exact)) /
                                                       (2.0 * static_cast<double>(n))));
  b.tv_upper = std::min(b.tv_upper_hellinger, b.tv_upper_l1);
  b.tv_method = b.tv_upper_hellinger <= b.tv_upper_l1
                    ? "Hellinger: T = 4 sum (sqrt x - sqrt(N p0))^2 inverted in its large-N law chi'^2(K-1, N(4H^2 - "
                      "H^4)) + N H^4 at 0.9 alpha, TV <= H sqrt(1 - H^2/4) (asymptotic)"
                    : "L1 deviation: TV(p_hat, p0) + sqrt((ln(2^K - 2) + ln(10/alpha)) / (2N)) (Hoeffding over "
                      "subsets, exact)";

  // Chi-square divergence: chi2 = sum (sqrt q - sqrt p0)^2 (1 + sqrt(q/p0))^2 maximized under H^2 <= H_U^2 and
  // per-cell bounds L_i <= q_i <= U_i at alpha_exact / (2 K) per side.
  const double log_inv_a = std::log(2.0 * static_cast<double>(K) / alpha_exact);
  struct Item {
    double weight;  // c_i^2 = (1 + sqrt(U_i / p0_i))^2, the largest factor chi2_i / w_i^2 can have in cell i
    double cap;     // the largest w_i^2 = (sqrt q_i - sqrt p0_i)^2 in [L_i, U_i]
  };
  std::vector<Item> items(K);
  long double box = 0;
  for (std::size_t i = 0; i < K; ++i) {
    const CellInterval c = CellBounds(observed[i], n, log_inv_a);
    const double sp = std::sqrt(p[i]);
    const double up = std::sqrt(c.upper) - sp;
    const double down = sp - std::sqrt(c.lower);
    const double ratio = 1.0 + std::sqrt(c.upper / p[i]);
    items[i] = {ratio * ratio, std::max(up * up, down * down)};
    const double du = c.upper - p[i], dl = p[i] - c.lower;
    box += static_cast<long double>(std::max(du * du, dl * dl)) / p[i];
  }
  std::sort(items.begin(), items.end(), [](const Item& a, const Item& b2) { return a.weight > b2.weight; });
  long double budget = *h2, knapsack = 0;
  for (const Item& it : items) {
    if (budget <= 0) break;
    const long double take = std::min<long double>(budget, it.cap);
    knapsack += take * it.weight;
    budget -= take;
  }
  b.chi2_upper = static_cast<double>(std::min(knapsack, box));
  b.chi2_method =
      "chi2 = sum (sqrt q - sqrt p0)^2 (1 + sqrt(q/p0))^2 maximized under H^2 <= H_U^2 (0.9 alpha, asymptotic) "
      "and per-cell Chernoff/Bernstein bounds (alpha/(20K) per side, exact); min with the per-cell box bound";
  return b;
}

Result<double> CertifiableTotalVariation(double alpha, std::uint64_t cells, double draws, double probability) {
  if (Status st = CheckProbabilityOpen("alpha", alpha); !st.ok()) return st.error();
  if (Status st = CheckProbability(probability); !st.ok()) return st.error();
  if (Status st = CheckCells(cells); !st.ok()) return st.error();
  if (!(std::isfinite(draws) && draws >= 1.0)) {
    std::ostringstream msg;
    msg << "draws = " << draws << " is outside the allowed range [1, inf)";
    return InvalidArgument(msg.str());
  }
  std::ostringstream what;
  what.precision(17);
  what << "CertifiableTotalVariation(alpha = " << alpha << ", cells = " << cells << ", draws = " << draws
       << ", probability = " << probability << ")";
  const double dof = static_cast<double>(cells - 1);
  auto v = Evaluate(what.str(), [&] {
    const double t = boost::math::quantile(boost::math::chi_squared(dof), probability);
    return InvertLawOfT(dof, draws, t, kHellingerShare * alpha);
  });
  if (!v.ok()) return v.error();
  return TotalVariationFromHellingerSquared(HellingerSquaredOfV(*v));
}

Result<double> DrawsToCertifyTotalVariation(double eps, double alpha, std::uint64_t cells, double probability) {
  if (Status st = CheckEps(eps); !st.ok()) return st.error();
  if (Status st = CheckProbabilityOpen("alpha", alpha); !st.ok()) return st.error();
  if (Status st = CheckProbability(probability); !st.ok()) return st.error();
  if (Status st = CheckCells(cells); !st.ok()) return st.error();
  std::ostringstream what;
  what.precision(17);
  what << "DrawsToCertifyTotalVariation(eps = " << eps << ", alpha = " << alpha << ", cells = " << cells
       << ", probability = " << probability << ")";
  const double dof = static_cast<double>(cells - 1);
  const double v = 4.0 * eps * eps;  // TV_U = eps <=> 4 H_U^2 - H_U^4 = 4 eps^2
  return Evaluate(what.str(), [&] {
    const double t = boost::math::quantile(boost::math::chi_squared(dof), probability);
    // g(N) = P(T <= t | v, N) - alpha decreases in N; solve in log N.
    const double alpha_h = kHellingerShare * alpha;
    auto g = [&](double log_n) { return LawOfT(dof, std::exp(log_n), v, t) - alpha_h; };
    double lo = 0.0, hi = std::log(std::max(2.0, 2.0 * t / v));
    if (g(lo) <= 0.0) return 1.0;
    while (g(hi) > 0.0) {
      lo = hi;
      hi += std::log(4.0);
    }
    std::uintmax_t iterations = 200;
    const auto r = boost::math::tools::toms748_solve(g, lo, hi, boost::math::tools::eps_tolerance<double>(40),
                                                     iterations);
    return std::exp(0.5 * (r.first + r.second));
  });
}

namespace {

constexpr double kMinExpectedForTwoCells = 10.0;  // BinningOptions::min_expected: a cell's least expected count

// The bound of a dominant token: k = its draws among the n in-support draws, [L, U] the Clopper-Pearson interval at
// confidence 1 - alpha (alpha / 2 per side, exact); |q_top - p0_top| <= d = max(U - p0_top, p0_top - L) with
// probability >= 1 - alpha, and TV(q, p0) <= d + p0_rest (the other tokens move at most d + p0_rest of mass).
Result<EquivalenceBound> TwoCellTopBound(const BinningPlan& plan, std::span<const std::uint64_t> token_counts,
                                         double alpha) {
  std::uint64_t n = 0;
  for (const std::uint32_t t : plan.tokens_by_rank) n += token_counts[t];
  if (n == 0) return InvalidArgument("no in-support draws to bound");
  const std::uint64_t k = token_counts[plan.tokens_by_rank[0]];
  auto ci = ClopperPearsonInterval(k, n, 1.0 - alpha);
  if (!ci.ok()) return ci.error();
  const double p_top = plan.top_probability, p_rest = plan.rest_probability;
  const double d = std::max({0.0, ci->upper - p_top, p_top - ci->lower});
  EquivalenceBound b;
  b.binning = "top";
  b.draws = n;
  b.cells = 2;
  b.alpha = alpha;
  const double q_top = double(k) / double(n);
  b.tv_point = std::abs(q_top - p_top);
  b.chi2_point = p_rest > 0 ? b.tv_point * b.tv_point * (1 / p_top + 1 / p_rest) : 0.0;
  b.tv_upper_l1 = std::min(1.0, d + p_rest);
  b.tv_upper_hellinger = b.tv_upper_l1;
  b.tv_upper = b.tv_upper_l1;
  b.chi2_upper = p_rest > 0 ? d * d * (1 / p_top + 1 / p_rest) : 0.0;
  b.tv_method = "two cells, the top token and the rest (rest too small for a cell): exact Clopper-Pearson on the top "
                "token, plus the rest's mass; a token-level bound";
  b.chi2_method = "the two cells at the Clopper-Pearson bound";
  return b;
}

}  // namespace

Result<BinnedEquivalence> EquivalenceOverBinnings(const BinningPlan& plan,
                                                  std::span<const std::uint64_t> token_counts, double alpha) {
  if (Status st = CheckProbabilityOpen("alpha", alpha); !st.ok()) return st.error();
  if (token_counts.size() != plan.vocabulary) {
    std::ostringstream msg;
    msg << "token_counts.size() = " << token_counts.size() << " differs from the vocabulary size "
        << plan.vocabulary << " the binnings were planned for";
    return InvalidArgument(msg.str());
  }
  BinnedEquivalence out;
  for (const std::uint32_t t : plan.forbidden_tokens) out.support_violations += token_counts[t];
  const auto usable = plan.UsableBinnings();
  if (usable.empty()) {
    if (plan.tokens_by_rank.size() == 1) return out;  // one support token: the in-support law is p0 exactly
    // One dominant token whose rest cannot make a cell (p0_rest N < 10): the two cells {top, rest} bound it
    // exactly, and since TV(q, p0) <= |q_top - p0_top| + p0_rest, at the token level.
    if (plan.rest_probability * plan.planned_draws < kMinExpectedForTwoCells) {
      auto two = TwoCellTopBound(plan, token_counts, alpha);
      if (!two.ok()) return two.error();
      out.tv_upper = two->tv_upper;
      out.chi2_upper = two->chi2_upper;
      out.binnings.push_back(std::move(*two));
      return out;
    }
    std::ostringstream msg;
    msg << "no usable binning: " << plan.tokens_by_rank.size() << " support tokens and planned_draws = "
        << plan.planned_draws << " give no two cells of expected count >= 10; plan more draws";
    return InvalidArgument(msg.str());
  }
  for (const Binning* binning : usable) {
    auto counts = BinCounts(*binning, token_counts);
    if (!counts.ok()) return counts.error();
    const std::vector<double> p0 = CellProbabilities(*binning);
    auto bound = EquivalenceUpperBounds(counts->observed, p0, alpha);
    if (!bound.ok()) return bound.error().WithContext(binning->name + " binning");
    bound->binning = binning->name;
    if (out.binnings.empty() || bound->tv_upper > out.tv_upper) {
      out.tv_upper = bound->tv_upper;
      out.worst = out.binnings.size();
    }
    out.chi2_upper = std::max(out.chi2_upper, bound->chi2_upper);
    out.binnings.push_back(std::move(*bound));
  }
  return out;
}

Result<EquivalenceVerdict> JudgeEquivalence(std::span<const EquivalenceBound> bounds, double eps) {
  constexpr double kCertifyProbability = 0.99;  // "enough draws": a correct sampler certifies with this probability
  if (Status st = CheckEps(eps); !st.ok()) return st.error();
  if (bounds.empty()) return InvalidArgument("bounds is empty: nothing to judge");
  EquivalenceVerdict v;
  v.eps = eps;
  v.draws = std::numeric_limits<std::uint64_t>::max();
  v.certified = true;
  for (std::size_t i = 0; i < bounds.size(); ++i) {
    const EquivalenceBound& b = bounds[i];
    if (i == 0 || b.tv_upper > v.tv_upper) {
      v.tv_upper = b.tv_upper;
      v.worst_binning = b.binning;
    }
    v.draws = std::min(v.draws, b.draws);
    if (!(b.tv_upper < eps)) v.certified = false;
    auto need = DrawsToCertifyTotalVariation(eps, b.alpha, b.cells, kCertifyProbability);
    if (!need.ok()) return need.error();
    v.draws_to_certify = std::max(v.draws_to_certify, *need);
  }
  const std::string where = v.worst_binning.empty() ? std::string() : " (" + v.worst_binning + " binning)";
  std::ostringstream msg;
  if (v.certified) {
    msg << "certified: binned TV <= " << FormatReadable(v.tv_upper, 4) << where << " < eps = " << FormatReadable(eps, 4)
        << " at alpha " << FormatReadable(bounds[0].alpha, 4) << " with " << v.draws << " draws";
  } else if (static_cast<double>(v.draws) < v.draws_to_certify) {
    v.lacks_draws = true;
    msg << "inconclusive for lack of draws: binned TV upper bound " << FormatReadable(v.tv_upper, 4) << where
        << " >= eps = " << FormatReadable(eps, 4) << "; a correct sampler needs about "
        << FormatReadable(v.draws_to_certify, 4) << " draws to certify eps with probability 0.99, this case drew "
        << v.draws;
  } else {
    msg << "inconclusive: binned TV upper bound " << FormatReadable(v.tv_upper, 4) << where
        << " >= eps = " << FormatReadable(eps, 4) << " although " << v.draws
        << " draws certify eps for a correct sampler with probability 0.99 (need "
        << FormatReadable(v.draws_to_certify, 4) << "): the data point at a distance near or above eps";
  }
  v.message = msg.str();
  return v;
}

}  // namespace samplecheck::stats
