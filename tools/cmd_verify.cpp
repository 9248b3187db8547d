// samplecheck verify: the gate of a sampler change, what a CI job runs before merging (harness/gate: gate.h): the
// campaign of a suite (row, batch and generated cases) and the RapidCheck property suites against the same
// sampler, optionally the A/B test against a baseline report; one JSON report (with the properties' outcomes), one
// HTML, one summary, one exit code (docs/cli.md): 0 pass, 1 fail, 2 usage or input error, 130 / 143 interrupted.
//
//   samplecheck verify --sampler cuda --profile vllm --report verify.json --html verify.html
//   samplecheck verify --sampler plugin:./libmine.so --suite smoke --baseline main.json
#include <memory>
#include <optional>
#include <string>

#include "command_registry.h"
#include "options.h"
#include "samplecheck/core/files.h"
#include "samplecheck/gate/gate.h"
#include "samplecheck/samplers/sampler_registry.h"
#include "samplecheck/session/session.h"
#include "samplecheck/session/stop_signals.h"
#include "samplecheck/suites/case_selection.h"
#include "samplecheck/suites/suite.h"

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
  std::vector<std::string> cases;  // --case (case_selection.h)
};

// The session of the gate: its outputs, none of them an input (the baseline, the suite file, a plugin's library).
harness::SessionOptions SessionOf(const VerifyOptions& o) {
  harness::SessionOptions s = harness::SessionFor("verify", o.report, o.html, o.follow_symlinks);
  s.inputs = {{"--baseline", o.gate.baseline}, harness::SuiteFileInput(o.gate.suite)};
  for (NamedPath& in : harness::SpecInputs("--sampler", o.sampler)) s.inputs.push_back(std::move(in));
  s.progress = o.gate.campaign.progress;
  return s;
}

void SetCampaign(VerifyOptions& o) {
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
  for (const std::string& c : o.cases) o.gate.campaign.command_line += " --case " + c;
}

int Verify(VerifyOptions& o) {
  harness::RunSession session(SessionOf(o));
  if (Status st = session.Open(); !st.ok()) return session.Fail(st);
  // The files the suite's cases read (a suite that does not load is the gate's to refuse).
  if (auto suite = harness::LoadSuite(o.gate.suite); suite.ok()) {
    if (Status st = session.RefuseInputs(harness::SuiteInputs(*suite)); !st.ok()) return session.Fail(st);
  }
  auto cases = harness::ParseCaseNames(o.cases);
  if (!cases.ok()) return session.Fail(cases.error().message);
  o.gate.campaign.only_cases = *cases;
  SetCampaign(o);
  std::optional<harness::GateResult> gated;
  {
    harness::StopSignals signals;
    o.gate.campaign.stop = harness::StopSignals::Flag();
    auto result = harness::RunGate(o.gate);
    if (!result.ok()) return session.CampaignFailed(result.error());
    gated = std::move(*result);
  }
  return session.Finish(gated->report, harness::FormatGateSummary(*gated, o.gate.baseline), gated->Passed());
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
       cmd.add_option("--case", o->cases,
                      "the campaign's named cases only (repeatable, or separated by commas), planned and seeded as "
                      "in the whole suite; an unknown name is exit 2")
           ->type_name("NAME");
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
       GroupOptions(cmd, "What to check, and where its report goes",
                    {"--sampler", "--profile", "--suite", "--seed", "--baseline", "--report", "--html", "--case",
                     "--jobs", "--progress"});
       GroupOptions(cmd, "Property suites", {"--no-properties", "--property-seed", "--property-cases"});
       GroupOptions(cmd, "Power and draws", {"--max-draws", "--generated", "--equivalence", "--equivalence-chi2"});
       GroupOptions(cmd, "What a pass needs", {"--allow-skipped", "--allow-underpowered"});
       GroupOptions(cmd, "Writing reports", {"--follow-symlinks"});
       return [o]() { return Verify(*o); };
     }});

}  // namespace
}  // namespace samplecheck::tools
