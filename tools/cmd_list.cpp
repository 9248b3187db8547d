// samplecheck list: the samplers this build can check, the built-in suites, the semantics profiles and the mutant
// zoo (harness/mutants.h: `--sampler mutant:<name>`, `samplecheck mutants`).
#include <iomanip>
#include <iostream>
#include <memory>

#include "command_registry.h"
#include "samplecheck/harness/mutants.h"
#include "samplecheck/harness/sampler_registry.h"
#include "samplecheck/harness/suite.h"
#include "samplecheck/reference/profile.h"

namespace samplecheck::tools {
namespace {

struct ListOptions {
  bool samplers = false;
  bool suites = false;
  bool profiles = false;
  bool mutants = false;
};

int List(const ListOptions& o) {
  const bool all = !o.samplers && !o.suites && !o.profiles && !o.mutants;
  if (all || o.samplers) {
    if (all) std::cout << "samplers (--sampler):\n";
    for (const auto& k : harness::ListSamplerKinds()) {
      std::cout << (all ? "  " : "") << std::left << std::setw(28) << k.spec << " "
                << std::setw(9) << (k.available ? "available" : "missing") << " " << k.summary << "\n";
    }
  }
  if (all || o.suites) {
    if (all) std::cout << "\nsuites (--suite; or a suite file, docs/suites.md):\n";
    for (const auto& s : harness::BuiltinSuites()) {
      std::cout << (all ? "  " : "") << std::left << std::setw(10) << s.name << " " << std::setw(3) << s.cases
                << " cases  " << s.description << "\n";
    }
  }
  if (all || o.profiles) {
    if (all) std::cout << "\nprofiles (--profile):\n";
    for (const Profile* p : AllProfiles()) {
      std::cout << (all ? "  " : "") << std::left << std::setw(22) << p->name << " " << p->summary << "\n";
    }
  }
  if (all || o.mutants) {
    if (all) std::cout << "\nmutants (--sampler mutant:<name>; samplecheck mutants, docs/mutants.md):\n";
    const std::string indent = all ? "  " : "";
    // The CPU zoo, then the kernel mutants when this program links them (test builds only).
    for (const char* family : {"cpu", "cuda"}) {
      for (const harness::MutantInfo& m : harness::MutantFamily(family)) {
        if (m.bug_class == "control") continue;
        std::cout << indent << std::left << std::setw(30) << m.name << " " << m.bug_class << "\n"
                  << indent << std::setw(30) << "" << " source: " << m.source << "\n";
      }
    }
  }
  return kExitOk;
}

const bool registered = RegisterCommand({"list", "samplers, built-in suites, semantics profiles and the mutant zoo", [](CLI::App& cmd) {
  auto o = std::make_shared<ListOptions>();
  cmd.add_flag("--samplers", o->samplers, "only the sampler kinds: spec, available|missing, summary");
  cmd.add_flag("--suites", o->suites, "only the built-in suites");
  cmd.add_flag("--profiles", o->profiles, "only the semantics profiles");
  cmd.add_flag("--mutants", o->mutants, "only the mutant zoo: name, bug class, source");
  return [o]() { return List(*o); };
}});

}  // namespace
}  // namespace samplecheck::tools
