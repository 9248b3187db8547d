#include "samplecheck/stats/exact_tests.h"

#include <cmath>
#include <sstream>
#include <vector>

#include <boost/math/distributions/binomial.hpp>

#include "samplecheck/stats/goodness_of_fit.h"
#include "samplecheck/stats/simulation.h"

namespace samplecheck::stats {
namespace {

constexpr double kRelativeTolerance = 1e-7;

// Validates; fills the positive cells' probabilities and observed counts.
std::string Collect(std::span<const std::uint64_t> observed, std::span<const double> probabilities,
                    std::vector<double>& p, std::vector<std::uint64_t>& o, std::uint64_t& violations) {
  std::ostringstream msg;
  if (observed.size() != probabilities.size()) {
    msg << "observed.size() = " << observed.size() << " differs from probabilities.size() = "
        << probabilities.size();
    return msg.str();
  }
  long double total = 0;
  for (std::size_t i = 0; i < probabilities.size(); ++i) {
    if (!(std::isfinite(probabilities[i]) && probabilities[i] >= 0.0)) {
      msg << "probabilities[" << i << "] = " << probabilities[i] << " is outside the allowed range [0, inf)";
      return msg.str();
    }
    total += probabilities[i];
  }
  if (!(total > 0)) return "probabilities sum to 0: the expected counts must have a positive sum";
  violations = 0;
  for (std::size_t i = 0; i < probabilities.size(); ++i) {
    if (probabilities[i] > 0.0) {
      p.push_back(static_cast<double>(probabilities[i] / total));
      o.push_back(observed[i]);
    } else {
      violations += observed[i];
    }
  }
  if (p.size() < 2) return "only one cell has positive probability: dof = 0 is outside the allowed range [1, inf)";
  return {};
}

struct Enumerator {
  std::vector<double> log_p;
  std::uint64_t n = 0;
  double log_n_factorial = 0.0;
  double threshold = 0.0;  // log P(observed) + tolerance
  long double sum = 0;
  std::uint64_t outcomes = 0;

  // Cells [i, K) share `left` draws; `acc` is the log-probability contributed by cells [0, i).
  void Visit(std::size_t i, std::uint64_t left, double acc) {
    const std::size_t K = log_p.size();
    if (i + 1 == K) {
      const double lp = acc + static_cast<double>(left) * log_p[i] - std::lgamma(static_cast<double>(left) + 1.0);
      ++outcomes;
      if (lp <= threshold) sum += std::exp(static_cast<long double>(lp));
      return;
    }
    for (std::uint64_t x = 0; x <= left; ++x) {
      Visit(i + 1, left - x,
            acc + static_cast<double>(x) * log_p[i] - std::lgamma(static_cast<double>(x) + 1.0));
    }
  }
};

double Combinations(std::uint64_t n, std::uint64_t k) {  // C(n, k) as a double, may be inf
  return std::exp(std::lgamma(static_cast<double>(n) + 1.0) - std::lgamma(static_cast<double>(k) + 1.0) -
                  std::lgamma(static_cast<double>(n - k) + 1.0));
}

}  // namespace

ExactPValue ExactMultinomialTest(std::span<const std::uint64_t> observed, std::span<const double> probabilities,
                                 std::uint64_t max_outcomes) {
  ExactPValue out;
  std::vector<double> p;
  std::vector<std::uint64_t> o;
  out.error = Collect(observed, probabilities, p, o, out.support_violations);
  if (!out.ok()) return out;
  std::uint64_t n = 0;
  for (auto c : o) n += c;
  const std::size_t K = p.size();
  const double count = Combinations(n + K - 1, K - 1);
  if (!(count <= static_cast<double>(max_outcomes))) {
    std::ostringstream msg;
    msg << "the exact multinomial test would enumerate C(" << n + K - 1 << ", " << K - 1 << ") = " << count
        << " outcomes, outside the allowed range [1, " << max_outcomes
        << "]: use MonteCarloPearsonTest or PearsonChiSquareTest";
    out.error = msg.str();
    return out;
  }
  Enumerator e;
  e.n = n;
  e.log_n_factorial = std::lgamma(static_cast<double>(n) + 1.0);
  for (double q : p) e.log_p.push_back(std::log(q));
  double log_obs = e.log_n_factorial;
  for (std::size_t i = 0; i < K; ++i) {
    log_obs += static_cast<double>(o[i]) * e.log_p[i] - std::lgamma(static_cast<double>(o[i]) + 1.0);
  }
  e.threshold = log_obs + kRelativeTolerance;
  e.Visit(0, n, e.log_n_factorial);
  out.outcomes = e.outcomes;
  out.p_value = static_cast<double>(std::min<long double>(1.0L, e.sum));
  return out;
}

ExactPValue MonteCarloPearsonTest(std::span<const std::uint64_t> observed, std::span<const double> probabilities,
                                  std::uint64_t replicates, std::uint64_t seed) {
  ExactPValue out;
  std::vector<double> p;
  std::vector<std::uint64_t> o;
  out.error = Collect(observed, probabilities, p, o, out.support_violations);
  if (!out.ok()) return out;
  if (replicates == 0) {
    out.error = "replicates = 0 is outside the allowed range [1, inf)";
    return out;
  }
  std::uint64_t n = 0;
  for (auto c : o) n += c;
  auto pearson = [&](std::span<const std::uint64_t> x) {
    long double s = 0;
    for (std::size_t i = 0; i < p.size(); ++i) {
      const long double e = static_cast<long double>(n) * p[i];
      const long double d = static_cast<long double>(x[i]) - e;
      s += d * d / e;
    }
    return static_cast<double>(s);
  };
  const double t_obs = pearson(o);
  const double cut = t_obs - 1e-9 * std::fabs(t_obs);  // ties count as at least as extreme
  std::mt19937_64 rng(seed);
  std::vector<std::uint64_t> x(p.size());
  std::uint64_t extreme = 0;
  for (std::uint64_t b = 0; b < replicates; ++b) {
    MultinomialVariate(rng, n, p, x);
    if (pearson(x) >= cut) ++extreme;
  }
  out.outcomes = replicates;
  out.p_value = static_cast<double>(1 + extreme) / static_cast<double>(replicates + 1);
  return out;
}

Checked<double> ExactBinomialPValue(std::uint64_t k, std::uint64_t n, double p) {
  if (n == 0) return Checked<double>::Fail("n = 0 is outside the allowed range [1, inf)");
  if (k > n) {
    std::ostringstream msg;
    msg << "k = " << k << " is outside the allowed range [0, n = " << n << "]";
    return Checked<double>::Fail(msg.str());
  }
  if (auto e = CheckProbabilityOpen("p", p); !e.empty()) return Checked<double>::Fail(e);
  namespace bm = boost::math;
  const bm::binomial_distribution<double> d(static_cast<double>(n), p);
  const double nd = static_cast<double>(n);
  const double dk = bm::pdf(d, static_cast<double>(k));
  const double bound = dk * (1.0 + kRelativeTolerance);
  const double mode = std::floor((nd + 1.0) * p) > nd ? nd : std::floor((nd + 1.0) * p);
  double result;
  if (static_cast<double>(k) == mode || bound >= bm::pdf(d, mode)) {
    return {1.0, {}};
  }
  if (static_cast<double>(k) < mode) {
    // Left tail up to k, plus the right tail from the first j > mode with pdf(j) <= bound (pdf decreases there).
    std::uint64_t lo = static_cast<std::uint64_t>(mode), hi = n + 1;  // answer in (lo, hi]; hi = n+1 means none
    while (hi - lo > 1) {
      const std::uint64_t mid = lo + (hi - lo) / 2;
      if (bm::pdf(d, static_cast<double>(mid)) <= bound) hi = mid; else lo = mid;
    }
    result = bm::cdf(d, static_cast<double>(k));
    if (hi <= n) result += bm::cdf(bm::complement(d, static_cast<double>(hi) - 1.0));
  } else {
    // Right tail from k, plus the left tail up to the last j < mode with pdf(j) <= bound.
    std::int64_t lo = -1, hi = static_cast<std::int64_t>(mode);  // answer in [lo, hi); lo = -1 means none
    while (hi - lo > 1) {
      const std::int64_t mid = lo + (hi - lo) / 2;
      if (bm::pdf(d, static_cast<double>(mid)) <= bound) lo = mid; else hi = mid;
    }
    result = bm::cdf(bm::complement(d, static_cast<double>(k) - 1.0));
    if (lo >= 0) result += bm::cdf(d, static_cast<double>(lo));
  }
  return {std::min(1.0, result), {}};
}

Checked<Interval> ClopperPearsonInterval(std::uint64_t k, std::uint64_t n, double confidence) {
  if (n == 0) return Checked<Interval>::Fail("n = 0 is outside the allowed range [1, inf)");
  if (k > n) {
    std::ostringstream msg;
    msg << "k = " << k << " is outside the allowed range [0, n = " << n << "]";
    return Checked<Interval>::Fail(msg.str());
  }
  if (auto e = CheckProbabilityOpen("confidence", confidence); !e.empty()) return Checked<Interval>::Fail(e);
  using B = boost::math::binomial_distribution<double>;
  const double tail = (1.0 - confidence) / 2.0;
  Interval iv;
  iv.lower = B::find_lower_bound_on_p(static_cast<double>(n), static_cast<double>(k), tail,
                                      B::clopper_pearson_exact_interval);
  iv.upper = B::find_upper_bound_on_p(static_cast<double>(n), static_cast<double>(k), tail,
                                      B::clopper_pearson_exact_interval);
  return {iv, {}};
}

}  // namespace samplecheck::stats
