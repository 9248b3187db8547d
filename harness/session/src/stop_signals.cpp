#include "samplecheck/session/stop_signals.h"

#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstring>

#include "samplecheck/samplers/sampler_children.h"

namespace samplecheck::harness {
namespace {

std::atomic<bool> g_stop{false};
volatile std::sig_atomic_t g_signal = 0;

void Say(const char* text) {
  const ssize_t written = ::write(STDERR_FILENO, text, std::strlen(text));
  (void)written;
}

extern "C" void OnGraceOver(int) {
  Say("samplecheck: a sampler call did not return within the grace after the stop signal; ending now without "
      "writing the report (run: the journal keeps every finished case, --resume finishes the run; verify, replay, "
      "identify: nothing kept)\n");
  ::_exit(128 + (g_signal ? int(g_signal) : SIGINT));
}

extern "C" void OnStopSignal(int signal) {
  const int saved = errno;
  g_signal = signal;
  g_stop.store(true);
  KillSamplerChildren();
  // A second stop signal ends the program at once (default action); a stuck call ends it after the grace.
  std::signal(SIGINT, SIG_DFL);
  std::signal(SIGTERM, SIG_DFL);
  std::signal(SIGALRM, OnGraceOver);
  ::alarm(kStopGraceSeconds);
  errno = saved;
}

}  // namespace

StopSignals::StopSignals() {
  g_stop.store(false);
  g_signal = 0;
  std::signal(SIGINT, OnStopSignal);
  std::signal(SIGTERM, OnStopSignal);
}

StopSignals::~StopSignals() {
  std::signal(SIGINT, SIG_DFL);
  std::signal(SIGTERM, SIG_DFL);
  ::alarm(0);
  std::signal(SIGALRM, SIG_DFL);
}

const std::atomic<bool>* StopSignals::Flag() { return &g_stop; }
bool StopSignals::Stopped() { return g_stop.load(); }
int StopSignals::ExitCode() { return 128 + (g_signal ? int(g_signal) : SIGINT); }

}  // namespace samplecheck::harness
