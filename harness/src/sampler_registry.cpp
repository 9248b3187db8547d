// MakeSampler: the grammar of `--sampler <spec>` (docs in sampler_registry.h and ListSamplerKinds below).
//
//   spec    := "exact" [":" profile] | "cuda" [":" profile] | "mutant:" name
//            | "plugin:" path [":" config] | "process:" command
//
// The kind is the text before the first ':'. For plugin specs the path ends at the next ':' (config is everything
// after it, ':' included) unless the whole rest names an existing file. A profile in the spec overrides
// SamplerOptions::profile, so `--sampler exact:hf --profile vllm` checks the hf sampler against vllm semantics.
#include "samplecheck/harness/sampler_registry.h"

#include <sys/stat.h>

#include <string>

#include "samplecheck/harness/exact_sampler.h"
#include "samplecheck/harness/mutants.h"
#include "samplecheck/harness/plugin_sampler.h"
#include "samplecheck/harness/process_sampler.h"
#ifdef SAMPLECHECK_HAVE_CUDA
#include "samplecheck/harness/cuda_sampler.h"
#endif

namespace samplecheck::harness {
namespace {

std::string KnownKinds() {
  std::string kinds;
  for (const SamplerKindInfo& info : ListSamplerKinds()) {
    if (!kinds.empty()) kinds += ", ";
    kinds += info.spec;
  }
  return kinds;
}

bool IsFile(const std::string& path) {
  struct stat st {};
  return stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

Error Malformed(std::string_view spec, const std::string& why) {
  return InvalidArgument("malformed sampler spec '" + std::string(spec) + "': " + why + "; known kinds: " +
                         KnownKinds());
}

}  // namespace

std::vector<SamplerKindInfo> ListSamplerKinds() {
#ifdef SAMPLECHECK_HAVE_CUDA
  constexpr bool kHaveCuda = true;
#else
  constexpr bool kHaveCuda = false;
#endif
  return {
      {"exact[:profile]", "the reference's exact CPU sampler (inverse CDF, Philox); profile from the spec or --profile",
       true},
      {"cuda[:profile]",
       kHaveCuda ? "samplecheck's CUDA kernels (needs a GPU at run time)" : "samplecheck's CUDA kernels (not built in)",
       kHaveCuda},
      {"mutant:<name>", "the correct sampler plus one injected fault (the mutant zoo)", true},
      {"plugin:<path.so>[:config]", "a shared library speaking the C ABI of docs/plugin-abi.md", true},
      {"process:<command>", "an external program speaking docs/process-protocol.md on stdin/stdout", true},
  };
}

Result<std::unique_ptr<Sampler>> MakeSampler(std::string_view spec, const SamplerOptions& options) {
  const size_t colon = spec.find(':');
  const std::string_view kind = spec.substr(0, colon);
  const bool has_arg = colon != std::string_view::npos;
  const std::string_view arg = has_arg ? spec.substr(colon + 1) : std::string_view();

  if (spec.empty()) return Malformed(spec, "the spec is empty");

  if (kind == "exact" || kind == "cuda") {
    if (has_arg && arg.empty()) return Malformed(spec, "an empty profile after '" + std::string(kind) + ":'");
    const std::string profile = has_arg ? std::string(arg) : options.profile;
    if (kind == "exact") return MakeExactSampler(profile);
#ifdef SAMPLECHECK_HAVE_CUDA
    return MakeCudaSampler(profile);
#else
    return Unsupported("sampler 'cuda' is not available: this samplecheck was built without CUDA (configure with "
                       "-DSAMPLECHECK_CUDA=ON on a machine with nvcc); use 'exact' for the CPU reference sampler");
#endif
  }
  if (kind == "mutant") {
    if (arg.empty()) return Malformed(spec, "a mutant needs a name (mutant:<name>)");
    return MakeMutantSampler(arg, options);
  }
  if (kind == "plugin") {
    if (arg.empty()) return Malformed(spec, "a plugin needs a library path (plugin:<path.so>[:config])");
    std::string path(arg);
    std::string config;
    const size_t split = arg.find(':');
    if (split != std::string_view::npos && !IsFile(path)) {
      path = std::string(arg.substr(0, split));
      config = std::string(arg.substr(split + 1));
    }
    if (path.empty()) return Malformed(spec, "a plugin needs a library path (plugin:<path.so>[:config])");
    return MakePluginSampler(path, config);
  }
  if (kind == "process") {
    if (arg.find_first_not_of(" \t") == std::string_view::npos) {
      return Malformed(spec, "a process needs a command (process:<command>)");
    }
    return MakeProcessSampler(arg, ProcessSamplerOptions::FromEnvironment());
  }
  return InvalidArgument("unknown sampler kind '" + std::string(kind) + "' in spec '" + std::string(spec) +
                         "'; known kinds: " + KnownKinds());
}

}  // namespace samplecheck::harness
