// The mutant zoo: the correct sampler plus one small injected fault (a policy or a flag), one mutant per fault.
// `--sampler mutant:<name>` reaches it through MakeSampler (sampler_registry.h).
#pragma once

#include <memory>
#include <string_view>

#include "samplecheck/harness/sampler.h"
#include "samplecheck/harness/sampler_registry.h"
#include "samplecheck/reference/error.h"

namespace samplecheck::harness {

// The mutant `name` under options.profile. kInvalidArgument when no mutant has that name (the message lists the
// known mutants).
Result<std::unique_ptr<Sampler>> MakeMutantSampler(std::string_view name, const SamplerOptions& options);

}  // namespace samplecheck::harness
