#include "samplecheck/stats/chi_square.h"

#include <cmath>
#include <string>

#include <boost/math/distributions/chi_squared.hpp>
#include <boost/math/distributions/normal.hpp>

namespace samplecheck::stats {
namespace {

std::string CheckDof(std::uint64_t dof) {
  if (dof >= 1) return {};
  return "dof = 0 is outside the allowed range [1, inf): a binning needs at least two cells";
}

}  // namespace

Checked<double> ChiSquareCriticalValue(std::uint64_t dof, double alpha) {
  if (auto e = CheckDof(dof); !e.empty()) return Checked<double>::Fail(e);
  if (auto e = CheckProbabilityOpen("alpha", alpha); !e.empty()) return Checked<double>::Fail(e);
  const boost::math::chi_squared d(static_cast<double>(dof));
  return {boost::math::quantile(boost::math::complement(d, alpha)), {}};
}

Checked<double> ChiSquarePValue(double statistic, std::uint64_t dof) {
  if (auto e = CheckDof(dof); !e.empty()) return Checked<double>::Fail(e);
  if (auto e = CheckNonNegativeFinite("chi-square statistic", statistic); !e.empty()) {
    return Checked<double>::Fail(e);
  }
  const boost::math::chi_squared d(static_cast<double>(dof));
  return {boost::math::cdf(boost::math::complement(d, statistic)), {}};
}

Checked<double> NormalUpperQuantile(double alpha) {
  if (auto e = CheckProbabilityOpen("alpha", alpha); !e.empty()) return Checked<double>::Fail(e);
  const boost::math::normal n;
  return {boost::math::quantile(boost::math::complement(n, alpha)), {}};
}

Checked<double> BonferroniTwoSidedZThreshold(double alpha, std::uint64_t m) {
  if (auto e = CheckProbabilityOpen("alpha", alpha); !e.empty()) return Checked<double>::Fail(e);
  if (m == 0) return Checked<double>::Fail("m = 0 is outside the allowed range [1, inf): no scores to compare");
  return NormalUpperQuantile(alpha / (2.0 * static_cast<double>(m)));
}

double NormalTwoSidedPValue(double z) {
  if (std::isnan(z)) return std::nan("");
  if (std::isinf(z)) return 0.0;
  const boost::math::normal n;
  const double p = 2.0 * boost::math::cdf(boost::math::complement(n, std::fabs(z)));
  return p > 1.0 ? 1.0 : p;
}

}  // namespace samplecheck::stats
