// Whether a stored report holds together, so that `samplecheck gate` and `samplecheck merge` never judge a report
// that contradicts itself (a hand-edited verdict, p-value or count, a case cut, duplicated or deleted).
//
// A report keeps the sufficient statistics of every case (binned counts and their expectations), so its verdict
// is recomputed from them, never taken from the stored p-values:
//   - CheckCaseConsistency: counts are whole numbers >= 0 that sum to at most the case's draws and the same in
//     every binning; every statistic the checks computed is what their stored counts give again (each check's
//     Recheck, the code Evaluate computes with); support violations are the draws of the tokens listed; every
//     p-value is a probability (never NaN); a skipped case holds no draws.
//   - CheckReportConsistency: the above for every case, names unique, as many cases as planned (unless
//     interrupted or a shard), evidence floors >= 1, alpha / TV / power in range.
//   - CheckReportAgainstPlan: the cases are those the suite plans under the report's identity (seed, draw seed,
//     profile): none missing, none added, each with the plan's row, parameters, seeds, alpha, binnings (the stored
//     expectations are the reference's cells at the stored draw count) and achieved power.
// Every inconsistency is kParse naming the case and the field: the CLI exits 2.
#pragma once

#include <cstdint>
#include <string>

#include "samplecheck/checks/result.h"
#include "samplecheck/core/error.h"
#include "samplecheck/suites/suite.h"

namespace samplecheck::harness {

// What fixes a case's draws: its name, row spec, row seed, parameters (with the sampler's seed and offset), judged
// profile and place in a batch. Two runs that agree on it draw the same tokens for the same draw count; a journal
// keeps it per case (journal.h) so that a resumed run never reuses a case the suite has changed since.
uint64_t CaseSpecHash(const CaseResult& c);
// "" when `stored` and `planned` are the same case spec, else what differs ("its row", "its parameters", ...).
std::string CaseSpecDifference(const CaseResult& stored, const CaseResult& planned);

Status CheckCaseConsistency(const CaseResult& c);
Status CheckReportConsistency(const CampaignReport& report);
// A sampler campaign's report against `suite` (the suite it names); a speculative-decoding report (its suite a spec
// suite) against the cases that spec suite plans: every request's positions and length, residuals only where
// planned.
Status CheckReportAgainstPlan(const CampaignReport& report, const std::string& suite_name_or_path);

}  // namespace samplecheck::harness
