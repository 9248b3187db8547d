// samplecheck mutants: the mutation score of the default gate (harness/mutants: mutation_score.h). Every mutant of
// the zoo (or of a registered family) goes through the campaigns and the property suite; the table says which
// check caught each one and how many draws (or property cases) that took. The control runs first and must pass.
// Exit 0 when every mutant is caught and the control passes, 1 otherwise, 2 on usage or input errors.
#include <iostream>
#include <memory>

#include "command_registry.h"
#include "options.h"
#include "samplecheck/mutants/mutation_score.h"

namespace samplecheck::tools {
namespace {

struct MutantsOptions {
  harness::MutationOptions score;
  bool no_properties = false;
  bool markdown = false;
  bool list = false;
  bool verbose = false;
};

int Mutants(MutantsOptions& o) {
  if (o.list) {
    std::cout << harness::FormatMutantFamily(o.score.family, o.markdown);
    return kExitOk;
  }
  o.score.properties = !o.no_properties;
  o.score.version = SAMPLECHECK_VERSION;
  auto score = harness::ScoreMutants(o.score, [&](const harness::MutantRow& row) {
    std::cerr << harness::FormatMutantRowProgress(row, o.verbose);
  });
  if (!score.ok()) {
    std::cerr << "samplecheck mutants: " << score.error().message << "\n";
    return kExitUsage;
  }
  std::cout << harness::FormatMutationHeader(*score) << harness::FormatMutationScore(*score, o.markdown);
  return score->Passed() ? kExitOk : kExitCheckFailed;
}

const bool registered = RegisterCommand(
    {"mutants", "run the default gate on every mutant of the zoo and print the mutation-score table",
     [](CLI::App& cmd) {
       auto o = std::make_shared<MutantsOptions>();
       cmd.add_option("--sampler-family", o->score.family,
                      "cpu (the CPU mutant zoo), cuda (the kernel mutants) or spec (the speculative-decoding verifier "
                      "mutants, judged by the spec suites)")
           ->check(CLI::IsMember({"cpu", "cuda", "spec"}));
       cmd.add_option("--suite", o->score.suites,
                      "campaign suites (repeatable; 'mutants' = the zoo's own cases); default: smoke mutants (cpu), "
                      "smoke (cuda), spec-smoke spec-standard (spec)");
       cmd.add_option("--profile", o->score.profile,
                      "the semantics every mutant is the faulty version of (default vllm)");
       cmd.add_option("--only", o->score.only, "only these mutants (repeatable); the control always runs");
       AddCount(cmd, "--max-success", o->score.max_success, "property cases per property (default 100)", 1, 100000000);
       cmd.add_flag("--no-properties", o->no_properties, "campaigns only");
       cmd.add_flag("--verbose,-v", o->verbose, "print every check that caught each mutant (stderr)");
       cmd.add_flag("--list", o->list, "list the zoo (name, bug class, source, fault) and exit");
       cmd.add_flag("--markdown", o->markdown, "print the table as Markdown (docs/mutants.md)");
       AddCount(cmd, "--jobs,-j", o->score.jobs, "parallel cases per campaign (default 0: one per core)", 0u, 4096u);
       return [o]() { return Mutants(*o); };
     }});

}  // namespace
}  // namespace samplecheck::tools
