// samplecheck identify: which semantics profiles a sampler's draws are consistent with, probe by probe, with the
// evidence that excludes each other profile (campaign/identify.h). Exit 0 when at least one profile is
// consistent, 1 when none is, 2 on a usage or input error.
#include <fstream>
#include <iostream>
#include <memory>

#include "command_registry.h"
#include "options.h"
#include "samplecheck/campaign/json_text.h"
#include "samplecheck/core/files.h"
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
  if (!o.json.empty()) {
    if (Status st = CheckWritable(o.json); !st.ok()) {
      std::cerr << "samplecheck identify: " << st.error().message << "\n";
      return kExitUsage;
    }
  }
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
    // Atomically, never throwing: a sampler's message may hold any bytes (invalid UTF-8 becomes U+FFFD).
    if (Status st = WriteFileAtomically(o.json, harness::JsonText(harness::IdentifyToJson(*result)) + "\n");
        !st.ok()) {
      std::cerr << "samplecheck identify: " << st.error().message << "\n";
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
       AddUnsigned(cmd, "--draws", o->identify.draws, "draws per probe (default 2^18)", 1000, uint64_t{1} << 34);
       AddUnsigned(cmd, "--seed", o->identify.seed, "seed of the probes' draws (default 1)");
       AddReal(cmd, "--alpha", o->identify.alpha, "false-exclusion rate per probe and profile (default 1e-6)", 1e-15,
               0.5);
       cmd.add_option("--json", o->json, "write the probes, histograms and evidence as JSON");
       return [o]() { return Identify(*o); };
     }});

}  // namespace
}  // namespace samplecheck::tools
