// report_gate_fuzzer: `samplecheck gate` and `samplecheck merge` on hostile reports (issue 33). A stored report is
// evidence someone could have edited; the gate recomputes every statistic from its counts and checks its cases
// against the plan of its suite (campaign/report_check.h), merge adds the shards' counts. Seeded with the
// tampered-report corpus of tests/gate/tampered (fuzz/corpus/report_gate: make_corpus.py writes both; the ctest
// fuzz_replay.report_gate_tampered replays this target over that folder itself), reports of that folder's suites,
// which this target plans against: SAMPLECHECK_TAMPER_SUITE, and SAMPLECHECK_TAMPER_REPLAY_SUITE for a replay report.
//
// Input: a JSON document. An object is one report (gated), an array a set of shard reports (merged).
//
// Invariants (docs/fuzzing.md):
//   errors    every refusal is a typed error (kParse, kInvalidArgument, kIo) with a message; nothing throws.
//   no NaN    a report the gate accepts holds only p-values in [0, 1]; after the recomputed verdict no judged case
//             rests on a p-value outside [0, 1] (ApplyCampaignVerdict makes such a case an error, never a pass).
//   round     an accepted (or merged) report written and read back is accepted again, with the same verdict.
//   max-tv    `gate --max-tv` on an accepted report is refused (kInvalidArgument) unless a case stores a TV bound.
#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "fuzz_check.h"
#include "samplecheck/campaign/report_check.h"
#include "samplecheck/campaign/shard.h"
#include "samplecheck/checks/result.h"
#include "samplecheck/report/report.h"
#include "samplecheck/suites/json_text.h"
#include "samplecheck/suites/suite.h"

namespace samplecheck::fuzz {
namespace {

// The recomputed verdict never passes a case on a p-value that is not a probability; the report round-trips.
void CheckJudged(harness::CampaignReport r, const char* what) {
  harness::ApplyCampaignVerdict(r);
  for (const harness::CaseResult& c : r.cases) {
    if (c.status != harness::CaseStatus::kPass) continue;
    for (const harness::CheckOutcome& o : c.outcomes) {
      FUZZ_CHECK(o.kind != harness::CheckOutcome::Kind::kPValue || (o.p_value >= 0 && o.p_value <= 1),
                 "%s: case %s passes on p = %g (%s)", what, c.name.c_str(), o.p_value, o.test.c_str());
    }
  }
  const Result<harness::CampaignReport> again = harness::ReportFromJson(harness::ReportToJson(r));
  FUZZ_CHECK(again.ok(), "%s: written and read back: %s", what, again.ok() ? "" : again.error().ToString().c_str());
  harness::CampaignReport back = *again;
  harness::ApplyCampaignVerdict(back);
  FUZZ_CHECK(back.Passed() == r.Passed(), "%s: the verdict changed when written and read back", what);
  // A distance verdict needs a distance: never a pass of `gate --max-tv` on a report with no TV bound stored.
  const bool bound = std::any_of(r.cases.begin(), r.cases.end(), [](const harness::CaseResult& c) {
    return c.checks.contains("equivalence") && !c.checks["equivalence"].is_null();
  });
  const Status max_tv = harness::ApplyMaxTv(back, 0.01);
  if (!max_tv.ok()) {
    CheckInputError(max_tv.error(), "ApplyMaxTv");
  } else {
    FUZZ_CHECK(bound, "%s: --max-tv 0.01 accepted on a report without a TV bound", what);
  }
}

bool IsReplayReport(const harness::CampaignReport& r) { return r.sampler_spec.rfind("replay ", 0) == 0; }

void Gate(const nlohmann::json& j) {
  const Result<harness::CampaignReport> r = harness::ReportFromJson(j);
  if (!r.ok()) return CheckInputError(r.error(), "ReportFromJson");
  for (const harness::CaseResult& c : r->cases) {
    for (const harness::CheckOutcome& o : c.outcomes) {
      FUZZ_CHECK(o.kind != harness::CheckOutcome::Kind::kPValue || (o.p_value >= 0 && o.p_value <= 1),
                 "accepted a report with p = %g (case %s, %s)", o.p_value, c.name.c_str(), o.test.c_str());
    }
  }
  const Status plan = harness::CheckReportAgainstPlan(
      *r, IsReplayReport(*r) ? SAMPLECHECK_TAMPER_REPLAY_SUITE : SAMPLECHECK_TAMPER_SUITE);
  if (!plan.ok()) return CheckInputError(plan.error(), "CheckReportAgainstPlan");
  CheckJudged(*r, "gate");
}

void Merge(const nlohmann::json& j) {
  if (j.size() > 8) return;
  std::vector<harness::CampaignReport> shards;
  for (const nlohmann::json& s : j) {
    const Result<harness::CampaignReport> r = harness::ReportFromJson(s);
    if (!r.ok()) return CheckInputError(r.error(), "ReportFromJson (shard)");
    shards.push_back(*r);
  }
  const Result<harness::Suite> suite = harness::LoadSuite(SAMPLECHECK_TAMPER_SUITE);
  FUZZ_CHECK(suite.ok(), "the corpus' suite %s: %s", SAMPLECHECK_TAMPER_SUITE,
             suite.ok() ? "" : suite.error().ToString().c_str());
  const Result<harness::CampaignReport> merged = harness::MergeShards(*suite, shards, {}, "samplecheck merge (fuzz)");
  if (!merged.ok()) return CheckInputError(merged.error(), "MergeShards");
  const Status consistent = harness::CheckReportConsistency(*merged);
  FUZZ_CHECK(consistent.ok(), "a merged report is inconsistent: %s",
             consistent.ok() ? "" : consistent.error().ToString().c_str());
  CheckJudged(*merged, "merge");
}

}  // namespace
}  // namespace samplecheck::fuzz

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size > (size_t{1} << 22)) return 0;
  const std::string text(reinterpret_cast<const char*>(data), size);
  const samplecheck::Result<nlohmann::json> j = samplecheck::harness::ParseJsonStrict(text, "fuzz input");
  if (!j.ok()) return 0;
  if (j->is_object()) samplecheck::fuzz::Gate(*j);
  if (j->is_array()) samplecheck::fuzz::Merge(*j);
  return 0;
}
