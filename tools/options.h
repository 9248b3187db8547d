// Strict parsing of the command line's values (every command): a number is the whole argument, in its range, or
// the command stops with exit 2 and a message naming the option, the value and what is allowed. Never a silent
// clamp ("--top-k 99999999999999999999"), a wrap ("--seed -1"), an empty value read as 0 ("--top-p ''") or an
// overflow read as infinity ("1e400").
#pragma once

#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include <CLI/CLI.hpp>

#include "samplecheck/campaign/progress.h"
#include "samplecheck/core/error.h"

namespace samplecheck::tools {

// The value of `text` as a whole decimal integer in [min, max]; `what` names it in the message ("--top-k").
Result<int64_t> ParseInteger(std::string_view text, std::string_view what, int64_t min, int64_t max);
Result<uint64_t> ParseUnsigned(std::string_view text, std::string_view what, uint64_t min, uint64_t max);
// A finite real number in [min, max] (strtod syntax, the whole argument; no inf, no nan).
Result<double> ParseReal(std::string_view text, std::string_view what, double min, double max);

// CLI11 options stored through those parsers (the help shows the allowed range).
CLI::Option* AddInteger(CLI::App& cmd, const std::string& name, int64_t& out, const std::string& help, int64_t min,
                        int64_t max);
CLI::Option* AddUnsigned(CLI::App& cmd, const std::string& name, uint64_t& out, const std::string& help,
                         uint64_t min = 0, uint64_t max = std::numeric_limits<uint64_t>::max());
CLI::Option* AddUnsigned(CLI::App& cmd, const std::string& name, std::optional<uint64_t>& out, const std::string& help,
                         uint64_t min = 0, uint64_t max = std::numeric_limits<uint64_t>::max());
CLI::Option* AddReal(CLI::App& cmd, const std::string& name, double& out, const std::string& help, double min,
                     double max);
CLI::Option* AddReal(CLI::App& cmd, const std::string& name, std::optional<double>& out, const std::string& help,
                     double min, double max);
// Any finite number (the range is someone else's to judge, e.g. a sampling parameter against its profile).
CLI::Option* AddFiniteReal(CLI::App& cmd, const std::string& name, double& out, const std::string& help);
// --progress auto|bar|lines|none (run, verify): auto is a bar on a terminal, else lines.
CLI::Option* AddProgress(CLI::App& cmd, harness::Progress::Mode& out);
// --equivalence EPS and --equivalence-chi2 EPS (run, verify): the equivalence verdict of harness/campaign.
void AddEquivalence(CLI::App& cmd, double& tv_eps, double& chi2_eps);
// " --equivalence EPS [--equivalence-chi2 EPS]" for a report's command line ("" when not asked).
std::string EquivalenceCommandLine(double tv_eps, double chi2_eps);
// An option whose value `parse(text)` (a Result) stores into `out` (a value or an optional of it), or stops the
// command with the parser's message (a CLI11 validation error: exit 2); `type` names the value in --help.
template <class Out, class Parse>
CLI::Option* AddParsed(CLI::App& cmd, const std::string& name, Out& out, std::string help, const char* type,
                       Parse parse) {
  return cmd
      .add_option_function<std::string>(
          name,
          [&out, parse](const std::string& text) {
            auto v = parse(text);
            if (!v.ok()) throw CLI::ValidationError(v.error().message);
            out = *v;
          },
          std::move(help))
      ->type_name(type);
}

template <class T>
CLI::Option* AddCount(CLI::App& cmd, const std::string& name, T& out, const std::string& help, T min, T max) {
  return AddParsed(cmd, name, out, help + " [" + std::to_string(min) + ", " + std::to_string(max) + "]", "N",
                   [name, min, max](const std::string& text) -> Result<T> {
                     Result<uint64_t> v = ParseUnsigned(text, name, min, max);
                     if (!v.ok()) return v.error();
                     return static_cast<T>(*v);
                   });
}

}  // namespace samplecheck::tools
