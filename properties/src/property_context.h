// What a property body sees: the sampler under test, the profile it is checked against, and the helpers every
// property shares (the sampler's processed distribution, the reference's, kept sets, tolerances). Internal to
// properties/.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include <rapidcheck.h>

#include "samplecheck/samplers/sampler.h"
#include "samplecheck/properties/cases.h"
#include "samplecheck/properties/suite.h"
#include "samplecheck/reference/distribution.h"
#include "samplecheck/reference/profile.h"

namespace samplecheck::properties {

struct Context {
  harness::Sampler* sampler = nullptr;
  const Profile* profile = nullptr;
  harness::Capabilities caps;
  // The sampler is the reference's exact sampler for this profile: relations that are exact in arithmetic
  // (shift by an exact c, power-of-two temperature, disabled encodings) must hold bit for bit.
  bool exact = false;
  double tolerance = 1e-5;  // relative tolerance of probability relations (kExactTolerance when exact)
  // Probabilities below this are invisible in the sampler's output (double underflow for the exact sampler's
  // dense vector, fp32 underflow for the others): kept-set comparisons ignore tokens whose reference probability
  // is below it.
  double visibility_floor = 1e-290;
};

struct PropertyDef {
  PropertyInfo info;
  std::function<void(const Context&)> body;  // a RapidCheck property body: `*gen` draws, RC_ASSERT / RC_FAIL
};

const std::vector<PropertyDef>& DistributionProperties();
const std::vector<PropertyDef>& DrawProperties();
// Exact-boundary properties (boundary_properties.cpp): run after the draw properties.
const std::vector<PropertyDef>& BoundaryProperties();

// ---- shared helpers (fail the case with RC_FAIL, naming the row and parameters, when a call fails) ----

std::string CaseText(const Row& row, const SamplingParams& params);
// The sampler's processed distribution (size vocab).
std::vector<double> Processed(const Context& ctx, const Row& row, const SamplingParams& params);
// The reference's processed distribution under ctx.profile.
ProcessedDistribution Reference(const Context& ctx, const Row& row, const SamplingParams& params,
                                AmbiguousPolicy policy = AmbiguousPolicy::kAsComputed);
// Tokens of positive mass, ascending.
std::vector<int32_t> Support(const std::vector<double>& dense);
bool Contains(const std::vector<int32_t>& sorted, int32_t token);
// |a - b| <= tolerance * max(|a|, |b|) (and bitwise equality when tolerance is 0).
bool Close(double a, double b, double tolerance);
// A reference token whose probability is below the visibility floor (it may read as 0 in the sampler's output).
bool Invisible(const Context& ctx, const ProcessedDistribution& reference, int32_t token);
// The valid "disabled" encodings of top_k for this profile and vocab: -1, 0 (where they disable), V, V + 1, 2^40
// (those up to the profile's max_top_k, where it has one).
std::vector<int64_t> DisabledTopK(const Profile& profile, int64_t vocab);
// A top_k that disables top-k for this profile and vocab (V): V itself (a no-op under every profile), or the
// profile's disabling sentinel where V is above the profile's largest valid top_k (tokenspeed: 127).
int64_t NoTopK(const Profile& profile, int64_t vocab);
// The exclusive upper end of generated top_k values 1 .. V + 1: V + 2, or max_top_k + 1 where that is lower.
int64_t TopKEnd(const Profile& profile, int64_t vocab);

}  // namespace samplecheck::properties
