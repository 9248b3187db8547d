// samplecheck list: what this program can check and with what, printed from the tables themselves: the sampler
// kinds (samplers/sampler_registry.h), the built-in suites, the semantics profiles (reference/profile.h), the case
// checks of a campaign (campaign/checks.h), the properties (properties/suite.h) and the mutant zoo
// (samplers/mutants.h). `--names` prints one name per line for scripts (scripts/properties-nightly takes its
// profiles from `samplecheck list --profiles --names`).
#include <iomanip>
#include <iostream>
#include <memory>

#include "command_registry.h"
#include "samplecheck/campaign/checks.h"
#include "samplecheck/campaign/suite.h"
#include "samplecheck/properties/suite.h"
#include "samplecheck/reference/profile.h"
#include "samplecheck/samplers/mutants.h"
#include "samplecheck/samplers/sampler_registry.h"

namespace samplecheck::tools {
namespace {

struct ListOptions {
  bool samplers = false;
  bool suites = false;
  bool profiles = false;
  bool checks = false;
  bool properties = false;
  bool mutants = false;
  bool names = false;
};

int List(const ListOptions& o) {
  const bool all = !o.samplers && !o.suites && !o.profiles && !o.checks && !o.properties && !o.mutants;
  const std::string indent = all ? "  " : "";
  std::cout << std::left;
  if (all || o.samplers) {
    if (all) std::cout << "samplers (--sampler):\n";
    for (const harness::SamplerKind& k : harness::SamplerKinds()) {
      if (o.names) {
        std::cout << k.name << "\n";
        continue;
      }
      std::cout << indent << std::setw(28) << k.usage << " " << std::setw(9) << (k.available ? "available" : "missing")
                << " " << k.summary << "\n";
    }
  }
  if (all || o.suites) {
    if (all) std::cout << "\nsuites (--suite; or a suite file, docs/suites.md):\n";
    for (const auto& s : harness::BuiltinSuites()) {
      if (o.names) {
        std::cout << s.name << "\n";
        continue;
      }
      std::cout << indent << std::setw(10) << s.name << " " << std::setw(3) << s.cases << " cases  " << s.description
                << "\n";
    }
  }
  if (all || o.profiles) {
    if (all) std::cout << "\nprofiles (--profile):\n";
    for (const Profile* p : AllProfiles()) {
      if (o.names) {
        std::cout << p->name << "\n";
        continue;
      }
      std::cout << indent << std::setw(22) << p->name << " " << p->summary << "\n";
    }
  }
  if (all || o.checks) {
    if (all) std::cout << "\ncase checks of a campaign (docs/statistics.md):\n";
    for (const auto& check : harness::CaseChecks()) {
      if (o.names) {
        std::cout << check->Name() << "\n";
        continue;
      }
      std::cout << indent << std::setw(12) << check->Name() << " " << check->Summary() << "\n";
    }
  }
  if (all || o.properties) {
    if (all) std::cout << "\nproperties (samplecheck properties; docs/properties.md):\n";
    for (const properties::PropertyInfo& info : properties::AllProperties()) {
      if (o.names) {
        std::cout << info.name << "\n";
        continue;
      }
      std::cout << indent << std::setw(36) << info.name << " " << info.checks << "\n";
    }
  }
  if (all || o.mutants) {
    if (all) std::cout << "\nmutants (--sampler mutant:<name>; samplecheck mutants, docs/mutants.md):\n";
    // The CPU zoo, then the kernel mutants when this program links them (test builds only).
    for (const char* family : {"cpu", "cuda"}) {
      for (const harness::MutantInfo& m : harness::MutantFamily(family)) {
        if (m.bug_class == "control") continue;
        if (o.names) {
          std::cout << m.name << "\n";
          continue;
        }
        std::cout << indent << std::setw(30) << m.name << " " << m.bug_class << "\n"
                  << indent << std::setw(30) << "" << " source: " << m.source << "\n";
      }
    }
  }
  return kExitOk;
}

const bool registered = RegisterCommand(
    {"list", "samplers, built-in suites, profiles, case checks, properties and the mutant zoo", [](CLI::App& cmd) {
       auto o = std::make_shared<ListOptions>();
       cmd.add_flag("--samplers", o->samplers, "only the sampler kinds: usage, available|missing, summary");
       cmd.add_flag("--suites", o->suites, "only the built-in suites");
       cmd.add_flag("--profiles", o->profiles, "only the semantics profiles");
       cmd.add_flag("--checks", o->checks, "only the case checks of a campaign");
       cmd.add_flag("--properties", o->properties, "only the properties");
       cmd.add_flag("--mutants", o->mutants, "only the mutant zoo: name, bug class, source");
       cmd.add_flag("--names", o->names, "names only, one per line (for scripts)");
       return [o]() { return List(*o); };
     }});

}  // namespace
}  // namespace samplecheck::tools
