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

const std::vector<VerifierKind>& VerifierKinds() {
  using Made = Result<std::unique_ptr<Verifier>>;
  static const std::vector<VerifierKind> kinds = [] {
    std::vector<VerifierKind> v;
    v.push_back({"exact", "exact[:profile]", "the reference's own verifier (chain speculative sampling, exact laws)",
                 true, [](std::string_view, std::string_view arg, std::string_view profile) -> Made {
                   return MakeExactVerifier(arg.empty() ? profile : arg);
                 }});
#ifdef SAMPLECHECK_HAVE_CUDA
    const bool cuda = true;
#else
    const bool cuda = false;
#endif
    v.push_back({"cuda", "cuda[:profile]",
                 "samplecheck's CUDA chain verifier (profiles vllm and hf; needs a CUDA build and device)", cuda,
                 [](std::string_view, std::string_view arg, std::string_view profile) -> Made {
#ifdef SAMPLECHECK_HAVE_CUDA
                   return MakeCudaVerifier(arg.empty() ? profile : arg);
#else
                   (void)arg;
                   (void)profile;
                   return Unsupported("verifier 'cuda' is not available: this samplecheck was built without CUDA "
                                      "(configure with -DSAMPLECHECK_CUDA=ON on a machine with nvcc); use 'exact' for "
                                      "the CPU reference verifier");
#endif
                 }});
    v.push_back({"mutant", "mutant:<name>", "the exact verifier with one bug class (samplecheck list --verifier-mutants)",
                 true, [](std::string_view, std::string_view arg, std::string_view profile) -> Made {
                   return MakeVerifierMutant(arg, profile);
                 }});
    v.push_back({"plugin", "plugin:<path.so>[:config]",
                 "a plugin exporting samplecheck_plugin_verify_chain, isolated in samplecheck-plugin-host", true,
                 [](std::string_view spec, std::string_view arg, std::string_view) -> Made {
                   auto plugin = PluginPathAndConfig(spec, "plugin", arg);
                   if (!plugin.ok()) return plugin.error();
                   auto options = ProcessSamplerOptions::FromEnvironment();
                   if (!options.ok()) return options.error();
                   return MakeIsolatedPluginVerifier(plugin->first, plugin->second, *options);
                 }});
    v.push_back({"plugin-inproc", "plugin-inproc:<path.so>[:config]", "the same plugin loaded into samplecheck", true,
                 [](std::string_view spec, std::string_view arg, std::string_view) -> Made {
                   auto plugin = PluginPathAndConfig(spec, "plugin-inproc", arg);
                   if (!plugin.ok()) return plugin.error();
                   return MakePluginVerifier(plugin->first, plugin->second);
                 }});
    v.push_back({"process", "process:<command>", "a process answering VERIFY (docs/process-protocol.md)", true,
                 [](std::string_view spec, std::string_view arg, std::string_view) -> Made {
                   if (arg.find_first_not_of(" \t") == std::string_view::npos) {
                     return InvalidArgument("verifier spec '" + std::string(spec) +
                                            "': a process needs a command (process:<command>)");
                   }
                   auto options = ProcessSamplerOptions::FromEnvironment();
                   if (!options.ok()) return options.error();
                   return MakeProcessVerifier(arg, *options);
                 }});
    v.push_back({"lossy", "lossy:<spec>",
                 "any verifier spec declared an approximation: campaigns state its measured TV instead of a pass/fail "
                 "(gate --max-tv)",
                 true,
                 [](std::string_view, std::string_view arg, std::string_view profile) -> Made {
                   auto inner = MakeVerifier(arg, profile);  // any verifier declared an approximation (lossy.h)
                   if (!inner.ok()) return inner.error();
                   return MakeLossyVerifier(std::move(*inner));
                 }});
    return v;
  }();
  return kinds;
}

std::string VerifierSpecHelp() {
  std::string help = "verifier spec:";
  for (const VerifierKind& k : VerifierKinds()) {
    help += (help.back() == ':' ? " " : ", ") + k.usage + " (" + k.summary + ")";
  }
  return help;
}

Result<std::unique_ptr<Verifier>> MakeVerifier(std::string_view spec, std::string_view profile) {
  const size_t colon = spec.find(':');
  const std::string_view kind = spec.substr(0, colon);
  const std::string_view arg = colon == std::string_view::npos ? std::string_view{} : spec.substr(colon + 1);
  for (const VerifierKind& k : VerifierKinds()) {
    if (k.name == kind) return k.make(spec, arg, profile);
  }
  return InvalidArgument("unknown verifier spec '" + std::string(spec) + "'; " + VerifierSpecHelp());
}

}  // namespace samplecheck::harness
