#include "samplecheck/stats/two_sample.h"

#include <cmath>
#include <limits>
#include <sstream>

#include "samplecheck/stats/chi_square.h"

namespace samplecheck::stats {

Result<TwoSample> TwoSampleChiSquareTest(std::span<const std::uint64_t> r, std::span<const std::uint64_t> s) {
  TwoSample out;
  if (r.size() != s.size()) {
    std::ostringstream msg;
    msg << "r.size() = " << r.size() << " differs from s.size() = " << s.size()
        << ": both arms must use identical bins";
    return InvalidArgument(msg.str());
  }
  for (std::size_t i = 0; i < r.size(); ++i) {
    std::uint64_t pooled = 0;
    if (__builtin_add_overflow(out.draws_r, r[i], &out.draws_r) ||
        __builtin_add_overflow(out.draws_s, s[i], &out.draws_s) || __builtin_add_overflow(r[i], s[i], &pooled)) {
      std::ostringstream msg;
      msg << "counts sum to more than 2^64 - 1 (at bin " << i << ": r = " << r[i] << ", s = " << s[i]
          << "): a draw total must fit in 64 bits";
      return InvalidArgument(msg.str());
    }
    if (pooled > 0) ++out.nonempty_bins;
  }
  if (out.draws_r == 0 || out.draws_s == 0) {
    return InvalidArgument("an arm has 0 draws: each arm needs at least one draw");
  }
  if (out.nonempty_bins < 2) {
    return InvalidArgument("fewer than two non-empty bins: dof = 0 is outside the allowed range [1, inf)");
  }
  const long double nr = static_cast<long double>(out.draws_r);
  const long double ns = static_cast<long double>(out.draws_s);
  const long double k1 = std::sqrt(ns / nr);
  const long double k2 = std::sqrt(nr / ns);
  long double sum = 0;
  out.min_pooled = std::numeric_limits<std::uint64_t>::max();
  for (std::size_t i = 0; i < r.size(); ++i) {
    const std::uint64_t pooled = r[i] + s[i];
    if (pooled == 0) continue;
    out.min_pooled = std::min(out.min_pooled, pooled);
    const long double d = k1 * static_cast<long double>(r[i]) - k2 * static_cast<long double>(s[i]);
    sum += d * d / static_cast<long double>(pooled);
  }
  out.statistic = static_cast<double>(sum);
  out.dof = out.nonempty_bins - 1;
  out.effective_draws = static_cast<double>(nr * ns / (nr + ns));
  const auto p = ChiSquarePValue(out.statistic, out.dof);
  if (!p.ok()) return p.error();
  out.p_value = (*p);
  return out;
}

Result<DrawPlan> PlanTwoSampleDrawsPerArm(double divergence, double alpha, double power, std::uint64_t cells) {
  Result<DrawPlan> plan = PlanDrawsForDivergence(divergence, alpha, power, cells);
  if (plan.ok()) plan->draws *= 2.0;
  return plan;
}

}  // namespace samplecheck::stats
