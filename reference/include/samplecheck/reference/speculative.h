// Chain speculative sampling (Leviathan et al., ICML 2023; Chen et al., 2023), exactly: the laws a verifier must
// follow and the reference's own verifier. docs/speculative.md is the contract in words.
//
// A request: target logits rows 1..g+1, a draft of g tokens x_1..x_g, each drawn from its draft distribution q_j.
// p_j = ComputeDistribution(target row j, params, profile): the same processed distribution the non-speculative
// path samples from. q_j comes in one of three forms (DraftForm): probabilities as the draft stored them
// (normalized here in extended precision), draft logits processed under the draft's own params and profile, or a
// one-hot draft (q_j the point mass on x_j: n-gram and some EAGLE modes).
//
// The chain, for j = 1..g: accept x_j iff u_j * q_j(x_j) < p_j(x_j) (u_j < p/q without the division: u_j = 0
// accepts exactly the drafts of positive target probability); on the first rejection emit one token drawn from
// the residual r_j = normalize(max(0, p_j - q_j)) and stop. All g accepted: emit a bonus token drawn from
// p_{g+1}. Greedy targets (the profile's greedy path, ProcessedDistribution::greedy): accept iff x_j is the
// target's greedy token, emit that token on a rejection; no coin decides.
//
// The laws (independent positions: the p_j and q_j are fixed inputs):
//   beta_j      = sum_x min(p_j(x), q_j(x)) = 1 - TV(p_j, q_j)          acceptance probability at position j
//   P(L = k)    = beta_1 ... beta_k (1 - beta_{k+1}),  P(L = g) = beta_1 ... beta_g    accepted length L in 0..g
//   reach_j     = beta_1 ... beta_{j-1}                                    position j emits a token
//   emitted_j   = min(p_j, q_j) + (1 - beta_j) r_j = p_j                   the token at j, given j is reached
//
// The uniform stream (the Philox discipline every verifier of samplecheck follows, CPU and CUDA alike; the
// reference/philox.h generator): a request with seed s and offset o owns the Philox counters o .. o + g, whatever
// its accepted length (the next step of the request starts at o + g + 1). Position j (1-based) uses the block
// B_j = Philox4x32_10(counter = {lo32(o + j - 1), hi32(o + j - 1), 0, 0}, key = {lo32(s), hi32(s)}):
//   draw uniform  d_j = UniformForDraw(s, o + j - 1): words 0, 1 of B_j, exactly the uniform a plain sampler
//                 (the exact sampler, SampleFromLogits) uses for its draw at counter o + j - 1; it draws the
//                 residual token (rejection at j) or the bonus token (j = g + 1) by inverse CDF over the
//                 distribution's tokens in ascending id (reference/exact_sampler.h)
//   coin          u_j = ((uint64(B_j[2]) << 32 | B_j[3]) >> 12 + 0.5) * 2^-52: words 2, 3 of B_j, in
//                 [2^-53, 1 - 2^-53]
// So a verifier with g = 0 is the exact sampler, and the bonus token of an all-accepted request is the token a
// plain sampler would draw at counter o + g. A scripted stream (SpecUniforms::scripted) replaces both: 2 (g + 1)
// values, slot 2 (j - 1) the coin u_j and slot 2 (j - 1) + 1 the draw uniform d_j, each in [0, 1) (u = 0 allowed:
// the edge of the acceptance test).
//
// Several drafts per position (recursive rejection, the second mode: SpecInfer, multi-draft EAGLE trees): k
// children x^1..x^k drawn independently from q. With r^0 = p: child i is accepted iff u_i q(x^i) < r^{i-1}(x^i);
// a rejection replaces the target by r^i = normalize(max(0, r^{i-1} - q)); all k rejected: emit a draw from r^k.
// The emitted token is distributed as p; child i is accepted with probability beta^i = sum min(r^{i-1}, q) given
// the children before it were rejected.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "samplecheck/core/error.h"
#include "samplecheck/reference/distribution.h"
#include "samplecheck/reference/exact_sampler.h"
#include "samplecheck/reference/logits.h"
#include "samplecheck/reference/params.h"
#include "samplecheck/reference/profile.h"

namespace samplecheck {

// How q_j is given.
enum class DraftForm {
  kProbabilities,  // g rows of vocab probabilities (fp32, as the draft stored them); normalized here
  kLogits,         // g rows of draft logits, processed under the draft's params and profile
  kOneHot,         // no rows: q_j is the point mass on x_j
};
const char* DraftFormName(DraftForm form);

// A sparse distribution over token ids: tokens ascending, prob[i] > 0, sums to 1 (within 1e-15).
struct SparseDistribution {
  std::vector<int32_t> tokens;
  std::vector<long double> prob;

  long double Prob(int32_t token) const;
  std::vector<double> Dense(int64_t vocab) const;
};

// The draft distribution of one position. Rows of probabilities: every value finite and >= 0, the sum within
// kDraftSumTolerance of 1 (a draft whose probabilities do not sum to 1 is not a distribution: an error, never
// silently renormalized past that).
inline constexpr double kDraftSumTolerance = 1e-3;
Result<SparseDistribution> DraftFromProbabilities(std::span<const float> probs);
Result<SparseDistribution> DraftFromLogits(const LogitsView& row, const SamplingParams& params, const Profile& profile);
SparseDistribution PointMass(int32_t token);
SparseDistribution FromProcessed(const ProcessedDistribution& dist);

// One position's law: p, q, their overlap and the residual.
struct PositionLaw {
  SparseDistribution p;         // the target's processed distribution
  SparseDistribution q;         // the draft's
  bool greedy = false;          // the target took its profile's greedy path
  long double beta = 0;         // sum min(p, q) = 1 - TV(p, q)
  long double residual_mass = 0;  // sum max(0, p - q) (= 1 - beta, summed directly)
  SparseDistribution residual;  // normalize(max(0, p - q)); p itself when residual_mass == 0 (p == q: never drawn)
  InverseCdf residual_cdf;      // the draw table of residual (ascending ids)
  // The law of the emitted token given the position is reached, min(p, q) + (1 - beta) r: equal to p.
  SparseDistribution emitted;
};
PositionLaw MakePositionLaw(const ProcessedDistribution& p, const SparseDistribution& q);

// The laws of one chain request.
struct ChainLaws {
  int32_t g = 0;
  int64_t vocab = 0;
  std::vector<PositionLaw> positions;      // g entries (positions 1..g)
  ProcessedDistribution bonus;             // p_{g+1}
  InverseCdf bonus_cdf;                    // its draw table (the exact sampler's)
  std::vector<long double> reach;          // g + 1 entries: reach[j - 1] = P(position j emits a token)
  std::vector<long double> length_law;     // g + 1 entries: P(accepted length = k), k = 0..g
};

// One chain request as the reference sees it. target has g + 1 rows; draft_rows g rows (kProbabilities,
// kLogits) or none (kOneHot); draft_tokens g tokens (needed for kOneHot; checked against q otherwise by
// VerifyChain, not here).
struct ChainInput {
  std::vector<LogitsView> target;          // g + 1 rows, one vocab
  SamplingParams params;                   // the target's (seed and offset: the request's stream)
  const Profile* profile = nullptr;        // the target's profile
  DraftForm draft_form = DraftForm::kProbabilities;
  std::vector<std::span<const float>> draft_rows;  // g rows of vocab (kProbabilities: probabilities; kLogits: logits)
  SamplingParams draft_params;             // kLogits: the draft's processing
  const Profile* draft_profile = nullptr;  // kLogits: the draft's profile (nullptr: the target's)
  std::vector<int32_t> draft_tokens;       // g tokens (kOneHot: required; otherwise optional for the laws)
};

// The laws: kInvalidArgument for a shape mismatch (target rows != g + 1, a row of another vocab), invalid params,
// a draft row that is not a distribution; kInvalidRow for an unsamplable target or draft row.
Result<ChainLaws> ComputeChainLaws(const ChainInput& input);

// ---- The stream of a verifier ----------------------------------------------------------------------------------
// The coin u_j of position j (1-based) of a request at (seed, offset): words 2, 3 of block offset + j - 1.
double SpecCoin(uint64_t seed, uint64_t offset, int32_t position);
// The draw uniform d_j: UniformForDraw(seed, offset + j - 1).
double SpecDrawUniform(uint64_t seed, uint64_t offset, int32_t position);

// Where a request's uniforms come from.
struct SpecUniforms {
  std::span<const double> scripted;  // empty: Philox (the discipline above); else 2 (g + 1) values in [0, 1)
  double Coin(uint64_t seed, uint64_t offset, int32_t position) const;
  double Draw(uint64_t seed, uint64_t offset, int32_t position) const;
};
// kInvalidArgument unless scripted is empty or holds 2 (g + 1) values, each in [0, 1).
Status ValidateScriptedUniforms(std::span<const double> scripted, int32_t g);

struct ChainOutcome {
  std::vector<int32_t> emitted;  // accepted + 1 tokens: the accepted drafts, then the residual or bonus token
  int32_t accepted = 0;          // 0..g
};

// The laws a verification needs, by reference (a verifier that caches positions composes one per request).
struct ChainView {
  int64_t vocab = 0;
  std::vector<const PositionLaw*> positions;  // g
  const InverseCdf* bonus = nullptr;
};
ChainView ViewOf(const ChainLaws& laws);
Result<ChainOutcome> VerifyChain(const ChainView& view, std::span<const int32_t> draft_tokens, uint64_t seed,
                                 uint64_t offset, const SpecUniforms& uniforms = {});

// One-hot drafts whose tokens come from a proposal distribution (the campaign's n-gram stand-in): the verifier
// sees q = the point mass on x, so the position's law over the proposal is: beta = sum_x proposal(x) p(x), the
// token emitted on a rejection has law p(y) (1 - proposal(y)) / (1 - beta), the emitted token has law p. Returned
// as a PositionLaw whose q is the proposal and whose residual is that rejection law.
PositionLaw MakeOneHotPositionLaw(const ProcessedDistribution& p, const SparseDistribution& proposal);

// The draws of one request from its laws (the exact verifier). draft_tokens: g tokens, each of positive draft
// probability (kInvalidArgument naming the position and token otherwise).
Result<ChainOutcome> VerifyChain(const ChainLaws& laws, std::span<const int32_t> draft_tokens, uint64_t seed,
                                 uint64_t offset, const SpecUniforms& uniforms = {});

// Draws one token from a sparse distribution by inverse CDF (ascending ids, the rule of reference/exact_sampler.h);
// -1 when it is empty.
int32_t SparseInverseCdfDraw(const SparseDistribution& dist, double u);

// ---- Several drafts per position (recursive rejection) ---------------------------------------------------------
struct MultiDraftLaw {
  int32_t k = 0;
  std::vector<long double> child_acceptance;  // k entries: P(child i accepted | children before it rejected)
  std::vector<SparseDistribution> target;     // k + 1 entries: target[0] = p, target[i] = r^i after i rejections
  long double all_rejected = 0;               // P(every child rejected)
  SparseDistribution emitted;                 // the law of the emitted token: equal to p
};
MultiDraftLaw ComputeMultiDraftLaw(const SparseDistribution& p, const SparseDistribution& q, int32_t k);

struct MultiDraftOutcome {
  int32_t token = -1;
  int32_t accepted_child = -1;  // 0-based; -1: every child rejected, token drawn from r^k
};
// One position verified with k children; coins: k values, draw: the uniform of the final draw.
Result<MultiDraftOutcome> VerifyMultiDraft(const MultiDraftLaw& law, const SparseDistribution& q,
                                           std::span<const int32_t> children, std::span<const double> coins,
                                           double draw);

// `samplecheck explain --spec-draft...`: the laws of a request as text.
std::string ExplainChainLaws(const ChainLaws& laws, const ChainInput& input, int64_t max_tokens);
std::string ExplainMultiDraftLaw(const MultiDraftLaw& law, const SparseDistribution& p, const SparseDistribution& q,
                                 int64_t max_tokens);

}  // namespace samplecheck
