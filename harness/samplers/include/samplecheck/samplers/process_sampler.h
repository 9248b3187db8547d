// `--sampler process:<command>`: an external program (a Python sampler, a vLLM worker, ...) that speaks the
// length-prefixed binary protocol of docs/process-protocol.md on its stdin and stdout. The command runs under
// /bin/sh -c in its own process group; its stderr is captured and the last lines are quoted in error messages.
//
// Nothing the process does can hang or crash the harness: every exchange has a deadline (poll), a process that
// exits, closes its pipes, answers garbage or runs past the deadline is killed (SIGKILL to its process group),
// reaped, and the call fails with kPlugin; every later call fails with the same message. SIGPIPE is ignored in
// the harness process once the first process sampler starts. A well-formed ERROR answer fails only that call.
//
// One ProcessSampler serves one thread at a time.
#pragma once

#include <memory>
#include <string_view>

#include "samplecheck/samplers/sampler.h"
#include "samplecheck/core/error.h"

namespace samplecheck::harness {

struct ProcessSamplerOptions {
  double handshake_timeout_s = 60.0;  // from spawn to the process's HELLO (an interpreter importing torch is slow)
  double request_timeout_s = 300.0;   // per request (SAMPLE, PROCESSED, COUNT chunk); the harness chunks big ones
  // Defaults, overridden by the environment when set: SAMPLECHECK_PROCESS_TIMEOUT_S (both timeouts, seconds).
  static ProcessSamplerOptions FromEnvironment();
};

// Spawns `command` and performs the handshake. kInvalidArgument for an empty command; kPlugin when the process
// cannot be started, exits, or does not complete the handshake in time.
Result<std::unique_ptr<Sampler>> MakeProcessSampler(std::string_view command,
                                                    const ProcessSamplerOptions& options = {});

}  // namespace samplecheck::harness
