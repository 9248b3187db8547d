#include "samplecheck/stats/exact_tests.h"

#include <algorithm>
#include <cmath>
#include <exception>
#include <sstream>
#include <stdexcept>
#include <limits>
#include <vector>

#include <boost/math/distributions/binomial.hpp>

#include "argument_checks.h"
#include "samplecheck/stats/goodness_of_fit.h"
#include "samplecheck/stats/simulation.h"

namespace samplecheck::stats {
namespace {

constexpr double kRelativeTolerance = 1e-7;

// Validates; fills the positive cells' probabilities and observed counts.
Status Collect(std::span<const std::uint64_t> observed, std::span<const double> probabilities,
               std::vector<double>& p, std::vector<std::uint64_t>& o, std::uint64_t& n,
               std::uint64_t& violations) {
  std::ostringstream msg;
  if (observed.size() != probabilities.size()) {
    msg << "observed.size() = " << observed.size() << " differs from probabilities.size() = "
        << probabilities.size();
    return InvalidArgument(msg.str());
  }
  long double total = 0;
  for (std::size_t i = 0; i < probabilities.size(); ++i) {
    if (!(std::isfinite(probabilities[i]) && probabilities[i] >= 0.0)) {
      msg << "probabilities[" << i << "] = " << probabilities[i] << " is outside the allowed range [0, inf)";
      return InvalidArgument(msg.str());
    }
    total += probabilities[i];
  }
  if (!(total > 0)) return InvalidArgument("probabilities sum to 0: the expected counts must have a positive sum");
  n = 0;
  violations = 0;
  for (std::size_t i = 0; i < probabilities.size(); ++i) {
    if (probabilities[i] > 0.0) {
      p.push_back(static_cast<double>(probabilities[i] / total));
      o.push_back(observed[i]);
      if (__builtin_add_overflow(n, observed[i], &n)) {
        msg << "observed counts of the positive-probability cells sum to more than 2^64 - 1 (at observed[" << i
            << "] = " << observed[i] << ")";
        return InvalidArgument(msg.str());
      }
    } else if (__builtin_add_overflow(violations, observed[i], &violations)) {
      msg << "observed counts of the zero-probability cells sum to more than 2^64 - 1 (at observed[" << i
          << "] = " << observed[i] << ")";
      return InvalidArgument(msg.str());
    }
  }
  if (p.size() < 2) {
    return InvalidArgument("only one cell has positive probability: dof = 0 is outside the allowed range [1, inf)");
  }
  return Status::Ok();
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

Result<ExactPValue> ExactMultinomialTest(std::span<const std::uint64_t> observed, std::span<const double> probabilities,
                                         std::uint64_t max_outcomes) {
  ExactPValue out;
  std::vector<double> p;
  std::vector<std::uint64_t> o;
  std::uint64_t n = 0;
  if (Status st = Collect(observed, probabilities, p, o, n, out.support_violations); !st.ok()) return st.error();
  const std::size_t K = p.size();
  const bool wraps = n > std::numeric_limits<std::uint64_t>::max() - (K - 1);
  const double count = wraps ? HUGE_VAL : Combinations(n + K - 1, K - 1);
  if (!(count <= static_cast<double>(max_outcomes))) {
    std::ostringstream msg;
    msg << "the exact multinomial test would enumerate C(" << static_cast<long double>(n) + (K - 1) << ", " << K - 1 << ") = " << count
        << " outcomes, outside the allowed range [1, " << max_outcomes
        << "]: use MonteCarloPearsonTest or PearsonChiSquareTest";
    return InvalidArgument(msg.str());
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

Result<ExactPValue> MonteCarloPearsonTest(std::span<const std::uint64_t> observed, std::span<const double> probabilities,
                                  std::uint64_t replicates, std::uint64_t seed) {
  ExactPValue out;
  std::vector<double> p;
  std::vector<std::uint64_t> o;
  std::uint64_t n = 0;
  if (Status st = Collect(observed, probabilities, p, o, n, out.support_violations); !st.ok()) return st.error();
  if (replicates == 0) return InvalidArgument("replicates = 0 is outside the allowed range [1, inf)");
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

Result<double> ExactBinomialPValue(std::uint64_t k, std::uint64_t n, double p) {
  if (n == 0) return InvalidArgument("n = 0 is outside the allowed range [1, inf)");
  if (k > n) {
    std::ostringstream msg;
    msg << "k = " << k << " is outside the allowed range [0, n = " << n << "]";
    return InvalidArgument(msg.str());
  }
  if (Status st = CheckProbabilityOpen("p", p); !st.ok()) return st.error();
  namespace bm = boost::math;
  try {  // Boost.Math's default policy throws where it cannot evaluate: an error value, never an exception
    const bm::binomial_distribution<double> d(static_cast<double>(n), p);
    const double nd = static_cast<double>(n);
    const double dk = bm::pdf(d, static_cast<double>(k));
    const double bound = dk * (1.0 + kRelativeTolerance);
    const double mode = std::floor((nd + 1.0) * p) > nd ? nd : std::floor((nd + 1.0) * p);
    double result;
    if (static_cast<double>(k) == mode || bound >= bm::pdf(d, mode)) {
      return 1.0;
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
    if (std::isnan(result)) throw std::domain_error("Boost.Math returned NaN");
    return std::clamp(result, 0.0, 1.0);
  } catch (const std::exception& e) {
    std::ostringstream msg;
    msg.precision(17);
    msg << "ExactBinomialPValue(k = " << k << ", n = " << n << ", p = " << p << ") could not be evaluated: " << e.what();
    return InvalidArgument(msg.str());
  }
}

Result<Interval> ClopperPearsonInterval(std::uint64_t k, std::uint64_t n, double confidence) {
  if (n == 0) return InvalidArgument("n = 0 is outside the allowed range [1, inf)");
  if (k > n) {
    std::ostringstream msg;
    msg << "k = " << k << " is outside the allowed range [0, n = " << n << "]";
    return InvalidArgument(msg.str());
  }
  if (Status st = CheckProbabilityOpen("confidence", confidence); !st.ok()) return st.error();
  auto fail = [&](const std::string& why) {
    std::ostringstream msg;
    msg.precision(17);
    msg << "ClopperPearsonInterval(k = " << k << ", n = " << n << ", confidence = " << confidence
        << ") could not be evaluated: " << why;
    return InvalidArgument(msg.str());
  };
  using B = boost::math::binomial_distribution<double>;
  const double tail = (1.0 - confidence) / 2.0;
  Interval iv;
  try {  // Boost.Math's default policy throws (series limits, root finding) for huge n or extreme confidence
    iv.lower = k == 0 ? 0.0
                      : B::find_lower_bound_on_p(static_cast<double>(n), static_cast<double>(k), tail,
                                                 B::clopper_pearson_exact_interval);
    iv.upper = k == n ? 1.0
                      : B::find_upper_bound_on_p(static_cast<double>(n), static_cast<double>(k), tail,
                                                 B::clopper_pearson_exact_interval);
  } catch (const std::exception& e) {
    return fail(e.what());
  }
  // The exact interval satisfies 0 <= lower <= k / n <= upper <= 1 (strictly inside for 0 < k < n). Where
  // Boost's incomplete-beta inversion loses that (n above ~1e15 in double, where the interval is narrower than
  // its accuracy), the bounds are not trustworthy: an error, never an inverted or misplaced interval.
  const long double phat = static_cast<long double>(k) / static_cast<long double>(n);
  if (!(iv.lower >= 0.0 && iv.upper <= 1.0 && static_cast<long double>(iv.lower) <= phat &&
        phat <= static_cast<long double>(iv.upper))) {
    std::ostringstream why;
    why.precision(17);
    why << "Boost.Math gave [" << iv.lower << ", " << iv.upper << "], which does not contain k / n = "
        << static_cast<double>(phat) << " inside [0, 1] (beyond Boost.Math's accuracy in double: n or the confidence is too extreme)";
    return fail(why.str());
  }
  return iv;
}

Result<double> ExactTwoCellFitLowerTail(std::uint64_t k, std::uint64_t n, double p) {
  if (n == 0 || k > n || !(p > 0.0 && p < 1.0)) {
    return InvalidArgument("ExactTwoCellFitLowerTail: k = " + std::to_string(k) + ", n = " + std::to_string(n) +
                           ", p = " + std::to_string(p) + " (needs n >= 1, k <= n, p in (0, 1))");
  }
  try {
    const double mean = static_cast<double>(n) * p;
    const double d = std::fabs(static_cast<double>(k) - mean) * (1 + 1e-12) + 1e-9;
    const double hi = std::min(static_cast<double>(n), std::floor(mean + d));
    const double lo = std::max(0.0, std::ceil(mean - d));
    const boost::math::binomial_distribution<double> bin(static_cast<double>(n), p);
    const double below = lo >= 1 ? boost::math::cdf(bin, lo - 1) : 0.0;
    return std::clamp(boost::math::cdf(bin, hi) - below, 0.0, 1.0);
  } catch (const std::exception& e) {
    return InvalidArgument(std::string("ExactTwoCellFitLowerTail: ") + e.what());
  }
}

}  // namespace samplecheck::stats
