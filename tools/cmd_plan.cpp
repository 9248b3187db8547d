// samplecheck plan: draws needed to detect a total-variation distance with Pearson's X^2 over K bins, and the
// power a run of a given size has (stats/power.h; statistics.md 5.2 and 5.4).
//
//   samplecheck plan --tv 1e-3 --alpha 1e-6 --power 0.99 --bins 16            -> about 2.02e7 draws
//   samplecheck plan --tv 1e-3 --alpha 1e-6 --power 0.99 --bins 16 --draws 1e7 -> also the power of 1e7 draws
//
// The plan is for the worst case at that TV (chi-square divergence 4 TV^2: a p0-proportional shift between two
// halves of the mass). --two-sample plans an A/B of two samplers on identical bins: draws per arm.
// Exit codes: 0 printed, 2 an invalid value (the message names it and the allowed range).
#include <cerrno>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <iomanip>
#include <iostream>
#include <memory>
#include <optional>
#include <string>

#include "command_registry.h"
#include "samplecheck/stats/power.h"
#include "samplecheck/stats/two_sample.h"

namespace samplecheck::tools {
namespace {

struct PlanOptions {
  std::string tv;
  std::string alpha = "1e-6";
  std::string power = "0.99";
  std::string bins;
  std::string draws;
  bool two_sample = false;
};

// Parses a real number written in any strtod form ("1e-6", "0.99", "1.3e7"); nullopt when it is not one.
std::optional<double> ParseReal(const std::string& text) {
  if (text.empty()) return std::nullopt;
  errno = 0;
  char* end = nullptr;
  const double v = std::strtod(text.c_str(), &end);
  if (errno != 0 || end == text.c_str() || *end != '\0' || !std::isfinite(v)) return std::nullopt;
  return v;
}

int UsageError(const std::string& message) {
  std::cerr << "samplecheck plan: " << message << "\n";
  return kExitUsage;
}

int Plan(const PlanOptions& o) {
  const auto tv = ParseReal(o.tv);
  if (!tv) return UsageError("--tv " + o.tv + " is not a number; allowed range (0, 0.5]");
  const auto alpha = ParseReal(o.alpha);
  if (!alpha) return UsageError("--alpha " + o.alpha + " is not a number; allowed range (0, 1)");
  const auto power = ParseReal(o.power);
  if (!power) return UsageError("--power " + o.power + " is not a number; allowed range (alpha, 1)");
  const auto bins = ParseReal(o.bins);
  if (!bins || *bins != std::floor(*bins) || *bins < 2 || *bins > 4294967296.0) {
    return UsageError("--bins " + o.bins + " is outside the allowed range: an integer in [2, 2^32]");
  }
  const auto cells = static_cast<std::uint64_t>(*bins);

  // The one-sample planner checks the TV range, the alpha and power ranges and the bin count; the two-sample
  // one is the same plan doubled.
  const Result<stats::DrawPlan> one_sample = stats::PlanDrawsForTotalVariation(*tv, *alpha, *power, cells);
  if (!one_sample.ok()) return UsageError(one_sample.error().message);
  const Result<stats::DrawPlan> planned =
      o.two_sample ? stats::PlanTwoSampleDrawsPerArm(one_sample->divergence, *alpha, *power, cells) : one_sample;
  if (!planned.ok()) return UsageError(planned.error().message);
  const stats::DrawPlan& plan = *planned;

  std::optional<double> draws;
  if (!o.draws.empty()) {
    // More than 2^64 draws is no run anyone makes (and past the statistics' integer arithmetic).
    constexpr double kMostDraws = 18446744073709551615.0;
    draws = ParseReal(o.draws);
    if (!draws || !(*draws > 0.0) || *draws > kMostDraws) {
      return UsageError("--draws " + o.draws + " is outside the allowed range (0, 1.8e19] (at most 2^64 draws)");
    }
  }

  const double needed = std::ceil(plan.draws);
  std::cout << std::setprecision(6);
  std::cout << "draws needed: " << std::fixed << std::setprecision(0) << needed << std::defaultfloat
            << std::setprecision(3) << " (" << std::scientific << needed << std::defaultfloat << ")"
            << (o.two_sample ? " per arm" : "") << "\n";
  std::cout << std::setprecision(6) << "  to detect TV " << *tv << " (worst case: chi-square divergence "
            << plan.divergence << ") over " << cells << " bins at alpha " << *alpha << " with power " << *power
            << "\n";
  std::cout << "  critical value X^2 > " << plan.critical_value << " (dof " << cells - 1
            << "), non-centrality lambda = " << plan.noncentrality << "\n";
  if (o.two_sample) std::cout << "  two-sample A/B on identical bins: effective draws = per-arm draws / 2\n";
  if (draws) {
    // A two-sample run of n draws per arm behaves as a one-sample run of n / 2 draws.
    const double effective = o.two_sample ? *draws / 2.0 : *draws;
    const auto achieved = stats::PowerOfRunForTotalVariation(*tv, *alpha, cells, effective);
    if (!achieved.ok()) return UsageError(achieved.error().message);
    std::cout << "power of a run of " << std::fixed << std::setprecision(0) << *draws << std::defaultfloat
              << " draws" << (o.two_sample ? " per arm" : "") << ": " << std::setprecision(6) << *achieved
              << "\n";
  }
  return kExitOk;
}

const bool registered = RegisterCommand(
    {"plan", "draws needed to detect a TV distance over K bins, and the power of a run", [](CLI::App& cmd) {
       auto o = std::make_shared<PlanOptions>();
       cmd.add_option("--tv", o->tv, "total-variation distance to detect, in (0, 0.5]")->required();
       cmd.add_option("--alpha", o->alpha, "false-alarm rate of the test, in (0, 1)")->capture_default_str();
       cmd.add_option("--power", o->power, "probability of detecting the deviation, in (alpha, 1)")
           ->capture_default_str();
       cmd.add_option("--bins", o->bins, "number of bins K (dof K - 1), an integer in [2, 2^32]")->required();
       cmd.add_option("--draws", o->draws, "also print the power of a run of this many draws, in (0, 2^64]");
       cmd.add_flag("--two-sample", o->two_sample, "plan an A/B of two samplers: draws per arm");
       return [o]() { return Plan(*o); };
     }});

}  // namespace
}  // namespace samplecheck::tools
