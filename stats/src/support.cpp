#include "samplecheck/stats/support.h"

#include <cmath>
#include <sstream>

#include "argument_checks.h"

namespace samplecheck::stats {

Result<SupportCheck> CheckSupport(std::span<const double> p0, std::span<const std::uint64_t> token_counts,
                                  std::size_t max_listed) {
  SupportCheck out;
  if (p0.size() != token_counts.size()) {
    std::ostringstream msg;
    msg << "p0.size() = " << p0.size() << " differs from token_counts.size() = " << token_counts.size();
    return InvalidArgument(msg.str());
  }
  for (std::size_t t = 0; t < p0.size(); ++t) {
    if (!(std::isfinite(p0[t]) && p0[t] >= 0.0)) {
      std::ostringstream msg;
      msg << "p0[" << t << "] = " << p0[t] << " is outside the allowed range [0, inf)";
      return InvalidArgument(msg.str());
    }
    if (p0[t] == 0.0 && token_counts[t] > 0) {
      out.violations += token_counts[t];
      ++out.violating_token_count;
      if (out.violating_tokens.size() < max_listed) out.violating_tokens.push_back(static_cast<std::uint32_t>(t));
    }
  }
  return out;
}

Result<double> LeakRateUpperBound(std::uint64_t draws, double alpha) {
  if (draws == 0) return InvalidArgument("draws = 0 is outside the allowed range [1, inf)");
  if (Status st = CheckProbabilityOpen("alpha", alpha); !st.ok()) return st.error();
  // 1 - alpha^(1/N) = -expm1(ln(alpha) / N), accurate for large N.
  return -std::expm1(std::log(alpha) / static_cast<double>(draws));
}

Result<double> DrawsToDetectLeak(double delta, double beta) {
  if (Status st = CheckProbabilityOpen("delta", delta); !st.ok()) return st.error();
  if (Status st = CheckProbabilityOpen("beta", beta); !st.ok()) return st.error();
  return std::log(beta) / std::log1p(-delta);
}

}  // namespace samplecheck::stats
