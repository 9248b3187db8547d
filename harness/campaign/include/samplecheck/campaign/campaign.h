// Campaigns: run every case of a suite against a sampler and judge it against the exact reference.
//
// One case, step by step (docs/campaigns.md has the reasoning):
//   1. the row: MakeRow(row spec, row seed); the reference: ComputeDistribution(row, params, judged profile).
//      Params invalid under the judged profile: the case is skipped (reported). Ambiguous tokens: the row is
//      jittered and the reference recomputed (AmbiguousAction::kPerturb), else the draws are judged conditioned on
//      the unambiguous tokens (kCondition), or the case is skipped (kSkip); a case is never judged on a decision
//      that fp32 arithmetic could flip.
//   2. the draws: PlanDrawsForTotalVariation(tv, alpha_per_test / 2, power, cells of the head binning) (the Pearson
//      test is two-sided: half its alpha for a fit too poor, half for one too good to be random), clamped to
//      [min_draws, max_draws]; alpha_per_test = campaign alpha / (cases x 4 tests). The achieved power at the
//      final draw count is reported, honestly below the target when the cap binds.
//   3. the binnings: head / tail / hash from p0 and the draw count only (stats::PlanBinnings), never from counts.
//   4. the checks: support violations (draws on tokens of p0 = 0, invalid tokens) fail the case outright, apart
//      from any p-value; Pearson X^2 on each usable binning (G reported beside it); max-|z| over the head tokens.
//      The case's p-value is Bonferroni over its tests; the campaign applies Holm over the cases at alpha.
#pragma once

#include "samplecheck/campaign/machine.h"
#include "samplecheck/campaign/options.h"
#include "samplecheck/campaign/prepare.h"
#include "samplecheck/checks/result.h"
#include "samplecheck/suites/case_seed.h"
#include "samplecheck/suites/suite.h"

namespace samplecheck::harness {

// The whole campaign. Errors: unknown sampler or profile (kInvalidArgument), a sampler that fails to load
// (kPlugin / kUnsupported), a bad row or .npy (kIo / kParse / kInvalidArgument): the CLI exits 2 on all of them.
// A sampler that fails while drawing is not an error here: its cases fail.
Result<CampaignReport> RunCampaign(const Suite& suite, const CampaignOptions& options);

}  // namespace samplecheck::harness
