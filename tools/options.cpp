#include "options.h"

#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <sstream>

#include "samplecheck/core/format.h"

namespace samplecheck::tools {
namespace {

std::string Quoted(std::string_view text) { return "'" + std::string(text) + "'"; }

Error Outside(std::string_view what, std::string_view text, const std::string& range) {
  return InvalidArgument(std::string(what) + " " + Quoted(text) + " is outside the allowed range " + range);
}

bool AllDigits(std::string_view s) {
  if (s.empty()) return false;
  for (char c : s) {
    if (c < '0' || c > '9') return false;
  }
  return true;
}

}  // namespace

Result<int64_t> ParseInteger(std::string_view text, std::string_view what, int64_t min, int64_t max) {
  const std::string range = "[" + std::to_string(min) + ", " + std::to_string(max) + "]";
  const std::string_view digits = !text.empty() && text[0] == '-' ? text.substr(1) : text;
  if (!AllDigits(digits)) {
    return InvalidArgument(std::string(what) + " " + Quoted(text) + " is not a whole number (allowed: " + range + ")");
  }
  const std::string s(text);
  errno = 0;
  char* end = nullptr;
  const long long v = std::strtoll(s.c_str(), &end, 10);
  if (errno == ERANGE || v < min || v > max) return Outside(what, text, range);
  return static_cast<int64_t>(v);
}

Result<uint64_t> ParseUnsigned(std::string_view text, std::string_view what, uint64_t min, uint64_t max) {
  const std::string range = "[" + std::to_string(min) + ", " + std::to_string(max) + "]";
  if (!AllDigits(text)) {
    return InvalidArgument(std::string(what) + " " + Quoted(text) + " is not a whole non-negative number (allowed: " +
                           range + ")");
  }
  const std::string s(text);
  errno = 0;
  char* end = nullptr;
  const unsigned long long v = std::strtoull(s.c_str(), &end, 10);
  if (errno == ERANGE || v < min || v > max) return Outside(what, text, range);
  return static_cast<uint64_t>(v);
}

Result<double> ParseReal(std::string_view text, std::string_view what, double min, double max) {
  const bool any = min == -std::numeric_limits<double>::max() && max == std::numeric_limits<double>::max();
  const std::string range = any ? "any finite number" : "[" + FormatExact(min) + ", " + FormatExact(max) + "]";
  const std::string s(text);
  errno = 0;
  char* end = nullptr;
  const double v = s.empty() || std::isspace(static_cast<unsigned char>(s[0])) ? 0.0 : std::strtod(s.c_str(), &end);
  if (s.empty() || end == nullptr || end == s.c_str() || *end != '\0') {
    return InvalidArgument(std::string(what) + " " + Quoted(text) + " is not a number (allowed: " + range + ")");
  }
  if (!std::isfinite(v) || errno == ERANGE) {
    // strtod reads "inf", "nan" and overflows such as 1e400 (as inf), and underflows such as 1e-400 (as 0 or a
    // subnormal) with ERANGE: none of them is the number the user wrote.
    return InvalidArgument(std::string(what) + " " + Quoted(text) +
                           " is not a finite double-precision number (allowed: " + range + ")");
  }
  if (v < min || v > max) return Outside(what, text, range);
  return v;
}

CLI::Option* AddInteger(CLI::App& cmd, const std::string& name, int64_t& out, const std::string& help, int64_t min,
                        int64_t max) {
  std::string range = max != std::numeric_limits<int64_t>::max()
                          ? " [" + std::to_string(min) + ", " + std::to_string(max) + "]"
                      : min == std::numeric_limits<int64_t>::min() ? ""
                                                                   : " (at least " + std::to_string(min) + ")";
  return AddParsed(cmd, name, out, help + range, "N",
                   [name, min, max](const std::string& text) { return ParseInteger(text, name, min, max); });
}

CLI::Option* AddUnsigned(CLI::App& cmd, const std::string& name, uint64_t& out, const std::string& help, uint64_t min,
                         uint64_t max) {
  return AddParsed(cmd, name, out, help, "N",
                   [name, min, max](const std::string& text) { return ParseUnsigned(text, name, min, max); });
}

CLI::Option* AddUnsigned(CLI::App& cmd, const std::string& name, std::optional<uint64_t>& out, const std::string& help,
                         uint64_t min, uint64_t max) {
  return AddParsed(cmd, name, out, help, "N",
                   [name, min, max](const std::string& text) { return ParseUnsigned(text, name, min, max); });
}

namespace {
std::string RealRange(double min, double max) {
  return " [" + FormatSignificant(min) + ", " + FormatSignificant(max) + "]";
}
}  // namespace

CLI::Option* AddReal(CLI::App& cmd, const std::string& name, double& out, const std::string& help, double min,
                     double max) {
  return AddParsed(cmd, name, out, help + RealRange(min, max), "X",
                   [name, min, max](const std::string& text) { return ParseReal(text, name, min, max); });
}

CLI::Option* AddReal(CLI::App& cmd, const std::string& name, std::optional<double>& out, const std::string& help,
                     double min, double max) {
  return AddParsed(cmd, name, out, help + RealRange(min, max), "X",
                   [name, min, max](const std::string& text) { return ParseReal(text, name, min, max); });
}

CLI::Option* AddFiniteReal(CLI::App& cmd, const std::string& name, double& out, const std::string& help) {
  return AddParsed(cmd, name, out, help, "X", [name](const std::string& text) {
    return ParseReal(text, name, -std::numeric_limits<double>::max(), std::numeric_limits<double>::max());
  });
}

CLI::Option* AddProgress(CLI::App& cmd, harness::Progress::Mode& out) {
  return cmd
      .add_option_function<std::string>(
          "--progress",
          [&out](const std::string& text) {
            out = text == "bar"     ? harness::Progress::Mode::kBar
                  : text == "lines" ? harness::Progress::Mode::kLines
                  : text == "none"  ? harness::Progress::Mode::kQuiet
                                    : harness::Progress::Mode::kAuto;
          },
          "auto (a bar on a terminal), bar, lines, none (default auto)")
      ->type_name("MODE")
      ->check(CLI::IsMember({"auto", "bar", "lines", "none"}));
}

void AddEquivalence(CLI::App& cmd, double& tv_eps, double& chi2_eps) {
  AddReal(cmd, "--equivalence", tv_eps,
          "equivalence verdict: pass only if every case certifies total variation < EPS to the reference on its "
          "binnings, at its alpha (upper confidence bounds; a case short of draws is named with the draws it needs)",
          1e-9, 0.999);
  AddReal(cmd, "--equivalence-chi2", chi2_eps,
          "with --equivalence: also certify chi-square divergence < this on every binning", 1e-12, 1e12);
}

std::string EquivalenceCommandLine(double tv_eps, double chi2_eps) {
  std::ostringstream os;
  if (tv_eps > 0) os << " --equivalence " << tv_eps;
  if (chi2_eps > 0) os << " --equivalence-chi2 " << chi2_eps;
  return os.str();
}

}  // namespace samplecheck::tools
