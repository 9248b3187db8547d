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

Status CheckCaseConsistency(const CaseResult& c);
Status CheckReportConsistency(const CampaignReport& report);
// A sampler campaign's report against `suite` (the suite it names); a speculative-decoding report (its suite a spec
// suite) against the cases that spec suite plans: every request's positions and length, residuals only where
// planned.
Status CheckReportAgainstPlan(const CampaignReport& report, const std::string& suite_name_or_path);

}  // namespace samplecheck::harness
