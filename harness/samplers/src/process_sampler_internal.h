// What the process sampler offers the rest of the samplers library: the plugin host mode of isolated plugins
// (plugin_host_sampler.cpp) and the strict parsing of its deadlines. Internal.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "samplecheck/core/error.h"
#include "samplecheck/samplers/process_sampler.h"
#include "samplecheck/samplers/sampler.h"
#include "samplecheck/samplers/verifier.h"

namespace samplecheck::harness::process_internal {

// A ProcessSampler over samplecheck's plugin host running `library` (argv: the host program, then its arguments).
// The host's HELLO name is the whole Name() ("plugin:exact-vllm"; `fallback_name` when it names nothing) and its
// ERROR messages are quoted as they are (they name the plugin already); transport and protocol errors start with
// "plugin <library> (isolated)", after the handshake with "<Name()> (<library>, isolated)".
Result<std::unique_ptr<Sampler>> MakePluginHostSampler(const std::vector<std::string>& argv,
                                                       const std::string& library, std::string fallback_name,
                                                       const ProcessSamplerOptions& options);

// The same as a chain verifier (VERIFY): kInvalidArgument when the plugin does not export verify_chain.
Result<std::unique_ptr<Verifier>> MakePluginHostVerifier(const std::vector<std::string>& argv,
                                                         const std::string& library, std::string fallback_name,
                                                         const ProcessSamplerOptions& options);

// A deadline in seconds as a user writes it: a decimal number in (0, 86400], nothing around it. kInvalidArgument
// naming `variable`, the value (non-printable bytes as \xNN) and the allowed range.
Result<double> ParseTimeoutSeconds(std::string_view variable, std::string_view text);

}  // namespace samplecheck::harness::process_internal
