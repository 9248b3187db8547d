// `samplecheck run --verifier <spec>`: a speculative-decoding suite against a verifier (docs/speculative.md). The
// report is a sampler campaign's report (JSON, HTML, summary), with the spec checks' fields beside the usual ones.
#include <filesystem>
#include <iostream>

#include "command_registry.h"
#include "run_spec.h"
#include "samplecheck/campaign/spec_campaign.h"
#include "samplecheck/core/files.h"
#include "samplecheck/report/html_report.h"
#include "samplecheck/report/report.h"

namespace samplecheck::tools {

int RunSpecCampaignCommand(const SpecRunArgs& a, const std::string& command_line) {
  auto fail = [](const std::string& message) {
    std::cerr << "samplecheck run: " << message << "\n";
    return kExitUsage;
  };
  const WriteOptions write{a.follow_symlinks};
  const std::vector<NamedPath> outputs{{"--report", a.report}, {"--html", a.html}};
  if (Status st = CheckOutputs(outputs, {{"the suite file", std::filesystem::exists(a.suite) ? a.suite : ""}}, write);
      !st.ok()) {
    return fail(st.error().message);
  }
  auto locks = LockOutputs(outputs);
  if (!locks.ok()) return fail(locks.error().message);
  auto suite = harness::LoadSpecSuite(a.suite);
  if (!suite.ok()) return fail(suite.error().message);
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
  auto report = harness::RunSpecCampaign(*suite, options);
  if (!report.ok()) return fail(report.error().ToString());
  if (!a.report.empty()) {
    if (Status st = harness::SaveReport(*report, a.report, write); !st.ok()) return fail(st.error().message);
  }
  if (!a.html.empty()) {
    if (Status st = harness::SaveHtmlReport(*report, a.html, write); !st.ok()) return fail(st.error().message);
  }
  std::cout << harness::FormatSummary(*report);
  if (!a.report.empty()) std::cout << "report: " << a.report << "\n";
  if (!a.html.empty()) std::cout << "html:   " << a.html << "\n";
  return report->Passed() ? kExitOk : kExitCheckFailed;
}

}  // namespace samplecheck::tools
