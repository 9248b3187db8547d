// samplecheck gate: the one-screen verdict of a stored report (recomputed from its stored p-values and support
// counts, so a hand-edited "verdict" cannot pass), and with --baseline the two-sample chi-square of every case
// against the same case of a baseline report (A/B of two kernel versions; statistics.md 5.8).
//   A/B alpha: the report's campaign alpha, Holm over the compared cases, Bonferroni over each case's binnings.
//   A/B needs identical bins: both reports must come from the same suite, seed and draw budgets (same p0, same N).
// Exit 0 pass, 1 fail (the report fails, or A/B finds a difference), 2 usage or input error.
#include <algorithm>
#include <cmath>
#include <iostream>
#include <map>
#include <memory>
#include <sstream>

#include "command_registry.h"
#include "samplecheck/harness/report.h"
#include "samplecheck/harness/row_source.h"
#include "samplecheck/stats/multiple_testing.h"
#include "samplecheck/stats/two_sample.h"

namespace samplecheck::tools {
namespace {

struct GateOptions {
  std::string report;
  std::string baseline;
};

bool SameCells(const harness::BinningResult& a, const harness::BinningResult& b) {
  if (a.name != b.name || a.expected.size() != b.expected.size() || a.cell_token != b.cell_token) return false;
  for (size_t i = 0; i < a.expected.size(); ++i) {
    if (std::fabs(a.expected[i] - b.expected[i]) > 1e-12 * std::max(1.0, std::fabs(a.expected[i]))) return false;
  }
  return true;
}

struct AbCase {
  std::string name;
  std::string note;       // why not compared
  double p_value = 1.0;   // Bonferroni over the compared binnings
  double statistic = 0.0;
  uint64_t dof = 0;
  std::string binning;    // binning of the smallest p
  bool compared = false;
  bool rejected = false;
  double holm = 1.0;
};

int Gate(const GateOptions& o) {
  auto report = harness::LoadReport(o.report);
  if (!report.ok()) {
    std::cerr << "samplecheck gate: " << report.error().message << "\n";
    return kExitUsage;
  }
  harness::CampaignReport recomputed = *report;
  harness::ApplyCampaignVerdict(recomputed);
  size_t changed = 0;
  for (size_t i = 0; i < recomputed.cases.size(); ++i) {
    if (recomputed.cases[i].status != report->cases[i].status) ++changed;
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
  std::map<std::string, const harness::CaseResult*> by_name;
  for (const auto& c : base->cases) by_name[c.name] = &c;
  std::vector<AbCase> ab;
  for (const auto& c : recomputed.cases) {
    AbCase a;
    a.name = c.name;
    auto it = by_name.find(c.name);
    if (it == by_name.end()) {
      a.note = "not in the baseline";
    } else if (c.status == harness::CaseStatus::kSkipped || it->second->status == harness::CaseStatus::kSkipped) {
      a.note = "skipped in one of the reports";
    } else if (harness::RowSpecToJson(c.row) != harness::RowSpecToJson(it->second->row) ||
               c.row_seed != it->second->row_seed || c.profile != it->second->profile) {
      a.note = "different row, row seed or profile";
    } else {
      uint32_t tests = 0;
      double min_p = 1.0;
      for (const auto& b : c.binnings) {
        const harness::BinningResult* other = nullptr;
        for (const auto& ob : it->second->binnings) {
          if (ob.name == b.name) other = &ob;
        }
        if (!other || !SameCells(b, *other)) continue;
        const stats::TwoSample t = stats::TwoSampleChiSquareTest(b.observed, other->observed);
        if (!t.ok()) continue;
        ++tests;
        if (t.p_value <= min_p) {
          min_p = t.p_value;
          a.statistic = t.statistic;
          a.dof = t.dof;
          a.binning = b.name;
        }
      }
      if (tests == 0) {
        a.note = c.binnings.empty() ? "no binning (support-only case)" : "bins differ (different draws or reference)";
      } else {
        a.compared = true;
        a.p_value = std::min(1.0, tests * min_p);
      }
    }
    ab.push_back(a);
  }
  std::vector<double> p_values;
  std::vector<size_t> index;
  for (size_t i = 0; i < ab.size(); ++i) {
    if (ab[i].compared) {
      p_values.push_back(ab[i].p_value);
      index.push_back(i);
    }
  }
  const stats::MultipleTestingDecision holm = stats::HolmBonferroni(p_values, recomputed.alpha);
  size_t rejected = 0;
  for (size_t k = 0; k < index.size() && holm.ok(); ++k) {
    ab[index[k]].holm = holm.adjusted_p_values[k];
    ab[index[k]].rejected = holm.rejected[k];
    rejected += holm.rejected[k];
  }
  std::cout << "\nA/B against baseline " << o.baseline << " (sampler " << base->sampler << ", seed " << base->seed
            << "): two-sample chi-square, Holm at alpha " << recomputed.alpha << "\n";
  std::cout << "  " << index.size() << " cases compared, " << rejected << " differ, " << ab.size() - index.size()
            << " not comparable\n";
  std::vector<const AbCase*> sorted;
  for (const auto& a : ab) sorted.push_back(&a);
  std::stable_sort(sorted.begin(), sorted.end(), [](auto* x, auto* y) {
    if (x->compared != y->compared) return x->compared;
    return x->p_value < y->p_value;
  });
  size_t shown = 0;
  for (const AbCase* a : sorted) {
    if (!a->compared && shown >= 8) break;
    if (a->compared && !a->rejected && shown >= 5) continue;
    ++shown;
    std::ostringstream line;
    line.precision(3);
    if (a->compared) {
      line << (a->rejected ? "  DIFFER " : "  same   ") << a->name << ": X2 = " << a->statistic << " (dof " << a->dof
           << ", " << a->binning << " binning), p = " << a->p_value << ", Holm " << a->holm;
    } else {
      line << "  n/a    " << a->name << ": " << a->note;
    }
    std::cout << line.str() << "\n";
  }
  if (index.empty()) {
    std::cerr << "samplecheck gate: no case of " << o.report << " is comparable with the baseline " << o.baseline
              << " (same suite, seed and draw budgets are needed)\n";
    return kExitUsage;
  }
  const bool ab_pass = holm.ok() && rejected == 0;
  std::cout << "A/B VERDICT: " << (ab_pass ? "SAME" : "DIFFER") << "\n";
  pass = pass && ab_pass;
  return pass ? kExitOk : kExitCheckFailed;
}

const bool registered = RegisterCommand(
    {"gate", "verdict of a report; with --baseline also the two-sample A/B test case by case", [](CLI::App& cmd) {
       auto o = std::make_shared<GateOptions>();
       cmd.add_option("report", o->report, "report JSON written by samplecheck run")->required();
       cmd.add_option("--baseline", o->baseline, "baseline report JSON (same suite and seed) for the A/B test");
       return [o]() { return Gate(*o); };
     }});

}  // namespace
}  // namespace samplecheck::tools
