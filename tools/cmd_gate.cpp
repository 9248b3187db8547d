// samplecheck gate: the one-screen verdict of a stored report, recomputed from what the report holds: every statistic
// again from its stored counts and expectations, the report's consistency (harness/campaign: report_check.h) and its
// cases against the plan of the suite it names (none cut, duplicated, added or edited), so a hand-edited verdict,
// p-value or count cannot pass (exit 2 naming the inconsistency); and with --baseline the two-sample chi-square of
// every case against the same case of a baseline report (A/B of two kernel versions; statistics.md 5.8).
//   A/B alpha: the report's campaign alpha, Holm over the compared cases, Bonferroni over each case's binnings.
//   A/B needs identical bins: both reports must come from the same suite, seed and draw budgets (same p0, same N).
// Exit 0 pass, 1 fail (the report fails, or A/B finds a difference), 2 usage or input error.
#include <iostream>
#include <memory>
#include <optional>

#include "command_registry.h"
#include "options.h"
#include "samplecheck/campaign/report_check.h"
#include "samplecheck/report/ab_comparison.h"
#include "samplecheck/report/report.h"

namespace samplecheck::tools {
namespace {

struct GateOptions {
  std::string report;
  std::string baseline;
  std::string suite;  // the suite the report ran, when its file moved
  bool allow_skipped = false;
  bool allow_underpowered = false;
  std::optional<uint64_t> min_judged_cases;
  std::optional<uint64_t> min_draws;
  std::optional<double> max_tv;
};

int Gate(const GateOptions& o) {
  auto report = harness::LoadReport(o.report);
  if (!report.ok()) {
    std::cerr << "samplecheck gate: " << report.error().message << "\n";
    return kExitUsage;
  }
  // Its cases are those its suite plans under its seed and profile (a builtin, the file it names, or --suite).
  const std::string& source = report->suite_source;
  const std::string suite = !o.suite.empty()                ? o.suite
                            : source.rfind("builtin:", 0) == 0 ? source.substr(8)
                                                               : source;
  if (Status st = harness::CheckReportAgainstPlan(*report, suite); !st.ok()) {
    std::cerr << "samplecheck gate: " << o.report << ": " << st.error().message
              << (o.suite.empty() && source.rfind("builtin:", 0) != 0 ? " (--suite names the suite file if it moved)" : "")
              << "\n";
    return kExitUsage;
  }
  harness::CampaignReport recomputed = *report;
  // The evidence the report's run asked for, unless this gate asks for more (or accepts skipped cases).
  if (o.allow_skipped) recomputed.evidence.allow_skipped = true;
  if (o.allow_underpowered) recomputed.evidence.allow_underpowered = true;
  if (o.min_judged_cases) recomputed.evidence.min_judged_cases = *o.min_judged_cases;
  if (o.min_draws) recomputed.evidence.min_draws = *o.min_draws;
  harness::ApplyCampaignVerdict(recomputed);
  size_t changed = 0;
  for (size_t i = 0; i < recomputed.cases.size(); ++i) {
    if (recomputed.cases[i].status != report->cases[i].status) ++changed;
  }
  if (o.max_tv) {  // a distance verdict: every row case's stored TV bound below it (lossy samplers, docs/campaigns.md)
    if (Status st = harness::ApplyMaxTv(recomputed, *o.max_tv); !st.ok()) {
      std::cerr << "samplecheck gate: " << st.error().message << "\n";
      return kExitUsage;
    }
  }
  std::cout << "samplecheck gate " << o.report << "\n" << harness::FormatSummary(recomputed);
  if (changed > 0) {
    std::cout << "warning: " << changed << " stored case status(es) differ from the verdict recomputed from the "
              << "stored statistics; the recomputed verdict is used\n";
  }
  bool pass = recomputed.Passed();
  if (o.baseline.empty()) return pass ? kExitOk : kExitCheckFailed;

  auto base = harness::LoadReport(o.baseline);
  if (!base.ok()) {
    std::cerr << "samplecheck gate: baseline: " << base.error().message << "\n";
    return kExitUsage;
  }
  auto ab = harness::CompareWithBaseline(recomputed, *base);
  if (!ab.ok()) {
    std::cerr << "samplecheck gate: " << o.report << " and the baseline " << o.baseline << ": " << ab.error().message
              << "\n";
    return kExitUsage;
  }
  std::cout << harness::FormatAbComparison(*ab, o.baseline);
  pass = pass && ab->Same();
  return pass ? kExitOk : kExitCheckFailed;
}

const bool registered = RegisterCommand(
    {"gate", "verdict of a report; with --baseline also the two-sample A/B test case by case", [](CLI::App& cmd) {
       auto o = std::make_shared<GateOptions>();
       cmd.add_option("report", o->report, "report JSON written by samplecheck run")->required();
       cmd.add_option("--baseline", o->baseline, "baseline report JSON (same suite and seed) for the A/B test");
       cmd.add_option("--suite", o->suite,
                      "the suite the report ran, when its file moved (default: the built-in or path it names)");
       cmd.add_flag("--allow-skipped", o->allow_skipped, "skipped cases do not fail the verdict");
       cmd.add_flag("--allow-underpowered", o->allow_underpowered,
                    "row cases below the target power at their TV do not fail the verdict");
       AddUnsigned(cmd, "--min-judged-cases", o->min_judged_cases,
                   "judged cases the verdict needs (default: the report's run's, 1)", 1);
       cmd.add_option("--max-tv", o->max_tv, "pass only if every row case's TV upper bound is below this distance (the "
                      "verdict of a lossy sampler; any report)");
       AddUnsigned(cmd, "--min-draws", o->min_draws, "draws over the judged cases the verdict needs (default: the "
                   "report's run's, 1)", 1);
       return [o]() { return Gate(*o); };
     }});

}  // namespace
}  // namespace samplecheck::tools
