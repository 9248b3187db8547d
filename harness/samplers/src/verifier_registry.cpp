// `--verifier <spec>`: the verifier kinds (verifier.h).
#include <sys/stat.h>

#include <string>
#include <utility>

#include "samplecheck/samplers/lossy.h"
#include "samplecheck/samplers/plugin_sampler.h"
#include "samplecheck/samplers/process_sampler.h"
#include "samplecheck/samplers/verifier.h"

#ifdef SAMPLECHECK_HAVE_CUDA
#include "samplecheck/samplers/cuda_verifier.h"
#endif

namespace samplecheck::harness {
namespace {

bool IsFile(const std::string& path) {
  struct stat st {};
  return stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

// plugin:<path>[:config]: the path ends at the first ':' unless the whole rest names an existing file (the rule of
// --sampler plugin:, docs/plugin-abi.md).
Result<std::pair<std::string, std::string>> PluginPathAndConfig(std::string_view spec, std::string_view kind,
                                                                std::string_view arg) {
  std::string path(arg), config;
  const size_t split = arg.find(':');
  if (split != std::string_view::npos && !IsFile(path)) {
    path = std::string(arg.substr(0, split));
    config = std::string(arg.substr(split + 1));
  }
  if (path.empty()) {
    return InvalidArgument("verifier spec '" + std::string(spec) + "': a plugin needs a library path (" +
                           std::string(kind) + ":<path.so>[:config])");
  }
  return std::pair{std::move(path), std::move(config)};
}

}  // namespace

std::string VerifierSpecHelp() {
  return "verifier spec: exact[:profile] (the reference's own), cuda[:profile] (samplecheck's CUDA chain verifier, "
         "profiles vllm and hf; needs a CUDA build and device), mutant:<name> (samplecheck list --verifier-mutants), "
         "plugin:<path.so>[:config] (a plugin exporting samplecheck_plugin_verify_chain, isolated in "
         "samplecheck-plugin-host), plugin-inproc:<path.so>[:config] (the same, loaded into samplecheck), "
         "process:<command> (a process answering VERIFY, docs/process-protocol.md), lossy:<spec> (any of these declared "
         "an approximation: campaigns state its distance, gate --max-tv judges it)";
}

Result<std::unique_ptr<Verifier>> MakeVerifier(std::string_view spec, std::string_view profile) {
  const size_t colon = spec.find(':');
  const std::string_view kind = spec.substr(0, colon);
  const std::string_view arg = colon == std::string_view::npos ? std::string_view{} : spec.substr(colon + 1);
  if (kind == "exact") return MakeExactVerifier(arg.empty() ? profile : arg);
  if (kind == "mutant") return MakeVerifierMutant(arg, profile);
  if (kind == "lossy") {  // any verifier declared an approximation (lossy.h)
    auto inner = MakeVerifier(arg, profile);
    if (!inner.ok()) return inner.error();
    return MakeLossyVerifier(std::move(*inner));
  }
  if (kind == "cuda") {
#ifdef SAMPLECHECK_HAVE_CUDA
    return MakeCudaVerifier(arg.empty() ? profile : arg);
#else
    return Unsupported("verifier 'cuda' is not available: this samplecheck was built without CUDA (configure with "
                       "-DSAMPLECHECK_CUDA=ON on a machine with nvcc); use 'exact' for the CPU reference verifier");
#endif
  }
  if (kind == "plugin" || kind == "plugin-inproc") {
    auto plugin = PluginPathAndConfig(spec, kind, arg);
    if (!plugin.ok()) return plugin.error();
    if (kind == "plugin-inproc") return MakePluginVerifier(plugin->first, plugin->second);
    auto options = ProcessSamplerOptions::FromEnvironment();
    if (!options.ok()) return options.error();
    return MakeIsolatedPluginVerifier(plugin->first, plugin->second, *options);
  }
  if (kind == "process") {
    if (arg.find_first_not_of(" \t") == std::string_view::npos) {
      return InvalidArgument("verifier spec '" + std::string(spec) + "': a process needs a command (process:<command>)");
    }
    auto options = ProcessSamplerOptions::FromEnvironment();
    if (!options.ok()) return options.error();
    return MakeProcessVerifier(arg, *options);
  }
  return InvalidArgument("unknown verifier spec '" + std::string(spec) + "'; " + VerifierSpecHelp());
}

}  // namespace samplecheck::harness
