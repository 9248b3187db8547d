// Speculative-decoding campaigns (docs/speculative.md): a spec suite's requests verified many times by a verifier
// (samplers/verifier.h) and judged against the exact laws of reference/speculative.h, with the campaign's own check
// objects (checks.h) and report (result.h): `samplecheck run --suite spec-standard --verifier exact`.
//
// One case (a request, or a batch of requests verified together), step by step:
//   1. rows: the target's g + 1 rows MakeRow(target spec, row seeds), the draft's rows beside them: "close" (the
//      target's logits plus N(0, noise^2)), "far" (a row of its own), "same" (the target's); q_j their processed
//      distribution under the draft's params and the judged profile, handed to the verifier as fp32 probabilities,
//      as those logits, or one-hot (the draft token alone; its proposal drawn from q_j).
//   2. laws: p_j, beta_j, the residuals, reach_j and the accepted-length law (reference/speculative.h).
//   3. trials: N, planned so that every position with two or more kept tokens gets the draws a row case would get
//      for the suite's TV at its alpha and power (PlanDrawsForTotalVariation on the head binning, divided by
//      reach_j), clamped to [min_trials, max_trials]; the achieved power of each position is reported. Trial i's
//      draft tokens are drawn from q_j by the campaign itself (inverse CDF, Philox keyed by a draft seed of the case,
//      counter i g + j - 1), so the verifier is judged, never the draft; its stream is offset + i (g + 1).
//   4. judged cases, each with the usable checks of checks.h: "<case>/pos<j>" (the tokens emitted at position j
//      against p_j: support, Pearson on head/tail/hash, max-|z|; the rejection count against beta_j),
//      "<case>/res<j>" (the tokens emitted on a rejection at j against r_j, where N reach_j (1 - beta_j) >= 20),
//      "<case>/length" (the accepted lengths against their law; structure, determinism, batch invariance and the
//      scripted-coin probes). Batch entries add "/e<k>" after the case name.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "samplecheck/campaign/options.h"
#include "samplecheck/checks/result.h"
#include "samplecheck/core/error.h"
#include "samplecheck/reference/params.h"
#include "samplecheck/reference/speculative.h"
#include "samplecheck/suites/row_source.h"
#include "samplecheck/suites/spec_suite.h"
#include "samplecheck/suites/suite.h"

namespace samplecheck::harness {
// The whole campaign: a CampaignReport (the report format of sampler campaigns; the spec checks' fields beside
// the usual ones). Errors: unknown verifier or profile, invalid suite values (kInvalidArgument: exit 2).
Result<CampaignReport> RunSpecCampaign(const SpecSuite& suite, const SpecCampaignOptions& options);

}  // namespace samplecheck::harness
