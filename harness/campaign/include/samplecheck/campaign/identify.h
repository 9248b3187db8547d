// identify: which semantics profiles a sampler's draws are consistent with. The sampler draws once per probe;
// every profile then judges the same draws, so the evidence is comparable across profiles.
//
// Probes (docs/campaigns.md): the discriminating vectors V1-V5 of semantics.md 1.6 (filter order, joint vs
// top_k_first, strict vs non-strict top-p, truncated-CDF nucleus, ties at the top-k / top-p boundary) and
// sentinel parameters (top_k = 0, top_p = 0, T = 0, T = 5e-6 on a tied row, top_k = 1 on a tied row) whose
// validity or greedy meaning differs between profiles.
// A probe is consistent with a profile when: both reject the params; or the sampler draws only kept tokens and
// Pearson X^2 on the head binning does not reject at alpha (default 1e-6 per probe and profile: with ~13 probes
// x 9 profiles a correct profile is wrongly excluded with probability below 1.2e-4; power: 2^18 draws see a TV of
// 0.02 between profiles on these small rows with power > 0.999). Where the reference has ambiguous tokens, the
// profile may keep or drop them: the probe is consistent if any of as-computed / all-in / all-out fits.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "samplecheck/campaign/progress.h"
#include "samplecheck/core/error.h"
#include "samplecheck/reference/params.h"
#include "samplecheck/suites/row_source.h"

namespace samplecheck::harness {

struct Probe;

struct IdentifyOptions {
  std::string sampler_spec = "exact";
  std::string sampler_profile = "vllm";  // SamplerOptions::profile for samplers that take one
  uint64_t draws = uint64_t{1} << 18;   // per probe
  uint64_t seed = 1;
  double alpha = 1e-6;                  // per probe and profile
  // Set (a stop signal): no further probe starts, and a probe whose draws failed once it was set is dropped (the
  // signal kills a process sampler mid-request); the result says it was interrupted and judges the finished probes.
  const std::atomic<bool>* stop = nullptr;
  // One progress line per finished probe ("[ 3/13] done  V1 p=0.5  262144 draws  0.4 s", on stderr); kQuiet: none.
  Progress::Mode progress = Progress::Mode::kQuiet;
  // The observer of the campaign (tests): told after each finished probe, its 1-based index, the number of probes
  // and its seconds, on the worker's thread. The command line leaves it empty (its lines are the progress above).
  std::function<void(const Probe&, size_t index, size_t total, double seconds)> on_probe;
};

enum class ProbeVerdict { kConsistent, kInconsistent, kUndecided };
const char* ProbeVerdictName(ProbeVerdict verdict);

struct ProbeEvidence {
  std::string profile;
  ProbeVerdict verdict = ProbeVerdict::kUndecided;
  std::string evidence;  // "X2 = 3.1 (dof 2), p = 0.21", "token 2 drawn 28168x, dropped by this profile", ...
  std::string prediction;  // what the profile does with the probe: "{0: 0.5, 1: 0.5}" (kept token: probability,
                           // as computed), "rejects the params", "" when the reference could not say
  // How far the draws are from the prediction: the total variation distance between the draws' frequencies and the
  // profile's probabilities; 1 where one of them rejects the params and the other does not; -1 where undefined
  // (the sampler failed, the reference could not compute the row).
  double tv = -1;
};

struct Probe {
  std::string name;
  std::string purpose;   // what it discriminates
  RowSpec row;
  SamplingParams params;
  bool sampler_rejected = false;    // the sampler refused the params (an invalid-argument error)
  bool sampler_failed = false;      // the sampler failed otherwise (a crash, a broken protocol): no profile's answer
  std::string sampler_message;      // the sampler's error when it rejected the params or failed
  std::vector<uint64_t> histogram;  // the sampler's draws
  std::vector<ProbeEvidence> profiles;
};

// A profile's distance to the sampler over the finished probes: how many probes exclude it, and the total
// variation between the draws and its predictions summed over the probes where it is defined.
struct NearProfile {
  std::string profile;
  size_t probes_against = 0;
  std::vector<std::string> against;  // the names of those probes
  double tv_sum = 0;
};

struct IdentifyResult {
  std::string sampler;
  std::string claimed_profile;      // the sampler's own claim ("" when none)
  uint64_t draws = 0;
  double alpha = 0.0;
  std::vector<Probe> probes;
  std::vector<std::string> consistent_profiles;  // no inconsistent probe (among the finished ones when interrupted)
  std::vector<NearProfile> nearest;              // every profile, nearest first (fewest probes against, then TV)
  size_t planned_probes = 0;
  bool interrupted = false;  // stopped before every probe finished: not a verdict
};

// Errors: the sampler cannot be made (unknown spec, plugin load failure).
Result<IdentifyResult> IdentifySampler(const IdentifyOptions& options);
std::string FormatIdentify(const IdentifyResult& result);
nlohmann::json IdentifyToJson(const IdentifyResult& result);

}  // namespace samplecheck::harness
