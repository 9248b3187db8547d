// The mutant zoo: the correct sampler plus one small injected fault (a policy or a flag), one mutant per fault.
// `--sampler mutant:<name>` reaches it through MakeSampler (sampler_registry.h); `samplecheck mutants` runs the
// default gate on every mutant and prints the mutation-score table (harness/mutants: mutation_score.h) (docs/mutants.md has the zoo, docs/power.md
// what the gate catches).
//
// Every mutant is the same sampler (harness/samplers/src/mutants.cpp): the exact processed distribution of
// reference/distribution.h, drawn by inverse CDF in ascending token id with the Philox uniform of
// reference/philox.h, exactly like `exact`. A mutant sets one hook of that pipeline (harness/samplers/src/mutants_fault.h):
//   profile       one field of the semantics profile changed (filter order, tie rule, comparison, ...)
//   params        the parameters the engine really uses for a row (a disabled value that is not a no-op, a
//                 parameter read from the wrong row of the batch)
//   distribution  a post-processing fault on the processed distribution (a dropped, added or skewed token, a
//                 leak onto masked tokens, a noise floor, ...)
//   draw          a fault in the draw (an unnormalized or fp32 CDF, a rejection loop that gives up, ...)
//   rng           a fault in the (seed, offset) of a draw (reused, not advanced, batch-dependent, seed ignored)
//   stream        state carried across calls (a uniform baked into a captured graph, keys reused across steps)
//   bad rows      what an unsamplable row returns
// `mutant:none` is that machinery with no fault: the control, which must pass every check.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "samplecheck/samplers/sampler.h"
#include "samplecheck/samplers/sampler_registry.h"
#include "samplecheck/core/error.h"

namespace samplecheck::harness {

// The name of the fault-free control mutant (not listed by ListMutants).
inline constexpr char kControlMutant[] = "none";

struct MutantInfo {
  std::string name;            // "no-renorm-cdf": `--sampler mutant:<name>`
  std::string bug_class;       // the class of docs/semantics.md §2 it models
  std::string source;          // the engine, issue or seed it models
  std::string fault;           // the injected fault, one sentence
  std::string hook;            // profile | params | distribution | draw | rng | stream | bad-row
  std::string expected_check;  // the check meant to catch it: "campaign:<case>/<test>" or "property:<name>"
  bool gross = false;          // TV > 0.1 on the case that exposes it
};

// Every mutant of the zoo, in a fixed order (the control `none` excluded).
const std::vector<MutantInfo>& ListMutants();
// nullptr when no mutant has that name (the control included: FindMutant("none") is its info).
const MutantInfo* FindMutant(std::string_view name);

// ---- Mutant families defined outside the harness ----------------------------------------------------------
// The CUDA kernel mutants (tests/kernel_mutants) are compiled only into test builds; a test program that links them
// registers each one at static initialization under a family ("cuda"). `mutant:<name>` then reaches it like any
// zoo mutant, and `samplecheck mutants --sampler-family <family>` runs the gate on the family. A family's control
// (no fault) is the member whose bug_class is "control"; it must pass everything, like `none` for the zoo.
using MutantFactory = std::function<Result<std::unique_ptr<Sampler>>(const SamplerOptions& options)>;
// false (nothing registered) when the name is taken.
bool RegisterExternalMutant(std::string family, MutantInfo info, MutantFactory make);
// The members of a family in registration order, its control included: "cpu" is the zoo (ListMutants, the control
// `none` first); any other family is what the program registered (empty when none is linked in).
std::vector<MutantInfo> MutantFamily(std::string_view family);

// The mutant `name` under options.profile (the semantics it is the correct sampler of, plus its fault).
// kInvalidArgument when no mutant has that name (the message lists the known mutants) or the profile is unknown.
Result<std::unique_ptr<Sampler>> MakeMutantSampler(std::string_view name, const SamplerOptions& options);

}  // namespace samplecheck::harness
