#include "process_sampler_child.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <mutex>
#include <thread>

extern char** environ;

namespace samplecheck::harness::process_internal {
namespace {

constexpr size_t kStderrTailBytes = 4096;

Error PluginError(std::string message) { return {ErrorCode::kPlugin, std::move(message)}; }

std::string Errno(const char* what) { return std::string(what) + ": " + std::strerror(errno); }

void IgnoreSigpipeOnce() {
  static std::once_flag once;
  std::call_once(once, [] {
    struct sigaction current {};
    if (sigaction(SIGPIPE, nullptr, &current) == 0 && current.sa_handler == SIG_DFL) {
      struct sigaction ignore {};
      ignore.sa_handler = SIG_IGN;
      sigemptyset(&ignore.sa_mask);
      sigaction(SIGPIPE, &ignore, nullptr);
    }
  });
}

void CloseFd(int& fd) {
  if (fd >= 0) close(fd);
  fd = -1;
}

uint32_t LoadU32(const uint8_t* p) {
  return uint32_t(p[0]) | uint32_t(p[1]) << 8 | uint32_t(p[2]) << 16 | uint32_t(p[3]) << 24;
}

}  // namespace

Result<std::unique_ptr<ChildProcess>> ChildProcess::Spawn(const std::string& command) {
  IgnoreSigpipeOnce();
  int in_pipe[2], out_pipe[2], err_pipe[2];
  if (pipe2(in_pipe, O_CLOEXEC) != 0) return PluginError(Errno("pipe"));
  if (pipe2(out_pipe, O_CLOEXEC) != 0) {
    close(in_pipe[0]), close(in_pipe[1]);
    return PluginError(Errno("pipe"));
  }
  if (pipe2(err_pipe, O_CLOEXEC) != 0) {
    close(in_pipe[0]), close(in_pipe[1]), close(out_pipe[0]), close(out_pipe[1]);
    return PluginError(Errno("pipe"));
  }
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  // dup2 clears FD_CLOEXEC on 0, 1, 2; every pipe end itself is close-on-exec.
  posix_spawn_file_actions_adddup2(&actions, in_pipe[0], STDIN_FILENO);
  posix_spawn_file_actions_adddup2(&actions, out_pipe[1], STDOUT_FILENO);
  posix_spawn_file_actions_adddup2(&actions, err_pipe[1], STDERR_FILENO);
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  sigset_t default_signals, empty_mask;
  sigemptyset(&default_signals);
  sigaddset(&default_signals, SIGPIPE);  // the child gets the default SIGPIPE back, whatever the harness does
  sigemptyset(&empty_mask);
  posix_spawnattr_setsigdefault(&attr, &default_signals);
  posix_spawnattr_setsigmask(&attr, &empty_mask);
  posix_spawnattr_setpgroup(&attr, 0);  // its own process group: a kill reaches the shell and what it started
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETPGROUP);

  std::string sh = "/bin/sh", dash_c = "-c", cmd = command;
  char* argv[] = {sh.data(), dash_c.data(), cmd.data(), nullptr};
  pid_t pid = -1;
  const int rc = posix_spawn(&pid, "/bin/sh", &actions, &attr, argv, environ);
  posix_spawn_file_actions_destroy(&actions);
  posix_spawnattr_destroy(&attr);
  close(in_pipe[0]);
  close(out_pipe[1]);
  close(err_pipe[1]);
  if (rc != 0) {
    close(in_pipe[1]), close(out_pipe[0]), close(err_pipe[0]);
    return PluginError("cannot start /bin/sh -c '" + command + "': " + std::strerror(rc));
  }
  std::unique_ptr<ChildProcess> child(new ChildProcess());
  child->pid_ = pid;
  child->stdin_fd_ = in_pipe[1];
  child->stdout_fd_ = out_pipe[0];
  child->stderr_fd_ = err_pipe[0];
  for (int fd : {child->stdin_fd_, child->stdout_fd_, child->stderr_fd_}) {
    fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
  }
  return child;
}

ChildProcess::~ChildProcess() {
  CloseFd(stdin_fd_);  // EOF on its stdin: a well-behaved client exits
  const auto grace_end = Clock::now() + std::chrono::seconds(2);
  while (!Reap(false) && Clock::now() < grace_end) {
    DrainStderr();
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  Kill();
  CloseFd(stdout_fd_);
  CloseFd(stderr_fd_);
}

bool ChildProcess::Reap(bool block) {
  if (reaped_ || pid_ < 0) return true;
  int status = 0;
  pid_t r;
  do {
    r = waitpid(pid_, &status, block ? 0 : WNOHANG);
  } while (r < 0 && errno == EINTR);
  if (r == pid_ || (r < 0 && errno == ECHILD)) {
    reaped_ = true;
    wait_status_ = status;
    return true;
  }
  return false;
}

void ChildProcess::Kill() {
  if (pid_ < 0) return;
  if (!reaped_) {
    kill(-pid_, SIGKILL);  // the whole group: the shell and whatever it started
    Reap(true);
  } else {
    kill(-pid_, SIGKILL);  // the shell is gone; leftovers of its group may not be
  }
  CloseFd(stdin_fd_);
}

std::string ChildProcess::ExitDescription() {
  if (!Reap(false)) return "still running";
  if (WIFEXITED(wait_status_)) return "exited with status " + std::to_string(WEXITSTATUS(wait_status_));
  if (WIFSIGNALED(wait_status_)) {
    const int sig = WTERMSIG(wait_status_);
    const char* name = strsignal(sig);
    return "killed by signal " + std::to_string(sig) + (name ? std::string(" (") + name + ")" : std::string());
  }
  return "ended";
}

void ChildProcess::DrainStderr() {
  if (stderr_fd_ < 0) return;
  char buf[4096];
  for (;;) {
    const ssize_t n = read(stderr_fd_, buf, sizeof buf);
    if (n > 0) {
      stderr_tail_.append(buf, static_cast<size_t>(n));
      if (stderr_tail_.size() > kStderrTailBytes) stderr_tail_.erase(0, stderr_tail_.size() - kStderrTailBytes);
      continue;
    }
    if (n == 0) CloseFd(stderr_fd_);
    if (n < 0 && errno == EINTR) continue;
    return;  // EAGAIN, EOF or an error
  }
}

std::string ChildProcess::StderrTail() const {
  std::string tail = stderr_tail_;
  while (!tail.empty() && (tail.back() == '\n' || tail.back() == '\r' || tail.back() == ' ')) tail.pop_back();
  return tail;
}

Error ChildProcess::Fail(std::string reason) {
  // Give an exiting child a moment so its exit status and last words are part of the message.
  const auto grace_end = Clock::now() + std::chrono::milliseconds(200);
  while (!Reap(false) && Clock::now() < grace_end) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  DrainStderr();
  const bool was_running = !Reap(false);
  Kill();
  DrainStderr();
  std::string message = "process (pid " + std::to_string(pid_) + ") " + reason + "; the process " +
                        (was_running ? std::string("was killed") : ExitDescription());
  const std::string tail = StderrTail();
  if (!tail.empty()) message += "; its stderr ends with:\n" + tail;
  return PluginError(std::move(message));
}

void ChildProcess::WriteBestEffort(const std::vector<uint8_t>& bytes) {
  if (stdin_fd_ < 0) return;
  size_t done = 0;
  while (done < bytes.size()) {
    const ssize_t n = write(stdin_fd_, bytes.data() + done, bytes.size() - done);
    if (n > 0) {
      done += static_cast<size_t>(n);
    } else if (n < 0 && errno == EINTR) {
      continue;
    } else {
      return;
    }
  }
}

Result<Frame> ChildProcess::Exchange(const std::vector<uint8_t>& request, Clock::time_point deadline,
                                     std::string_view what) {
  const std::string doing(what);
  if (reaped_ || stdout_fd_ < 0) return Fail("is no longer running (" + doing + ")");
  // Bytes the process wrote after its last answer are a protocol error; collect what has already arrived.
  for (;;) {
    uint8_t buf[4096];
    const ssize_t n = read(stdout_fd_, buf, sizeof buf);
    if (n > 0) {
      pending_.insert(pending_.end(), buf, buf + n);
    } else if (n < 0 && errno == EINTR) {
      continue;
    } else {
      break;  // EAGAIN (nothing more), EOF or an error: the exchange below reports those
    }
  }
  // Before the first exchange (the handshake) early bytes are the start of the answer; after it, nobody asked.
  if (!pending_.empty() && exchanges_ > 0) {
    return Fail("wrote " + std::to_string(pending_.size()) + " bytes nobody asked for before " + doing);
  }
  ++exchanges_;
  size_t written = 0;
  std::vector<uint8_t> in = std::move(pending_);
  pending_.clear();
  for (;;) {
    // A whole frame read? Its length is checked as soon as it arrives (garbage fails fast); the frame is taken
    // once the whole request is written (a process that answers early and stops reading runs into the deadline).
    if (in.size() >= 8) {
      const uint32_t length = LoadU32(in.data());
      if (length < 4 || length > kMaxFrameBytes) {
        return Fail("sent a frame length of " + std::to_string(length) + " bytes (allowed 4 to 2^30) while " + doing +
                    " (is it writing text to stdout? print debugging output to stderr)");
      }
      const size_t frame_bytes = 4 + size_t(length);
      if (in.size() >= frame_bytes && written == request.size()) {
        Frame frame;
        frame.type = LoadU32(in.data() + 4);
        frame.payload.assign(in.begin() + 8, in.begin() + static_cast<std::ptrdiff_t>(frame_bytes));
        pending_.assign(in.begin() + static_cast<std::ptrdiff_t>(frame_bytes), in.end());
        return frame;
      }
    }
    const auto now = Clock::now();
    if (now >= deadline) {
      return Fail("did not answer in time while " + doing + " (" + std::to_string(in.size()) + " bytes of the answer "
                  "received; SAMPLECHECK_PROCESS_TIMEOUT_S raises the limit)");
    }
    const auto left_ms = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - now).count() + 1;
    pollfd fds[3];
    nfds_t nfds = 0;
    const bool want_write = written < request.size();
    if (want_write) fds[nfds++] = {stdin_fd_, POLLOUT, 0};
    const nfds_t out_index = nfds;
    fds[nfds++] = {stdout_fd_, POLLIN, 0};
    const nfds_t err_index = nfds;
    if (stderr_fd_ >= 0) fds[nfds++] = {stderr_fd_, POLLIN, 0};
    const int ready = poll(fds, nfds, static_cast<int>(std::min<long long>(left_ms, 1000 * 60 * 60)));
    if (ready < 0) {
      if (errno == EINTR) continue;
      return Fail(Errno("poll"));
    }
    if (ready == 0) continue;  // the deadline check above decides
    if (stderr_fd_ >= 0 && err_index < nfds && fds[err_index].revents) DrainStderr();
    if (want_write && fds[0].revents) {
      if (fds[0].revents & (POLLERR | POLLHUP)) return Fail("closed its stdin while " + doing);
      const ssize_t n = write(stdin_fd_, request.data() + written, request.size() - written);
      if (n > 0) {
        written += static_cast<size_t>(n);
      } else if (n < 0 && errno != EAGAIN && errno != EINTR) {
        return Fail("closed its stdin while " + doing + " (" + Errno("write") + ")");
      }
    }
    if (fds[out_index].revents) {
      uint8_t buf[65536];
      const ssize_t n = read(stdout_fd_, buf, sizeof buf);
      if (n > 0) {
        in.insert(in.end(), buf, buf + n);
      } else if (n == 0) {
        return Fail("closed its stdout (" + std::to_string(in.size()) + " bytes of an answer received) while " +
                    doing);
      } else if (errno != EAGAIN && errno != EINTR) {
        return Fail("stdout: " + Errno("read"));
      }
    }
  }
}

}  // namespace samplecheck::harness::process_internal
