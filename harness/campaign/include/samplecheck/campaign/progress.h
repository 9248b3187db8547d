// Progress of a long campaign on stderr: a bar with draws done, rate and ETA, redrawn in place when stderr is a
// terminal (at most 10 times a second); one plain line per finished case otherwise (CI logs, pipes). Thread-safe.
#pragma once

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <mutex>
#include <string>

namespace samplecheck::harness {

class Progress {
 public:
  enum class Mode { kAuto, kBar, kLines, kQuiet };

  // total_draws: the planned draws of the whole campaign (the bar's 100%); cases: the number of cases.
  Progress(uint64_t total_draws, size_t cases, Mode mode = Mode::kAuto, std::FILE* out = stderr);
  ~Progress();

  void AddDraws(uint64_t draws);
  // A case finished: on a terminal the bar is redrawn; otherwise one line "[ 3/40] pass  name  p=0.41  2.1 s".
  void CaseDone(const std::string& name, const std::string& status, const std::string& detail, double seconds);
  void Finish();
  // The plan changed while drawing (the time budget's re-plan): the bar's 100%.
  void SetTotalDraws(uint64_t total_draws);
  // One line about the plan ("note: ..."), unless quiet.
  void Note(const std::string& line);

  static std::string FormatDuration(double seconds);  // "1:05", "1:02:03"

 private:
  void DrawBarLocked(bool force);

  std::mutex mu_;
  std::FILE* out_;
  bool bar_ = false;
  bool quiet_ = false;
  bool finished_ = false;
  uint64_t total_draws_;
  uint64_t done_draws_ = 0;
  size_t cases_;
  size_t done_cases_ = 0;
  std::chrono::steady_clock::time_point start_;
  std::chrono::steady_clock::time_point last_draw_;
};

}  // namespace samplecheck::harness
