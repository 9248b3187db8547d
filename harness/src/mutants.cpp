// Placeholder until the mutant zoo lands: every name is unknown. The mutant zoo replaces this file.
#include "samplecheck/harness/mutants.h"

#include <string>

namespace samplecheck::harness {

Result<std::unique_ptr<Sampler>> MakeMutantSampler(std::string_view name, const SamplerOptions&) {
  return InvalidArgument("no mutant named '" + std::string(name) + "' (the mutant zoo is not built yet)");
}

}  // namespace samplecheck::harness
