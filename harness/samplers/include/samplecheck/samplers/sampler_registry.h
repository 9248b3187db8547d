// Samplers by spec, as the command line names them (`--sampler <spec>`). The kinds are one table (SamplerKinds():
// entries of the template of kinds.h, shared with the verifier and replay source kinds: name, usage, one-line
// summary, availability, factory); `samplecheck list`, the `--sampler` help of every command and the error for an
// unknown kind are all printed from it. A new kind is its source file (the sampler and its factory), one entry in
// src/sampler_registry.cpp and its test.
//
//   spec := kind [":" argument]     the kind is the text before the first ':' (kinds.h)
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "samplecheck/core/error.h"
#include "samplecheck/samplers/kinds.h"
#include "samplecheck/samplers/sampler.h"

namespace samplecheck::harness {

struct SamplerOptions {
  std::string profile = "vllm";  // semantics profile for samplers that implement several (exact, cuda, mutants)
  int device = -1;               // GPU samplers: the CUDA device (-1: the current one); others ignore it
};

// A --sampler spec split at its first ':' (kinds.h).
using SamplerSpec = KindSpec;

// An entry of the sampler kinds table: a factory of samplers given the split spec and the options.
using SamplerKind = Kind<std::unique_ptr<Sampler>, SamplerOptions>;
using SamplerFactory = decltype(SamplerKind::make);

// Every kind this program knows, in the order `list` prints them.
const std::vector<SamplerKind>& SamplerKinds();

// kInvalidArgument for an unknown kind or malformed spec (the messages of kinds.h, listing the known kinds), and for
// a bad SAMPLECHECK_PROCESS_TIMEOUT_S or SAMPLECHECK_PLUGIN_HOST (process, plugin); kPlugin for a plugin or process
// that fails to load or to handshake; kUnsupported for `cuda` without a GPU or without CUDA (KindNotBuiltIn).
Result<std::unique_ptr<Sampler>> MakeSampler(std::string_view spec, const SamplerOptions& options);

// The library file a plugin spec loads (plugin:<path.so>[:config], plugin-inproc:<path.so>[:config], also inside
// lossy:<spec>), for the commands that must not write over it; "" for every other spec (and a malformed one).
std::string PluginLibraryOfSpec(std::string_view spec);

// The help text of a --sampler option: "sampler spec: exact[:profile], cuda[:profile], ..." from the table.
std::string SamplerSpecHelp();

// A malformed spec: kInvalidArgument "malformed sampler spec '<spec>': <why>; known kinds: ...". For factories.
Error MalformedSamplerSpec(std::string_view spec, const std::string& why);

}  // namespace samplecheck::harness
