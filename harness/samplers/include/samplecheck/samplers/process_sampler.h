// `--sampler process:<command>`: an external program (a Python sampler, a vLLM worker, ...) that speaks the
// length-prefixed binary protocol of docs/process-protocol.md on its stdin and stdout. The command runs under
// /bin/sh -c in its own process group; its stderr is captured and the last lines are quoted in error messages.
//
// The child is forked with SIGKILL as its parent-death signal and registered for KillSamplerChildren
// (sampler_children.h): it does not outlive samplecheck.
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
#include "samplecheck/samplers/verifier.h"
#include "samplecheck/core/error.h"

namespace samplecheck::harness {

// The environment variable that sets both deadlines, in seconds: a decimal number in (0, 86400].
inline constexpr char kProcessTimeoutEnv[] = "SAMPLECHECK_PROCESS_TIMEOUT_S";

struct ProcessSamplerOptions {
  double handshake_timeout_s = 60.0;  // from spawn to the process's HELLO (an interpreter importing torch is slow)
  double request_timeout_s = 300.0;   // per request (SAMPLE, PROCESSED, COUNT chunk); the harness chunks big ones
  // Each in (0, 86400] seconds (MakeProcessSampler says which is not).
  // Defaults, overridden by the environment when set: SAMPLECHECK_PROCESS_TIMEOUT_S (both deadlines). A value that
  // is not a decimal number in (0, 86400] is kInvalidArgument naming the variable, the value and the range.
  static Result<ProcessSamplerOptions> FromEnvironment();
};

// Spawns `command` and performs the handshake. kInvalidArgument for an empty command or a deadline outside
// (0, 86400] s; kPlugin when the process cannot be started, exits, does not complete the handshake in time or does
// not speak the protocol; an ERROR in answer to the HELLO (a client that cannot serve) is the error of its code,
// with its message.
Result<std::unique_ptr<Sampler>> MakeProcessSampler(std::string_view command,
                                                    const ProcessSamplerOptions& options = {});

// `--verifier process:<command>`: the process as a speculative-decoding chain verifier (the VERIFY message of
// docs/process-protocol.md). The errors of MakeProcessSampler; kInvalidArgument when its HELLO does not set the
// VERIFY capability bit. Answers are checked (a malformed VERIFIED stops the process: kPlugin; an accepted length
// outside 0..g or a token outside [-1, vocab): kPlugin naming the request, the trial and the value).
Result<std::unique_ptr<Verifier>> MakeProcessVerifier(std::string_view command,
                                                      const ProcessSamplerOptions& options = {});

}  // namespace samplecheck::harness
