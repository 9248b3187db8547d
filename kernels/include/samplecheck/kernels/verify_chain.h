// samplecheck::kernels — chain speculative sampling verification on the GPU (docs/kernels.md "Chain verifier",
// docs/speculative.md): per request, g draft tokens x_1..x_g, g + 1 target rows, the draft distributions q_j; the
// accepted length and the emitted tokens, under exactly the rules and the uniform stream of
// reference/include/samplecheck/reference/speculative.h (VerifyChain), so the exact CPU verifier reproduces the
// tokens (up to uniforms within ~1e-7 of a decision boundary: docs/kernels.md states the bound).
//
// The target's processed distribution p_j is ComputeProcessedDistribution's (the planner SampleFromLogits draws
// with; profiles vllm and hf), or target probabilities given directly (TargetForm::kProbabilities). q_j: draft
// probabilities (fp32, normalized here by their sum), draft logits (fp32 / bf16, processed under the draft's own
// params with the same planner) or a one-hot draft (the point mass on x_j).
//
// The uniform stream: a request at (seed, offset) owns Philox counters offset .. offset + g. Position j uses the
// block B_j at counter offset + j - 1: the coin u_j from words 2, 3, the draw uniform d_j from words 0, 1 (the
// uniform SampleFromLogits draws with at that counter). Accept x_j iff u_j * q_j(x_j) < p_j(x_j); on the first
// rejection emit a draw (d_j) from normalize(max(0, p_j - q_j)) and stop; all accepted: emit a draw (d_{g+1}) from
// p_{g+1}. Greedy target rows (the profile's greedy path): accept iff x_j is the greedy token, emit it otherwise.
// Draws are inverse CDFs in ascending id over 2^-52 fixed-point weights (exact integer prefix sums: the result does
// not depend on thread order or on the batch).
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>
#include <string>

#include "samplecheck/kernels/sampling.h"

namespace samplecheck::kernels {

inline constexpr int32_t kMaxChainDraft = 16;             // g in [0, 16]
inline constexpr int32_t kChainEmittedStride = kMaxChainDraft + 1;
inline constexpr int32_t kChainScriptedStride = 2 * (kMaxChainDraft + 1);

enum class ChainTargetForm { kLogits, kProbabilities };
enum class ChainDraftForm { kProbabilities, kLogits, kOneHot };

// Per-request outcome codes (ChainDiag::code). Every code but kChainOk leaves accepted = -1.
enum ChainCode : int32_t {
  kChainOk = 0,
  kChainTargetRowInvalid = 1,     // target row `position - 1` has a NaN logit or every logit -inf (or, as
                                  // probabilities, a value that is NaN, negative or > 1, or no positive value)
  kChainDraftRowInvalid = 2,      // draft logits row `position - 1` cannot be sampled (NaN, all -inf)
  kChainDraftValueInvalid = 3,    // draft probability of `token` in row `position - 1` is `value`: not finite or < 0
  kChainDraftSumInvalid = 4,      // draft probabilities of row `position - 1` sum to `value`: not within 1e-3 of 1
  kChainDraftTokenImpossible = 5, // draft token `token` at `position` is outside [0, vocab) or has q = 0
  kChainBadParams = 6,            // the request's device-resident parameters (none today) are out of range
};

// Trivially constructible (it lives in shared memory); ChainDiag{} is kChainOk.
struct ChainDiag {
  int32_t code;      // ChainCode
  int32_t position;  // 1-based draft position (target row position - 1), 0 when none
  int32_t token;     // the offending token, -1 when none
  int32_t pad;
  double value;      // the offending value (a probability, a sum)
};

// "request 3: draft probabilities of position 2 sum to 0.5; allowed: within 0.001 of 1".
std::string DescribeChainDiag(const ChainDiag& diag, int64_t request, int64_t vocab);

// A batch of requests sharing one vocab and one dtype per input. Rows are packed in request order: request b's
// target rows are rows T_b .. T_b + g_b of `target` (T_b = sum_{c < b} (g_c + 1)), its draft rows and draft tokens
// entries D_b .. D_b + g_b - 1 (D_b = sum_{c < b} g_c).
struct ChainBatch {
  int64_t batch = 0;                 // 1 .. kMaxBatch
  int64_t vocab = 0;                 // 1 .. kMaxVocab
  const int32_t* g = nullptr;        // host, batch values in [0, kMaxChainDraft] (null: every request has g_scalar)
  int32_t g_scalar = 0;

  ChainTargetForm target_form = ChainTargetForm::kLogits;
  DType target_dtype = DType::kFloat32;     // kLogits: fp32 / bf16 / fp16; kProbabilities: fp32 only
  const void* target = nullptr;             // device, sum (g_b + 1) rows of vocab
  SamplingParams target_params;             // per request (host arrays indexed by request); seed/offset unused

  ChainDraftForm draft_form = ChainDraftForm::kProbabilities;
  DType draft_dtype = DType::kFloat32;      // kLogits: fp32 / bf16 / fp16; kProbabilities: fp32 only
  const void* draft = nullptr;              // device, sum g_b rows of vocab (kOneHot: unused)
  SamplingParams draft_params;              // kLogits: per request; seed/offset unused
  const int32_t* draft_tokens = nullptr;    // device, sum g_b tokens

  const uint64_t* seed = nullptr;           // device, batch values
  const uint64_t* offset = nullptr;         // device, batch values
  const double* scripted = nullptr;         // device, optional: batch x kChainScriptedStride; request b's slot
                                            // 2 (j - 1) is its coin u_j, 2 (j - 1) + 1 its draw uniform d_j, each
                                            // in [0, 1) (checked on the device: outside gives kChainBadParams)
};

struct ChainOutputs {
  int32_t* accepted = nullptr;  // device, batch: 0..g_b, or -1 (see diag)
  int32_t* emitted = nullptr;   // device, batch x kChainEmittedStride: emitted[b][0 .. accepted]; -1 elsewhere
  ChainDiag* diag = nullptr;    // device, batch, optional
};

// Validates on the host (g, shapes, dtypes, every request's target and draft parameters) and launches; the
// values on the device are checked by the kernels and reported per request in diag.
Status VerifyChainBatch(const ChainBatch& batch, Profile profile, const ChainOutputs& outputs, cudaStream_t stream);

// Many trials of one request (batch.batch == 1): trial i has draft tokens trial_tokens[i g .. i g + g) (device)
// and offset offset[0] + i (g + 1). Its laws are prepared once (per-position residual CDFs); each trial is a few
// binary searches. Trial i's result equals VerifyChainBatch on that trial alone (same tokens). One-hot drafts:
// the residual depends on the token, so each trial draws from the target row by a rejection-free pass over the
// prepared CDF of p (the residual of a point mass on x is p without x, renormalized).
struct ChainTrialOutputs {
  int32_t* accepted = nullptr;  // device, trials
  int32_t* emitted = nullptr;   // device, trials x (g + 1)
  ChainDiag* diag = nullptr;    // device, trials, optional
};
Status VerifyChainRepeated(const ChainBatch& request, const int32_t* trial_tokens, int64_t trials, Profile profile,
                           const ChainTrialOutputs& outputs, cudaStream_t stream);

}  // namespace samplecheck::kernels
