// The property suites of samplecheck, runnable against any sampler through the sampler-under-test interface
// (harness/sampler.h): the exact sampler and the mutants in CI, the CUDA kernels under the gpu label, plugins and
// processes from the command line (`samplecheck properties --sampler <spec>`).
//
// Each property is a RapidCheck property: generated cases, RC_ASSERTs, shrinking to a minimal counterexample.
// A failure's message holds the shrunk counterexample (row as hex floats, parameters at full precision) and a
// replay line (the RapidCheck seed and reproduce string). docs/properties.md documents every property: what it
// checks, the bug class of docs/semantics.md §2 it catches and the capability it needs.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "samplecheck/samplers/sampler.h"
#include "samplecheck/core/error.h"
#include "samplecheck/reference/profile.h"

namespace samplecheck::properties {

// What a property needs from the sampler.
enum class Need {
  kSample,                 // Sample only (every sampler)
  kDeterministic,          // Sample, and Capabilities::deterministic
  kProcessedDistribution,  // Capabilities::processed_distribution
};
const char* NeedName(Need need);

struct PropertyInfo {
  std::string name;       // "mass-sums-to-one"
  std::string checks;     // one line
  std::string bug_class;  // the semantics.md §2 class(es) it catches
  Need need = Need::kSample;
  bool statistical = false;  // uses a chi-square / correlation test with a stated alpha
  double case_share = 1.0;   // fraction of max_success this property runs (expensive statistical ones: less)
};

// Every property, in suite order.
const std::vector<PropertyInfo>& AllProperties();

struct PropertyOptions {
  uint64_t seed = 20260401;    // RapidCheck seed (CI uses a fixed one; the nightly script a fresh one)
  int max_success = 100;       // cases per property (times PropertyInfo::case_share, at least 1)
  int max_size = 100;          // RapidCheck's size bound (row lengths of the container generators)
  std::vector<std::string> only;  // property names to run (empty: all)
  std::vector<std::string> skip;  // property names not to run (an engine's documented finding, pinned elsewhere)
  std::vector<std::string> exclude_rows;  // row kinds the generators leave out (generators.h RowKinds())
  bool hold_min_p_zero = false;  // min_p held at 0 in every case (generators.h SetMinPHeldAtZero); monotone-min-p skipped
  std::string reproduce;       // a RapidCheck reproduce string from a failure's replay line (replays one case)
  // Tolerance of the probability relations (sum to one, tie equality, shift / temperature / permutation) for
  // samplers that compute in fp32: relative. The exact sampler is held to kExactTolerance whatever this says.
  double tolerance = 1e-5;
  bool verbose = false;        // print every property's result line to stderr as it finishes
};

// Relative tolerance for the exact sampler (long double reference, probabilities converted to double).
inline constexpr double kExactTolerance = 1e-12;

enum class PropertyStatus { kPassed, kFailed, kSkipped, kGaveUp, kError };
const char* PropertyStatusName(PropertyStatus status);

struct PropertyResult {
  std::string name;
  PropertyStatus status = PropertyStatus::kSkipped;
  int cases = 0;           // successful cases before the verdict
  std::string message;     // failure: description, shrunk counterexample; skip: why
  std::string reproduce;   // RapidCheck reproduce string of the failing case ("" unless failed)
  std::string replay;      // a command line that replays the failure ("" unless failed)
};

struct SuiteResult {
  std::string sampler;
  std::string profile;
  std::vector<PropertyResult> results;

  bool passed() const;     // no property failed, gave up or errored (skips allowed)
  int count(PropertyStatus status) const;
};

// Runs one property against `sampler` under `profile` (the semantics the sampler is checked against).
// `sampler_spec` is only used to write the replay line ("exact", "mutant:no-renorm", ...).
PropertyResult RunProperty(harness::Sampler& sampler, const Profile& profile, const std::string& name,
                           const PropertyOptions& options, const std::string& sampler_spec = "");

// Runs every property of options.only (all when empty). The profile is `profile_name` when given, else the one
// the sampler claims; kInvalidArgument when neither names a profile, or an unknown property is asked for.
Result<SuiteResult> RunPropertySuite(harness::Sampler& sampler, const PropertyOptions& options,
                                     const std::string& profile_name = "", const std::string& sampler_spec = "");

}  // namespace samplecheck::properties
