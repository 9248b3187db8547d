// Inside the campaign library: the Judge stage, evidence to case results through the check objects (checks.h),
// for every campaign kind: a row case's counts (sampler campaigns, merge), a batch's rows, a speculative case's
// tallies, a case nothing was drawn for.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "samplecheck/campaign/prepare.h"
#include "samplecheck/checks/checks.h"
#include "samplecheck/checks/evidence.h"

namespace samplecheck::harness {

// Runs every check on the evidence and sets the case's p-value; a check that breaks an invariant makes the case an
// error (never a crash). EvaluateCase (campaign.h) is this on a prepared case's counts.
void JudgeEvidence(const CaseEvidence& evidence, CaseResult& result);

// The checks' fields of a case they did not judge (skipped): what they write for no evidence.
void JudgeNothing(CaseResult& result);

// What a batch's rows drew (sampler_draw.h, DrawBatch): every row's draws in order and its draws alone.
struct BatchDraws {
  std::vector<std::vector<int32_t>> sequence;          // per row: draw i at offset + i
  std::vector<std::vector<int32_t>> alone;             // deterministic samplers: the first draws alone
  std::vector<std::vector<uint64_t>> alone_histogram;  // otherwise: as many draws alone at other offsets
  std::string sampler_error;
};
// Judges every row of a drawn batch with the batch's evidence (its partner's draws, its draws alone) and, when
// given, each row's stream evidence (streams[r]: its steps; a decode case's fresh replay).
void JudgeBatch(const std::vector<PreparedCase*>& rows, const BatchDraws& draws, bool deterministic,
                const std::vector<const StreamEvidence*>& streams = {});

}  // namespace samplecheck::harness
