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

#include "samplecheck/checks/evidence.h"
#include "samplecheck/checks/result.h"
#include "samplecheck/core/error.h"
#include "samplecheck/stats/binning.h"
#include "samplecheck/suites/json_text.h"

namespace samplecheck::harness {

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

// The checks of speculative-decoding cases (src/checks_speculative.cpp): spec-rejection, spec-structure,
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

// The stream checks' fields of a row case judged alone (a shard's, for merge: ShardRowEvidence::stream).
nlohmann::json JudgeStreamFields(const CaseResult& planned, const struct StreamEvidence& stream);

// Two stored numbers agree when both are NaN, both the same infinity, or within a relative 1e-7 (the same code on
// another machine's libm and Boost may differ in the last digits; a tampered value differs by far more).
bool SameStoredNumber(double stored, double recomputed);

// Typed views of the fields of the built-in checks, for readers that need more than the outcomes (the A/B test of
// `gate --baseline`, the HTML charts). Empty / defaults when the case has no such fields.
struct StoredBinning {              // one entry of the pearson check's "binnings"
  std::string name;                 // "head", "tail", "hash"
  std::vector<double> expected;     // p0 mass per cell (sums to 1)
  std::vector<uint64_t> observed;   // draws per cell
  std::vector<int32_t> cell_token;  // head binning: the token of each single-token cell, -1 for the rest cell
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
  bool present = false;     // false: no bound (a skipped or unsamplable case, an older report)
  Status bound;             // ok, or why no bound could be computed (kInvalidArgument: too few draws for two
                            // cells of E >= 10, no alpha in (0, 1)); the report's "error" field
  double alpha = 0.0;       // one-sided level of each bound
  double tv_upper = 0.0;    // the largest over the binnings
  double chi2_upper = 0.0;
  std::string worst_binning;      // where the largest TV bound was found
  double eps = 0.0;               // --equivalence (0: not asked)
  double chi2_eps = 0.0;          // --equivalence-chi2 (0: not asked)
  bool certified = false;         // eps > 0 and a row case (batch rows are not judged): every bound below eps
  bool lacks_draws = false;       // inconclusive with fewer draws than a correct sampler needs for eps
  double draws_to_certify = 0.0;  // the median draws a correct sampler needs for eps on the largest binning
};
StoredEquivalence StoredEquivalenceOf(const CaseResult& c);

}  // namespace samplecheck::harness
