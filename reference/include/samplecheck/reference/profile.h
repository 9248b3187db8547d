// Semantics profiles: what a production sampler computes, defined once. Every kernel, mutant, property and
// document of samplecheck points here; docs/semantics.md explains each profile and the source it follows.
//
// A profile is plain data: the order of the filters, what distribution each filter sees, the boundary and tie
// rules, the disabled and greedy values. reference/src/distribution.cpp interprets it.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <span>
#include <string_view>
#include "samplecheck/core/error.h"

namespace samplecheck {

enum class Filter { kMinP, kTopK, kTopP };

// What distribution top-p sees. kFull: joint semantics: top-p sees the same distribution as top-k (top-k is not
// applied to its input; both sets are computed on that distribution and intersected). Where no min-p runs before
// top-p (or min-p is disabled) that is the full softmax. kRenormalized: the distribution renormalized after every
// filter before it in `order`.
enum class TopPInput { kFull, kRenormalized };

// What the top-k boundary compares: the temperature-scaled logits (mask logits < k-th logit, PyTorch topk) or the
// fp32 probabilities (FlashInfer pivots, sort of probabilities). Only the margins depend on it: the exact decision
// is the same, because softmax is monotone.
enum class TopKInput { kLogits, kProbs };

// How the engine accumulates the mass it compares with top_p: a descending cumulative sum compared with top_p
// (mass above < top_p), or an ascending one compared with 1 - top_p (cumsum > 1 - top_p). Only the margins depend
// on it (the unit is the fp32 ulp of the larger of the two compared magnitudes).
enum class TopPCumsum { kDescending, kAscending };

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

// Where the temperature is applied. kFirst: the logits are divided by T before every filter (vLLM, transformers,
// FlashInfer, TensorRT-LLM, SGLang). kLast: the filters run on the T = 1 distribution and T only reshapes what they
// kept (llama.cpp's default chain: top-k, typical, top-p, min-p, ..., temperature, then dist). With filters on, the
// two keep different tokens (docs/semantics.md, V6).
enum class TemperaturePlacement { kFirst, kLast };

// What min-p compares in the engine: fp32 probabilities, p_i against min_p * p_max (kProbs), or logits, x_i against
// x_max + log(min_p) (kLogits, llama.cpp). The exact decision is the same (the ratio test); only the margin differs:
// in ulps of the probability threshold, or of the logit threshold and the two terms it is formed from.
enum class MinPInput { kProbs, kLogits };

// How an engine forms one floating-point sum that reaches a keep/drop decision (docs/semantics.md, "Numerics
// model"). Every term of the sum passes through at most Depth(n) roundings of the accumulation precision:
//   kExact       no rounding reaches the decision (integer fixed point, a wider type, or the sum is not formed)
//   kSequential  one accumulator, term after term: n - 1
//   kBlocked     the engine's blocked shape: a chain of ceil(n / width) sequential roundings (one thread's strided
//                terms, or the carries from tile to tile of a scan) plus `combine_depth` roundings that join the
//                chains (a warp-shuffle tree, the sequential sum of the warp totals, a tile's Sklansky scan)
enum class SumOrder { kExact, kSequential, kBlocked };

struct SumModel {
  SumOrder order = SumOrder::kExact;
  int32_t width = 1;          // kBlocked: terms per chain step (threads of the block, or the tile of a scan)
  int32_t combine_depth = 0;  // kBlocked: roundings after the chain
};

// The numerics an engine's fp32 implementation of the profile has, as data: which sums it forms for the top-p
// decision, over how many terms and in which shape, and how precise the values it orders by are. The reference
// turns it into a per-row, per-decision margin (Decision::allowed_ulps; reference/numerics.h): inside it a boundary
// token is ambiguous. Min-p and top-k compare two values and form no sum: their margin is the fixed floor
// kAmbiguousMarginUlps (distribution.h), far above the few ulps of error each compared value carries.
struct NumericsModel {
  double unit_roundoff;     // u of the accumulation precision (2^-24 for fp32)
  SumModel normalizer;      // the softmax denominator the compared probabilities carry (kExact: none reaches it)
  SumModel top_p_mass;      // the sum compared with top_p: a cumulative sum of sorted probabilities, or the mass
                            // above a pivot value
  double prob_error_ulps;   // error of each probability the engine computes, in ulps of that probability (exp
                            // within 2 ulps, the division 0.5)
  bool orders_by_probs;     // top-p's order or pivot is taken on those fp32 probabilities (rounding can tie or swap
                            // tokens whose exact probabilities are within 2 * prob_error_ulps), not on the logits
  double pivot_tolerance;   // relative resolution of a value-pivot search that may stop short of the exact value
                            // (0: the pivot is a token's own value, or the engine sorts)
  std::string_view summary; // where the sums are formed, with the engine source read
  // The sums run over the array the earlier filters left (llama.cpp truncates its candidate array: top-p's softmax
  // and running sum see the survivors of top-k only), not over the whole row (GPU engines mask with -inf and sum
  // every position).
  bool sums_survivors_only = false;
};

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
  TopKInput top_k_input;
  TopPCumsum top_p_cumsum;
  // top_p_input when min_p > 0 (SGLang's FlashInfer backend switches from joint to sequential renormalization
  // when a request sets min-p); equal to top_p_input in every other profile.
  TopPInput top_p_input_with_min_p;

  // Disabled and sentinel values.
  bool top_k_zero_disables;      // top_k == 0 means "no top-k" (else it is invalid)
  bool top_k_minus_one_disables; // top_k == -1 means "no top-k" (else it is invalid)

  // Greedy triggers: temperature < greedy_temperature_below (<= when greedy_temperature_inclusive; 0 means only
  // T == 0, and only when temperature_zero_allowed), top_p == 0 when top_p_zero_is_greedy (else invalid), top_k == 1
  // when top_k_one_is_greedy (else top_k = 1 runs the top-k filter: keep-tied profiles keep every token tied with
  // the maximum). The greedy token is the lowest token id among the maximal logits (torch.argmax).
  double greedy_temperature_below;
  bool greedy_temperature_inclusive;
  bool top_p_zero_is_greedy;
  bool top_k_one_is_greedy;
  bool temperature_zero_allowed;  // false: T == 0 is an error (the engine has no greedy path for it)

  // Valid ranges beyond the universal ones (no NaN, T >= 0, min_p in [0, 1], top_k >= -1).
  double max_temperature;         // +inf when unbounded

  NumericsModel numerics;         // the engine's floating-point sums (see NumericsModel)

  // Fields every profile but llama-cpp leaves at their defaults.
  TemperaturePlacement temperature_placement = TemperaturePlacement::kFirst;
  MinPInput min_p_input = MinPInput::kProbs;
  // The greedy path keeps the first maximal token in the engine's array order, which a sorting filter leaves
  // unspecified among exactly tied maxima (llama.cpp's temperature <= 0 and top_p = 0): the reference keeps the
  // lowest id and reports the rest of the tied maxima ambiguous.
  bool greedy_ties_by_position = false;
  // What top-k ranks when the request sets no top-p, where that differs from top_k_input: FlashInfer's top_k_first
  // masks logits only inside top_k_top_p_sampling_from_logits, while an engine whose request sets top-k alone calls
  // top_k_sampling_from_probs (vLLM's flashinfer_sample), a pivot on the fp32 probabilities. Empty: top_k_input.
  std::optional<TopKInput> top_k_input_without_top_p = std::nullopt;
  // The largest valid top_k other than the disabling sentinels (0: none). TokenSpeed's SamplingParams.verify
  // refuses top_k >= 128, its fused kernels' candidate pad (python/tokenspeed/runtime/sampling/sampling_params.py:
  // 39, 133-137 at f4d8ec6e), even where k >= V would keep the whole row.
  int64_t max_top_k = 0;
  // A temperature floor applied before anything else: 0 < T < min_temperature becomes min_temperature (vLLM's
  // SamplingParams.__post_init__ raises it to 0.01, so only T == 0 reaches the greedy path). 0: no floor.
  double min_temperature = 0.0;
  // vLLM's Triton top-k/top-p kernel (vllm/v1/sample/ops/topk_topp_triton.py, v0.26.0 = 568afb3a) masks nothing on
  // a row whose finite logits, as it sees them (divided by T, after min-p's -inf masks; -inf entries do not count),
  // are all equal: top-k's whole-row search (285-366) starts from max == min and stops at once with the pivot at
  // the max logit (363); top-p after top-k (377-592) then gathers nothing above that pivot (449-513), its sum is 0
  // and its pivot NaN; standalone top-p (k disabled or k >= the finite count: 375, 594-824) has an empty probability
  // range (676-677) and its pivot is the common value (824); the last pass masks nothing when the pivot is not
  // below the max logit (830-831). So top-k and top-p keep the whole row. Top-k reaches the whole-row search only
  // when the zeroth pass's fp32 mean and deviation of the first tile (129-157) put the outlier pivot at or above the
  // tied value; where rounding can put it below, every logit is an outlier and the buffer search (195-283) keeps
  // exactly k, then top-p cuts by position: the reference reports such a row ambiguous (docs/semantics.md,
  // vllm-triton). false: the filters' own tie rules apply to such rows.
  bool tied_row_unmasked = false;
};

// Every profile samplecheck defines, in a fixed order.
std::span<const Profile* const> AllProfiles();
// nullptr when no profile has that name.
const Profile* FindProfile(std::string_view name);
// The profile of that name, or kInvalidArgument "unknown profile 'x' (known: vllm, hf, ...)": the one message every
// library and command gives for a name no profile has.
Result<const Profile*> ProfileByName(std::string_view name);
// "vllm, hf, ...": every profile's name, in AllProfiles() order.
std::string KnownProfileNames();

}  // namespace samplecheck
