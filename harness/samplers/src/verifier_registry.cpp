// `--verifier <spec>`: the verifier kinds (verifier.h), a table of kinds.h, whose functions find a kind, word its
// errors and its help.
#include <sys/stat.h>

#include <string>
#include <utility>

#include "samplecheck/samplers/kinds.h"
#include "samplecheck/samplers/lossy.h"
#include "samplecheck/samplers/plugin_sampler.h"
#include "samplecheck/samplers/process_sampler.h"
#include "samplecheck/samplers/verifier.h"

#ifdef SAMPLECHECK_HAVE_CUDA
#include "samplecheck/samplers/cuda_verifier.h"
#endif

namespace samplecheck::harness {
namespace {

constexpr std::string_view kWhat = "verifier";
using Made = Result<std::unique_ptr<Verifier>>;
using VerifierFactory = decltype(VerifierKind::make);

bool IsFile(const std::string& path) {
  struct stat st {};
  return stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

Error Malformed(const KindSpec& spec, const std::string& why) {
  return MalformedKindSpec(kWhat, spec.text, why, InfosOf(VerifierKinds()));
}

// plugin:<path>[:config]: the path ends at the first ':' unless the whole rest names an existing file (the rule of
// --sampler plugin:, docs/plugin-abi.md).
Result<std::pair<std::string, std::string>> PluginPathAndConfig(const KindSpec& spec) {
  const std::string_view arg = spec.arg;
  std::string path(arg), config;
  const size_t split = arg.find(':');
  if (split != std::string_view::npos && !IsFile(path)) {
    path = std::string(arg.substr(0, split));
    config = std::string(arg.substr(split + 1));
  }
  if (path.empty()) {
    return Malformed(spec, "a plugin needs a library path (" + std::string(spec.kind) + ":<path.so>[:config])");
  }
  return std::pair{std::move(path), std::move(config)};
}

Made MakeExact(const KindSpec& spec, std::string_view profile) {
  return MakeExactVerifier(spec.arg.empty() ? profile : spec.arg);
}

// cuda[:profile]; no factory in a build without CUDA (the kind is not available: KindNotBuiltIn).
VerifierFactory CudaFactory() {
#ifdef SAMPLECHECK_HAVE_CUDA
  return [](const KindSpec& spec, std::string_view profile) -> Made {
    return MakeCudaVerifier(spec.arg.empty() ? profile : spec.arg);
  };
#else
  return nullptr;
#endif
}

Made MakeMutant(const KindSpec& spec, std::string_view profile) {
  if (spec.arg.empty()) return Malformed(spec, "a mutant needs a name (mutant:<name>)");
  return MakeVerifierMutant(spec.arg, profile);
}

Made MakePlugin(const KindSpec& spec, std::string_view) {
  auto plugin = PluginPathAndConfig(spec);
  if (!plugin.ok()) return plugin.error();
  auto options = ProcessSamplerOptions::FromEnvironment();
  if (!options.ok()) return options.error();
  return MakeIsolatedPluginVerifier(plugin->first, plugin->second, *options);
}

Made MakePluginInProcess(const KindSpec& spec, std::string_view) {
  auto plugin = PluginPathAndConfig(spec);
  if (!plugin.ok()) return plugin.error();
  return MakePluginVerifier(plugin->first, plugin->second);
}

Made MakeProcess(const KindSpec& spec, std::string_view) {
  if (spec.arg.find_first_not_of(" \t") == std::string_view::npos) {
    return Malformed(spec, "a process needs a command (process:<command>)");
  }
  auto options = ProcessSamplerOptions::FromEnvironment();
  if (!options.ok()) return options.error();
  return MakeProcessVerifier(spec.arg, *options);
}

// Any verifier declared an approximation (lossy.h).
Made MakeLossy(const KindSpec& spec, std::string_view profile) {
  if (spec.arg.empty()) return Malformed(spec, "lossy needs the spec of a verifier (lossy:<spec>)");
  auto inner = MakeVerifier(spec.arg, profile);
  if (!inner.ok()) return inner.error();
  return MakeLossyVerifier(std::move(*inner));
}

}  // namespace

const std::vector<VerifierKind>& VerifierKinds() {
  static const std::vector<VerifierKind> kinds = {
      {{"exact", "exact[:profile]", "the reference's own verifier (chain speculative sampling, exact laws)", true},
       MakeExact},
      {{"cuda", "cuda[:profile]",
        CudaKindSummary("samplecheck's CUDA chain verifier (profiles vllm and hf; needs a CUDA build and device)"),
        CudaBuiltIn()},
       CudaFactory()},
      {{"mutant", "mutant:<name>", "the exact verifier with one bug class (samplecheck list --verifier-mutants)", true},
       MakeMutant},
      {{"plugin", "plugin:<path.so>[:config]",
        "a plugin exporting samplecheck_plugin_verify_chain, isolated in samplecheck-plugin-host", true},
       MakePlugin},
      {{"plugin-inproc", "plugin-inproc:<path.so>[:config]", "the same plugin loaded into samplecheck", true},
       MakePluginInProcess},
      {{"process", "process:<command>", "a process answering VERIFY (docs/process-protocol.md)", true}, MakeProcess},
      {{"lossy", "lossy:<spec>",
        "any verifier spec declared an approximation: campaigns state its measured TV instead of a pass/fail "
        "(gate --max-tv)",
        true},
       MakeLossy},
  };
  return kinds;
}

std::string VerifierSpecHelp() { return KindSpecHelp(kWhat, InfosOf(VerifierKinds())); }

Result<std::unique_ptr<Verifier>> MakeVerifier(std::string_view spec, std::string_view profile) {
  return MakeKind(kWhat, VerifierKinds(), spec, profile);
}

}  // namespace samplecheck::harness
