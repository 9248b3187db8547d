// samplecheck mutants: the mutation score of the default gate. Every mutant of the zoo (harness/mutants.h) goes
// through the gate a sampler would face, a campaign over the smoke suite and the zoo's own cases
// (MutantsSuiteJson) plus the property suite (when this program was built with properties/), and the table says
// for each mutant whether it was caught, by which check, and how many draws (or property cases) that took.
// The control `mutant:none` (the mutant machinery without a fault) runs first and must pass everything: a gate
// that rejects it has false alarms, and its verdicts on the mutants mean nothing.
//
// "draws needed" estimates the draws at which the check that caught a mutant has power 0.99 at the case's own
// per-test alpha, from the case's statistics: support violations: ln(100) / (violations / draws); Pearson:
// lambda_hat = X^2 - dof, N = lambda*(dof, alpha, 0.99) / (lambda_hat / draws); max-|z|: N = draws *
// ((z* + 2.33) / |z|)^2. An estimate from one run, not a measurement: docs/power.md has the measured power curves.
// Exit 0 when every mutant is caught and the control passes, 1 otherwise, 2 on usage or input errors.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <iomanip>
#include <iostream>
#include <limits>
#include <memory>
#include <sstream>

#include "command_registry.h"
#include "samplecheck/harness/campaign.h"
#include "samplecheck/harness/mutants.h"
#include "samplecheck/harness/suite.h"
#include "samplecheck/stats/power.h"
#ifdef SAMPLECHECK_HAVE_PROPERTIES
#include "samplecheck/properties/suite.h"
#endif

namespace samplecheck::tools {
namespace {

struct MutantsOptions {
  std::string family = "cpu";
  std::vector<std::string> suites;  // default: smoke + mutants (cpu), smoke (cuda)
  std::string profile = "vllm";
  std::vector<std::string> only;
  int max_success = 100;
  bool no_properties = false;
  bool markdown = false;
  bool list = false;
  bool verbose = false;
  unsigned jobs = 0;
};

struct Catch {
  std::string check;   // "smoke/topk: support", "property:mass-sums-to-one"
  double needed = 0;   // draws (campaign) or cases (property)
  bool draws = true;
};

struct Row {
  std::string name;
  std::string bug_class;
  bool control = false;
  std::vector<Catch> catches;  // campaign catches first, then properties
  std::string error;           // the gate could not run
  double seconds = 0;
};

std::string Compact(double n) {
  std::ostringstream out;
  if (n < 1e4) {
    out << static_cast<uint64_t>(std::ceil(n));
  } else {
    out << std::setprecision(2) << n;
  }
  return out.str();
}

// The draws at which the check that failed this case would reach power 0.99 (see the header comment).
Catch CampaignCatch(const std::string& suite, const harness::CaseResult& r) {
  Catch c;
  c.check = suite + "/" + r.name + ": ";
  if (!r.sampler_error.empty()) {
    c.check += "sampler error";
    c.needed = 1;
    return c;
  }
  if (r.support_violations > 0) {
    c.check += "support";
    c.needed = std::log(100.0) * double(r.draws) / double(r.support_violations);
    return c;
  }
  double best = std::numeric_limits<double>::infinity();
  std::string best_name = "holm";
  const double alpha = std::clamp(r.alpha_plan, 1e-300, 0.5);
  for (const harness::BinningResult& b : r.binnings) {
    if (b.dof == 0 || b.pearson <= double(b.dof)) continue;
    const double divergence = (b.pearson - double(b.dof)) / double(r.draws);
    const stats::DrawPlan plan = stats::PlanDrawsForDivergence(divergence, alpha, 0.99, b.dof + 1);
    if (plan.ok() && plan.draws < best) {
      best = plan.draws;
      best_name = "pearson " + b.name;
    }
  }
  if (r.max_abs_z > 0 && r.max_z_threshold > 0) {
    const double ratio = (r.max_z_threshold + 2.33) / r.max_abs_z;
    const double n = double(r.draws) * ratio * ratio;
    if (n < best) {
      best = n;
      best_name = "max-|z| token " + std::to_string(r.max_z_token);
    }
  }
  c.check += best_name;
  c.needed = std::isfinite(best) ? best : double(r.draws);
  return c;
}

Result<std::vector<harness::Suite>> LoadSuites(const std::vector<std::string>& names) {
  std::vector<harness::Suite> suites;
  for (const std::string& name : names) {
    if (name == "mutants") {
      auto suite = harness::ParseSuite(nlohmann::json::parse(harness::MutantsSuiteJson()), ".", "builtin:mutants");
      if (!suite.ok()) return suite.error();
      suites.push_back(std::move(*suite));
    } else {
      auto suite = harness::LoadSuite(name);
      if (!suite.ok()) return suite.error();
      suites.push_back(std::move(*suite));
    }
  }
  return suites;
}

// Properties that fail on the exact sampler itself are not evidence against a mutant (a property or reference in
// progress, or a disagreement between them): they are excluded from every verdict and named in the output.
std::vector<std::string> PropertiesFailingOnExact(const MutantsOptions& o) {
  std::vector<std::string> failing;
#ifdef SAMPLECHECK_HAVE_PROPERTIES
  if (o.no_properties) return failing;
  auto exact = harness::MakeSampler("exact:" + o.profile, {});
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
#else
  (void)o;
#endif
  return failing;
}

Row Judge(const std::string& name, const std::string& bug_class, const std::vector<harness::Suite>& suites,
          const MutantsOptions& o, const std::vector<std::string>& excluded_properties) {
  (void)excluded_properties;  // used only when the property suite is built in
  Row row{name, bug_class, bug_class == "control", {}, "", 0};
  const auto t0 = std::chrono::steady_clock::now();
  const std::string spec = "mutant:" + name;
  for (const harness::Suite& suite : suites) {
    harness::CampaignOptions options;
    options.sampler_spec = spec;
    options.profile = o.profile;
    options.jobs = o.jobs;
    options.progress = harness::Progress::Mode::kQuiet;
    options.version = SAMPLECHECK_VERSION;
    auto report = harness::RunCampaign(suite, options);
    if (!report.ok()) {
      row.error = report.error().ToString();
      return row;
    }
    for (const harness::CaseResult& r : report->cases) {
      if (r.status == harness::CaseStatus::kFail || r.status == harness::CaseStatus::kError) {
        row.catches.push_back(CampaignCatch(suite.name, r));
      }
    }
  }
  // The campaign catch that needs the fewest draws first.
  std::sort(row.catches.begin(), row.catches.end(), [](const Catch& a, const Catch& b) { return a.needed < b.needed; });
#ifdef SAMPLECHECK_HAVE_PROPERTIES
  if (!o.no_properties) {
    harness::SamplerOptions sampler_options;
    sampler_options.profile = o.profile;
    auto sampler = harness::MakeSampler(spec, sampler_options);
    if (!sampler.ok()) {
      row.error = sampler.error().ToString();
      return row;
    }
    properties::PropertyOptions popts;
    popts.max_success = o.max_success;
    auto result = properties::RunPropertySuite(**sampler, popts, o.profile, spec);
    if (!result.ok()) {
      row.error = result.error().ToString();
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
#endif
  row.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return row;
}

bool Caught(const Row& r) { return r.error.empty() && !r.catches.empty(); }
bool RowOk(const Row& r) { return r.error.empty() && (r.control ? r.catches.empty() : !r.catches.empty()); }

std::string CaughtBy(const Row& r) {
  if (!r.error.empty()) return "error: " + r.error;
  if (r.catches.empty()) return "-";
  std::string by = r.catches.front().check;
  size_t campaign = 0, props = 0;
  for (const Catch& c : r.catches) (c.draws ? campaign : props)++;
  // The best campaign catch, then the first property, then how many checks in all.
  for (const Catch& c : r.catches) {
    if (!c.draws && c.check != by) {
      by += "; " + c.check;
      break;
    }
  }
  by += " (" + std::to_string(campaign) + " cases, " + std::to_string(props) + " properties)";
  return by;
}

std::string Needed(const Row& r) {
  std::string out;
  for (const Catch& c : r.catches) {
    if (c.draws) {
      out = Compact(c.needed) + " draws";
      break;
    }
  }
  for (const Catch& c : r.catches) {
    if (!c.draws) {
      out += (out.empty() ? "" : ", ") + Compact(c.needed) + " cases";
      break;
    }
  }
  return out.empty() ? "-" : out;
}

std::string Verdict(const Row& r) {
  if (!r.error.empty()) return "ERROR";
  if (r.control) return r.catches.empty() ? "passes" : "FALSE ALARM";
  return r.catches.empty() ? "SURVIVED" : "caught";
}

void PrintTable(const std::vector<Row>& rows, bool markdown) {
  if (markdown) {
    std::cout << "| mutant | bug class | verdict | caught by | needed |\n|---|---|---|---|---|\n";
    for (const Row& r : rows) {
      std::cout << "| " << r.name << " | " << r.bug_class << " | " << Verdict(r) << " | " << CaughtBy(r) << " | "
                << Needed(r) << " |\n";
    }
    return;
  }
  std::cout << std::left << std::setw(30) << "mutant" << std::setw(38) << "bug class" << std::setw(12) << "verdict"
            << std::setw(24) << "needed" << "caught by\n";
  for (const Row& r : rows) {
    std::cout << std::left << std::setw(30) << r.name << std::setw(38) << r.bug_class << std::setw(12) << Verdict(r)
              << std::setw(24) << Needed(r) << CaughtBy(r) << "\n";
  }
}

// The zoo as `samplecheck list` should show it: name, bug class, source, fault.
int ListZoo(const std::string& family, bool markdown) {
  if (markdown) std::cout << "| mutant | bug class | hook | source | fault |\n|---|---|---|---|---|\n";
  for (const harness::MutantInfo& m : harness::MutantFamily(family)) {
    if (m.bug_class == "control") continue;
    if (markdown) {
      std::cout << "| " << m.name << " | " << m.bug_class << " | " << m.hook << " | " << m.source << " | " << m.fault
                << " |\n";
    } else {
      std::cout << std::left << std::setw(30) << m.name << std::setw(38) << m.bug_class << m.fault << "\n"
                << std::setw(30) << "" << "source: " << m.source << "\n";
    }
  }
  return kExitOk;
}

int Mutants(const MutantsOptions& o) {
  if (o.list) return ListZoo(o.family, o.markdown);
  if (o.family != "cpu" && o.family != "cuda") {
    std::cerr << "samplecheck mutants: --sampler-family must be cpu or cuda (got '" << o.family << "')\n";
    return kExitUsage;
  }
  const std::vector<harness::MutantInfo> family = harness::MutantFamily(o.family);
  if (family.empty()) {
    std::cerr << "samplecheck mutants: this program has no " << o.family << " mutants: the CUDA kernel mutants are "
                 "compiled only into test builds; run the test build's samplecheck-kernel-mutants (ctest "
                 "mutants_cuda_table, label gpu; docs/mutants.md)\n";
    return kExitUsage;
  }
  // The zoo's own cases (mutants) expose the subtle CPU mutants with up to 1.3e8 draws; the kernel mutants are
  // gross or batch-level faults, which smoke and the properties see.
  const std::vector<std::string> suite_list =
      !o.suites.empty() ? o.suites
                        : (o.family == "cpu" ? std::vector<std::string>{"smoke", "mutants"}
                                             : std::vector<std::string>{"smoke"});
  auto suites = LoadSuites(suite_list);
  if (!suites.ok()) {
    std::cerr << "samplecheck mutants: " << suites.error().ToString() << "\n";
    return kExitUsage;
  }
  // The control first (it must pass everything), then the mutants asked for.
  std::vector<std::pair<std::string, std::string>> names;
  for (const harness::MutantInfo& m : family) {
    if (m.bug_class == "control") names.insert(names.begin(), {m.name, m.bug_class});
  }
  for (const harness::MutantInfo& m : family) {
    if (m.bug_class == "control") continue;
    if (o.only.empty() || std::find(o.only.begin(), o.only.end(), m.name) != o.only.end()) {
      names.emplace_back(m.name, m.bug_class);
    }
  }
  for (const std::string& n : o.only) {
    const bool member = std::any_of(family.begin(), family.end(), [&](const auto& m) { return m.name == n; });
    if (!member) {
      std::cerr << "samplecheck mutants: no " << o.family << " mutant named '" << n
                << "' (samplecheck mutants --list)\n";
      return kExitUsage;
    }
  }
  if (names.empty() || names.front().second != "control") {
    std::cerr << "samplecheck mutants: the " << o.family << " family has no control (a member of bug class "
                 "'control')\n";
    return kExitUsage;
  }
  std::string suite_names;
  for (const std::string& s : suite_list) suite_names += (suite_names.empty() ? "" : " + ") + s;
#ifdef SAMPLECHECK_HAVE_PROPERTIES
  const bool with_properties = !o.no_properties;
#else
  const bool with_properties = false;
#endif
  std::cout << "samplecheck mutants: " << o.family << " family, profile " << o.profile << ", campaign suites "
            << suite_names
            << (with_properties ? ", property suite (max_success " + std::to_string(o.max_success) + ")"
                                : ", no property suite (--no-properties, or not built into this program)")
            << "\n";
  const std::vector<std::string> excluded = PropertiesFailingOnExact(o);
  for (const std::string& p : excluded) {
    std::cout << "excluded: property " << p << " fails on exact:" << o.profile
              << " itself (not evidence against any mutant; a property or reference bug to fix)\n";
  }
  std::vector<Row> rows;
  for (const auto& [name, bug_class] : names) {
    rows.push_back(Judge(name, bug_class, *suites, o, excluded));
    const Row& r = rows.back();
    if (o.verbose) {
      for (const Catch& c : r.catches) {
        std::cerr << "    " << r.name << "  " << c.check << "  (" << Compact(c.needed) << (c.draws ? " draws)" : " cases)")
                  << "\n";
      }
    }
    std::cerr << "  " << std::left << std::setw(30) << r.name << std::setw(12) << Verdict(r) << std::fixed
              << std::setprecision(1) << r.seconds << " s  " << CaughtBy(r) << "\n"
              << std::defaultfloat;
  }
  PrintTable(rows, o.markdown);
  size_t caught = 0, total = 0;
  bool ok = true;
  for (const Row& r : rows) {
    ok = ok && RowOk(r);
    if (r.control) continue;
    ++total;
    caught += Caught(r);
  }
  std::cout << "mutation score: " << caught << "/" << total << " caught"
            << (RowOk(rows.front())           ? "; control passes"
                : rows.front().error.empty() ? "; CONTROL FAILS (false alarm)"
                                             : "; CONTROL COULD NOT RUN (" + rows.front().error + ")")
            << "\nVERDICT: " << (ok ? "PASS" : "FAIL") << "\n";
  return ok ? kExitOk : kExitCheckFailed;
}

const bool registered = RegisterCommand(
    {"mutants", "run the default gate on every mutant of the zoo and print the mutation-score table",
     [](CLI::App& cmd) {
       auto o = std::make_shared<MutantsOptions>();
       cmd.add_option("--sampler-family", o->family, "cpu (the CPU mutant zoo) or cuda (the kernel mutants)")
           ->check(CLI::IsMember({"cpu", "cuda"}));
       cmd.add_option("--suite", o->suites,
                      "campaign suites (repeatable; 'mutants' = the zoo's own cases); default: smoke mutants (cpu), "
                      "smoke (cuda)");
       cmd.add_option("--profile", o->profile, "the semantics every mutant is the faulty version of (default vllm)");
       cmd.add_option("--only", o->only, "only these mutants (repeatable); the control always runs");
       cmd.add_option("--max-success", o->max_success, "property cases per property (default 100)");
       cmd.add_flag("--no-properties", o->no_properties, "campaigns only");
       cmd.add_flag("--verbose,-v", o->verbose, "print every check that caught each mutant (stderr)");
       cmd.add_flag("--list", o->list, "list the zoo (name, bug class, source, fault) and exit");
       cmd.add_flag("--markdown", o->markdown, "print the table as Markdown (docs/mutants.md)");
       cmd.add_option("--jobs,-j", o->jobs, "parallel cases per campaign (default: one per core)");
       return [o]() { return Mutants(*o); };
     }});

}  // namespace
}  // namespace samplecheck::tools
