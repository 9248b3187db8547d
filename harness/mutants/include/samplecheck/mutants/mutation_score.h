// The mutation score of the default gate. Every mutant of a family (samplers/mutants.h: the CPU zoo, or the CUDA
// kernel mutants a test program registers) goes through the gate a sampler would face, a campaign over the smoke
// suite and the zoo's own cases (MutantsSuiteJson) plus the property suite, and the score says for each mutant
// whether it was caught, by which check, and how many draws (or property cases) that took.
// The control (the member of bug class "control": the mutant machinery without a fault) runs first and must pass
// everything: a gate that rejects it has false alarms, and its verdicts on the mutants mean nothing.
//
// "needed" estimates the draws at which the check that caught a mutant has power 0.99 at the case's own per-test
// alpha, from the case's statistics (CheckOutcome::draws_for_power): support violations: ln(100) / (violations /
// draws); Pearson: lambda_hat = X^2 - dof, N = lambda*(dof, alpha, 0.99) / (lambda_hat / draws); max-|z|:
// N = draws * ((z* + 2.33) / |z|)^2. An estimate from one run, not a measurement: docs/power.md has the measured
// power curves.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "samplecheck/core/error.h"
#include "samplecheck/suites/suite.h"

namespace samplecheck::harness {

// The suite of extra campaign cases the zoo needs beyond the smoke suite (samplecheck-suite/1 JSON, embedded):
// cases that expose the subtle mutants (a +1% skew, a 1e-4 leak, a noise floor, a u == 0 draw) with enough draws.
std::string_view MutantsSuiteJson();

// Suites by name; "mutants" is MutantsSuiteJson(), any other name goes through LoadSuite.
Result<std::vector<Suite>> LoadMutantSuites(const std::vector<std::string>& names);

struct MutationOptions {
  std::string family = "cpu";       // "cpu" (the zoo) or a registered family ("cuda")
  std::vector<std::string> suites;  // default: smoke + mutants (cpu), smoke (any other family)
  std::string profile = "vllm";     // the semantics every mutant is the faulty version of
  std::vector<std::string> only;    // only these mutants (the control always runs)
  int max_success = 100;            // property cases per property
  bool properties = true;           // run the property suite too
  unsigned jobs = 0;                // parallel cases per campaign (0: one per core)
  std::string version;              // samplecheck version for the campaigns' reports
};

struct MutantCatch {
  std::string check;   // "smoke/topk: support", "property:mass-sums-to-one"
  double needed = 0;   // draws (campaign) or cases (property)
  bool draws = true;   // a campaign catch (needed counts draws) or a property (needed counts cases)
};

struct MutantRow {
  std::string name;
  std::string bug_class;
  bool control = false;
  std::vector<MutantCatch> catches;  // campaign catches by draws needed, then properties
  std::optional<Error> error;        // the gate could not run (a campaign or the property suite failed to start)
  double seconds = 0;

  bool Caught() const { return !error && !catches.empty(); }
  // The row is as it should be: a mutant caught, or the control passing everything.
  bool Ok() const { return !error && (control ? catches.empty() : !catches.empty()); }
  std::string Verdict() const;  // caught | SURVIVED | passes | FALSE ALARM | ERROR
  std::string CaughtBy() const;
  std::string Needed() const;
};

struct MutationScore {
  std::string family;
  std::string profile;
  std::vector<std::string> suites;
  bool properties = false;
  int max_success = 0;                           // property cases per property
  std::vector<std::string> excluded_properties;  // fail on the correct sampler itself: evidence against nothing
  std::vector<MutantRow> rows;                   // the control first

  size_t caught() const;
  size_t mutants() const;  // rows that are not the control
  bool Passed() const;     // every row Ok()
};

// Runs the gate on every member of options.family. on_row is called as each row finishes (progress).
// kInvalidArgument for an unknown family or mutant name, a family without a control, or a suite that cannot be
// loaded.
Result<MutationScore> ScoreMutants(const MutationOptions& options,
                                   const std::function<void(const MutantRow&)>& on_row = nullptr);

// family "spec" (ScoreMutants forwards to it): the verifier mutants (samplers/verifier.h) through the spec suites
// (default spec-smoke and spec-standard; campaigns only), the exact verifier as the control.
Result<MutationScore> ScoreSpecMutants(const MutationOptions& options,
                                       const std::function<void(const MutantRow&)>& on_row = nullptr);
std::string FormatSpecMutantFamily(bool markdown);

// The header line, the table (text or Markdown), the score line and "VERDICT: PASS|FAIL".
std::string FormatMutationScore(const MutationScore& score, bool markdown);
// The header line alone (printed before the rows are run).
std::string FormatMutationHeader(const MutationScore& score);
// One progress line for a finished row ("  name  caught  1.2 s  smoke/topk: support (2 cases, 1 properties)");
// with verbose, every catch on its own line before it.
std::string FormatMutantRowProgress(const MutantRow& row, bool verbose);
// The zoo of a family: name, bug class, source, fault (text or Markdown with the hook).
std::string FormatMutantFamily(std::string_view family, bool markdown);

}  // namespace samplecheck::harness
