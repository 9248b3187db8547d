// samplecheck verify: the gate of a sampler change, what a CI job runs before merging (harness/gate: gate.h): the
// campaign of a suite (row, batch and generated cases) and the RapidCheck property suites against the same
// sampler, optionally the A/B test against a baseline report; one JSON report (with the properties' outcomes), one
// HTML, one summary, one exit code (docs/cli.md): 0 pass, 1 fail, 2 usage or input error, 130 / 143 interrupted.
//
//   samplecheck verify --sampler cuda --profile vllm --report verify.json --html verify.html
//   samplecheck verify --sampler plugin:./libmine.so --suite smoke --baseline main.json
#include <filesystem>
#include <iostream>
#include <memory>
#include <optional>
#include <string>

#include "command_registry.h"
#include "options.h"
#include "samplecheck/core/files.h"
#include "samplecheck/gate/gate.h"
#include "samplecheck/report/html_report.h"
#include "samplecheck/report/report.h"
#include "samplecheck/samplers/sampler_children.h"
#include "samplecheck/samplers/sampler_registry.h"
#include "stop_signals.h"

namespace samplecheck::tools {
namespace {

struct VerifyOptions {
  harness::GateOptions gate;
  std::string sampler = "exact";
  std::string report;
  std::string html;
  bool no_properties = false;
  bool follow_symlinks = false;
  bool allow_skipped = false;
  bool allow_underpowered = false;
  std::optional<uint64_t> seed;
};

int Verify(VerifyOptions& o) {
  const WriteOptions write{o.follow_symlinks};
  // Outputs are regular writable files, none of them an input (the baseline, a suite file); one writer each.
  const std::vector<NamedPath> outputs{{"--report", o.report}, {"--html", o.html}};
  const std::vector<NamedPath> inputs{{"--baseline", o.gate.baseline},
                                      {"the suite file", std::filesystem::exists(o.gate.suite) ? o.gate.suite : ""}};
  if (Status st = CheckOutputs(outputs, inputs, write); !st.ok()) {
    std::cerr << "samplecheck verify: " << st.error().message << "\n";
    return kExitUsage;
  }
  auto locks = LockOutputs(outputs);
  if (!locks.ok()) {
    std::cerr << "samplecheck verify: " << locks.error().message << "\n";
    return kExitUsage;
  }
  o.gate.properties = !o.no_properties;
  o.gate.campaign.sampler_spec = o.sampler;
  o.gate.campaign.seed = o.seed;
  o.gate.campaign.evidence.allow_skipped = o.allow_skipped;
  o.gate.campaign.evidence.allow_underpowered = o.allow_underpowered;
  o.gate.campaign.version = SAMPLECHECK_VERSION;
  o.gate.campaign.command_line = "samplecheck verify --suite " + o.gate.suite + " --sampler " + o.sampler +
                                 (o.gate.campaign.profile.empty() ? "" : " --profile " + o.gate.campaign.profile) +
                                 EquivalenceCommandLine(o.gate.campaign.equivalence_eps,
                                                        o.gate.campaign.equivalence_chi2_eps);
  o.gate.campaign.stop = StopSignals::Flag();
  std::optional<harness::GateResult> gated;
  {
    StopSignals signals;
    auto result = harness::RunGate(o.gate);
    if (!result.ok()) {
      if (StopSignals::Stopped()) return StopSignals::ExitCode();
      std::cerr << "samplecheck verify: " << result.error().ToString() << "\n";
      return kExitUsage;
    }
    gated = std::move(*result);
  }
  harness::GateResult* result = &*gated;
  // Stopped before a case finished: the previous report stays as it is.
  if (result->report.interrupted && result->report.cases.empty()) {
    std::cout << "interrupted before a case finished: nothing written"
              << (o.report.empty() ? "" : ", " + o.report + " left as it was") << "\n";
    return StopSignals::ExitCode();
  }
  if (!o.report.empty()) {
    if (Status st = harness::SaveReport(result->report, o.report, write); !st.ok()) {
      std::cerr << "samplecheck verify: " << st.error().message << "\n";
      return kExitUsage;
    }
  }
  if (!o.html.empty()) {
    if (Status st = harness::SaveHtmlReport(result->report, o.html, write); !st.ok()) {
      std::cerr << "samplecheck verify: " << st.error().message << "\n";
      return kExitUsage;
    }
  }
  std::cout << harness::FormatGateSummary(*result, o.gate.baseline);
  if (!o.report.empty()) std::cout << "report: " << o.report << "\n";
  if (!o.html.empty()) std::cout << "html:   " << o.html << "\n";
  if (result->report.interrupted) return StopSignals::ExitCode();
  return result->Passed() ? kExitOk : kExitCheckFailed;
}

const bool registered = RegisterCommand(
    {"verify", "the gate of a sampler change: campaign + property suites (+ A/B), one report and one verdict",
     [](CLI::App& cmd) {
       auto o = std::make_shared<VerifyOptions>();
       cmd.add_option("--sampler", o->sampler, harness::SamplerSpecHelp())->capture_default_str();
       cmd.add_option("--profile", o->gate.campaign.profile,
                      "semantics profile the sampler is judged against (default: the suite's, else the sampler's)");
       cmd.add_option("--suite", o->gate.suite, "the campaign's suite (default standard)")->capture_default_str();
       AddUnsigned(cmd, "--seed", o->seed, "campaign seed (default: the suite's)");
       cmd.add_option("--baseline", o->gate.baseline, "baseline report of the same suite and seed: also the A/B test");
       cmd.add_option("--report", o->report, "write the JSON report here");
       cmd.add_option("--html", o->html, "write the HTML report here");
       cmd.add_flag("--no-properties", o->no_properties, "the campaign only");
       AddUnsigned(cmd, "--property-seed", o->gate.property_seed, "RapidCheck seed (default 20260401, the CI seed)");
       AddCount(cmd, "--property-cases", o->gate.property_cases, "cases per property (default 100)", 1, 100000000);
       AddUnsigned(cmd, "--max-draws", o->gate.campaign.max_draws, "cap on the draws of every case", 1,
                   uint64_t{10000000000000});
       AddUnsigned(cmd, "--generated", o->gate.campaign.generated, "add this many generated cases", 0, 10000);
       AddCount(cmd, "--jobs,-j", o->gate.campaign.jobs,
                "cases run in parallel (default: one per core for exact, else 1)", 0u, 4096u);
       AddEquivalence(cmd, o->gate.campaign.equivalence_eps, o->gate.campaign.equivalence_chi2_eps);
       cmd.add_flag("--allow-skipped", o->allow_skipped, "a skipped case does not fail the verdict");
       cmd.add_flag("--allow-underpowered", o->allow_underpowered,
                    "a row case whose draws reach less than the target power at its TV does not fail the verdict");
       cmd.add_flag("--follow-symlinks", o->follow_symlinks, "write reports through a symbolic link at their path");
       AddProgress(cmd, o->gate.campaign.progress);
       return [o]() { return Verify(*o); };
     }});

}  // namespace
}  // namespace samplecheck::tools
