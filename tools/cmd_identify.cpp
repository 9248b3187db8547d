// samplecheck identify: which semantics profiles a sampler's draws are consistent with, probe by probe, with the
// evidence that excludes each other profile (campaign/identify.h). Exit 0 when at least one profile is
// consistent, 1 when none is, 2 on a usage or input error.
#include <fstream>
#include <iostream>
#include <memory>

#include "command_registry.h"
#include "samplecheck/campaign/identify.h"
#include "samplecheck/samplers/sampler_registry.h"
#include "samplecheck/reference/profile.h"

namespace samplecheck::tools {
namespace {

struct IdentifyCommandOptions {
  harness::IdentifyOptions identify;
  std::string profile;
  std::string json;
};

int Identify(IdentifyCommandOptions& o) {
  if (!o.profile.empty()) {
    if (!FindProfile(o.profile)) {
      std::cerr << "samplecheck identify: unknown profile \"" << o.profile << "\" (samplecheck list --profiles)\n";
      return kExitUsage;
    }
    o.identify.sampler_profile = o.profile;
  }
  auto result = harness::IdentifySampler(o.identify);
  if (!result.ok()) {
    std::cerr << "samplecheck identify: " << result.error().ToString() << "\n";
    return kExitUsage;
  }
  std::cout << harness::FormatIdentify(*result);
  if (!o.json.empty()) {
    std::ofstream out(o.json);
    out << harness::IdentifyToJson(*result).dump(1) << "\n";
    if (!out) {
      std::cerr << "samplecheck identify: cannot write " << o.json << "\n";
      return kExitUsage;
    }
  }
  return result->consistent_profiles.empty() ? kExitCheckFailed : kExitOk;
}

const bool registered = RegisterCommand(
    {"identify", "which semantics profiles a sampler's draws are consistent with, with evidence", [](CLI::App& cmd) {
       auto o = std::make_shared<IdentifyCommandOptions>();
       cmd.add_option("--sampler", o->identify.sampler_spec, harness::SamplerSpecHelp())->required();
       cmd.add_option("--profile", o->profile, "profile handed to samplers that implement several (exact, cuda)");
       cmd.add_option("--draws", o->identify.draws, "draws per probe")
           ->check(CLI::Range(uint64_t{1000}, uint64_t{1} << 34))
           ->capture_default_str();
       cmd.add_option("--seed", o->identify.seed, "seed of the probes' draws")->capture_default_str();
       cmd.add_option("--alpha", o->identify.alpha, "false-exclusion rate per probe and profile")
           ->check(CLI::Range(1e-15, 0.5))
           ->capture_default_str();
       cmd.add_option("--json", o->json, "write the probes, histograms and evidence as JSON");
       return [o]() { return Identify(*o); };
     }});

}  // namespace
}  // namespace samplecheck::tools
