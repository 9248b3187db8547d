#include "samplecheck/stats/goodness_of_fit.h"

#include <algorithm>
#include <cmath>
#include <exception>
#include <limits>
#include <sstream>

#include <boost/math/distributions/binomial.hpp>

#include "argument_checks.h"
#include "samplecheck/stats/chi_square.h"

namespace samplecheck::stats {
namespace {

// Validates and normalizes; on success fills p (normalized), n (draws in positive cells), violations.
Status Prepare(std::span<const std::uint64_t> observed, std::span<const double> probabilities,
               std::vector<long double>& p, std::uint64_t& n, std::uint64_t& violations,
               std::size_t& positive_cells) {
  std::ostringstream msg;
  if (observed.size() != probabilities.size()) {
    msg << "observed.size() = " << observed.size() << " differs from probabilities.size() = "
        << probabilities.size();
    return InvalidArgument(msg.str());
  }
  long double total = 0;
  positive_cells = 0;
  for (std::size_t i = 0; i < probabilities.size(); ++i) {
    const double q = probabilities[i];
    if (!(std::isfinite(q) && q >= 0.0)) {
      msg << "probabilities[" << i << "] = " << q << " is outside the allowed range [0, inf)";
      return InvalidArgument(msg.str());
    }
    total += q;
    if (q > 0.0) ++positive_cells;
  }
  if (!(total > 0)) return InvalidArgument("probabilities sum to 0: the expected counts must have a positive sum");
  if (positive_cells < 2) {
    return InvalidArgument("only one cell has positive probability: dof = 0 is outside the allowed range [1, inf)");
  }
  p.resize(probabilities.size());
  n = 0;
  violations = 0;
  for (std::size_t i = 0; i < probabilities.size(); ++i) {
    p[i] = probabilities[i] / total;
    // A draw total above 2^64 - 1 would wrap: the statistics and the binomial of MaxAbsZTest (k <= n) need it.
    std::uint64_t& sum = probabilities[i] > 0.0 ? n : violations;
    if (__builtin_add_overflow(sum, observed[i], &sum)) {
      msg << "observed counts of the " << (probabilities[i] > 0.0 ? "positive" : "zero")
          << "-probability cells sum to more than 2^64 - 1 (at observed[" << i << "] = " << observed[i] << ")";
      return InvalidArgument(msg.str());
    }
  }
  return Status::Ok();
}

enum class Statistic { kPearson, kG };

Result<GoodnessOfFit> Run(std::span<const std::uint64_t> observed, std::span<const double> probabilities, Statistic s) {
  GoodnessOfFit out;
  std::vector<long double> p;
  std::size_t positive = 0;
  if (Status st = Prepare(observed, probabilities, p, out.draws, out.support_violations, positive); !st.ok()) {
    return st.error();
  }
  out.dof = positive - 1;
  if (out.draws == 0) {  // no evidence either way
    out.statistic = 0.0;
    out.p_value = 1.0;
    return out;
  }
  const long double n = static_cast<long double>(out.draws);
  long double sum = 0;
  long double min_e = std::numeric_limits<long double>::infinity();
  for (std::size_t i = 0; i < p.size(); ++i) {
    if (p[i] <= 0) continue;  // forbidden cell: counted apart
    const long double e = n * p[i];
    const long double o = static_cast<long double>(observed[i]);
    min_e = std::min(min_e, e);
    if (s == Statistic::kPearson) {
      const long double d = o - e;
      sum += d * d / e;
    } else if (o > 0) {
      sum += o * std::log(o / e);
    }
  }
  if (s == Statistic::kG) sum *= 2;
  if (sum < 0) sum = 0;  // G can round slightly below 0 when O == E
  out.statistic = static_cast<double>(sum);
  out.min_expected = static_cast<double>(min_e);
  const auto pv = ChiSquarePValue(out.statistic, out.dof);
  if (!pv.ok()) return pv.error();
  out.p_value = (*pv);
  return out;
}

}  // namespace

Result<GoodnessOfFit> PearsonChiSquareTest(std::span<const std::uint64_t> observed,
                                           std::span<const double> probabilities) {
  return Run(observed, probabilities, Statistic::kPearson);
}

Result<GoodnessOfFit> GTest(std::span<const std::uint64_t> observed, std::span<const double> probabilities) {
  return Run(observed, probabilities, Statistic::kG);
}

std::vector<double> StandardizedResiduals(std::span<const std::uint64_t> observed,
                                          std::span<const double> probabilities) {
  std::vector<long double> p;
  std::uint64_t n = 0, violations = 0;
  std::size_t positive = 0;
  if (!Prepare(observed, probabilities, p, n, violations, positive).ok()) return {};
  std::vector<double> out(p.size(), 0.0);
  if (n == 0) return out;
  for (std::size_t i = 0; i < p.size(); ++i) {
    if (p[i] <= 0) continue;
    const long double e = static_cast<long double>(n) * p[i];
    out[i] = static_cast<double>((static_cast<long double>(observed[i]) - e) / std::sqrt(e));
  }
  return out;
}

Result<MaxAbsZ> MaxAbsZTest(std::span<const std::uint64_t> observed, std::span<const double> probabilities,
                            std::span<const std::size_t> cells, double alpha) {
  MaxAbsZ out;
  std::vector<long double> p;
  std::uint64_t n = 0, violations = 0;
  std::size_t positive = 0;
  if (Status st = Prepare(observed, probabilities, p, n, violations, positive); !st.ok()) return st.error();
  out.m = cells.size();
  const auto threshold = BonferroniTwoSidedZThreshold(alpha, out.m);
  if (!threshold.ok()) return threshold.error();
  out.threshold = (*threshold);
  for (std::size_t cell : cells) {
    if (cell >= p.size()) {
      std::ostringstream msg;
      msg << "cell index " << cell << " is outside the allowed range [0, " << p.size() << ")";
      return InvalidArgument(msg.str());
    }
    if (!(p[cell] > 0 && p[cell] < 1)) {
      std::ostringstream msg;
      msg << "cell " << cell << " has probability " << static_cast<double>(p[cell])
          << ", outside the allowed range (0, 1) for a z score";
      return InvalidArgument(msg.str());
    }
  }
  out.alpha = alpha;
  if (n == 0) return out;
  const long double nn = static_cast<long double>(n);
  // Screen (exact result unchanged, O(m) logarithms): Chernoff bounds every cell's tail from above,
  // tail <= exp(-n D(O/n || p)), and Ash's lemma from below, tail >= exp(-n D) / sqrt(8 O (1 - O/n)) (both for the
  // side of the deviation; D the Bernoulli KL divergence). A cell whose lower bound exceeds the smallest upper bound
  // cannot hold the smallest tail, so Boost.Math evaluates only the few that can: over every token of a 2^17-token
  // vocabulary (the max-|z| check over the whole support) that is a handful of tails, not 2^17.
  std::vector<double> floor_of_tail(cells.size(), 0.0);
  double ceiling = 1.0;
  for (std::size_t i = 0; i < cells.size(); ++i) {
    const long double k = static_cast<long double>(observed[cells[i]]), q = p[cells[i]];
    const long double a = k / nn;
    long double d = 0;  // n D(a || q)
    if (a > 0) d += k * std::log(a / q);
    if (a < 1) d += (nn - k) * (std::log1p(-a) - std::log1p(-q));
    d = std::max<long double>(d, 0);
    const double upper = static_cast<double>(std::min<long double>(1, 2 * std::exp(-d)));
    const long double spread = 8 * std::max<long double>(k, 1) * std::max<long double>(1 - a, 1 / nn);
    floor_of_tail[i] = static_cast<double>(std::min<long double>(1, std::exp(-d) / std::sqrt(spread)));
    ceiling = std::min(ceiling, upper);
  }
  double min_tail = 2.0;
  for (std::size_t i = 0; i < cells.size(); ++i) {
    const std::size_t cell = cells[i];
    // Its exact two-sided tail is >= 2 floor > the smallest one (compared at floor, not 2 floor: a factor 2 of
    // margin for the rounding of d).
    if (floor_of_tail[i] > ceiling) continue;
    const double o = static_cast<double>(observed[cell]);
    const long double e = nn * p[cell];
    // Only the tail on the side of the deviation can be the smaller one (the binomial median lies within 1 of
    // its mean); evaluate both when the count is within 1 of the mean.
    const long double dev = static_cast<long double>(observed[cell]) - e;
    double lower = 1.0, upper = 1.0;
    try {  // Boost.Math's default policy throws where it cannot evaluate: an error value, never an exception
      const boost::math::binomial_distribution<double> d(static_cast<double>(n), static_cast<double>(p[cell]));
      if (dev <= 1) lower = boost::math::cdf(d, o);
      if (dev >= -1 && observed[cell] > 0) upper = boost::math::cdf(boost::math::complement(d, o - 1.0));
    } catch (const std::exception& ex) {
      std::ostringstream msg;
      msg.precision(17);
      msg << "MaxAbsZTest: the binomial tail of cell " << cell << " (observed " << observed[cell] << " of n = " << n
          << ", p = " << static_cast<double>(p[cell]) << ") could not be evaluated: " << ex.what();
      return InvalidArgument(msg.str());
    }
    if (std::isnan(lower) || std::isnan(upper)) {
      std::ostringstream msg;
      msg.precision(17);
      msg << "MaxAbsZTest: the binomial tail of cell " << cell << " (observed " << observed[cell] << " of n = " << n
          << ", p = " << static_cast<double>(p[cell]) << ") could not be evaluated: Boost.Math returned NaN";
      return InvalidArgument(msg.str());
    }
    const double tail = std::min(1.0, 2.0 * std::min(lower, upper));
    const double z = static_cast<double>((static_cast<long double>(observed[cell]) - e) /
                                         std::sqrt(e * (1 - p[cell])));
    if (tail < min_tail || (tail == min_tail && std::fabs(z) > out.max_abs_z)) {
      min_tail = tail;
      out.max_abs_z = std::fabs(z);
      out.z = z;
      out.cell = cell;
    }
  }
  out.p_value = std::min(1.0, min_tail * static_cast<double>(out.m));
  return out;
}

}  // namespace samplecheck::stats
