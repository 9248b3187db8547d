// Replay campaigns (docs/replay.md): an inference engine's processed logprobs and an RL trainer's replay of them
// (samplers/replay_source.h), each judged against the profile's exact processed distribution of the row it saw, and
// the two against each other, with the importance-ratio bias a synthetic rollout would carry:
// `samplecheck replay --suite replay-smoke --engine <spec> --trainer <spec>`.
//
// One case (a row, or a batch of rows sent to each side in one call), step by step:
//   1. rows: MakeRow(row spec, row seed) per row, rounded to bf16 when the case's dtype is bf16; the trainer's rows:
//      the same ("same"), the engine's rows rounded to bf16 ("bf16": an fp32 engine, a bf16 trainer), or rounded and
//      then one bf16 ulp up or down on 1 token in 4 ("bf16_jitter": another forward pass's bf16 logits).
//   2. references: ComputeDistribution of each side's row under the judged profile (kept set, probabilities,
//      boundary decisions with their margins, the ambiguous tokens of the numerics model).
//   3. the engine side: every row of the case in one call. A side that is not given is its reference (the exact
//      engine, the exact trainer with the label guard).
//   4. the synthetic rollout: `rollout` tokens per row drawn from the engine side's distribution (inverse CDF in
//      token order, Philox keyed by the row's seed); the label of the row is its first token ("sampled") or the
//      engine's least probable kept token ("boundary": where replays break).
//   5. the trainer side: every row in one call, with the labels (a source that takes labels).
//   6. judged cases "<case>" (or "<case>/b<k>" for a batch's rows), each with the replay checks of checks.h
//      (checks_replay.cpp): replay-engine, replay-trainer (kept set with margins: inside = numeric drift, beyond =
//      failure; logprobs within the fp32 tolerance over the kept set), replay-label (a silent -inf label fails),
//      replay-agreement (the two sides: disagreements by cause, max |delta logprob|, the unrenormalized kept mass,
//      the rollout's importance ratios); then one case "aggregate" over every row (replay-ratio-bias: |mean ratio
//      - 1| over the whole rollout within the suite's max_ratio_bias).
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "samplecheck/campaign/options.h"
#include "samplecheck/checks/evidence.h"
#include "samplecheck/checks/result.h"
#include "samplecheck/core/error.h"
#include "samplecheck/reference/distribution.h"
#include "samplecheck/reference/params.h"
#include "samplecheck/reference/profile.h"
#include "samplecheck/samplers/replay_source.h"
#include "samplecheck/suites/replay_suite.h"
#include "samplecheck/suites/row_source.h"
#include "samplecheck/suites/suite.h"

namespace samplecheck::harness {
// The whole campaign: a CampaignReport (the report of sampler campaigns, the replay checks' fields beside the
// usual ones). Errors: unknown source, profile or fault, invalid suite values (kInvalidArgument: exit 2).
Result<CampaignReport> RunReplayCampaign(const ReplaySuite& suite, const ReplayCampaignOptions& options);

// The row cases a replay campaign plans (identity, row, seeds, parameters; skipped rows marked), in report order and
// without the "aggregate" case: the gate checks a stored replay report against them (report_check.cpp).
Result<std::vector<CaseResult>> PlanReplayRows(const ReplaySuite& suite, const std::string& profile, uint64_t seed,
                                               size_t more_generated, uint64_t rollout);

}  // namespace samplecheck::harness
