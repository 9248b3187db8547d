// samplecheck identify: which semantics profiles a sampler's draws are consistent with, probe by probe, with the
// evidence that excludes each other profile (campaign/identify.h). Exit 0 when at least one profile is
// consistent, 1 when none is, 2 on a usage or input error, 128 + the signal when a stop signal cut it (the finished
// probes are printed and written, marked interrupted: not a verdict).
#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>

#include "command_registry.h"
#include "options.h"
#include "samplecheck/campaign/identify.h"
#include "samplecheck/core/files.h"
#include "samplecheck/reference/profile.h"
#include "samplecheck/samplers/sampler_registry.h"
#include "samplecheck/session/stop_signals.h"
#include "samplecheck/suites/json_text.h"

namespace samplecheck::tools {
namespace {

struct IdentifyCommandOptions {
  harness::IdentifyOptions identify;
  std::string profile;
  std::string json;
  bool progress = false;
};

// The plugin library an identify reads (plugin:<path>[:config], plugin-inproc:...), "" for other samplers.
std::string PluginPathOf(const std::string& spec) {
  for (const std::string kind : {"plugin:", "plugin-inproc:"}) {
    if (spec.rfind(kind, 0) != 0) continue;
    const std::string rest = spec.substr(kind.size());
    return rest.substr(0, rest.find(':'));
  }
  return "";
}

// --json replaces a file only when it is absent, empty or an earlier identify result: `identify --json suite.json`
// must not destroy a suite (identify reads no file of its own to compare the path with).
Status ReplaceableIdentifyJson(const std::string& path) {
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec) || std::filesystem::file_size(path, ec) == 0) return Status::Ok();
  Result<std::string> text = ReadFileCapped(path, uint64_t{1} << 28, "an identify result");
  if (!text.ok()) return text.error();
  Result<nlohmann::json> j = harness::ParseJsonStrict(*text, path);
  if (j.ok() && j->is_object() && j->contains("consistent_profiles") && j->contains("probes")) return Status::Ok();
  return InvalidArgument("--json " + path + " exists and is not an identify result (it would be replaced): write "
                         "elsewhere, or remove it first");
}

int Identify(IdentifyCommandOptions& o) {
  if (!o.json.empty()) {
    Status st = CheckOutputs({{"--json", o.json}}, {{"the plugin", PluginPathOf(o.identify.sampler_spec)}});
    if (st.ok()) st = ReplaceableIdentifyJson(o.json);
    if (!st.ok()) {
      std::cerr << "samplecheck identify: " << st.error().message << "\n";
      return kExitUsage;
    }
  }
  auto locks = LockOutputs({{"--json", o.json}});
  if (!locks.ok()) {
    std::cerr << "samplecheck identify: " << locks.error().message << "\n";
    return kExitUsage;
  }
  if (!o.profile.empty()) {
    if (Result<const Profile*> p = ProfileByName(o.profile); !p.ok()) {
      std::cerr << "samplecheck identify: " << p.error().message << "\n";
      return kExitUsage;
    }
    o.identify.sampler_profile = o.profile;
  }
  harness::StopSignals
      signals;  // SIGINT/SIGTERM: no further probe; what the finished ones show is printed (not a verdict)
  o.identify.stop = harness::StopSignals::Flag();
  if (o.progress) o.identify.progress = harness::Progress::Mode::kLines;
  auto result = harness::IdentifySampler(o.identify);
  if (!result.ok()) {
    if (harness::StopSignals::Stopped()) return harness::StopSignals::ExitCode();
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
  if (result->interrupted) return harness::StopSignals::ExitCode();
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
       cmd.add_flag("--progress", o->progress, "a line on stderr as each probe finishes (its seconds): a run cut by "
                    "SIGINT or SIGTERM also prints what the finished probes exclude, marked INTERRUPTED");
       return [o]() { return Identify(*o); };
     }});

}  // namespace
}  // namespace samplecheck::tools
