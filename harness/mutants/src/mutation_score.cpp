#include "samplecheck/mutants/mutation_score.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <iomanip>
#include <limits>
#include <sstream>

#include "samplecheck/campaign/campaign.h"
#include "samplecheck/core/format.h"
#include "samplecheck/properties/suite.h"
#include "samplecheck/samplers/mutants.h"
#include "samplecheck/samplers/sampler_registry.h"

namespace samplecheck::harness {
namespace {

// Draw counts as people read them: 895, 2.1e6, 2e7 (two significant digits from 1e4 on).
// The catch of a failed case: a failing hard outcome (a sampler error before support violations), else the
// p-value test that needs the fewest draws for power 0.99.
MutantCatch CampaignCatch(const std::string& suite, const CaseResult& r) {
  MutantCatch c;
  c.check = suite + "/" + r.name + ": ";
  for (const CheckOutcome& o : r.outcomes) {
    if (o.Fails()) {
      c.check += o.test;
      c.needed = o.draws_for_power;
      return c;
    }
  }
  double best = std::numeric_limits<double>::infinity();
  std::string best_name = "holm";
  for (const CheckOutcome& o : r.outcomes) {
    if (o.kind == CheckOutcome::Kind::kPValue && o.draws_for_power > 0 && o.draws_for_power < best) {
      best = o.draws_for_power;
      best_name = o.test;
    }
  }
  if (r.status == CaseStatus::kError) best_name = "error: " + r.reason;
  c.check += best_name;
  c.needed = std::isfinite(best) ? best : double(r.draws);
  return c;
}

// Properties that fail on the correct sampler itself are not evidence against a mutant (a property or reference
// in progress, or a disagreement between them): they are excluded from every verdict and named in the output.
std::vector<std::string> PropertiesFailingOnExact(const MutationOptions& o) {
  std::vector<std::string> failing;
  if (!o.properties) return failing;
  auto exact = MakeSampler("exact:" + o.profile, {});
  if (!exact.ok()) return failing;
  properties::PropertyOptions popts;
  popts.max_success = o.max_success;
  auto result = properties::RunPropertySuite(**exact, popts, o.profile, "exact:" + o.profile);
  if (!result.ok()) return failing;
  for (const properties::PropertyResult& r : result->results) {
    if (r.status != properties::PropertyStatus::kPassed && r.status != properties::PropertyStatus::kSkipped) {
      failing.push_back(r.name);
    }
  }
  return failing;
}

MutantRow Judge(const std::string& name, const std::string& bug_class, const std::vector<Suite>& suites,
                const MutationOptions& o, const std::vector<std::string>& excluded_properties) {
  MutantRow row{name, bug_class, bug_class == "control", {}, std::nullopt, 0};
  const auto t0 = std::chrono::steady_clock::now();
  const std::string spec = "mutant:" + name;
  for (const Suite& suite : suites) {
    CampaignOptions options;
    options.sampler_spec = spec;
    options.profile = o.profile;
    options.jobs = o.jobs;
    options.progress = Progress::Mode::kQuiet;
    options.version = o.version;
    auto report = RunCampaign(suite, options);
    if (!report.ok()) {
      row.error = report.error();
      return row;
    }
    for (const CaseResult& r : report->cases) {
      if (r.status == CaseStatus::kFail || r.status == CaseStatus::kError) {
        row.catches.push_back(CampaignCatch(suite.name, r));
      }
    }
  }
  // The campaign catch that needs the fewest draws first.
  std::sort(row.catches.begin(), row.catches.end(),
            [](const MutantCatch& a, const MutantCatch& b) { return a.needed < b.needed; });
  if (o.properties) {
    SamplerOptions sampler_options;
    sampler_options.profile = o.profile;
    auto sampler = MakeSampler(spec, sampler_options);
    if (!sampler.ok()) {
      row.error = sampler.error();
      return row;
    }
    properties::PropertyOptions popts;
    popts.max_success = o.max_success;
    auto result = properties::RunPropertySuite(**sampler, popts, o.profile, spec);
    if (!result.ok()) {
      row.error = result.error();
      return row;
    }
    for (const properties::PropertyResult& r : result->results) {
      if (std::find(excluded_properties.begin(), excluded_properties.end(), r.name) != excluded_properties.end()) {
        continue;
      }
      if (r.status == properties::PropertyStatus::kFailed || r.status == properties::PropertyStatus::kError ||
          r.status == properties::PropertyStatus::kGaveUp) {
        row.catches.push_back({"property:" + r.name, double(r.cases + 1), false});
      }
    }
  }
  row.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return row;
}

}  // namespace

Result<std::vector<Suite>> LoadMutantSuites(const std::vector<std::string>& names) {
  std::vector<Suite> suites;
  for (const std::string& name : names) {
    if (name == "mutants") {
      auto suite = ParseSuite(nlohmann::json::parse(MutantsSuiteJson()), ".", "builtin:mutants");
      if (!suite.ok()) return suite.error();
      suites.push_back(std::move(*suite));
    } else {
      auto suite = LoadSuite(name);
      if (!suite.ok()) return suite.error();
      suites.push_back(std::move(*suite));
    }
  }
  return suites;
}

std::string MutantRow::Verdict() const {
  if (error) return "ERROR";
  if (control) return catches.empty() ? "passes" : "FALSE ALARM";
  return catches.empty() ? "SURVIVED" : "caught";
}

std::string MutantRow::CaughtBy() const {
  if (error) return "error: " + error->ToString();
  if (catches.empty()) return "-";
  std::string by = catches.front().check;
  size_t campaign = 0, props = 0;
  for (const MutantCatch& c : catches) (c.draws ? campaign : props)++;
  // The best campaign catch, then the first property, then how many checks in all.
  for (const MutantCatch& c : catches) {
    if (!c.draws && c.check != by) {
      by += "; " + c.check;
      break;
    }
  }
  by += " (" + std::to_string(campaign) + " cases, " + std::to_string(props) + " properties)";
  return by;
}

std::string MutantRow::Needed() const {
  std::string out;
  for (const MutantCatch& c : catches) {
    if (c.draws) {
      out = FormatNeededCount(c.needed) + " draws";
      break;
    }
  }
  for (const MutantCatch& c : catches) {
    if (!c.draws) {
      out += (out.empty() ? "" : ", ") + FormatNeededCount(c.needed) + " cases";
      break;
    }
  }
  return out.empty() ? "-" : out;
}

size_t MutationScore::caught() const {
  return static_cast<size_t>(std::count_if(rows.begin(), rows.end(), [](const MutantRow& r) {
    return !r.control && r.Caught();
  }));
}

size_t MutationScore::mutants() const {
  return static_cast<size_t>(std::count_if(rows.begin(), rows.end(), [](const MutantRow& r) { return !r.control; }));
}

bool MutationScore::Passed() const {
  return !rows.empty() && std::all_of(rows.begin(), rows.end(), [](const MutantRow& r) { return r.Ok(); });
}

Result<MutationScore> ScoreMutants(const MutationOptions& o, const std::function<void(const MutantRow&)>& on_row) {
  if (o.family == "spec") return ScoreSpecMutants(o, on_row);
  const std::vector<MutantInfo> family = MutantFamily(o.family);
  if (family.empty()) {
    return InvalidArgument("this program has no " + o.family + " mutants: the CUDA kernel mutants are compiled only "
                           "into test builds; run the test build's samplecheck-kernel-mutants (ctest "
                           "mutants_cuda_table, label gpu; docs/mutants.md)");
  }
  MutationScore score;
  score.family = o.family;
  score.profile = o.profile;
  score.properties = o.properties;
  score.max_success = o.max_success;
  // The zoo's own cases (mutants) expose the subtle CPU mutants with up to 1.3e8 draws; the kernel mutants are
  // gross or batch-level faults, which smoke and the properties see.
  score.suites = !o.suites.empty() ? o.suites
                                   : (o.family == "cpu" ? std::vector<std::string>{"smoke", "mutants"}
                                                        : std::vector<std::string>{"smoke"});
  auto suites = LoadMutantSuites(score.suites);
  if (!suites.ok()) return suites.error();
  // The control first (it must pass everything), then the mutants asked for.
  std::vector<std::pair<std::string, std::string>> names;
  for (const MutantInfo& m : family) {
    if (m.bug_class == "control") names.insert(names.begin(), {m.name, m.bug_class});
  }
  for (const MutantInfo& m : family) {
    if (m.bug_class == "control") continue;
    if (o.only.empty() || std::find(o.only.begin(), o.only.end(), m.name) != o.only.end()) {
      names.emplace_back(m.name, m.bug_class);
    }
  }
  for (const std::string& n : o.only) {
    const bool member = std::any_of(family.begin(), family.end(), [&](const auto& m) { return m.name == n; });
    if (!member) {
      return InvalidArgument("no " + o.family + " mutant named '" + n + "' (samplecheck mutants --list)");
    }
  }
  if (names.empty() || names.front().second != "control") {
    return InvalidArgument("the " + o.family + " family has no control (a member of bug class 'control')");
  }
  score.excluded_properties = PropertiesFailingOnExact(o);
  for (const auto& [name, bug_class] : names) {
    score.rows.push_back(Judge(name, bug_class, *suites, o, score.excluded_properties));
    if (on_row) on_row(score.rows.back());
  }
  return score;
}

std::string FormatMutationHeader(const MutationScore& s) {
  std::string suite_names;
  for (const std::string& name : s.suites) suite_names += (suite_names.empty() ? "" : " + ") + name;
  std::ostringstream os;
  os << "samplecheck mutants: " << s.family << " family, profile " << s.profile << ", campaign suites " << suite_names
     << (s.properties ? ", property suite (max_success " + std::to_string(s.max_success) + ")"
                      : ", no property suite (--no-properties)")
     << "\n";
  for (const std::string& p : s.excluded_properties) {
    os << "excluded: property " << p << " fails on exact:" << s.profile
       << " itself (not evidence against any mutant; a property or reference bug to fix)\n";
  }
  return os.str();
}

std::string FormatMutantRowProgress(const MutantRow& r, bool verbose) {
  std::ostringstream os;
  if (verbose) {
    for (const MutantCatch& c : r.catches) {
      os << "    " << r.name << "  " << c.check << "  (" << FormatNeededCount(c.needed)
         << (c.draws ? " draws)" : " cases)") << "\n";
    }
  }
  os << "  " << std::left << std::setw(30) << r.name << std::setw(12) << r.Verdict() << std::fixed
     << std::setprecision(1) << r.seconds << " s  " << r.CaughtBy() << "\n";
  return os.str();
}

// A Markdown table cell: '|' escaped (max-|z| stays one cell).
static std::string Cell(std::string_view text) {
  std::string out;
  for (char c : text) {
    if (c == '|') out += '\\';
    out += c;
  }
  return out;
}

std::string FormatMutationScore(const MutationScore& s, bool markdown) {
  std::ostringstream os;
  if (markdown) {
    os << "| mutant | bug class | verdict | caught by | needed |\n|---|---|---|---|---|\n";
    for (const MutantRow& r : s.rows) {
      os << "| " << Cell(r.name) << " | " << Cell(r.bug_class) << " | " << r.Verdict() << " | " << Cell(r.CaughtBy())
         << " | " << Cell(r.Needed()) << " |\n";
    }
  } else {
    // Columns as wide as their longest entry (plus a space), never narrower than the headers' usual widths.
    size_t name_w = 30, class_w = 38;
    for (const MutantRow& r : s.rows) {
      name_w = std::max(name_w, r.name.size() + 1);
      class_w = std::max(class_w, r.bug_class.size() + 1);
    }
    const int nw = static_cast<int>(name_w), cw = static_cast<int>(class_w);
    os << std::left << std::setw(nw) << "mutant" << std::setw(cw) << "bug class" << std::setw(12) << "verdict"
       << std::setw(24) << "needed" << "caught by\n";
    for (const MutantRow& r : s.rows) {
      os << std::left << std::setw(nw) << r.name << std::setw(cw) << r.bug_class << std::setw(12) << r.Verdict()
         << std::setw(24) << r.Needed() << r.CaughtBy() << "\n";
    }
  }
  const MutantRow* control = s.rows.empty() ? nullptr : &s.rows.front();
  os << "mutation score: " << s.caught() << "/" << s.mutants() << " caught"
     << (control && control->Ok()           ? "; control passes"
         : control && !control->error ? "; CONTROL FAILS (false alarm)"
         : control                           ? "; CONTROL COULD NOT RUN (" + control->error->ToString() + ")"
                                             : "; NO CONTROL")
     << "\nVERDICT: " << (s.Passed() ? "PASS" : "FAIL") << "\n";
  return os.str();
}

std::string FormatMutantFamily(std::string_view family, bool markdown) {
  if (family == "spec") return FormatSpecMutantFamily(markdown);
  std::ostringstream os;
  if (markdown) os << "| mutant | bug class | hook | source | fault |\n|---|---|---|---|---|\n";
  for (const MutantInfo& m : MutantFamily(family)) {
    if (m.bug_class == "control") continue;
    if (markdown) {
      os << "| " << Cell(m.name) << " | " << Cell(m.bug_class) << " | " << Cell(m.hook) << " | " << Cell(m.source)
         << " | " << Cell(m.fault) << " |\n";
    } else {
      os << std::left << std::setw(30) << m.name << std::setw(38) << m.bug_class << m.fault << "\n"
         << std::setw(30) << "" << "source: " << m.source << "\n";
    }
  }
  return os.str();
}

}  // namespace samplecheck::harness
