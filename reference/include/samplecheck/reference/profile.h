// Semantics profiles: what a production sampler computes, defined once. Every kernel, mutant, property and
// document of samplecheck points here; docs/semantics.md explains each profile and the source it follows.
//
// A profile is plain data: the order of the filters, what distribution each filter sees, the boundary and tie
// rules, the disabled and greedy values. reference/src/distribution.cpp interprets it.
#pragma once

#include <array>
#include <span>
#include <string_view>

namespace samplecheck {

enum class Filter { kMinP, kTopK, kTopP };

// What distribution top-p sees: the full softmax (joint semantics: both sets computed on the original p and
// intersected) or the distribution renormalized after the filters before it in `order`.
enum class TopPInput { kFull, kRenormalized };

// The tie rule at the top-k boundary: keep every token tied with the k-th (mask logits < k-th value), or keep
// exactly k, the tie group trimmed by the profile's tie-break (lowest token id first; the trimmed group is
// reported ambiguous, because engines trim by an unspecified sort position).
enum class TopKTies { kKeepTied, kExactK };

// Top-p comparison on the mass strictly above a token (in descending probability order):
// kStrict keeps a token iff mass_above < top_p; kNonStrict keeps it iff mass_above <= top_p.
enum class TopPComparison { kStrict, kNonStrict };

// The tie rule at the top-p boundary: keep every token tied with the crossing token (pivot semantics,
// FlashInfer), or cut the tie group by sort position (lowest id first; the cut group is reported ambiguous).
enum class TopPTies { kKeepTied, kByPosition };

// How the draw distributes mass inside the nucleus: renormalize the kept tokens (standard), or the TensorRT-LLM
// legacy kernel's CDF truncated at top_p (the crossing token gets top_p - mass_above).
enum class TopPMass { kRenormalize, kTruncatedCdf };

struct Profile {
  std::string_view name;         // "vllm", "hf", ...
  std::string_view summary;      // one line
  std::string_view source;       // project, file, function, version read

  std::array<Filter, 3> order;   // order in which the filters run (after temperature)
  TopPInput top_p_input;
  TopKTies top_k_ties;
  TopPComparison top_p_comparison;
  TopPTies top_p_ties;
  TopPMass top_p_mass;

  // Disabled and sentinel values.
  bool top_k_zero_disables;      // top_k == 0 means "no top-k" (else it is invalid)
  bool top_k_minus_one_disables; // top_k == -1 means "no top-k" (else it is invalid)

  // Greedy triggers: temperature < greedy_temperature_below (0 means only T == 0), top_p == 0 when
  // top_p_zero_is_greedy (else invalid). top_k == 1 is greedy in every profile by construction.
  double greedy_temperature_below;
  bool top_p_zero_is_greedy;
  bool temperature_zero_allowed;  // false: T == 0 is an error (HF's warper raises)

  // Valid ranges beyond the universal ones (no NaN, T >= 0, min_p in [0, 1], top_k >= -1).
  double max_temperature;         // +inf when unbounded
};

// Every profile samplecheck defines, in a fixed order.
std::span<const Profile* const> AllProfiles();
// nullptr when no profile has that name.
const Profile* FindProfile(std::string_view name);

}  // namespace samplecheck
