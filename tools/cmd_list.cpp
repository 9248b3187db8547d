// samplecheck list: what this program can check and with what, printed from the tables themselves: the sampler
// kinds (samplers/sampler_registry.h), the verifier kinds (samplers/verifier.h) and the replay source kinds
// (samplers/replay_source.h), three tables of samplers/kinds.h printed by one function, the built-in suites (sampler
// and speculative-decoding suites), the semantics profiles (reference/profile.h), the case checks of a campaign
// (campaign/checks.h), the properties (properties/suite.h), the mutant zoo (samplers/mutants.h) and the verifier
// mutants (samplers/verifier.h). `--names` prints one name per line for scripts (scripts/properties-nightly takes its
// profiles from `samplecheck list --profiles --names`).
#include <iostream>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "command_registry.h"
#include "samplecheck/campaign/spec_campaign.h"
#include "samplecheck/checks/checks.h"
#include "samplecheck/properties/suite.h"
#include "samplecheck/reference/profile.h"
#include "samplecheck/samplers/kinds.h"
#include "samplecheck/samplers/mutants.h"
#include "samplecheck/samplers/replay_source.h"
#include "samplecheck/samplers/sampler_registry.h"
#include "samplecheck/samplers/verifier.h"
#include "samplecheck/suites/suite.h"

namespace samplecheck::tools {
namespace {

struct ListOptions {
  bool samplers = false;
  bool verifiers = false;
  bool replay_sources = false;
  bool suites = false;
  bool profiles = false;
  bool checks = false;
  bool properties = false;
  bool mutants = false;
  bool verifier_mutants = false;
  bool names = false;
};

// One section of the listing: its title, and per entry the name (--names) and the full line.
struct Section {
  bool selected;
  std::string title;
  std::vector<std::pair<std::string, std::string>> entries;
};

std::string Padded(const std::string& text, size_t width) {
  return text.size() >= width ? text : text + std::string(width - text.size(), ' ');
}

// A kinds table (samplers/kinds.h): per kind its usage, available|missing and its summary.
Section KindsSection(bool selected, std::string title, const harness::KindInfos& kinds) {
  Section section{selected, std::move(title), {}};
  for (const harness::KindInfo* k : kinds) {
    section.entries.emplace_back(
        k->name, Padded(k->usage, 34) + " " + Padded(k->available ? "available" : "missing", 9) + " " + k->summary);
  }
  return section;
}

std::vector<Section> Sections(const ListOptions& o) {
  std::vector<Section> sections;
  sections.push_back(KindsSection(o.samplers, "samplers (--sampler):", harness::InfosOf(harness::SamplerKinds())));
  sections.push_back(KindsSection(o.verifiers, "verifiers (run --suite spec-... --verifier; docs/speculative.md):",
                                  harness::InfosOf(harness::VerifierKinds())));
  sections.push_back(KindsSection(o.replay_sources, "replay sources (replay --engine, --trainer; docs/replay.md):",
                                  harness::InfosOf(harness::ReplaySourceKinds())));
  Section& suites = sections.emplace_back(Section{o.suites, "suites (--suite; or a suite file, docs/suites.md):", {}});
  for (const auto& s : harness::BuiltinSuites()) {
    suites.entries.emplace_back(s.name, Padded(s.name, 13) + " " + Padded(std::to_string(s.cases), 3) + " cases  " +
                                            s.description);
  }
  for (const auto& s : harness::BuiltinSpecSuites()) {
    suites.entries.emplace_back(s.name, Padded(s.name, 13) + " " + Padded(std::to_string(s.cases), 3) +
                                            " cases  (speculative decoding, --verifier) " + s.description);
  }
  Section& profiles = sections.emplace_back(Section{o.profiles, "profiles (--profile):", {}});
  for (const Profile* p : AllProfiles()) {
    profiles.entries.emplace_back(std::string(p->name), Padded(std::string(p->name), 22) + " " + std::string(p->summary));
  }
  Section& checks =
      sections.emplace_back(Section{o.checks, "case checks of a campaign (docs/statistics.md):", {}});
  for (const auto& check : harness::CaseChecks()) {
    checks.entries.emplace_back(std::string(check->Name()),
                                Padded(std::string(check->Name()), 12) + " " + std::string(check->Summary()));
  }
  Section& props =
      sections.emplace_back(Section{o.properties, "properties (samplecheck properties; docs/properties.md):", {}});
  for (const properties::PropertyInfo& info : properties::AllProperties()) {
    props.entries.emplace_back(info.name, Padded(info.name, 36) + " " + info.checks);
  }
  Section& mutants = sections.emplace_back(
      Section{o.mutants, "mutants (--sampler mutant:<name>; samplecheck mutants, docs/mutants.md):", {}});
  // The CPU zoo, then the kernel mutants when this program links them (test builds only).
  for (const char* family : {"cpu", "cuda"}) {
    for (const harness::MutantInfo& m : harness::MutantFamily(family)) {
      if (m.bug_class == "control") continue;
      mutants.entries.emplace_back(m.name, Padded(m.name, 30) + " " + m.bug_class + "\n" + Padded("", 30) +
                                               " source: " + m.source);
    }
  }
  Section& verifier_mutants = sections.emplace_back(Section{
      o.mutants || o.verifier_mutants, "verifier mutants (--verifier mutant:<name>; docs/speculative.md):", {}});
  for (const harness::VerifierMutantInfo& m : harness::VerifierMutants()) {
    verifier_mutants.entries.emplace_back(m.name, Padded(m.name, 30) + " " + m.bug_class + "\n" + Padded("", 30) +
                                                      " " + m.description);
  }
  return sections;
}

int List(const ListOptions& o) {
  const bool all = !o.samplers && !o.verifiers && !o.replay_sources && !o.suites && !o.profiles && !o.checks &&
                   !o.properties && !o.mutants && !o.verifier_mutants;
  bool first = true;
  for (const Section& section : Sections(o)) {
    if (!all && !section.selected) continue;
    if (all && !o.names) std::cout << (first ? "" : "\n") << section.title << "\n";
    first = false;
    for (const auto& [name, line] : section.entries) {
      if (o.names) {
        std::cout << name << "\n";
      } else if (all) {
        // Indent every line of the entry under its section title.
        std::string indented = "  " + line;
        for (size_t at = indented.find('\n'); at != std::string::npos; at = indented.find('\n', at + 3)) {
          indented.insert(at + 1, "  ");
        }
        std::cout << indented << "\n";
      } else {
        std::cout << line << "\n";
      }
    }
  }
  return kExitOk;
}

const bool registered = RegisterCommand(
    {"list", "samplers, verifiers, replay sources, built-in suites, profiles, case checks, properties and the mutants",
     [](CLI::App& cmd) {
       auto o = std::make_shared<ListOptions>();
       cmd.add_flag("--samplers", o->samplers, "only the sampler kinds: usage, available|missing, summary");
       cmd.add_flag("--verifiers", o->verifiers, "only the verifier kinds (speculative decoding)");
       cmd.add_flag("--replay-sources", o->replay_sources, "only the replay source kinds (samplecheck replay)");
       cmd.add_flag("--suites", o->suites, "only the built-in suites (sampler and speculative-decoding suites)");
       cmd.add_flag("--profiles", o->profiles, "only the semantics profiles");
       cmd.add_flag("--checks", o->checks, "only the case checks of a campaign");
       cmd.add_flag("--properties", o->properties, "only the properties");
       cmd.add_flag("--mutants", o->mutants, "only the mutants (sampler zoo and verifier mutants): name, bug class, source");
       cmd.add_flag("--verifier-mutants", o->verifier_mutants, "only the verifier mutants");
       cmd.add_flag("--names", o->names, "names only, one per line (for scripts)");
       return [o]() { return List(*o); };
     }});

}  // namespace
}  // namespace samplecheck::tools
