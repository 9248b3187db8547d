// `--sampler plugin:<path.so>[:config]`: a shared library speaking the C ABI of plugin_abi.h, loaded with
// dlopen(RTLD_NOW | RTLD_LOCAL). Contract breaks are errors, never crashes of the harness: a missing export or a
// wrong ABI version fails the load (kPlugin, naming the symbol or both versions); at sampling time a plugin that
// reports a failure, returns a token outside [-1, vocab) or a histogram that does not add up to the draws asked
// for makes the call fail with kPlugin (the sampler is failing; the message names the row and the bad value).
// A plugin that returns SAMPLECHECK_PLUGIN_INVALID_ARGUMENT fails the call with kInvalidArgument.
// (A plugin that dereferences a bad pointer still takes the process down: `process:` isolates such samplers.)
#pragma once

#include <memory>
#include <string_view>

#include "samplecheck/samplers/sampler.h"
#include "samplecheck/core/error.h"

namespace samplecheck::harness {

// Loads `path` and creates one plugin handle with `config` ("" when the spec has none). kPlugin when the library
// cannot be loaded, lacks a required export, has another ABI version, or refuses the config.
Result<std::unique_ptr<Sampler>> MakePluginSampler(std::string_view path, std::string_view config);

}  // namespace samplecheck::harness
