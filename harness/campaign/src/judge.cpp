// The Judge stage (judge.h).
#include "judge.h"

#include <algorithm>

namespace samplecheck::harness {

void JudgeEvidence(const CaseEvidence& evidence, CaseResult& result) {
  if (Status st = RunCaseChecks(evidence, result); !st.ok()) {
    result.status = CaseStatus::kError;
    result.reason = st.error().message;
  }
  ComputeCasePValue(result);
}

void JudgeNothing(CaseResult& result) {
  const stats::BinningPlan none;
  (void)RunCaseChecks(CaseEvidence{result, {}, none, {}, 0, ""}, result);
}

void EvaluateCase(PreparedCase& pc, const std::vector<uint64_t>& all_draws, uint64_t invalid_draws,
                  const std::string& sampler_error, const BatchEvidence* batch, const AgreementEvidence* agreement,
                  const StreamEvidence* stream) {
  CaseResult& r = pc.result;
  std::vector<uint64_t> histogram = all_draws;
  r.ambiguous_draws = 0;
  r.drift_draws = 0;
  for (int32_t t : pc.excluded) {
    r.ambiguous_draws += histogram[static_cast<size_t>(t)];
    if (std::binary_search(r.numeric_drift.begin(), r.numeric_drift.end(), t)) {
      r.drift_draws += histogram[static_cast<size_t>(t)];
    }
    histogram[static_cast<size_t>(t)] = 0;
  }
  if (pc.refusal) {  // nothing drawn: the refusal call is the evidence
    const stats::BinningPlan none;
    JudgeEvidence(CaseEvidence{r, {}, none, {}, 0, sampler_error, nullptr, nullptr, nullptr, stream}, r);
    return;
  }
  JudgeEvidence(CaseEvidence{r, pc.p0, pc.binning, histogram, invalid_draws, sampler_error, batch, agreement, nullptr,
                             stream, nullptr, pc.row},
                r);
}

void JudgeBatch(const std::vector<PreparedCase*>& rows, const BatchDraws& draws, bool deterministic,
                const std::vector<const StreamEvidence*>& streams) {
  for (size_t r = 0; r < rows.size(); ++r) {
    PreparedCase& pc = *rows[r];
    std::vector<uint64_t> histogram(pc.row.size(), 0);
    uint64_t invalid = 0;
    const std::vector<int32_t> none;
    const std::vector<int32_t>& sequence = r < draws.sequence.size() ? draws.sequence[r] : none;
    for (int32_t t : sequence) {
      if (t >= 0 && static_cast<size_t>(t) < histogram.size()) {
        ++histogram[static_cast<size_t>(t)];
      } else {
        ++invalid;
      }
    }
    BatchEvidence evidence;
    evidence.deterministic = deterministic;
    evidence.sequence = sequence;
    for (size_t o = 0; o < rows.size(); ++o) {
      if (rows[o]->result.name == pc.result.batch.partner && o != r && o < draws.sequence.size()) {
        evidence.partner_sequence = draws.sequence[o];
        evidence.partner_p0 = rows[o]->p0;
      }
    }
    if (r < draws.alone.size()) evidence.alone = draws.alone[r];
    if (r < draws.alone_histogram.size()) evidence.alone_histogram = draws.alone_histogram[r];
    const bool drawn = draws.sampler_error.empty();
    EvaluateCase(pc, histogram, invalid, draws.sampler_error, drawn ? &evidence : nullptr, nullptr,
                 drawn && r < streams.size() ? streams[r] : nullptr);
  }
}

}  // namespace samplecheck::harness
