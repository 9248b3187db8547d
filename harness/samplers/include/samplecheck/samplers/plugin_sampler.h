// Plugins: shared libraries speaking the C ABI of plugin_abi.h (docs/plugin-abi.md), in two ways.
//
// `--sampler plugin:<path.so>[:config]` (MakeIsolatedPluginSampler, the default): the library is loaded by a child
// process, samplecheck's plugin host (the program samplecheck-plugin-host), which serves it over the process
// protocol of docs/process-protocol.md on its stdin/stdout; the harness side is the process sampler with its
// deadlines. A plugin that crashes, exits or never returns fails the call with kPlugin naming the plugin and the
// signal, the exit status or the deadline (every later call fails with the same message); it never ends or hangs
// samplecheck. The host applies the checks below inside the child, and its answers are checked again.
//
// `--sampler plugin-inproc:<path.so>[:config]` (MakePluginSampler): the library is loaded into samplecheck with
// dlopen(RTLD_NOW | RTLD_LOCAL). Faster (no copy of the logits between processes), but a plugin that crashes,
// exits or hangs takes samplecheck with it.
//
// Either way, contract breaks are errors, never crashes of the harness: a missing export or a wrong ABI version
// fails the load (kPlugin, naming the symbol or both versions); at sampling time a plugin that reports a failure,
// returns a token outside [-1, vocab) or a histogram that does not add up to the draws asked for makes the call
// fail with kPlugin (the sampler is failing; the message names the row and the bad value). A plugin that returns
// SAMPLECHECK_PLUGIN_INVALID_ARGUMENT fails the call with kInvalidArgument. Both give the same Name()
// ("plugin:<name>[:config]"), capabilities and messages.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "samplecheck/core/error.h"
#include "samplecheck/samplers/process_sampler.h"
#include "samplecheck/samplers/sampler.h"
#include "samplecheck/samplers/verifier.h"

namespace samplecheck::harness {

// In process: loads `path` and creates one plugin handle with `config` ("" when the spec has none). kPlugin when
// the library cannot be loaded, lacks a required export, has another ABI version, or refuses the config.
Result<std::unique_ptr<Sampler>> MakePluginSampler(std::string_view path, std::string_view config);

// Isolated: starts the plugin host (FindPluginHost) on `path` and `config` and performs the handshake, within the
// deadlines of `options` (ProcessSamplerOptions::FromEnvironment() for the command line). The same load errors as
// MakePluginSampler, with the same codes and messages; kPlugin when the host cannot be found or started, or
// crashes, exits or hangs while loading the plugin.
Result<std::unique_ptr<Sampler>> MakeIsolatedPluginSampler(std::string_view path, std::string_view config,
                                                           const ProcessSamplerOptions& options = {});

// ---- Plugins as speculative-decoding verifiers (docs/speculative.md, "Plugging a verifier in") -------------------
// `--verifier plugin-inproc:<path.so>[:config]`: the plugin's samplecheck_plugin_verify_chain (ABI version 2) in
// process. The load errors of MakePluginSampler; kInvalidArgument naming the plugin, its library and its ABI version
// when it does not export verify_chain (a version-1 plugin never does).
Result<std::unique_ptr<Verifier>> MakePluginVerifier(std::string_view path, std::string_view config);

// `--verifier plugin:<path.so>[:config]`: the same through the plugin host (VERIFY messages of the process
// protocol); the isolation of MakeIsolatedPluginSampler, the same errors.
Result<std::unique_ptr<Verifier>> MakeIsolatedPluginVerifier(std::string_view path, std::string_view config,
                                                             const ProcessSamplerOptions& options = {});

// One plugin handle as a sampler and, when it exports verify_chain, a verifier (else null): the plugin host.
struct PluginPair {
  std::unique_ptr<Sampler> sampler;
  std::unique_ptr<Verifier> verifier;
};
Result<PluginPair> LoadPluginPair(std::string_view path, std::string_view config);

// ---- Where the plugin host is found ----------------------------------------------------------------------------
inline constexpr char kPluginHostProgram[] = "samplecheck-plugin-host";
inline constexpr char kPluginHostEnv[] = "SAMPLECHECK_PLUGIN_HOST";

struct PluginHostSearch {
  std::optional<std::string> env;  // the value of SAMPLECHECK_PLUGIN_HOST, when it is set
  std::string executable;          // the running program (/proc/self/exe), "" when unknown
  std::string built;               // the host of the build tree this library was built in (fixed at build time)
};
// The search of this process: its environment, /proc/self/exe, and the build tree's host.
PluginHostSearch PluginHostSearchOfThisProcess();

// The rule, first match wins:
//   1. $SAMPLECHECK_PLUGIN_HOST, when set: it must name an executable file (else kInvalidArgument naming the
//      variable and its value; an empty value too);
//   2. samplecheck-plugin-host next to the running program (an installed samplecheck: bin/);
//   3. the host of the build tree the samplers library was built in (samplecheck, its tests and the test-only
//      samplecheck-kernel-mutants run from a build tree).
// kPlugin when none is found, naming the places looked at and the remedies (the variable, plugin-inproc:).
Result<std::string> FindPluginHost(const PluginHostSearch& search = PluginHostSearchOfThisProcess());

}  // namespace samplecheck::harness
