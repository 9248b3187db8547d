// The sampler kinds (sampler_registry.h): a table of kinds.h, whose functions find a kind, word its errors and its
// help. A kind's factory receives the spec split at its first ':'.
//
//   exact [":" profile] | cuda [":" profile]   a profile in the spec overrides SamplerOptions::profile, so
//                                              `--sampler exact:hf --profile vllm` checks the hf sampler against
//                                              vllm semantics
//   mutant ":" name
//   plugin ":" path [":" config]               isolated in the plugin host; the path ends at the next ':' (config
//                                              is everything after it) unless the whole rest names an existing file
//   plugin-inproc ":" path [":" config]        the same, loaded into this process
//   process ":" command
#include "samplecheck/samplers/sampler_registry.h"

#include <sys/stat.h>

#include <string>
#include <utility>

#include "samplecheck/samplers/exact_sampler.h"
#include "samplecheck/samplers/lossy.h"
#include "samplecheck/samplers/mutants.h"
#include "samplecheck/samplers/plugin_sampler.h"
#include "samplecheck/samplers/process_sampler.h"
#ifdef SAMPLECHECK_HAVE_CUDA
#include "samplecheck/samplers/cuda_sampler.h"
#endif

namespace samplecheck::harness {
namespace {

constexpr std::string_view kWhat = "sampler";

bool IsFile(const std::string& path) {
  struct stat st {};
  return stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

// exact[:profile], cuda[:profile]: the profile of the spec, else the options'.
Result<std::string> ProfileOf(const SamplerSpec& spec, const SamplerOptions& options) {
  if (spec.has_arg && spec.arg.empty()) {
    return MalformedSamplerSpec(spec.text, "an empty profile after '" + std::string(spec.kind) + ":'");
  }
  return spec.has_arg ? std::string(spec.arg) : options.profile;
}

Result<std::unique_ptr<Sampler>> MakeExact(const SamplerSpec& spec, const SamplerOptions& options) {
  auto profile = ProfileOf(spec, options);
  if (!profile.ok()) return profile.error();
  return MakeExactSampler(*profile);
}

// cuda[:profile]; no factory in a build without CUDA (the kind is not available: KindNotBuiltIn).
SamplerFactory CudaFactory() {
#ifdef SAMPLECHECK_HAVE_CUDA
  return [](const SamplerSpec& spec, const SamplerOptions& options) -> Result<std::unique_ptr<Sampler>> {
    auto profile = ProfileOf(spec, options);
    if (!profile.ok()) return profile.error();
    return MakeCudaSampler(*profile, options.device);
  };
#else
  return nullptr;
#endif
}

Result<std::unique_ptr<Sampler>> MakeMutant(const SamplerSpec& spec, const SamplerOptions& options) {
  if (spec.arg.empty()) return MalformedSamplerSpec(spec.text, "a mutant needs a name (mutant:<name>)");
  return MakeMutantSampler(spec.arg, options);
}

// plugin:<path>[:config] and plugin-inproc:<path>[:config]: the library path and the config.
Result<std::pair<std::string, std::string>> PluginPathAndConfig(const SamplerSpec& spec) {
  const std::string_view arg = spec.arg;
  const std::string needs = "a plugin needs a library path (" + std::string(spec.kind) + ":<path.so>[:config])";
  if (arg.empty()) return MalformedSamplerSpec(spec.text, needs);
  std::string path(arg);
  std::string config;
  const size_t split = arg.find(':');
  if (split != std::string_view::npos && !IsFile(path)) {
    path = std::string(arg.substr(0, split));
    config = std::string(arg.substr(split + 1));
  }
  if (path.empty()) return MalformedSamplerSpec(spec.text, needs);
  return std::pair{std::move(path), std::move(config)};
}

Result<std::unique_ptr<Sampler>> MakePlugin(const SamplerSpec& spec, const SamplerOptions&) {
  auto plugin = PluginPathAndConfig(spec);
  if (!plugin.ok()) return plugin.error();
  auto options = ProcessSamplerOptions::FromEnvironment();
  if (!options.ok()) return options.error();
  return MakeIsolatedPluginSampler(plugin->first, plugin->second, *options);
}

Result<std::unique_ptr<Sampler>> MakePluginInProcess(const SamplerSpec& spec, const SamplerOptions&) {
  auto plugin = PluginPathAndConfig(spec);
  if (!plugin.ok()) return plugin.error();
  return MakePluginSampler(plugin->first, plugin->second);
}

Result<std::unique_ptr<Sampler>> MakeProcess(const SamplerSpec& spec, const SamplerOptions&) {
  if (spec.arg.find_first_not_of(" \t") == std::string_view::npos) {
    return MalformedSamplerSpec(spec.text, "a process needs a command (process:<command>)");
  }
  auto options = ProcessSamplerOptions::FromEnvironment();
  if (!options.ok()) return options.error();
  return MakeProcessSampler(spec.arg, *options);
}

Result<std::unique_ptr<Sampler>> MakeLossy(const SamplerSpec& spec, const SamplerOptions& options) {
  if (spec.arg.empty()) return MalformedSamplerSpec(spec.text, "lossy needs the spec of a sampler (lossy:<spec>)");
  auto inner = MakeSampler(spec.arg, options);
  if (!inner.ok()) return inner.error();
  return MakeLossySampler(std::move(*inner));
}

}  // namespace

const std::vector<SamplerKind>& SamplerKinds() {
  static const std::vector<SamplerKind> kinds = {
      {{"exact", "exact[:profile]",
        "the reference's exact CPU sampler (inverse CDF, Philox); profile from the spec or --profile", true},
       MakeExact},
      {{"cuda", "cuda[:profile]", CudaKindSummary("samplecheck's CUDA kernels (needs a GPU at run time)"),
        CudaBuiltIn()},
       CudaFactory()},
      {{"mutant", "mutant:<name>", "the correct sampler plus one injected fault (the mutant zoo)", true}, MakeMutant},
      {{"plugin", "plugin:<path.so>[:config]",
        "a shared library speaking the C ABI of docs/plugin-abi.md, run in a child process "
        "(samplecheck-plugin-host): its crash, exit or hang fails the case",
        true},
       MakePlugin},
      {{"plugin-inproc", "plugin-inproc:<path.so>[:config]",
        "the same, loaded into samplecheck itself: faster, but its crash, exit or hang is samplecheck's", true},
       MakePluginInProcess},
      {{"process", "process:<command>", "an external program speaking docs/process-protocol.md on stdin/stdout", true},
       MakeProcess},
      {{"lossy", "lossy:<spec>",
        "any sampler spec declared an approximation: campaigns state its measured TV instead of a pass/fail "
        "(gate --max-tv)",
        true},
       MakeLossy},
  };
  return kinds;
}

Error MalformedSamplerSpec(std::string_view spec, const std::string& why) {
  return MalformedKindSpec(kWhat, spec, why, InfosOf(SamplerKinds()));
}

std::string SamplerSpecHelp() { return KindSpecHelp(kWhat, InfosOf(SamplerKinds())); }

Result<std::unique_ptr<Sampler>> MakeSampler(std::string_view spec, const SamplerOptions& options) {
  return MakeKind(kWhat, SamplerKinds(), spec, options);
}

std::string PluginLibraryOfSpec(std::string_view text) {
  const SamplerSpec spec = SplitKindSpec(text);
  if (!spec.has_arg) return "";
  if (spec.kind == "lossy") return PluginLibraryOfSpec(spec.arg);
  if (spec.kind != "plugin" && spec.kind != "plugin-inproc") return "";
  auto plugin = PluginPathAndConfig(spec);
  return plugin.ok() ? plugin->first : "";
}

}  // namespace samplecheck::harness
