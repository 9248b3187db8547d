// Samplers by spec, as the command line names them (`--sampler <spec>`):
//   exact                  the reference's exact CPU sampler (profile from SamplerOptions::profile)
//   cuda                   the CUDA kernels (when built and a GPU is present; profile vllm or hf)
//   mutant:<name>          the correct sampler plus one injected fault (the mutant zoo)
//   plugin:<path.so>[:cfg] a shared library speaking the C ABI of plugin_abi.h
//   process:<command>      an external program speaking the protocol of docs/process-protocol.md
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "samplecheck/harness/sampler.h"
#include "samplecheck/reference/error.h"

namespace samplecheck::harness {

struct SamplerOptions {
  std::string profile = "vllm";  // semantics profile for samplers that implement several (exact, cuda, mutants)
};

// kInvalidArgument for an unknown kind or malformed spec (the message lists the known kinds); kPlugin for a
// plugin or process that fails to load or to handshake; kUnsupported for `cuda` without a GPU.
Result<std::unique_ptr<Sampler>> MakeSampler(std::string_view spec, const SamplerOptions& options);

struct SamplerKindInfo {
  std::string spec;       // "exact", "cuda", "mutant:<name>", "plugin:<path.so>[:config]", "process:<command>"
  std::string summary;
  bool available = true;  // false: e.g. cuda without a GPU in this build
};
std::vector<SamplerKindInfo> ListSamplerKinds();

}  // namespace samplecheck::harness
