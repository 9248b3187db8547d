// `samplecheck run --verifier <spec>`: a speculative-decoding suite against a verifier (docs/speculative.md). The
// report is a sampler campaign's report (JSON, HTML, summary), with the spec checks' fields beside the usual ones.
// Its outputs, locks and epilogue are the run session's (harness/session).

#include "command_registry.h"
#include "run_verifier.h"
#include "samplecheck/campaign/spec_campaign.h"
#include "samplecheck/report/report.h"
#include "samplecheck/session/session.h"

namespace samplecheck::tools {

int RunSpecCampaignCommand(const SpecRunArgs& a, const std::string& command_line) {
  harness::SessionOptions s = harness::SessionFor("run", a.report, a.html, a.follow_symlinks);
  s.inputs = {harness::SuiteFileInput(a.suite)};
  for (NamedPath& in : harness::SpecInputs("--verifier", a.verifier)) s.inputs.push_back(std::move(in));
  s.progress = a.quiet ? harness::Progress::Mode::kQuiet : harness::Progress::Mode::kAuto;
  harness::RunSession session(std::move(s));
  if (Status st = session.Open(); !st.ok()) return session.Fail(st);
  auto suite = harness::LoadSpecSuite(a.suite);
  if (!suite.ok()) return session.Fail(suite.error().message);
  if (Status st = session.RefuseInputs(harness::SuiteInputs(*suite)); !st.ok()) return session.Fail(st);
  harness::SpecCampaignOptions options;
  options.verifier_spec = a.verifier;
  options.profile = a.profile;
  options.seed = a.seed;
  options.tv = a.tv;
  options.max_trials = a.max_trials;
  options.jobs = a.jobs;
  options.quiet = a.quiet;
  options.command_line = command_line;
  options.version = SAMPLECHECK_VERSION;
  options.evidence = a.evidence;
  options.only_cases = a.cases;
  auto report = harness::RunSpecCampaign(*suite, options);
  if (!report.ok()) return session.CampaignFailed(report.error());
  return session.Finish(*report, harness::FormatSummary(*report), report->Passed());
}

}  // namespace samplecheck::tools
