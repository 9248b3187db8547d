// What the stream checks of a case see (checks.h: CaseEvidence::stream; src/checks_stream.cpp; docs/campaigns.md,
// "Stream checks"): a sampler's or verifier's stream across seeds, handles, calls and steps, which the per-draw
// checks cannot see (the faults of issue 31: a seed ignored, a uniform baked into a captured graph, keys reused
// across decode steps), and the refusal of parameters the judged profile calls invalid.
//
// Results are int32 codes: a token (a sampler's draw; kInvalidToken for none) or, for a verifier, a trial's result
// (SpecResultCode: the accepted length and the token emitted after it).
#pragma once

#include <cstdint>
#include <span>
#include <string>

#include <nlohmann/json.hpp>

namespace samplecheck::harness {

struct StreamEvidence {
  // seed-dependence: the same rows, drafts and offsets drawn under the case's seed (under_a) and another seed
  // (under_b); pair i of a correct sampler matches with probability match_probability[i] (one value: every pair).
  bool seed_run = false;
  std::string seed_untested;                   // why no seed test ran ("" when it ran or does not apply)
  uint64_t seed_a = 0, seed_b = 0;
  std::span<const int32_t> under_a, under_b;
  std::span<const double> match_probability;
  // fresh-handle (deterministic samplers and verifiers): the same seeds and offsets through a fresh instance, once
  // in one batch (fresh_handle, against reference, this instance's results) and once one call per draw or step
  // (fresh_calls, against the first results of reference).
  bool handles_run = false;
  std::string handles_untested;
  std::string unit = "draw";                   // what one result is: "draw", "step", "trial"
  std::span<const int32_t> reference, fresh_handle, fresh_calls;
  // step-repeats: the stream's results in step order (consecutive offsets: a decode loop's steps, a batch row's
  // draws, a verifier's trials); two independent steps give the same result with probability repeat_probability.
  std::span<const int32_t> steps;
  double repeat_probability = 0.0;
  // refusal: a case whose parameters the judged profile calls invalid: the sampler must refuse them with an error
  // naming the field, never draw (a silent clamp).
  bool refusal_run = false;
  std::string refusal_field;                   // "temperature", "top_k", "top_p", "min_p"
  std::string refusal_value;
  bool refused = false;                        // the sampling call failed
  std::string refusal_message;                 // its error, or the token it drew instead
  // A sharded row case (merge): the stream checks' fields as the shard holding the case's first draws judged them
  // (ShardRowEvidence::stream); the checks return these fields instead of judging again.
  const nlohmann::json* judged = nullptr;
};

// A verifier trial's result as one code: the accepted length and the token emitted after the accepted drafts.
inline int32_t SpecResultCode(int32_t accepted, int32_t emitted) {
  return accepted * (int32_t{1} << 24) + ((emitted + 1) & 0xFFFFFF);
}

}  // namespace samplecheck::harness
