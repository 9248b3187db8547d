// SIGINT and SIGTERM for the commands that draw (run, verify, replay, identify): one definition of what a stop
// signal does.
//   - The first signal sets the stop flag the campaign polls (a case being drawn stops at its next chunk; the
//     finished cases are journaled), kills the samplers' child processes at once (a busy `process:` or plugin host
//     would otherwise finish its request first), and restores the default action: a second SIGINT or SIGTERM ends
//     the program at once.
//   - It also arms a watchdog: a sampler call that never returns (a `plugin-inproc:` library stuck in its sample
//     call runs in this process and cannot be killed apart) would keep the program alive forever, and a CI job's
//     `timeout 10 samplecheck run ...` would hang. kStopGraceSeconds after the first signal the program ends with
//     128 + the signal, saying that the report was not written (the journal keeps every finished case).
#pragma once

#include <atomic>

namespace samplecheck::harness {

inline constexpr unsigned kStopGraceSeconds = 5;

class StopSignals {
 public:
  StopSignals();   // installs the handlers (one StopSignals at a time)
  ~StopSignals();  // default actions again, the watchdog disarmed
  StopSignals(const StopSignals&) = delete;
  StopSignals& operator=(const StopSignals&) = delete;

  // Set by the first signal; for CampaignBasics::stop.
  static const std::atomic<bool>* Flag();
  static bool Stopped();
  // 128 + the signal received (130 SIGINT, 143 SIGTERM); 130 when none was.
  static int ExitCode();
};

}  // namespace samplecheck::harness
