// A child process with three pipes and deadline-bounded message exchange: the transport of process_sampler.cpp.
// Internal to the harness.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "samplecheck/core/error.h"

namespace samplecheck::harness::process_internal {

using Clock = std::chrono::steady_clock;

// One frame of the protocol: u32 length (bytes after it) | u32 type | payload.
struct Frame {
  uint32_t type = 0;
  std::vector<uint8_t> payload;
};

inline constexpr uint32_t kMaxFrameBytes = 1u << 30;  // 1 GiB: a larger length field is a protocol error

class ChildProcess {
 public:
  // Spawns /bin/sh -c command in a new process group, stdin/stdout/stderr on pipes.
  static Result<std::unique_ptr<ChildProcess>> Spawn(const std::string& command);
  ~ChildProcess();  // BYE is the caller's business; this closes stdin, waits briefly, then kills and reaps
  ChildProcess(const ChildProcess&) = delete;
  ChildProcess& operator=(const ChildProcess&) = delete;

  // Writes `request` (a whole frame, may be empty: then only reads) and reads one whole frame, all before
  // `deadline`. Any failure (deadline, EOF, broken pipe, a length above kMaxFrameBytes) kills the child and
  // returns kPlugin with the reason, the exit status and the stderr tail.
  Result<Frame> Exchange(const std::vector<uint8_t>& request, Clock::time_point deadline, std::string_view what);

  // Best effort write without waiting (BYE at shutdown).
  void WriteBestEffort(const std::vector<uint8_t>& bytes);

  // Kills the process group and reaps the child (idempotent).
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
  bool Reap(bool block);           // true when the child has been reaped

  pid_t pid_ = -1;
  int stdin_fd_ = -1;
  int stdout_fd_ = -1;
  int stderr_fd_ = -1;
  bool reaped_ = false;
  uint64_t exchanges_ = 0;
  int wait_status_ = 0;
  std::vector<uint8_t> pending_;  // bytes read from stdout beyond the last frame
  std::string stderr_tail_;
};

}  // namespace samplecheck::harness::process_internal
