#include "process_sampler_child.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <condition_variable>
#include <cstring>
#include <exception>
#include <mutex>
#include <sstream>
#include <thread>

#include "samplecheck/samplers/sampler_children.h"

extern char** environ;

namespace samplecheck::harness {
namespace {

// ---- The registry of live children (KillSamplerChildren) ----------------------------------------------------
// One slot per child: (owner pid << 32) | process-group id. 0 is a free slot; a group id of 0 a slot reserved for
// a child about to be forked. The owner is the samplecheck process that started the child: a process forked from
// samplecheck inherits a copy of the array, whose entries are not its children (it neither kills nor keeps them).
std::atomic<uint64_t> g_children[kMaxSamplerChildren];
static_assert(std::atomic<uint64_t>::is_always_lock_free, "KillSamplerChildren must stay async-signal-safe");

uint64_t Entry(pid_t owner, pid_t group) { return uint64_t(uint32_t(owner)) << 32 | uint32_t(group); }
pid_t OwnerOf(uint64_t entry) { return static_cast<pid_t>(entry >> 32); }
pid_t GroupOf(uint64_t entry) { return static_cast<pid_t>(static_cast<uint32_t>(entry)); }

// A slot for a child about to be forked, or kMaxSamplerChildren when every slot is taken.
size_t ReserveSlot() {
  const pid_t me = getpid();
  for (size_t i = 0; i < kMaxSamplerChildren; ++i) {
    uint64_t entry = g_children[i].load();
    while (entry == 0 || OwnerOf(entry) != me) {  // free, or inherited from the process this one was forked from
      if (g_children[i].compare_exchange_weak(entry, Entry(me, 0))) return i;
    }
  }
  return kMaxSamplerChildren;
}

void ReleaseSlot(size_t slot) {
  if (slot < kMaxSamplerChildren) g_children[slot].store(0);
}

}  // namespace

void KillSamplerChildren() noexcept {
  const int saved_errno = errno;
  const pid_t me = getpid();
  for (std::atomic<uint64_t>& slot : g_children) {
    const uint64_t entry = slot.load();
    if (OwnerOf(entry) == me && GroupOf(entry) > 0) kill(-GroupOf(entry), SIGKILL);
  }
  errno = saved_errno;
}

size_t LiveSamplerChildren() noexcept {
  const pid_t me = getpid();
  size_t live = 0;
  for (std::atomic<uint64_t>& slot : g_children) {
    const uint64_t entry = slot.load();
    live += OwnerOf(entry) == me && GroupOf(entry) > 0;
  }
  return live;
}

namespace process_internal {
namespace {

constexpr size_t kStderrTailBytes = 4096;

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

// ---- Forking: one long-lived thread, the child's few async-signal-safe steps -----------------------------------

// Everything the child touches between fork and exec, prepared before the fork (no allocation after it).
struct SpawnRequest {
  const char* path = nullptr;
  char* const* argv = nullptr;
  char* const* envp = nullptr;
  int fds[3] = {-1, -1, -1};  // become the child's stdin, stdout, stderr; all >= 3
  int exec_error_fd = -1;     // write end of a close-on-exec pipe: the child writes errno there when it cannot exec
  size_t slot = kMaxSamplerChildren;
  pid_t pid = -1;             // the result
  int fork_errno = 0;
  bool done = false;
};

[[noreturn]] void ChildFails(int fd, int error) {
  (void)!write(fd, &error, sizeof error);
  _exit(127);
}

// In the child, after fork: its own process group, SIGKILL when the parent dies, the pipes on 0, 1, 2, the signal
// dispositions and mask of a fresh program (SIGPIPE default again), then exec. Async-signal-safe calls only.
[[noreturn]] void ExecChild(const SpawnRequest& r, pid_t parent) {
  setpgid(0, 0);
  if (prctl(PR_SET_PDEATHSIG, SIGKILL) != 0) ChildFails(r.exec_error_fd, errno);
  if (getppid() != parent) _exit(127);  // the parent died before the death signal was armed: nobody needs us
  for (int target = 0; target < 3; ++target) {
    if (dup2(r.fds[target], target) < 0) ChildFails(r.exec_error_fd, errno);  // dup2 clears close-on-exec
  }
  struct sigaction default_action {};
  default_action.sa_handler = SIG_DFL;
  sigemptyset(&default_action.sa_mask);
  for (int sig = 1; sig < NSIG; ++sig) {
    struct sigaction current {};
    if (sigaction(sig, nullptr, &current) != 0) continue;
    const bool handled =
        (current.sa_flags & SA_SIGINFO) != 0 || (current.sa_handler != SIG_DFL && current.sa_handler != SIG_IGN);
    if (handled || sig == SIGPIPE) sigaction(sig, &default_action, nullptr);
  }
  sigset_t none;
  sigemptyset(&none);
  sigprocmask(SIG_SETMASK, &none, nullptr);
  execve(r.path, r.argv, r.envp);
  ChildFails(r.exec_error_fd, errno);
}

// Linux sends the parent-death signal when the *thread* that forked the child ends, not the process. So every
// child is forked by this one thread, which lives as long as the process (and blocks every signal, so that a
// handler never runs in it nor, between fork and exec, in a child).
class Spawner {
 public:
  // The spawner of this process (a process forked from samplecheck gets its own: the thread is not inherited);
  // nullptr with *why when its thread cannot be created.
  static Spawner* Get(std::string* why) {
    static std::atomic<Spawner*> current{nullptr};
    const pid_t me = getpid();
    Spawner* spawner = current.load();
    while (spawner == nullptr || spawner->owner_ != me) {
      auto* fresh = new Spawner(me);  // never deleted: its thread runs until the process ends
      Spawner* seen = spawner;
      if (current.compare_exchange_strong(spawner, fresh)) {
        try {
          std::thread([fresh] { fresh->Loop(); }).detach();
        } catch (const std::exception& e) {
          *why = e.what();
          current.compare_exchange_strong(fresh, seen);  // the next spawn tries again
          return nullptr;
        }
        return fresh;
      }
      delete fresh;  // another thread of this process won; `spawner` is now its spawner (or a stale one again)
    }
    return spawner;
  }

  void Run(SpawnRequest& request) {
    std::unique_lock lock(mutex_);
    changed_.wait(lock, [&] { return pending_ == nullptr; });
    pending_ = &request;
    changed_.notify_all();
    changed_.wait(lock, [&] { return request.done; });
  }

 private:
  explicit Spawner(pid_t owner) : owner_(owner) {}

  void Loop() {
    sigset_t all;
    sigfillset(&all);
    pthread_sigmask(SIG_BLOCK, &all, nullptr);
    std::unique_lock lock(mutex_);
    for (;;) {
      changed_.wait(lock, [&] { return pending_ != nullptr; });
      SpawnRequest& r = *pending_;
      const pid_t parent = getpid();
      const pid_t pid = fork();
      if (pid == 0) ExecChild(r, parent);
      if (pid < 0) {
        r.fork_errno = errno;
      } else {
        setpgid(pid, pid);  // the child does it too: whichever runs first, the group exists when we register it
        g_children[r.slot].store(Entry(parent, pid));
        r.pid = pid;
      }
      r.done = true;
      pending_ = nullptr;
      changed_.notify_all();
    }
  }

  const pid_t owner_;
  std::mutex mutex_;
  std::condition_variable changed_;
  SpawnRequest* pending_ = nullptr;
};

// A pipe whose ends are close-on-exec and not 0, 1 or 2 (when samplecheck runs with one of those closed, pipe2
// may hand them out, and the child's dup2 onto 0, 1, 2 would clobber them).
bool MakePipe(int fds[2]) {
  if (pipe2(fds, O_CLOEXEC) != 0) return false;
  for (int i = 0; i < 2; ++i) {
    if (fds[i] > 2) continue;
    const int moved = fcntl(fds[i], F_DUPFD_CLOEXEC, 3);
    const int saved = errno;
    close(fds[i]);
    fds[i] = moved;
    if (moved < 0) {
      close(fds[1 - i]);
      errno = saved;
      return false;
    }
  }
  return true;
}

}  // namespace

Result<std::unique_ptr<ChildProcess>> ChildProcess::Spawn(const std::string& command) {
  return SpawnProgram({"/bin/sh", "-c", command}, "process");
}

Result<std::unique_ptr<ChildProcess>> ChildProcess::SpawnProgram(const std::vector<std::string>& args,
                                                                 std::string noun) {
  const std::string what = args.size() == 3 && args[0] == "/bin/sh" && args[1] == "-c"
                               ? "/bin/sh -c '" + args[2] + "'"
                               : (args.empty() ? std::string("(no program)") : args[0]);
  if (args.empty()) return PluginError("cannot start a process without a program");
  IgnoreSigpipeOnce();
  const size_t slot = ReserveSlot();
  if (slot == kMaxSamplerChildren) {
    return PluginError("cannot start " + what + ": the samplers of this samplecheck already run " +
                       std::to_string(kMaxSamplerChildren) + " child processes, the most they keep track of");
  }
  int pipes[4][2] = {{-1, -1}, {-1, -1}, {-1, -1}, {-1, -1}};  // stdin, stdout, stderr, exec error
  auto close_all = [&] {
    for (auto& p : pipes) {
      for (int& fd : p) CloseFd(fd);
    }
  };
  for (auto& p : pipes) {
    if (!MakePipe(p)) {
      const std::string why = Errno("pipe");
      close_all();
      ReleaseSlot(slot);
      return PluginError("cannot start " + what + ": " + why);
    }
  }
  std::vector<std::string> arg_copies = args;
  std::vector<char*> argv;
  for (std::string& a : arg_copies) argv.push_back(a.data());
  argv.push_back(nullptr);
  SpawnRequest request;
  request.path = arg_copies[0].c_str();
  request.argv = argv.data();
  request.envp = environ;
  request.fds[0] = pipes[0][0];
  request.fds[1] = pipes[1][1];
  request.fds[2] = pipes[2][1];
  request.exec_error_fd = pipes[3][1];
  request.slot = slot;
  std::string no_thread;
  Spawner* spawner = Spawner::Get(&no_thread);
  if (spawner == nullptr) {
    close_all();
    ReleaseSlot(slot);
    return PluginError("cannot start " + what + ": cannot create the thread that starts sampler processes (" +
                       no_thread + ")");
  }
  spawner->Run(request);
  // The child's ends: closed here (the child has its own copies).
  CloseFd(pipes[0][0]);
  CloseFd(pipes[1][1]);
  CloseFd(pipes[2][1]);
  CloseFd(pipes[3][1]);
  if (request.pid < 0) {
    close_all();
    ReleaseSlot(slot);
    return PluginError("cannot start " + what + ": fork: " + std::strerror(request.fork_errno));
  }
  // End of file on the error pipe: the exec succeeded (the pipe is close-on-exec). Otherwise the child's errno.
  int child_errno = 0;
  size_t got = 0;
  while (got < sizeof child_errno) {
    const ssize_t n = read(pipes[3][0], reinterpret_cast<char*>(&child_errno) + got, sizeof child_errno - got);
    if (n > 0) {
      got += static_cast<size_t>(n);
    } else if (n < 0 && errno == EINTR) {
      continue;
    } else {
      break;
    }
  }
  CloseFd(pipes[3][0]);
  std::unique_ptr<ChildProcess> child(new ChildProcess());
  child->pid_ = request.pid;
  child->registry_slot_ = slot;
  child->noun_ = std::move(noun);
  child->stdin_fd_ = pipes[0][1];
  child->stdout_fd_ = pipes[1][0];
  child->stderr_fd_ = pipes[2][0];
  if (got == sizeof child_errno) {
    child->Kill();  // reaps it and frees its slot
    return PluginError("cannot start " + what + ": " + std::strerror(child_errno));
  }
  for (int fd : {child->stdin_fd_, child->stdout_fd_, child->stderr_fd_}) {
    fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
  }
  return child;
}

ChildProcess::~ChildProcess() {
  CloseFd(stdin_fd_);  // EOF on its stdin: a well-behaved client exits
  const auto grace_end = Clock::now() + std::chrono::seconds(2);
  while (!Exited() && Clock::now() < grace_end) {
    DrainStderr();
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  Kill();
  CloseFd(stdout_fd_);
  CloseFd(stderr_fd_);
}

bool ChildProcess::Exited() {
  if (exited_ || pid_ < 0) return true;
  siginfo_t info{};
  int r;
  do {
    r = waitid(P_PID, static_cast<id_t>(pid_), &info, WEXITED | WNOHANG | WNOWAIT);
  } while (r < 0 && errno == EINTR);
  if (r == 0 && info.si_pid == pid_) {
    exited_ = true;
    exit_code_ = info.si_code;
    exit_value_ = info.si_status;
  } else if (r < 0 && errno == ECHILD) {  // reaped by someone else (SIGCHLD ignored): ended, status unknown
    exited_ = true;
    reaped_ = true;
  }
  return exited_;
}

void ChildProcess::Kill() {
  if (pid_ < 0) return;
  if (registry_slot_ < kMaxSamplerChildren) {
    // The whole group: the child and whatever it started, also when the child itself has already ended (it is a
    // zombie until reaped below, so the group id cannot have been reused).
    kill(-pid_, SIGKILL);
    ReleaseSlot(registry_slot_);
    registry_slot_ = kMaxSamplerChildren;
  }
  if (!reaped_) {
    int status = 0;
    pid_t r;
    do {
      r = waitpid(pid_, &status, 0);
    } while (r < 0 && errno == EINTR);
    if (!exited_ && r == pid_) {
      exit_code_ = WIFEXITED(status) ? CLD_EXITED : CLD_KILLED;
      exit_value_ = WIFEXITED(status) ? WEXITSTATUS(status) : WTERMSIG(status);
    }
    exited_ = true;
    reaped_ = true;
  }
  CloseFd(stdin_fd_);
}

std::string ChildProcess::ExitDescription() {
  if (!Exited()) return "still running";
  if (exit_code_ == CLD_EXITED) return "exited with status " + std::to_string(exit_value_);
  if (exit_code_ == CLD_KILLED || exit_code_ == CLD_DUMPED) {
    const char* name = strsignal(exit_value_);
    return "killed by signal " + std::to_string(exit_value_) + (name ? std::string(" (") + name + ")" : std::string());
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
  while (!Exited() && Clock::now() < grace_end) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  DrainStderr();
  const bool was_running = !Exited();
  Kill();
  DrainStderr();
  std::string message = noun_ + " (pid " + std::to_string(pid_) + ") " + reason + "; the " + noun_ + " " +
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
                                     double timeout_s, std::string_view what) {
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
        return Fail("sent a frame length of " + std::to_string(length) + " = " + protocol::DescribeU32(length) +
                    " (allowed 4 to 2^30 bytes) while " + doing +
                    ": it does not speak the samplecheck process protocol (is it writing text to stdout? print "
                    "debugging output to stderr)");
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
      std::ostringstream limit;
      limit << timeout_s;
      return Fail("did not answer in time while " + doing + ": the deadline of " + limit.str() + " s passed with " +
                  std::to_string(in.size()) + " bytes of the answer received (SAMPLECHECK_PROCESS_TIMEOUT_S sets "
                  "the deadline)");
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

}  // namespace process_internal
}  // namespace samplecheck::harness
