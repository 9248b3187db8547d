#include "property_context.h"

#include <algorithm>
#include <cmath>
#include <cstring>

namespace samplecheck::properties {

std::string CaseText(const Row& row, const SamplingParams& params) {
  return "params {" + Describe(params) + "} row {kind=" + row.kind + " vocab=" + std::to_string(row.logits.size()) +
         " logits=" + DescribeLogits(row.logits) + "}";
}

std::vector<double> Processed(const Context& ctx, const Row& row, const SamplingParams& params) {
  auto dense = ctx.sampler->ProcessedDistribution(row.logits, params);
  if (!dense.ok()) RC_FAIL("ProcessedDistribution failed: " + dense.error().ToString() + " for " + CaseText(row, params));
  if (static_cast<int64_t>(dense->size()) != row.vocab()) {
    RC_FAIL("ProcessedDistribution returned " + std::to_string(dense->size()) + " values for a row of " +
            std::to_string(row.vocab()) + " tokens: " + CaseText(row, params));
  }
  return std::move(dense).value();
}

ProcessedDistribution Reference(const Context& ctx, const Row& row, const SamplingParams& params,
                                AmbiguousPolicy policy) {
  ReferenceOptions options;
  options.ambiguous = policy;
  auto dist = ComputeDistribution(LogitsView::Fp32(row.logits), params, *ctx.profile, options);
  if (!dist.ok()) RC_FAIL("reference ComputeDistribution failed: " + dist.error().ToString() + " for " + CaseText(row, params));
  return std::move(dist).value();
}

std::vector<int32_t> Support(const std::vector<double>& dense) {
  std::vector<int32_t> support;
  for (size_t i = 0; i < dense.size(); ++i) {
    if (dense[i] > 0) support.push_back(static_cast<int32_t>(i));
  }
  return support;
}

bool Contains(const std::vector<int32_t>& sorted, int32_t token) {
  return std::binary_search(sorted.begin(), sorted.end(), token);
}

bool Close(double a, double b, double tolerance) {
  if (tolerance == 0) return std::memcmp(&a, &b, sizeof(double)) == 0;
  return std::fabs(a - b) <= tolerance * std::max(std::fabs(a), std::fabs(b));
}

bool Invisible(const Context& ctx, const ProcessedDistribution& reference, int32_t token) {
  const long double p = reference.Prob(token);
  return p > 0 && p < ctx.visibility_floor;
}

std::vector<int64_t> DisabledTopK(const Profile& profile, int64_t vocab) {
  std::vector<int64_t> values;
  if (profile.top_k_minus_one_disables) values.push_back(-1);
  if (profile.top_k_zero_disables) values.push_back(0);
  for (int64_t k : {vocab, vocab + 1, int64_t{1} << 40}) {
    if (profile.max_top_k > 0 && k > profile.max_top_k) continue;   // refused by the profile (tokenspeed: >= 128)
    if (!(k == 1 && profile.top_k_one_is_greedy)) values.push_back(k);  // V = 1: top_k = 1 may be greedy
  }
  return values;
}

int64_t NoTopK(const Profile& profile, int64_t vocab) {
  if (profile.max_top_k == 0 || vocab <= profile.max_top_k) return vocab;
  return DisabledTopK(profile, vocab).front();  // -1 or 0: every profile with a maximum has a sentinel
}

int64_t TopKEnd(const Profile& profile, int64_t vocab) {
  return profile.max_top_k > 0 ? std::min(vocab + 2, profile.max_top_k + 1) : vocab + 2;
}

}  // namespace samplecheck::properties
