// A child process with three pipes and deadline-bounded message exchange: the transport of process_sampler.cpp.
// Every child is forked by one long-lived thread, gets SIGKILL as its parent-death signal and is registered for
// KillSamplerChildren (sampler_children.h). Internal to the harness.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "process_protocol.h"
#include "samplecheck/core/error.h"
#include "samplecheck/samplers/sampler_children.h"

namespace samplecheck::harness::process_internal {

using Clock = std::chrono::steady_clock;

// One frame of the protocol: u32 length (bytes after it) | u32 type | payload.
struct Frame {
  uint32_t type = 0;
  std::vector<uint8_t> payload;
};

inline constexpr uint32_t kMaxFrameBytes = protocol::kMaxFrameBytes;  // a larger length field is a protocol error

class ChildProcess {
 public:
  // Spawns /bin/sh -c command in a new process group, stdin/stdout/stderr on pipes.
  static Result<std::unique_ptr<ChildProcess>> Spawn(const std::string& command);
  // Spawns argv[0] (a path, not searched) with these arguments the same way. `noun` names the child in messages
  // ("process", "plugin host process").
  static Result<std::unique_ptr<ChildProcess>> SpawnProgram(const std::vector<std::string>& argv,
                                                            std::string noun = "process");
  ~ChildProcess();  // BYE is the caller's business; this closes stdin, waits briefly, then kills and reaps
  ChildProcess(const ChildProcess&) = delete;
  ChildProcess& operator=(const ChildProcess&) = delete;

  // Writes `request` (a whole frame, may be empty: then only reads) and reads one whole frame, all before
  // `deadline`. Any failure (deadline, EOF, broken pipe, a length above kMaxFrameBytes) kills the child and
  // returns kPlugin with the reason, the exit status and the stderr tail.
  // `timeout_s` is the deadline as the user set it, for the message.
  Result<Frame> Exchange(const std::vector<uint8_t>& request, Clock::time_point deadline, double timeout_s,
                         std::string_view what);

  // Best effort write without waiting (BYE at shutdown).
  void WriteBestEffort(const std::vector<uint8_t>& bytes);

  // Kills the process group, takes it out of the registry of KillSamplerChildren and reaps the child
  // (idempotent).
  void Kill();
  // "exited with status 1", "killed by signal 9", "still running".
  std::string ExitDescription();
  // The last bytes the child wrote to stderr (at most 4 KiB), trimmed; "" when none.
  std::string StderrTail() const;
  pid_t pid() const { return pid_; }

 private:
  ChildProcess() = default;
  Error Fail(std::string reason);  // kills, then builds the kPlugin error
  void DrainStderr();
  // True once the child has ended. Never reaps: the ended child stays a zombie, which keeps its pid (and so its
  // process-group id) from being reused until Kill() has taken the group out of the registry.
  bool Exited();

  pid_t pid_ = -1;
  size_t registry_slot_ = kMaxSamplerChildren;  // its entry in the registry of KillSamplerChildren, until Kill()
  std::string noun_ = "process";
  int stdin_fd_ = -1;
  int stdout_fd_ = -1;
  int stderr_fd_ = -1;
  bool exited_ = false;
  bool reaped_ = false;
  uint64_t exchanges_ = 0;
  int exit_code_ = 0;    // CLD_EXITED, CLD_KILLED or CLD_DUMPED once exited_
  int exit_value_ = 0;   // the exit status or the signal
  std::vector<uint8_t> pending_;  // bytes read from stdout beyond the last frame
  std::string stderr_tail_;
};

}  // namespace samplecheck::harness::process_internal
