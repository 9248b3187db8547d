// samplecheck run: run a suite against a sampler, judge every case against the exact reference, write the JSON
// and HTML reports, print the gate summary. Exit 0 every case passes, 1 any fails, 2 usage or input error.
#include <iostream>
#include <memory>
#include <optional>
#include <string>

#include "command_registry.h"
#include "samplecheck/campaign/campaign.h"
#include "samplecheck/campaign/suite.h"
#include "samplecheck/report/html_report.h"
#include "samplecheck/report/report.h"
#include "samplecheck/samplers/sampler_registry.h"

namespace samplecheck::tools {
namespace {

struct RunOptions {
  std::string suite;
  std::string sampler = "exact";
  std::string profile;
  std::optional<uint64_t> seed;
  std::optional<uint64_t> draw_seed;
  std::optional<double> tv;
  std::optional<uint64_t> max_draws;
  unsigned jobs = 0;
  std::string report;
  std::string html;
  std::string progress = "auto";
};

int Run(const RunOptions& o, const std::string& command_line) {
  auto suite = harness::LoadSuite(o.suite);
  if (!suite.ok()) {
    std::cerr << "samplecheck run: " << suite.error().message << "\n";
    return kExitUsage;
  }
  harness::CampaignOptions options;
  options.sampler_spec = o.sampler;
  options.profile = o.profile;
  options.seed = o.seed;
  options.draw_seed = o.draw_seed;
  options.tv = o.tv;
  options.max_draws = o.max_draws;
  options.jobs = o.jobs;
  options.command_line = command_line;
  options.version = SAMPLECHECK_VERSION;
  options.progress = o.progress == "bar"     ? harness::Progress::Mode::kBar
                     : o.progress == "lines" ? harness::Progress::Mode::kLines
                     : o.progress == "none"  ? harness::Progress::Mode::kQuiet
                                             : harness::Progress::Mode::kAuto;
  auto report = harness::RunCampaign(*suite, options);
  if (!report.ok()) {
    std::cerr << "samplecheck run: " << report.error().ToString() << "\n";
    return kExitUsage;
  }
  if (!o.report.empty()) {
    if (Status st = harness::SaveReport(*report, o.report); !st.ok()) {
      std::cerr << "samplecheck run: " << st.error().message << "\n";
      return kExitUsage;
    }
  }
  if (!o.html.empty()) {
    if (Status st = harness::SaveHtmlReport(*report, o.html); !st.ok()) {
      std::cerr << "samplecheck run: " << st.error().message << "\n";
      return kExitUsage;
    }
  }
  std::cout << harness::FormatSummary(*report);
  if (!o.report.empty()) std::cout << "report: " << o.report << "\n";
  if (!o.html.empty()) std::cout << "html:   " << o.html << "\n";
  return report->Passed() ? kExitOk : kExitCheckFailed;
}

const bool registered = RegisterCommand(
    {"run", "run a suite against a sampler and judge it against the exact reference", [](CLI::App& cmd) {
       auto o = std::make_shared<RunOptions>();
       cmd.add_option("--suite", o->suite, "built-in suite (smoke, standard, nightly) or a suite file")->required();
       cmd.add_option("--sampler", o->sampler, harness::SamplerSpecHelp())->capture_default_str();
       cmd.add_option("--profile", o->profile,
                      "semantics profile the draws are judged against (default: the suite's, else the sampler's)");
       cmd.add_option("--seed", o->seed, "campaign seed (default: the suite's; nightly draws a fresh one)");
       cmd.add_option("--draw-seed", o->draw_seed,
                      "seed of the sampler's draws only (default: --seed): same rows, independent draws, for an A/B "
                      "run against a baseline report of the same --seed");
       cmd.add_option("--tv", o->tv, "detectable total-variation distance the draws are planned for (default 1e-3)")
           ->check(CLI::Range(1e-9, 0.5));
       cmd.add_option("--max-draws", o->max_draws, "cap on the draws of every case (overrides the suite)")
           ->check(CLI::Range(uint64_t{1}, uint64_t{10000000000000}));
       cmd.add_option("--jobs,-j", o->jobs, "cases run in parallel (default: one per core for exact, else 1)");
       cmd.add_option("--report", o->report, "write the JSON report here");
       cmd.add_option("--html", o->html, "write the self-contained HTML report here");
       cmd.add_option("--progress", o->progress, "auto (a bar on a terminal), bar, lines, none")
           ->check(CLI::IsMember({"auto", "bar", "lines", "none"}))
           ->capture_default_str();
       return [o]() {
         // The command line as the report records it (the options that change the verdict).
         std::string command_line = "samplecheck run --suite " + o->suite + " --sampler " + o->sampler;
         if (!o->profile.empty()) command_line += " --profile " + o->profile;
         if (o->seed) command_line += " --seed " + std::to_string(*o->seed);
         if (o->draw_seed) command_line += " --draw-seed " + std::to_string(*o->draw_seed);
         if (o->tv) command_line += " --tv " + std::to_string(*o->tv);
         if (o->max_draws) command_line += " --max-draws " + std::to_string(*o->max_draws);
         return Run(*o, command_line);
       };
     }});

}  // namespace
}  // namespace samplecheck::tools
