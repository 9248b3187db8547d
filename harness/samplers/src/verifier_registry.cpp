// `--verifier <spec>`: the verifier kinds (verifier.h).
#include <string>

#include "samplecheck/samplers/verifier.h"

namespace samplecheck::harness {

std::string VerifierSpecHelp() {
  return "verifier spec: exact[:profile] (the reference's own), mutant:<name> (samplecheck list --verifier-mutants)";
}

Result<std::unique_ptr<Verifier>> MakeVerifier(std::string_view spec, std::string_view profile) {
  const size_t colon = spec.find(':');
  const std::string_view kind = spec.substr(0, colon);
  const std::string_view arg = colon == std::string_view::npos ? std::string_view{} : spec.substr(colon + 1);
  if (kind == "exact") return MakeExactVerifier(arg.empty() ? profile : arg);
  if (kind == "mutant") return MakeVerifierMutant(arg, profile);
  if (kind == "plugin" || kind == "plugin-inproc" || kind == "process") {
    return Unsupported("verifier kind '" + std::string(kind) +
                       "' is not built yet (docs/speculative.md: plugins and processes verify through a later "
                       "ABI / protocol version); available: exact, mutant:<name>");
  }
  return InvalidArgument("unknown verifier spec '" + std::string(spec) + "'; " + VerifierSpecHelp());
}

}  // namespace samplecheck::harness
