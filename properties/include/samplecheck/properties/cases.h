// The values a property is run on: a logits row (with the name of the generator that built it) and per-row
// sampling parameters. Both print themselves completely (every logit as a hex float, every parameter at full
// precision), so a shrunk counterexample printed by RapidCheck is enough to replay the case by hand.
#pragma once

#include <cstdint>
#include <iosfwd>
#include <string>
#include <vector>

#include "samplecheck/reference/params.h"

namespace samplecheck::properties {

// One fp32 logits row. `kind` names the generator ("dyadic", "ties-top-k", "zipf", ...).
struct Row {
  std::string kind;
  std::vector<float> logits;

  int64_t vocab() const { return static_cast<int64_t>(logits.size()); }
};

// Sampling parameters as a property sees them (a SamplingParams that prints itself).
struct Params : SamplingParams {
  Params() = default;
  explicit Params(const SamplingParams& params) : SamplingParams(params) {}
};

// A row with parameters built for it (boundary generators choose top_k / top_p / min_p from the row).
struct Case {
  Row row;
  Params params;
};

// Text forms used by RapidCheck's counterexample printer (found by argument-dependent lookup) and by reports.
void showValue(const Row& row, std::ostream& os);
void showValue(const Params& params, std::ostream& os);
void showValue(const Case& value, std::ostream& os);

// "temperature=0.5 top_k=-1 top_p=0.90000000000000002 min_p=0 seed=1 offset=0"
std::string Describe(const SamplingParams& params);
// "[0x1p+0, -inf, nan, ...]" (C99 hex floats: exact, and readable back with strtof).
std::string DescribeLogits(const std::vector<float>& logits);

}  // namespace samplecheck::properties
