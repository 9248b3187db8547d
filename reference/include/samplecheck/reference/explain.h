// `samplecheck explain`: the reference's processed distribution of one row as text, with margins and ambiguous
// tokens, and every profile side by side on that row (where they disagree).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "samplecheck/reference/distribution.h"
#include "samplecheck/reference/params.h"
#include "samplecheck/reference/profile.h"

namespace samplecheck {

// A probability or mass as the explanations print it: `digits` significant digits of its double (FormatSignificant
// of core/format.h; the explanations pass long double).
std::string ExplainNumber(long double value, int digits = 10);

// The kept set by probability (at most max_tokens rows), the boundary decisions with their margins in fp32 ulps,
// and the ambiguous tokens of `dist` (ComputeDistribution of `row` under `profile`).
std::string ExplainDistribution(const std::vector<float>& row, const SamplingParams& params, const Profile& profile,
                                const ProcessedDistribution& dist, int64_t max_tokens);

// Every profile on one row: kept count, ambiguous count, total variation against `anchor`, greedy; then the tokens
// kept by some profiles and dropped by others, with each profile's probability.
std::string CompareProfiles(const std::vector<float>& row, const SamplingParams& params, const Profile& anchor,
                            const ReferenceOptions& ref, int64_t max_tokens);

// What drops a token (ExplainTokenDrop, distribution.h) in a few words with the numbers compared: "top-p drops
// it: the mass ahead of it is 0.93 >= top_p 0.9", "top-k 50 drops it (rank 51)", "min-p drops it: p / p_max =
// 0.01 < min_p 0.05", "kept". `params` are the row's.
std::string DescribeTokenDrop(const TokenDrop& drop, const SamplingParams& params);

// Total variation 1/2 sum |a - b| between two processed distributions of the same row.
long double TotalVariationBetween(const ProcessedDistribution& a, const ProcessedDistribution& b);

}  // namespace samplecheck
