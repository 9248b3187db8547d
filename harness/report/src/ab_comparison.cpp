#include "samplecheck/report/ab_comparison.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <sstream>

#include "samplecheck/checks/checks.h"
#include "samplecheck/stats/multiple_testing.h"
#include "samplecheck/stats/two_sample.h"
#include "samplecheck/suites/row_source.h"

namespace samplecheck::harness {
namespace {

bool SameCells(const StoredBinning& a, const StoredBinning& b) {
  if (a.name != b.name || a.expected.size() != b.expected.size() || a.cell_token != b.cell_token) return false;
  for (size_t i = 0; i < a.expected.size(); ++i) {
    if (std::fabs(a.expected[i] - b.expected[i]) > 1e-12 * std::max(1.0, std::fabs(a.expected[i]))) return false;
  }
  return true;
}

AbCase Compare(const CaseResult& c, const CaseResult* base) {
  AbCase a;
  a.name = c.name;
  if (!base) {
    a.note = "not in the baseline";
    return a;
  }
  if (c.status == CaseStatus::kSkipped || base->status == CaseStatus::kSkipped) {
    a.note = "skipped in one of the reports";
    return a;
  }
  if (RowSpecToJson(c.row) != RowSpecToJson(base->row) || c.row_seed != base->row_seed || c.profile != base->profile) {
    a.note = "different row, row seed or profile";
    return a;
  }
  const std::vector<StoredBinning> mine = StoredBinnings(c);
  const std::vector<StoredBinning> theirs = StoredBinnings(*base);
  uint32_t tests = 0;
  double min_p = 1.0;
  for (const StoredBinning& b : mine) {
    const StoredBinning* other = nullptr;
    for (const StoredBinning& ob : theirs) {
      if (ob.name == b.name) other = &ob;
    }
    if (!other || !SameCells(b, *other)) continue;
    const Result<stats::TwoSample> t = stats::TwoSampleChiSquareTest(b.observed, other->observed);
    if (!t.ok()) continue;
    ++tests;
    if (t->p_value <= min_p) {
      min_p = t->p_value;
      a.statistic = t->statistic;
      a.dof = t->dof;
      a.binning = b.name;
    }
  }
  if (tests == 0) {
    a.note = mine.empty() ? "no binning (support-only case)" : "bins differ (different draws or reference)";
  } else {
    a.compared = true;
    a.p_value = std::min(1.0, tests * min_p);
  }
  return a;
}

}  // namespace

Result<AbComparison> CompareWithBaseline(const CampaignReport& report, const CampaignReport& baseline) {
  AbComparison ab;
  ab.baseline_sampler = baseline.sampler;
  ab.baseline_seed = baseline.seed;
  ab.alpha = report.alpha;
  std::map<std::string, const CaseResult*> by_name;
  for (const CaseResult& c : baseline.cases) by_name[c.name] = &c;
  for (const CaseResult& c : report.cases) {
    auto it = by_name.find(c.name);
    ab.cases.push_back(Compare(c, it == by_name.end() ? nullptr : it->second));
  }
  std::vector<double> p_values;
  std::vector<size_t> index;
  for (size_t i = 0; i < ab.cases.size(); ++i) {
    if (ab.cases[i].compared) {
      p_values.push_back(ab.cases[i].p_value);
      index.push_back(i);
    }
  }
  if (index.empty()) {
    return InvalidArgument("no case is comparable with the baseline (same suite, seed and draw budgets are needed)");
  }
  ab.compared = index.size();
  const Result<stats::MultipleTestingDecision> holm = stats::HolmBonferroni(p_values, report.alpha);
  ab.holm_ok = holm.ok();
  for (size_t k = 0; k < index.size() && holm.ok(); ++k) {
    ab.cases[index[k]].holm = holm->adjusted_p_values[k];
    ab.cases[index[k]].rejected = holm->rejected[k];
    ab.rejected += holm->rejected[k];
  }
  return ab;
}

std::string FormatAbComparison(const AbComparison& ab, const std::string& baseline_path) {
  std::ostringstream os;
  os << "\nA/B against baseline " << baseline_path << " (sampler " << ab.baseline_sampler << ", seed "
     << ab.baseline_seed << "): two-sample chi-square, Holm at alpha " << ab.alpha << "\n";
  os << "  " << ab.compared << " cases compared, " << ab.rejected << " differ, " << ab.cases.size() - ab.compared
     << " not comparable\n";
  std::vector<const AbCase*> sorted;
  for (const AbCase& a : ab.cases) sorted.push_back(&a);
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
    os << line.str() << "\n";
  }
  os << "A/B VERDICT: " << (ab.Same() ? "SAME" : "DIFFER") << "\n";
  return os.str();
}

}  // namespace samplecheck::harness
