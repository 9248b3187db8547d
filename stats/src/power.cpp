#include "samplecheck/stats/power.h"

#include <cmath>
#include <exception>
#include <sstream>
#include <vector>

#include <boost/math/distributions/chi_squared.hpp>
#include <boost/math/distributions/non_central_chi_squared.hpp>

#include "argument_checks.h"

namespace samplecheck::stats {
namespace {

constexpr std::uint64_t kMaxCells = 1ULL << 32;

Status ValidatePlan(double divergence, double alpha, double power, std::uint64_t cells) {
  if (Status st = CheckPositiveFinite("divergence", divergence); !st.ok()) return st;
  if (Status st = CheckProbabilityOpen("alpha", alpha); !st.ok()) return st;
  std::ostringstream msg;
  if (!(std::isfinite(power) && power > alpha && power < 1.0)) {
    msg << "power = " << power << " is outside the allowed range (alpha = " << alpha << ", 1)";
    return InvalidArgument(msg.str());
  }
  if (cells < 2 || cells > kMaxCells) {
    msg << "cells = " << cells << " is outside the allowed range [2, 2^32]";
    return InvalidArgument(msg.str());
  }
  return Status::Ok();
}

Status CheckTv(double tv) {
  if (std::isfinite(tv) && tv > 0.0 && tv <= 0.5) return Status::Ok();
  std::ostringstream msg;
  msg << "tv = " << tv << " is outside the allowed range (0, 0.5]";
  return InvalidArgument(msg.str());
}

Status Normalize(std::span<const double> p, const char* name, std::vector<long double>& out) {
  long double total = 0;
  for (std::size_t i = 0; i < p.size(); ++i) {
    if (!(std::isfinite(p[i]) && p[i] >= 0.0)) {
      std::ostringstream msg;
      msg << name << "[" << i << "] = " << p[i] << " is outside the allowed range [0, inf)";
      return InvalidArgument(msg.str());
    }
    total += p[i];
  }
  if (!(total > 0)) return InvalidArgument(std::string(name) + " sums to 0: it needs a positive sum");
  out.resize(p.size());
  for (std::size_t i = 0; i < p.size(); ++i) out[i] = p[i] / total;
  return Status::Ok();
}

}  // namespace

double WorstCaseDivergenceForTotalVariation(double tv) { return 4.0 * tv * tv; }

Result<DrawPlan> PlanDrawsForDivergence(double divergence, double alpha, double power, std::uint64_t cells) {
  DrawPlan plan;
  plan.divergence = divergence;
  plan.alpha = alpha;
  plan.power = power;
  plan.cells = cells;
  if (Status st = ValidatePlan(divergence, alpha, power, cells); !st.ok()) return st.error();
  const double dof = static_cast<double>(cells - 1);
  try {
    plan.critical_value = boost::math::quantile(boost::math::complement(boost::math::chi_squared(dof), alpha));
    plan.noncentrality = boost::math::non_central_chi_squared::find_non_centrality(
        boost::math::complement(dof, plan.critical_value, power));
  } catch (const std::exception& e) {
    return InvalidArgument(std::string("Boost.Math could not solve for the non-centrality: ") + e.what());
  }
  plan.draws = plan.noncentrality / divergence;
  return plan;
}

Result<DrawPlan> PlanDrawsForTotalVariation(double tv, double alpha, double power, std::uint64_t cells) {
  if (Status st = CheckTv(tv); !st.ok()) return st.error();
  return PlanDrawsForDivergence(WorstCaseDivergenceForTotalVariation(tv), alpha, power, cells);
}

Result<double> PowerOfRun(double divergence, double alpha, std::uint64_t cells, double draws) {
  if (Status st = CheckPositiveFinite("divergence", divergence); !st.ok()) return st.error();
  if (Status st = CheckProbabilityOpen("alpha", alpha); !st.ok()) return st.error();
  if (Status st = CheckPositiveFinite("draws", draws); !st.ok()) return st.error();
  if (cells < 2 || cells > kMaxCells) {
    std::ostringstream msg;
    msg << "cells = " << cells << " is outside the allowed range [2, 2^32]";
    return InvalidArgument(msg.str());
  }
  const double dof = static_cast<double>(cells - 1);
  try {
    const double crit = boost::math::quantile(boost::math::complement(boost::math::chi_squared(dof), alpha));
    const boost::math::non_central_chi_squared nc(dof, draws * divergence);
    return boost::math::cdf(boost::math::complement(nc, crit));
  } catch (const std::exception& e) {
    return InvalidArgument(std::string("Boost.Math could not evaluate the power: ") + e.what());
  }
}

Result<double> PowerOfRunForTotalVariation(double tv, double alpha, std::uint64_t cells, double draws) {
  if (Status st = CheckTv(tv); !st.ok()) return st.error();
  return PowerOfRun(WorstCaseDivergenceForTotalVariation(tv), alpha, cells, draws);
}

Result<double> ChiSquareDivergence(std::span<const double> p0, std::span<const double> p1) {
  if (p0.size() != p1.size()) return InvalidArgument("p0 and p1 differ in size");
  std::vector<long double> a, b;
  if (Status st = Normalize(p0, "p0", a); !st.ok()) return st.error();
  if (Status st = Normalize(p1, "p1", b); !st.ok()) return st.error();
  long double sum = 0;
  for (std::size_t i = 0; i < a.size(); ++i) {
    if (a[i] == 0) {
      if (b[i] > 0) {
        std::ostringstream msg;
        msg << "cell " << i << " has p0 = 0 and p1 = " << static_cast<double>(b[i])
            << ": mass outside the support is a support leak (see support.h), not a chi-square divergence";
        return InvalidArgument(msg.str());
      }
      continue;
    }
    const long double d = b[i] - a[i];
    sum += d * d / a[i];
  }
  return static_cast<double>(sum);
}

Result<double> TotalVariation(std::span<const double> p0, std::span<const double> p1) {
  if (p0.size() != p1.size()) return InvalidArgument("p0 and p1 differ in size");
  std::vector<long double> a, b;
  if (Status st = Normalize(p0, "p0", a); !st.ok()) return st.error();
  if (Status st = Normalize(p1, "p1", b); !st.ok()) return st.error();
  long double sum = 0;
  for (std::size_t i = 0; i < a.size(); ++i) sum += std::fabs(b[i] - a[i]);
  return static_cast<double>(sum / 2);
}

}  // namespace samplecheck::stats
