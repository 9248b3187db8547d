// The exact processed distribution of one row: the ground truth every verdict of samplecheck compares with.
//
// Computed in extended precision (long double; Boost.Multiprecision where a sum needs it) from the row as
// stored, the parameters and a semantics profile. For every keep/drop decision the reference also records a
// margin: how far the compared quantity is from the profile's threshold, in units of fp32 rounding of that
// quantity, and the margin an fp32 implementation of the profile may need (allowed_ulps: the profile's numerics
// model, reference/numerics.h, never below kAmbiguousMarginUlps). A decision whose margin is below its allowed
// margin could flip in an fp32 implementation: the token is "ambiguous", and callers may ask for the distribution
// with ambiguous tokens in or out.
#pragma once

#include <cstdint>
#include <vector>

#include "samplecheck/core/error.h"
#include "samplecheck/reference/logits.h"
#include "samplecheck/reference/params.h"
#include "samplecheck/reference/profile.h"

namespace samplecheck {

// The floor of every decision's allowed margin: a token whose decision margin is below this many fp32 ulps of the
// compared quantity is ambiguous in every profile. Top-p decisions get a row-dependent margin above it from the
// profile's numerics model (Decision::allowed_ulps).
inline constexpr double kAmbiguousMarginUlps = 64.0;

enum class AmbiguousPolicy {
  kAsComputed,  // each ambiguous token kept or dropped as the exact arithmetic decides
  kAllIn,       // every ambiguous token kept
  kAllOut,      // every ambiguous token dropped (the kept set never becomes empty: the top token stays)
};

struct ReferenceOptions {
  AmbiguousPolicy ambiguous = AmbiguousPolicy::kAsComputed;
};

// One keep/drop decision near a boundary.
struct Decision {
  int32_t token;
  bool kept;
  Filter filter;        // the filter that decided
  double margin_ulps;   // distance to flipping, in fp32 ulps of the compared quantity (>= 0)
  double allowed_ulps;  // how far an fp32 implementation of the profile can move this decision (profile numerics
                        // model, >= kAmbiguousMarginUlps): the decision is ambiguous iff margin_ulps < allowed_ulps
                        // (or it cuts a tie group by position)
};

struct ProcessedDistribution {
  int64_t vocab = 0;
  bool greedy = false;                // the profile's greedy path was taken (one token, probability 1)
  std::vector<int32_t> kept;          // kept token ids, ascending
  std::vector<long double> prob;      // prob[i] = probability of kept[i]; sums to 1 within 1e-15
  std::vector<Decision> boundary;     // decisions closest to each filter's threshold (at least the tokens on
                                      // either side of every boundary), sorted by token id
  std::vector<int32_t> ambiguous;     // tokens whose decision could flip under fp32 arithmetic, ascending
  std::vector<int32_t> numeric_drift; // the ambiguous tokens that only the row-dependent numerics model makes
                                      // ambiguous (a top-p decision with kAmbiguousMarginUlps <= margin <
                                      // allowed_ulps): fp32 summation drift, to be counted apart, ascending

  // Probability of `token` (0 when it is not kept).
  long double Prob(int32_t token) const;
  // All vocab probabilities as doubles (0 for dropped tokens).
  std::vector<double> Dense() const;
  bool IsKept(int32_t token) const;
  bool IsAmbiguous(int32_t token) const;
};

// The processed distribution of `row` under `params` and `profile`.
// Errors: kInvalidArgument for invalid params (ValidateParams); kInvalidRow for an empty row, a row with a NaN,
// or a row in which every logit is -inf. A +inf logit is a valid row: the +inf tokens share the mass equally.
Result<ProcessedDistribution> ComputeDistribution(const LogitsView& row, const SamplingParams& params,
                                                  const Profile& profile, const ReferenceOptions& options = {});

// What removes one token from the kept set of a row under a profile: the first stage of the profile's own pipeline
// (the one ComputeDistribution runs, as computed) that leaves it out, and the numbers that stage compared. The
// support check names it beside a token drawn outside the kept set; `explain` prints it.
enum class DropStage {
  kKept,      // the token is kept (nothing drops it)
  kNoWeight,  // its weight is 0 before any filter: a -inf logit, or e^((x - x_max) / T) below the long double range
  kGreedy,    // the profile's greedy path keeps the argmax alone
  kMinP,      // min-p: its probability is below min_p times the largest
  kTopK,      // top-k: its rank is past k (or, keeping exactly k, it is trimmed from the k-th token's tie group)
  kTopP,      // top-p: the mass ahead of it is past top_p (or a tie group cut by position)
  kNoMass,    // kept by every filter but drawn with no mass (temperature last underflows it; a truncated CDF)
};
const char* DropStageName(DropStage stage);  // "kept", "no weight", "greedy", "min-p", "top-k", "top-p", "no mass"

struct TokenDrop {
  int32_t token = 0;
  DropStage stage = DropStage::kKept;
  double reference_prob = 0.0;  // its probability before any filter, at the row's temperature (softmax of x / T)
  int64_t rank = 0;             // 1-based position in the profile's order (logit descending, ties by id); 0 when
                                // its weight is 0
  int32_t greedy_token = -1;    // kGreedy: the token the greedy path keeps
  int64_t stage_input = 0;      // tokens the dropping filter saw (the kept set before it, or the joint input)
  double ratio_to_max = 0.0;    // kMinP: its probability over the largest, compared with min_p (drop if below)
  bool top_k_tied = false;      // kTopK: tied with the k-th token and trimmed by id (a keep-exactly-k profile)
  double mass_ahead = 0.0;      // kTopP: the mass ahead of it (of its tie group, where ties are kept) in the
                                // distribution top-p saw, compared with top_p
  bool top_p_strict = true;     // kTopP: keeps mass_ahead < top_p (false: <= top_p)
  bool top_p_tie_cut = false;   // kTopP: its mass ahead passes, but its tie group is cut by position (lowest id first)
};

// The stage that drops `token` from `row` under `params` and `profile`. The same errors as ComputeDistribution, and
// kInvalidArgument for a token outside [0, vocab).
Result<TokenDrop> ExplainTokenDrop(const LogitsView& row, const SamplingParams& params, const Profile& profile,
                                   int32_t token);

}  // namespace samplecheck
