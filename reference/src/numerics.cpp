#include "samplecheck/reference/numerics.h"

#include <limits>

namespace samplecheck {

int64_t SumDepth(const SumModel& sum, int64_t terms) {
  if (terms <= 1) return 0;
  switch (sum.order) {
    case SumOrder::kExact:
      return 0;
    case SumOrder::kSequential:
      return terms - 1;
    case SumOrder::kBlocked: {
      const int64_t width = sum.width > 0 ? sum.width : 1;
      return (terms + width - 1) / width + sum.combine_depth;
    }
  }
  return terms - 1;
}

double SumRelativeError(const SumModel& sum, int64_t terms, double unit_roundoff) {
  const double du = static_cast<double>(SumDepth(sum, terms)) * unit_roundoff;
  if (du >= 0.5) return std::numeric_limits<double>::infinity();
  return du / (1.0 - du);
}

double TopPRelativeError(const NumericsModel& model, int64_t terms) {
  const double u = model.unit_roundoff;
  return SumRelativeError(model.normalizer, terms, u) + SumRelativeError(model.top_p_mass, terms, u) +
         2.0 * model.prob_error_ulps * u;
}

double ValueWindow(const NumericsModel& model) {
  if (!model.orders_by_probs) return 0.0;
  return 2.0 * (2.0 * model.prob_error_ulps * model.unit_roundoff) + model.pivot_tolerance;
}

}  // namespace samplecheck
