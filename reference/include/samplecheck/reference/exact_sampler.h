// The exact CPU sampler: draws from the reference distribution by inverse CDF over the kept tokens in ascending
// token-id order, with the uniform of philox.h. It is the known-good sampler of the harness and of CI.
//
//   token = the first kept token t (ascending id) whose inclusive cumulative probability exceeds u.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "samplecheck/reference/distribution.h"

namespace samplecheck {

// The cumulative distribution of the kept tokens in ascending token-id order, accumulated in long double and
// rounded once per entry to double (monotone), with a guide table so a draw starts its search in the right place.
// Built once per (row, parameters); every draw of the exact sampler goes through one (Sample, CountDraws alike).
class InverseCdf {
 public:
  InverseCdf() = default;  // empty: Draw returns -1
  explicit InverseCdf(const ProcessedDistribution& dist);
  // The same table over any tokens (ascending) and probabilities (reference/speculative.h: residuals).
  InverseCdf(std::span<const int32_t> tokens, std::span<const long double> prob);
  // The first kept token whose inclusive cumulative probability exceeds u; the last kept token when rounding
  // leaves u beyond the final entry; -1 (kInvalidToken) when nothing is kept.
  int32_t Draw(double u) const;

 private:
  struct Entry {
    double cdf;     // inclusive cumulative probability, ascending token id
    int32_t token;  // the kept token
  };
  std::vector<Entry> entries_;  // cdf and token side by side: one cache line per probe
  std::vector<uint32_t> guide_;
};

// The token drawn from `dist` with uniform u in (0, 1) (builds an InverseCdf: O(kept) per call; keep the
// InverseCdf to draw many).
int32_t InverseCdfDraw(const ProcessedDistribution& dist, double u);

// Counts `draws` draws of one row (draw i with offset params.offset + i) into histogram (size vocab, added to).
// Returns the error of ComputeDistribution, if any.
Status ExactCountDraws(const LogitsView& row, const SamplingParams& params, const Profile& profile, uint64_t draws,
                       std::span<uint64_t> histogram);

}  // namespace samplecheck
