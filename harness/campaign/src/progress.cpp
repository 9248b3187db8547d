#include "samplecheck/campaign/progress.h"

#include <unistd.h>

#include <algorithm>
#include <cmath>

namespace samplecheck::harness {

Progress::Progress(uint64_t total_draws, size_t cases, Mode mode, std::FILE* out)
    : out_(out), total_draws_(std::max<uint64_t>(total_draws, 1)), cases_(cases) {
  if (mode == Mode::kAuto) mode = isatty(fileno(out)) ? Mode::kBar : Mode::kLines;
  bar_ = mode == Mode::kBar;
  quiet_ = mode == Mode::kQuiet;
  start_ = last_draw_ = std::chrono::steady_clock::now();
}

Progress::~Progress() { Finish(); }

std::string Progress::FormatDuration(double seconds) {
  if (!std::isfinite(seconds) || seconds < 0) return "--:--";
  const auto s = static_cast<long long>(std::llround(seconds));
  char buf[32];
  if (s >= 3600) {
    std::snprintf(buf, sizeof buf, "%lld:%02lld:%02lld", s / 3600, (s / 60) % 60, s % 60);
  } else {
    std::snprintf(buf, sizeof buf, "%lld:%02lld", s / 60, s % 60);
  }
  return buf;
}

void Progress::AddDraws(uint64_t draws) {
  std::lock_guard<std::mutex> lock(mu_);
  done_draws_ += draws;
  if (bar_) DrawBarLocked(false);
}

void Progress::CaseDone(const std::string& name, const std::string& status, const std::string& detail,
                        double seconds) {
  std::lock_guard<std::mutex> lock(mu_);
  ++done_cases_;
  if (quiet_) return;
  const int width = static_cast<int>(std::to_string(cases_).size());
  if (bar_) std::fputs("\r\033[K", out_);
  std::fprintf(out_, "[%*zu/%zu] %-7s %-28s %s  %.1f s\n", width, done_cases_, cases_, status.c_str(), name.c_str(),
               detail.c_str(), seconds);
  if (bar_) DrawBarLocked(true);
  std::fflush(out_);
}

void Progress::DrawBarLocked(bool force) {
  const auto now = std::chrono::steady_clock::now();
  if (!force && now - last_draw_ < std::chrono::milliseconds(100)) return;
  last_draw_ = now;
  const double elapsed = std::chrono::duration<double>(now - start_).count();
  const double fraction = std::min(1.0, double(done_draws_) / double(total_draws_));
  const double rate = elapsed > 0 ? double(done_draws_) / elapsed : 0.0;
  const double eta = rate > 0 ? double(total_draws_ - std::min(done_draws_, total_draws_)) / rate : NAN;
  constexpr int kWidth = 30;
  const int filled = static_cast<int>(fraction * kWidth);
  std::string bar(static_cast<size_t>(filled), '#');
  bar.resize(kWidth, '.');
  std::fprintf(out_, "\r\033[K[%s] %3.0f%%  case %zu/%zu  %.3g draws/s  elapsed %s  ETA %s", bar.c_str(),
               fraction * 100, std::min(done_cases_ + 1, cases_), cases_, rate, FormatDuration(elapsed).c_str(),
               FormatDuration(eta).c_str());
  std::fflush(out_);
}

void Progress::SetTotalDraws(uint64_t total_draws) {
  std::lock_guard<std::mutex> lock(mu_);
  total_draws_ = std::max<uint64_t>(total_draws, 1);
}

void Progress::Note(const std::string& line) {
  std::lock_guard<std::mutex> lock(mu_);
  if (quiet_) return;
  if (bar_) std::fputs("\r\033[K", out_);
  std::fprintf(out_, "note: %s\n", line.c_str());
  std::fflush(out_);
}

void Progress::Finish() {
  std::lock_guard<std::mutex> lock(mu_);
  if (finished_) return;
  finished_ = true;
  if (bar_) {
    std::fputs("\r\033[K", out_);
    std::fflush(out_);
  }
}

}  // namespace samplecheck::harness
