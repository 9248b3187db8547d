// The checks a campaign runs on every case, as objects. A check judges the evidence of a finished case, writes its
// own fields into the case (CaseResult::checks, written to the report under ReportKeys()), and reads its outcomes
// back from those fields (CheckOutcome: a hard failure, or a p-value for the case's Bonferroni family). The
// verdict, the text summary, the HTML report and the mutation score read the outcomes generically, so a new check
// is its stats/ code, one class in its family's file (src/checks_<family>.cpp: support, fit, token, batch,
// agreement, equivalence, spec; CaseChecks() in src/checks.cpp takes the families in order), its test beside the
// family's tests (tests/campaign/checks_<family>_test.cpp) and its line in docs/statistics.md.
//
// The checks, in order (docs/statistics.md states each one's alpha, power and assumption):
//   support    hard: a draw of a token the reference gives probability 0, or an invalid token, fails the case;
//              a sampler that fails while drawing fails it too. Alpha 0; a leak of mass delta is seen with
//              probability 1 - (1 - delta)^N.
//   pearson    Pearson X^2 on each usable binning (head, tail, hash; cells from p0 and N only, each E >= 10),
//              G reported beside it. One p-value per binning.
//   max-abs-z  the most extreme head token by its exact binomial tail, Bonferroni over the head tokens; the largest
//              standardized residuals are reported. One p-value.
//   batch-invariance  (batch rows, deterministic samplers) hard: the row's first draws alone (batch size 1) equal its
//              draws inside the batch at the same seed and offsets.
//   independence      (batch rows) contingency chi-square of this row's draws against its partner's (another seed:
//              the next copy of the same row, consecutive seeds) from the same calls. One p-value.
//   serial     (batch rows) contingency chi-square of consecutive draws (0,1), (2,3), ... of the row. One p-value.
//   alone-vs-batch    (batch rows, non-deterministic samplers) two-sample chi-square of the row drawn alone
//              against the row in the batch, on the head binning. One p-value.
//   agreement  (row cases of samplers with a counting fast path) the case's first 2^16 draws (a CPU sampler: 4 MiB
//              of replicated rows, 64 to 1024 draws: it computes the distribution in every call) also made through
//              the sampler's real sampling call (Sample on replicated rows, same seeds and offsets): hard, token for
//              token, for deterministic samplers (the first differing draw shown); otherwise a two-sample p-value.
//   equivalence  upper confidence bounds on the TV and the chi-square divergence between the sampler and the
//              reference on each usable binning, at the case's alpha (stats/equivalence.h), always reported. With
//              --equivalence EPS: hard for row cases (batch rows, a few thousand draws each for batch faults, only
//              report theirs): the case is certified only when every bound is < EPS; otherwise it is inconclusive,
//              with the draws a correct sampler would need. Reports before this check have none.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "samplecheck/campaign/result.h"
#include "samplecheck/core/error.h"
#include "samplecheck/stats/binning.h"
#include "samplecheck/suites/json_text.h"

namespace samplecheck::harness {

// What a batch adds to a row's evidence (docs/campaigns.md, batch cases).
struct BatchEvidence {
  std::span<const int32_t> sequence;          // this row's draws in order: draw i at offset + i
  std::span<const int32_t> partner_sequence;  // the partner row's draws from the same calls
  std::span<const double> partner_p0;         // the partner's reference probabilities
  bool deterministic = false;                 // the sampler claims a deterministic stream
  std::span<const int32_t> alone;             // deterministic: the first draws of this row sampled alone (batch
                                              // size 1) at the same seed and offsets
  std::span<const uint64_t> alone_histogram;  // otherwise: as many draws of the row alone, at other offsets
};

// The shipped sampling call behind a counting fast path (docs/campaigns.md): a case's first draws made both ways.
struct AgreementEvidence {
  uint64_t draws = 0;                       // draws compared (the first of the case: offsets offset .. offset + draws)
  bool deterministic = false;               // the sampler claims a deterministic stream: the two must be equal
  std::span<const uint64_t> fast;           // CountDraws histogram of those draws
  std::span<const uint64_t> sampled;        // Sample on replicated rows, same seeds and offsets
  int64_t first_difference = -1;            // deterministic: the first draw whose token differs (-1: none)
  int32_t fast_token = 0, sampled_token = 0;  // the tokens at that draw
};

// What a speculative-decoding case adds (harness/campaign/spec_campaign.h, docs/speculative.md). role "position":
// the tokens emitted at one position (p0 = p_j) with its rejection count; "residual": the tokens emitted on a
// rejection there (p0 = r_j); "length": the accepted lengths (p0 = their law) with the request's hard checks.
struct SpecEvidence {
  std::string role;                    // "position", "residual", "length"
  int32_t position = 0;                // 1-based (position, residual)
  // position j <= g: the rejection indicator against beta_j (exact binomial)
  bool has_rejection_test = false;
  uint64_t reached = 0, rejected = 0;
  double beta = 1.0;
  // length: hard checks of the request
  uint64_t structure_violations = 0;   // accepted out of 0..g, an accepted token that is not the draft token
  std::string structure_finding;
  bool determinism_run = false;        // re-verified alone, twice, and against the campaign's path
  uint64_t determinism_compared = 0;
  uint64_t determinism_differences = 0;
  std::string determinism_finding;
  bool batch_run = false;              // a request of a batch: its trials alone against in the batch
  uint64_t batch_compared = 0;
  uint64_t batch_differences = 0;
  std::string batch_finding;
  bool scripted_run = false;           // scripted coins (u = 0, u at the p/q edge, greedy) against the laws
  uint64_t scripted_probes = 0;
  uint64_t scripted_failures = 0;
  std::string scripted_finding;
};

// What a check sees of a finished case.
struct CaseEvidence {
  const CaseResult& planned;            // the case as planned: draws, alpha_plan, tv
  std::span<const double> p0;           // the reference probabilities judged (0 outside the kept set)
  const stats::BinningPlan& binning;    // head / tail / hash binnings, from p0 and the draw count only
  std::span<const uint64_t> histogram;  // draws per token (ambiguous tokens set apart when conditioned)
  uint64_t invalid_draws = 0;           // draws that returned an invalid token
  std::string_view sampler_error;       // the sampler failed while drawing ("" when it did not)
  const BatchEvidence* batch = nullptr; // a row of a batch case; nullptr for a row case
  const AgreementEvidence* agreement = nullptr;  // a row case of a sampler with a counting fast path
  const SpecEvidence* spec = nullptr;   // a case of a speculative-decoding campaign
  const struct StreamEvidence* stream = nullptr;  // seeds, handles, steps, refusal (stream.h)
  const struct ReplayEvidence* replay = nullptr;  // a case of a replay campaign (replay_campaign.h)
};

class CaseCheck {
 public:
  virtual ~CaseCheck() = default;

  virtual std::string_view Name() const = 0;
  // One line: what it tests, its alpha, its power, its assumption (`samplecheck list --checks`).
  virtual std::string_view Summary() const = 0;
  // The keys of the report's case object that hold this check's fields (docs/report-format.md).
  virtual std::vector<std::string> ReportKeys() const = 0;
  // Judges the evidence; returns this check's fields: an object with exactly the keys ReportKeys().
  virtual nlohmann::json Evaluate(const CaseEvidence& evidence) const = 0;
  // What the fields conclude for the case `c` (its plan: draws, alpha_plan). kParse when the fields are malformed
  // (a hand-edited or truncated report).
  virtual Result<std::vector<CheckOutcome>> Outcomes(const nlohmann::json& fields, const CaseResult& c) const = 0;
  // Whether reports written before this check existed may lack its keys (read as null then: the batch, agreement and
  // equivalence checks, whose fields are null where they do not apply).
  virtual bool KeysOptional() const { return false; }
  // Recomputes from stored fields what they determine (a statistic from the counts and expectations it was computed
  // from, a violation count from the tokens listed) and compares it with what is stored: kParse naming the field
  // and both values when they disagree, so a hand-edited report cannot pass the gate (samplecheck gate, merge:
  // report_check.h). Reuses the code Evaluate computes with. Default: nothing to recompute.
  virtual Status Recheck(const nlohmann::json& fields, const CaseResult& c) const;
};

// The checks of speculative-decoding cases (src/checks_spec.cpp): spec-rejection, spec-structure,
// spec-determinism, spec-batch-invariance, spec-scripted; CaseChecks() ends with them (null fields elsewhere).
std::vector<std::unique_ptr<const CaseCheck>> SpecCaseChecks();

// Every check of a campaign case, in evaluation order.
const std::vector<std::unique_ptr<const CaseCheck>>& CaseChecks();
const CaseCheck* FindCaseCheck(std::string_view name);

// Runs every check on the evidence: fills result.checks and result.outcomes. (tests, p_value and the status are
// set by ApplyCampaignVerdict, which needs every case.) kInternal when a check breaks an invariant of the campaign
// (a histogram of the wrong size): the case is an error, never a crash.
Status RunCaseChecks(const CaseEvidence& evidence, CaseResult& result);
// Reads the checks' fields of a stored case (its report object) into result.checks and result.outcomes. kParse
// naming the check and key when a check's fields are missing or malformed.
Status ReadCaseChecks(const nlohmann::json& case_object, CaseResult& result);

// Typed views of the fields of the built-in checks, for readers that need more than the outcomes (the A/B test of
// `gate --baseline`, the HTML charts). Empty / defaults when the case has no such fields.
struct StoredBinning {  // one entry of the pearson check's "binnings"
  std::string name;                // "head", "tail", "hash"
  std::vector<double> expected;    // p0 mass per cell (sums to 1)
  std::vector<uint64_t> observed;  // draws per cell
  std::vector<int32_t> cell_token; // head binning: the token of each single-token cell, -1 for the rest cell
  double pearson = 0.0, pearson_p = 1.0, g = 0.0, g_p = 1.0, min_expected = 0.0;
  uint64_t dof = 0;
};
std::vector<StoredBinning> StoredBinnings(const CaseResult& c);

struct StoredResidual {  // one entry of the max-abs-z check's "top_residuals"
  int32_t token = 0;
  uint64_t observed = 0;
  double expected = 0.0;  // N * p0
  double z = 0.0;         // (O - E) / sqrt(E (1 - p0))
};
struct StoredMaxAbsZ {
  double value = 0.0;      // |z| of the most extreme head token
  int32_t token = -1;      // -1: the test did not run
  double threshold = 0.0;  // z*, the normal-equivalent Bonferroni threshold
  double p_value = 1.0;    // Bonferroni-adjusted
  std::vector<StoredResidual> top_residuals;
};
StoredMaxAbsZ StoredMaxAbsZTest(const CaseResult& c);

struct StoredEquivalence {  // the equivalence check's fields
  bool present = false;          // false: no bound (a skipped or unsamplable case, an older report)
  Status bound;                  // ok, or why no bound could be computed (kInvalidArgument: too few draws for two
                                 // cells of E >= 10, no alpha in (0, 1)); the report's "error" field
  double alpha = 0.0;            // one-sided level of each bound
  double tv_upper = 0.0;         // the largest over the binnings
  double chi2_upper = 0.0;
  std::string worst_binning;     // where the largest TV bound was found
  double eps = 0.0;              // --equivalence (0: not asked)
  double chi2_eps = 0.0;         // --equivalence-chi2 (0: not asked)
  bool certified = false;        // eps > 0 and a row case (batch rows are not judged): every bound below eps
  bool lacks_draws = false;      // inconclusive with fewer draws than a correct sampler needs for eps
  double draws_to_certify = 0.0; // the median draws a correct sampler needs for eps on the largest binning
};
StoredEquivalence StoredEquivalenceOf(const CaseResult& c);

}  // namespace samplecheck::harness
