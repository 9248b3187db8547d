// Inside the campaign library: what the check families (checks_<family>.cpp) share, and each family's checks in
// evaluation order. CaseChecks() (checks.cpp) is the one list: support, goodness of fit, per-token,
// batch/independence, agreement, equivalence, speculative.
#pragma once

#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "samplecheck/checks/checks.h"
#include "samplecheck/stats/binning.h"
#include "samplecheck/suites/json_text.h"

namespace samplecheck::harness {

using CheckList = std::vector<std::unique_ptr<const CaseCheck>>;

CheckList SupportChecks();      // checks_support.cpp: support
CheckList FitChecks();          // checks_fit.cpp: pearson
CheckList TokenChecks();        // checks_token.cpp: max-abs-z
CheckList BatchChecks();        // checks_batch.cpp: batch-invariance, independence, serial, alone-vs-batch
CheckList AgreementChecks();    // checks_agreement.cpp: agreement
CheckList EquivalenceChecks();  // checks_equivalence.cpp: equivalence
CheckList StreamChecks();       // checks_stream.cpp: seed-dependence, fresh-handle, step-repeats, refusal
CheckList ReplayChecks();       // checks_replay.cpp: replay-engine, -trainer, -label, -agreement, -ratio-bias
// The speculative family is SpecCaseChecks() (checks.h; checks_speculative.cpp).

// Draws at which a test's power is reported (CheckOutcome::draws_for_power).
inline constexpr double kScorePower = 0.99;

CheckOutcome MakeOutcome(std::string check, std::string scope, std::string test, CheckOutcome::Kind kind);

// Parses a check's fields with nlohmann's checked accessors; a malformed field becomes kParse naming the check.
template <class F>
Result<std::vector<CheckOutcome>> ParseOutcomes(std::string_view check, F&& parse) {
  try {
    return parse();
  } catch (const std::exception& e) {
    return Error{ErrorCode::kParse, "check " + std::string(check) + ": " + JsonErrorText(e)};
  }
}

// A count of a stored field: a whole number >= 0 (nlohmann would read -5 as 2^64 - 5); throws std::runtime_error
// naming `what` otherwise (a check's Recheck turns it into kParse).
uint64_t StoredCount(const nlohmann::json& j, const std::string& what);

// The observed counts of a binning; a histogram of the wrong size is a bug of the campaign (never user input): it
// throws std::logic_error, which RunCaseChecks turns into an error case.
stats::BinnedCounts Bin(const stats::Binning& b, std::span<const uint64_t> histogram);

// The fields of a two-sample chi-square (the agreement check of non-deterministic samplers, alone-vs-batch).
nlohmann::json TwoSampleFields(std::span<const uint64_t> a, std::span<const uint64_t> b);
// The outcome of a contingency or two-sample test's fields (none when untested).
std::vector<CheckOutcome> ContingencyOutcome(const nlohmann::json& j, const std::string& check, const std::string& test,
                                             const CaseResult& c);

}  // namespace samplecheck::harness
