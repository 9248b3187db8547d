#include "samplecheck/stats/chi_square.h"

#include <cmath>
#include <exception>
#include <sstream>
#include <string>

#include <boost/math/distributions/chi_squared.hpp>
#include <boost/math/distributions/normal.hpp>

#include "argument_checks.h"

namespace samplecheck::stats {
namespace {

Status CheckDof(std::uint64_t dof) {
  if (dof >= 1) return Status::Ok();
  return InvalidArgument("dof = 0 is outside the allowed range [1, inf): a binning needs at least two cells");
}

// Boost.Math's default policy throws (std::overflow_error, boost::math::evaluation_error, ...) where it cannot
// evaluate a function, e.g. dof above ~1e11 in the quantile. Every Boost call of stats/ is wrapped so that the
// exception becomes an error naming the inputs, and a non-finite result is rejected the same way.
template <typename F>
Result<double> Evaluate(const char* what, std::uint64_t dof, double x, const char* x_name, F&& f) {
  std::ostringstream msg;
  msg.precision(17);
  try {
    const double v = f();
    if (std::isfinite(v)) return v;
    msg << what << "(dof = " << dof << ", " << x_name << " = " << x << ") could not be evaluated: Boost.Math returned "
        << v;
  } catch (const std::exception& e) {
    msg << what << "(dof = " << dof << ", " << x_name << " = " << x << ") could not be evaluated: " << e.what();
  }
  return InvalidArgument(msg.str());
}

}  // namespace

Result<double> ChiSquareCriticalValue(std::uint64_t dof, double alpha) {
  if (Status st = CheckDof(dof); !st.ok()) return st.error();
  if (Status st = CheckProbabilityOpen("alpha", alpha); !st.ok()) return st.error();
  return Evaluate("ChiSquareCriticalValue", dof, alpha, "alpha", [&] {
    const boost::math::chi_squared d(static_cast<double>(dof));
    return boost::math::quantile(boost::math::complement(d, alpha));
  });
}

Result<double> ChiSquarePValue(double statistic, std::uint64_t dof) {
  if (Status st = CheckDof(dof); !st.ok()) return st.error();
  if (Status st = CheckNonNegativeFinite("chi-square statistic", statistic); !st.ok()) return st.error();
  // P(X >= 0) = 1 exactly, for every dof. (Boost evaluates tgamma(dof / 2) on the way, which overflows for
  // dof >= 3510: an exact fit over 3511 cells must not fail.)
  if (statistic == 0.0) return 1.0;
  // Overflow is ignored (+inf) rather than thrown: for dof >= 3510 and a statistic far below dof, tgamma(dof / 2)
  // overflows inside the lower-tail prefix, whose limit 0 gives the correct tail 1. Evaluation errors (dof above
  // ~1e11 with the statistic near dof) still throw and become an error below; such dof are far beyond any binning
  // (at most 2^32 cells), so no approximation is substituted.
  namespace bp = boost::math::policies;
  using Policy = bp::policy<bp::overflow_error<bp::ignore_error>>;
  auto p = Evaluate("ChiSquarePValue", dof, statistic, "statistic", [&] {
    const boost::math::chi_squared_distribution<double, Policy> d(static_cast<double>(dof));
    return boost::math::cdf(boost::math::complement(d, statistic));
  });
  if (p.ok() && !(*p >= 0.0 && *p <= 1.0)) return *p < 0.0 ? 0.0 : 1.0;
  return p;
}

Result<double> ChiSquareLowerTailPValue(double statistic, std::uint64_t dof) {
  if (Status st = CheckDof(dof); !st.ok()) return st.error();
  if (Status st = CheckNonNegativeFinite("chi-square statistic", statistic); !st.ok()) return st.error();
  if (statistic == 0.0) return 0.0;
  namespace bp = boost::math::policies;
  using Policy = bp::policy<bp::overflow_error<bp::ignore_error>>;
  auto p = Evaluate("ChiSquareLowerTailPValue", dof, statistic, "statistic", [&] {
    const boost::math::chi_squared_distribution<double, Policy> d(static_cast<double>(dof));
    return boost::math::cdf(d, statistic);
  });
  if (p.ok() && !(*p >= 0.0 && *p <= 1.0)) return *p < 0.0 ? 0.0 : 1.0;
  return p;
}

Result<double> NormalUpperQuantile(double alpha) {
  if (Status st = CheckProbabilityOpen("alpha", alpha); !st.ok()) return st.error();
  std::ostringstream msg;
  msg.precision(17);
  try {
    const boost::math::normal n;
    const double z = boost::math::quantile(boost::math::complement(n, alpha));
    if (!std::isnan(z)) return z;
    msg << "NormalUpperQuantile(alpha = " << alpha << ") could not be evaluated: Boost.Math returned NaN";
  } catch (const std::exception& e) {
    msg << "NormalUpperQuantile(alpha = " << alpha << ") could not be evaluated: " << e.what();
  }
  return InvalidArgument(msg.str());
}

Result<double> BonferroniTwoSidedZThreshold(double alpha, std::uint64_t m) {
  if (Status st = CheckProbabilityOpen("alpha", alpha); !st.ok()) return st.error();
  if (m == 0) return InvalidArgument("m = 0 is outside the allowed range [1, inf): no scores to compare");
  return NormalUpperQuantile(alpha / (2.0 * static_cast<double>(m)));
}

double NormalTwoSidedPValue(double z) {
  if (std::isnan(z)) return std::nan("");
  if (std::isinf(z)) return 0.0;
  double p;
  try {
    const boost::math::normal n;
    p = 2.0 * boost::math::cdf(boost::math::complement(n, std::fabs(z)));
  } catch (const std::exception&) {
    p = std::erfc(std::fabs(z) / std::sqrt(2.0));  // the same quantity; Boost does not throw for finite z
  }
  return p > 1.0 ? 1.0 : p;
}

}  // namespace samplecheck::stats
