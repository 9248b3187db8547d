// A consumer of the installed samplecheck package: a campaign through the public headers (the smoke suite on the
// exact sampler, few draws), its JSON report written to argv[1] and read back, its verdict printed. Exit 0 when the
// campaign passes and the report round-trips.
#include <iostream>

#include "samplecheck/campaign/campaign.h"
#include "samplecheck/report/report.h"
#include "samplecheck/samplers/sampler_registry.h"
#include "samplecheck/suites/suite.h"

int main(int argc, char** argv) {
  using namespace samplecheck::harness;
  if (argc != 2) {
    std::cerr << "usage: samplecheck_consumer <report.json>\n";
    return 2;
  }
  std::cout << "sampler kinds:";
  for (const SamplerKind& kind : SamplerKinds()) std::cout << " " << kind.name << (kind.available ? "" : "(missing)");
  std::cout << "\n";
  auto suite = LoadSuite("smoke");
  if (!suite.ok()) {
    std::cerr << suite.error().ToString() << "\n";
    return 2;
  }
  CampaignOptions options;
  options.sampler_spec = "exact";
  options.seed = 1;
  options.max_draws = 20000;
  options.evidence.allow_underpowered = true;  // the cap is this consumer's choice: below the suite's power
  options.progress = Progress::Mode::kQuiet;
  options.version = "consumer";
  auto report = RunCampaign(*suite, options);
  if (!report.ok()) {
    std::cerr << report.error().ToString() << "\n";
    return 2;
  }
  if (samplecheck::Status st = SaveReport(*report, argv[1]); !st.ok()) {
    std::cerr << st.error().ToString() << "\n";
    return 2;
  }
  auto back = LoadReport(argv[1]);
  if (!back.ok() || ReportToJson(*back) != ReportToJson(*report)) {
    std::cerr << "the report did not round-trip\n";
    return 1;
  }
  std::cout << FormatSummary(*back);
  return back->Passed() ? 0 : 1;
}
