#include "samplecheck/reference/exact_sampler.h"

#include <algorithm>
#include <cstdint>
#include <vector>

#include "samplecheck/reference/philox.h"
#include "samplecheck/reference/numerics.h"

namespace samplecheck {
InverseCdf::InverseCdf(const ProcessedDistribution& dist) : InverseCdf(dist.kept, dist.prob) {}

InverseCdf::InverseCdf(std::span<const int32_t> tokens, std::span<const long double> prob) {
  entries_.resize(prob.size());
  KahanSum running;
  for (size_t i = 0; i < prob.size(); ++i) {
    entries_[i] = {static_cast<double>(running.Add(prob[i])), tokens[i]};
  }
  // guide_[b] = first index whose cdf exceeds b / buckets (two buckets per kept token: short scans).
  const size_t buckets = std::max<size_t>(1, 2 * entries_.size());
  guide_.resize(buckets + 1);
  uint32_t index = 0;
  for (size_t b = 0; b <= buckets; ++b) {
    const double edge = static_cast<double>(b) / static_cast<double>(buckets);
    while (index + 1 < entries_.size() && !(entries_[index].cdf > edge)) ++index;
    guide_[b] = index;
  }
}

int32_t InverseCdf::Draw(double u) const {
  if (entries_.empty()) return -1;
  // One bucket early: the rounding of u * buckets must never start the search past the answer.
  const size_t bucket = static_cast<size_t>(u * static_cast<double>(guide_.size() - 1));
  size_t index = guide_[std::min(bucket, guide_.size() - 1) - (bucket > 0 ? 1 : 0)];
  while (index + 1 < entries_.size() && !(entries_[index].cdf > u)) ++index;
  return entries_[index].token;
}

int32_t InverseCdfDraw(const ProcessedDistribution& dist, double u) {
  if (dist.kept.empty()) return -1;
  return InverseCdf(dist).Draw(u);  // the same table as ExactCountDraws, so both draw the same token
}

Status ExactCountDraws(const LogitsView& row, const SamplingParams& params, const Profile& profile, uint64_t draws,
                       std::span<uint64_t> histogram) {
  Result<ProcessedDistribution> dist = ComputeDistribution(row, params, profile);
  if (!dist.ok()) return dist.status();
  if (histogram.size() < static_cast<size_t>(dist->vocab)) {
    return InvalidArgument("histogram has " + std::to_string(histogram.size()) + " cells, the row has vocab " +
                           std::to_string(dist->vocab));
  }
  const InverseCdf table(*dist);
  for (uint64_t i = 0; i < draws; ++i) ++histogram[table.Draw(UniformForDraw(params.seed, params.offset + i))];
  return Status::Ok();
}

}  // namespace samplecheck
