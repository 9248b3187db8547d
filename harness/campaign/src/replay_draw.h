// Inside the campaign library: the Draw stage of replay campaigns (replay_campaign.h). A case's rows through the
// engine source in one call, the synthetic rollout and the labels from the engine's answer, the trainer's rows
// through the trainer source in one call, then every row judged by the replay checks (Judge) and handed to the sink.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "engine.h"
#include "samplecheck/campaign/options.h"
#include "samplecheck/checks/evidence.h"
#include "samplecheck/suites/replay_suite.h"

namespace samplecheck::harness {

// One row of a case, planned: its identity (the judged case). Its logits and references are built when it is drawn
// (BuildReplayRow), so a campaign holds the rows of the cases being drawn only.
struct ReplayRowWork {
  CaseResult result;                // name, batch position, row, row seed, params (the rollout's Philox key), ...
  bool skipped = false;             // parameters invalid under the judged profile (result.reason says why)
};

// A row's logits and references: steps 1 and 2 of replay_campaign.h.
struct ReplayRow {
  std::vector<float> engine_row;    // the engine's logits (bf16 values when the case's dtype is bf16)
  std::vector<float> trainer_row;   // the trainer's logits (TrainerLogits)
  ProcessedDistribution engine_ref, trainer_ref;
};
Result<ReplayRow> BuildReplayRow(const CaseResult& row, const ReplayCaseSpec& spec, const Profile& profile);

struct ReplayCaseWork {
  const ReplayCaseSpec* spec = nullptr;
  std::vector<ReplayRowWork> rows;
  size_t first_row = 0;             // index of rows[0] among the campaign's rows (the sink's)
};

// What every worker shares: the judged profile, the suite's rollout and the sink.
struct ReplayDrawContext {
  const Profile* profile = nullptr;
  uint64_t rollout = 0;
  CaseSink* sink = nullptr;
  std::vector<CaseResult>* results = nullptr;  // the rows' judged cases, by campaign row index
};

// A worker's Draw and Judge with its own engine and trainer source. A side not given is the exact source (the
// reference; for the trainer with its label guard), reported as "reference".
class ReplayDrawer final : public ItemDrawer {
 public:
  ReplayDrawer(std::unique_ptr<ReplaySource> engine, bool engine_given, std::unique_ptr<ReplaySource> trainer,
               bool trainer_given, const std::vector<ReplayCaseWork>& work, const ReplayDrawContext& context)
      : engine_(std::move(engine)), trainer_(std::move(trainer)), engine_given_(engine_given),
        trainer_given_(trainer_given), work_(work), context_(context) {}
  void Draw(const WorkItem& item) override;

 private:
  std::unique_ptr<ReplaySource> engine_, trainer_;
  bool engine_given_, trainer_given_;
  const std::vector<ReplayCaseWork>& work_;
  ReplayDrawContext context_;
};

// Runs the checks (the replay family's, and every other's on no draws) on a replay case's evidence.
void JudgeReplay(const ReplayEvidence& evidence, CaseResult& result);

// The trainer's logits of an engine row (step 1 of replay_campaign.h): the same, rounded to bf16, or rounded and one
// bf16 ulp up or down on 1 token in 4 (a stream keyed by `seed`: SplitMix64 of the row seed).
std::vector<float> TrainerRow(const std::vector<float>& engine_row, TrainerLogits mode, uint64_t seed);

// The synthetic rollout: `n` tokens drawn from the distribution exp(logprobs) (renormalized over its finite
// entries), inverse CDF in token order with the Philox uniform of (seed, offset + i). Empty when nothing is finite.
std::vector<int32_t> DrawRollout(std::span<const float> logprobs, uint64_t seed, uint64_t offset, uint64_t n);

}  // namespace samplecheck::harness
