// What the checks of a case see (checks.h: CaseEvidence), by the kind of campaign that drew it: a sampler's row
// case (the histogram; the agreement check's draws), a row of a batch case (BatchEvidence), a speculative-decoding
// case (SpecEvidence), the stream of a sampler or verifier across seeds, handles, calls and steps (StreamEvidence),
// an RL replay case (ReplayEvidence). The draw stages of the campaigns fill them; the checks read them.
//
// The stream checks (src/checks_stream.cpp; docs/campaigns.md, "Stream checks") see what the per-draw checks
// cannot (the faults of issue 31: a seed ignored, a uniform baked into a captured graph, keys reused across decode
// steps), and the refusal of parameters the judged profile calls invalid. Results are int32 codes: a token (a
// sampler's draw; kInvalidToken for none) or, for a verifier, a trial's result (SpecResultCode: the accepted length
// and the token emitted after it).
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "samplecheck/checks/result.h"
#include "samplecheck/reference/distribution.h"
#include "samplecheck/reference/params.h"
#include "samplecheck/reference/profile.h"
#include "samplecheck/samplers/replay_source.h"
#include "samplecheck/stats/binning.h"

namespace samplecheck::harness {

struct StreamEvidence {
  // seed-dependence: the same rows, drafts and offsets drawn under the case's seed (under_a) and another seed
  // (under_b); pair i of a correct sampler matches with probability match_probability[i] (one value: every pair).
  bool seed_run = false;
  std::string seed_untested;  // why no seed test ran ("" when it ran or does not apply)
  uint64_t seed_a = 0, seed_b = 0;
  std::span<const int32_t> under_a, under_b;
  std::span<const double> match_probability;
  // fresh-handle (deterministic samplers and verifiers): the same seeds and offsets through a fresh instance, once
  // in one batch (fresh_handle, against reference, this instance's results) and once one call per draw or step
  // (fresh_calls, against the first results of reference).
  bool handles_run = false;
  std::string handles_untested;
  std::string unit = "draw";  // what one result is: "draw", "step", "trial"
  std::span<const int32_t> reference, fresh_handle, fresh_calls;
  // step-repeats: the stream's results in step order (consecutive offsets: a decode loop's steps, a batch row's
  // draws, a verifier's trials); two independent steps give the same result with probability repeat_probability.
  std::span<const int32_t> steps;
  double repeat_probability = 0.0;
  // refusal: a case whose parameters the judged profile calls invalid: the sampler must refuse them with an error
  // naming the field, never draw (a silent clamp).
  bool refusal_run = false;
  std::string refusal_field;  // "temperature", "top_k", "top_p", "min_p"
  std::string refusal_value;
  bool refused = false;         // the sampling call failed
  std::string refusal_message;  // its error, or the token it drew instead
  // A sharded row case (merge): the stream checks' fields as the shard holding the case's first draws judged them
  // (ShardRowEvidence::stream); the checks return these fields instead of judging again.
  const nlohmann::json* judged = nullptr;
};

// A verifier trial's result as one code: the accepted length and the token emitted after the accepted drafts.
inline int32_t SpecResultCode(int32_t accepted, int32_t emitted) {
  return accepted * (int32_t{1} << 24) + ((emitted + 1) & 0xFFFFFF);
}

// One side of a row as the checks see it (checks_replay.cpp).
struct ReplaySideEvidence {
  bool given = false;                                // a source answered (false: the side is its reference)
  std::string source;                                // the source's name, or "reference"
  std::span<const float> row;                        // the logits this side saw
  std::span<const float> logprobs;                   // its answer (given) or the reference's, vocab entries
  const ProcessedDistribution* reference = nullptr;  // the exact distribution of `row`
  bool guard_reported = false;                       // the source said it restored the label
};

// What the replay checks see of a finished row (ReplayRole::kRow) or of the whole campaign (kAggregate: the rows'
// judged cases, whose fields it sums).
enum class ReplayRole { kRow, kAggregate };
struct ReplayEvidence {
  ReplayRole role = ReplayRole::kRow;
  const Profile* profile = nullptr;
  SamplingParams params;
  std::string dtype;           // "fp32", "bf16"
  std::string trainer_logits;  // "same", "bf16", "bf16_jitter"
  ReplaySideEvidence engine, trainer;
  int32_t label = kNoLabel;          // the row's label (sent to a trainer that takes labels)
  std::string label_choice;          // "sampled", "boundary"
  bool labels_sent = false;          // the trainer took the label
  std::span<const int32_t> rollout;  // the synthetic rollout's tokens, drawn from the engine side
  double max_ratio_bias = 0.0;       // aggregate
  std::span<const CaseResult> rows;  // aggregate: the judged row cases
};

// What a batch adds to a row's evidence (docs/campaigns.md, batch cases).
struct BatchEvidence {
  std::span<const int32_t> sequence;          // this row's draws in order: draw i at offset + i
  std::span<const int32_t> partner_sequence;  // the partner row's draws from the same calls
  std::span<const double> partner_p0;         // the partner's reference probabilities
  bool deterministic = false;                 // the sampler claims a deterministic stream
  std::span<const int32_t> alone;             // deterministic: the first draws of this row sampled alone (batch
                                              // size 1) at the same seed and offsets
  std::span<const uint64_t> alone_histogram;  // otherwise: as many draws of the row alone, at other offsets
};

// The shipped sampling call behind a counting fast path (docs/campaigns.md): a case's first draws made both ways.
struct AgreementEvidence {
  uint64_t draws = 0;                 // draws compared (the first of the case: offsets offset .. offset + draws)
  bool deterministic = false;         // the sampler claims a deterministic stream: the two must be equal
  std::span<const uint64_t> fast;     // CountDraws histogram of those draws
  std::span<const uint64_t> sampled;  // Sample on replicated rows, same seeds and offsets
  int64_t first_difference = -1;      // deterministic: the first draw whose token differs (-1: none)
  int32_t fast_token = 0, sampled_token = 0;  // the tokens at that draw: counted alone, and Sample's among the others
  // That draw through Sample again, alone in a call of its own (-1, kInvalidToken: not drawn, reports before it): a
  // token other than sampled_token shows that Sample's draws are not a function of (row, seed, offset).
  int32_t sampled_alone_token = -1;
};

// What a speculative-decoding case adds (harness/campaign/spec_campaign.h, docs/speculative.md). SpecRole::kPosition:
// the tokens emitted at one position (p0 = p_j) with its rejection count; kResidual: the tokens emitted on a
// rejection there (p0 = r_j); kLength: the accepted lengths (p0 = their law) with the request's hard checks.
enum class SpecRole { kPosition, kResidual, kLength };
struct SpecEvidence {
  SpecRole role = SpecRole::kPosition;
  int32_t position = 0;  // 1-based (position, residual)
  // position j <= g: the rejection indicator against beta_j (exact binomial)
  bool has_rejection_test = false;
  uint64_t reached = 0, rejected = 0;
  double beta = 1.0;
  // length: hard checks of the request
  uint64_t structure_violations = 0;  // accepted out of 0..g, an accepted token that is not the draft token
  std::string structure_finding;
  bool determinism_run = false;  // re-verified alone, twice, and against the campaign's path
  uint64_t determinism_compared = 0;
  uint64_t determinism_differences = 0;
  std::string determinism_finding;
  bool batch_run = false;  // a request of a batch: its trials alone against in the batch
  uint64_t batch_compared = 0;
  uint64_t batch_differences = 0;
  std::string batch_finding;
  bool scripted_run = false;  // scripted coins (u = 0, u at the p/q edge, greedy) against the laws
  uint64_t scripted_probes = 0;
  uint64_t scripted_failures = 0;
  std::string scripted_finding;
};

// What a check sees of a finished case.
struct CaseEvidence {
  const CaseResult& planned;                      // the case as planned: draws, alpha_plan, tv
  std::span<const double> p0;                     // the reference probabilities judged (0 outside the kept set)
  const stats::BinningPlan& binning;              // head / tail / hash binnings, from p0 and the draw count only
  std::span<const uint64_t> histogram;            // draws per token (ambiguous tokens set apart when conditioned)
  uint64_t invalid_draws = 0;                     // draws that returned an invalid token
  std::string_view sampler_error;                 // the sampler failed while drawing ("" when it did not)
  const BatchEvidence* batch = nullptr;           // a row of a batch case; nullptr for a row case
  const AgreementEvidence* agreement = nullptr;   // a row case of a sampler with a counting fast path
  const SpecEvidence* spec = nullptr;             // a case of a speculative-decoding campaign
  const struct StreamEvidence* stream = nullptr;  // seeds, handles, steps, refusal (stream.h)
  const struct ReplayEvidence* replay = nullptr;  // a case of a replay campaign (replay_campaign.h)
  std::span<const float> row = {};  // the logits the reference judged (the jittered row of a perturbed case); empty
                                    // where the case has no sampler row (speculative, replay): the support check then
                                    // names no dropping filter
};

}  // namespace samplecheck::harness
