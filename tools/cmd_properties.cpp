// samplecheck properties: the RapidCheck property suites of properties/ against any sampler
// (`--sampler exact|cuda|mutant:<name>|plugin:<path.so>|process:<command>`). docs/properties.md lists them.
//
//   samplecheck properties --sampler plugin:./libmine.so --profile vllm
//   samplecheck properties --sampler exact --profile hf --property nucleus-minimality --seed 7 --max-success 2000
//   samplecheck properties --list
//
// Exit codes: 0 every property passed (or was skipped: a capability the sampler lacks) and at least one passed, 1 a
// property failed (its shrunk counterexample and replay line are printed) or none was judged, 2 usage error.
#include <iomanip>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "command_registry.h"
#include "options.h"
#include "samplecheck/properties/suite.h"
#include "samplecheck/samplers/sampler_registry.h"

namespace samplecheck::tools {
namespace {

struct PropertiesOptions {
  std::string sampler;
  std::string profile;
  uint64_t seed = 20260401;
  int max_success = 100;
  int max_size = 100;
  std::vector<std::string> only;
  std::vector<std::string> skip;
  std::vector<std::string> exclude_rows;
  bool no_min_p = false;
  std::string reproduce;
  double tolerance = 1e-5;
  bool list = false;
  bool quiet = false;
};

int ListProperties() {
  for (const properties::PropertyInfo& info : properties::AllProperties()) {
    std::cout << std::left << std::setw(36) << info.name << " " << std::setw(22) << properties::NeedName(info.need)
              << " " << info.checks << "\n";
  }
  return kExitOk;
}

int RunProperties(const PropertiesOptions& o) {
  if (o.list) return ListProperties();
  if (o.sampler.empty()) {
    std::cerr << "samplecheck properties: --sampler is required (see `samplecheck list --samplers`)\n";
    return kExitUsage;
  }
  harness::SamplerOptions sampler_options;
  if (!o.profile.empty()) sampler_options.profile = o.profile;
  auto sampler = harness::MakeSampler(o.sampler, sampler_options);
  if (!sampler.ok()) {
    std::cerr << "samplecheck properties: " << sampler.error().ToString() << "\n";
    return kExitUsage;
  }
  properties::PropertyOptions options;
  options.seed = o.seed;
  options.max_success = o.max_success;
  options.max_size = o.max_size;
  options.only = o.only;
  options.skip = o.skip;
  options.exclude_rows = o.exclude_rows;
  options.hold_min_p_zero = o.no_min_p;
  options.reproduce = o.reproduce;
  options.tolerance = o.tolerance;
  options.verbose = !o.quiet;
  const std::string profile = !o.profile.empty() ? o.profile : (*sampler)->GetCapabilities().profile;
  if (!o.quiet) {
    std::cerr << "properties of " << (*sampler)->Name() << " under profile " << (profile.empty() ? "?" : profile)
              << " (seed " << o.seed << ", max_success " << o.max_success << ")\n";
  }
  std::string fenced;
  for (const std::string& k : o.exclude_rows) fenced += (fenced.empty() ? "" : ", ") + k;
  for (const std::string& n : o.skip) fenced += (fenced.empty() ? "" : ", ") + std::string("property ") + n;
  if (o.no_min_p) fenced += (fenced.empty() ? "" : ", ") + std::string("min_p other than 0");
  auto suite = properties::RunPropertySuite(**sampler, options, profile, o.sampler);
  if (!suite.ok()) {
    std::cerr << "samplecheck properties: " << suite.error().ToString() << "\n";
    return kExitUsage;
  }
  for (const properties::PropertyResult& r : suite->results) {
    if (r.status == properties::PropertyStatus::kPassed || r.status == properties::PropertyStatus::kSkipped) continue;
    std::cout << "\n" << properties::PropertyStatusName(r.status) << ": " << r.name << " after " << r.cases
              << " cases\n" << r.message << "\n";
    if (!r.replay.empty()) std::cout << "replay: " << r.replay << "\n";
  }
  std::cout << suite->sampler << " / " << suite->profile << ": " << suite->count(properties::PropertyStatus::kPassed)
            << " passed, " << suite->count(properties::PropertyStatus::kFailed) << " failed, "
            << suite->count(properties::PropertyStatus::kSkipped) << " skipped, "
            << suite->count(properties::PropertyStatus::kGaveUp) + suite->count(properties::PropertyStatus::kError)
            << " gave up or errored" << (fenced.empty() ? "" : "; left out: " + fenced) << "\n";
  // Skipped properties are no evidence: a run in which none passed is not a pass (a sampler lacking every
  // capability the properties need, or every property left out).
  if (suite->passed() && suite->count(properties::PropertyStatus::kPassed) == 0) {
    std::cout << "not a pass: no property was judged (every one skipped or left out); a verdict needs at least one "
                 "property that ran\n";
    return kExitCheckFailed;
  }
  return suite->passed() ? kExitOk : kExitCheckFailed;
}

const bool registered = RegisterCommand(
    {"properties", "RapidCheck property suites (processed distribution and draws) against a sampler", [](CLI::App& cmd) {
       auto o = std::make_shared<PropertiesOptions>();
       cmd.add_option("--sampler", o->sampler, harness::SamplerSpecHelp());
       cmd.add_option("--profile", o->profile, "semantics profile to check against (default: the sampler's own)");
       AddUnsigned(cmd, "--seed", o->seed, "RapidCheck seed (default 20260401, the CI seed)");
       AddCount(cmd, "--max-success", o->max_success,
                "cases per property (default 100; statistical ones run a share of it)", 1, 100000000);
       AddCount(cmd, "--max-size", o->max_size,
                "RapidCheck size bound (default 100; row length of the container generators)", 1, 1000000);
       cmd.add_option("--property", o->only, "run only this property (repeatable; --list shows them)");
       cmd.add_option("--skip-property", o->skip,
                      "leave this property out (repeatable): an engine's documented finding, pinned by its own test");
       cmd.add_option("--exclude-rows", o->exclude_rows,
                      "leave rows of this kind out of the generators (repeatable; e.g. huge-tiny, pos-inf): an engine's "
                      "documented limitation, fenced in the open and printed in the summary");
       cmd.add_flag("--no-min-p", o->no_min_p,
                    "hold min_p at 0 in every generated case (and skip monotone-min-p): for an engine path that refuses "
                    "min-p (TensorRT-LLM vanilla, SGLang seeded, vLLM spec decoding), fenced in the open and printed "
                    "in the summary");
       cmd.add_option("--reproduce", o->reproduce, "replay one failing case: the reproduce string of a replay line");
       AddReal(cmd, "--tolerance", o->tolerance,
               "relative tolerance of probability relations for fp32 samplers (default 1e-5)", 0.0, 1.0);
       cmd.add_flag("--list", o->list, "list the properties and the capability each needs");
       cmd.add_flag("-q,--quiet", o->quiet, "print only failures and the summary");
       return [o]() { return RunProperties(*o); };
     }});

}  // namespace
}  // namespace samplecheck::tools
