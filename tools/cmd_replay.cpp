// `samplecheck replay`: the replay campaign of processed logprobs (docs/replay.md). An engine's processed logprobs
// and a trainer's replay of them, each against the profile's exact processed distribution and against each other,
// with the importance-ratio bias of a synthetic rollout. The report is a campaign report (JSON, HTML, summary).
//
//   samplecheck replay --suite replay-smoke                                   # both sides the reference
//   samplecheck replay --suite replay-smoke --trainer fault:no-label-guard    # a planted fault: exit 1
//   samplecheck replay --suite replay-standard --engine cuda --report r.json  # our kernel (GPU)
//   samplecheck replay --suite replay-standard --engine "process:python3 adapters/prime_rl/replay_client.py vllm"
//       --trainer "process:python3 adapters/prime_rl/replay_client.py prime-rl"
#include <iostream>
#include <memory>
#include <optional>
#include <string>

#include "command_registry.h"
#include "options.h"
#include "samplecheck/campaign/replay_campaign.h"
#include "samplecheck/core/files.h"
#include "samplecheck/report/report.h"
#include "samplecheck/samplers/replay_source.h"
#include "samplecheck/session/session.h"
#include "samplecheck/session/stop_signals.h"

namespace samplecheck::tools {
namespace {

struct ReplayOptions {
  std::string suite;
  std::string engine;
  std::string trainer;
  std::string profile;
  std::optional<uint64_t> seed;
  std::optional<uint64_t> rollout;
  std::optional<double> max_ratio_bias;
  uint64_t generated = 0;
  unsigned jobs = 0;
  std::string report;
  std::string html;
  harness::Progress::Mode progress = harness::Progress::Mode::kAuto;  // replay prints lines unless none
  bool follow_symlinks = false;
  bool list = false;
  harness::EvidencePolicy evidence;
};

int List() {
  std::cout << "replay sources (--engine, --trainer):\n";
  for (const harness::ReplaySourceKind& k : harness::ReplaySourceKinds()) {
    std::cout << "  " << k.usage << "\n      " << k.summary << "\n";
  }
  std::cout << "planted replay faults (fault:<name>):\n";
  for (const harness::ReplayFault& f : harness::ReplayFaults()) {
    std::cout << "  " << f.name << "\n      " << f.fault << " (" << f.source << ")\n";
  }
  std::cout << "built-in replay suites (--suite):\n";
  for (const harness::BuiltinSuiteInfo& s : harness::BuiltinReplaySuites()) {
    std::cout << "  " << s.name << " (" << s.cases << " cases): " << s.description << "\n";
  }
  return kExitOk;
}

// The summary, and the aggregate case's figures under it: what a trainer's run would see.
std::string ReplaySummary(const harness::CampaignReport& report) {
  std::string summary = harness::FormatSummary(report);
  for (const harness::CaseResult& c : report.cases) {
    if (c.name != harness::kReplayAggregateCase) continue;
    for (const harness::CheckOutcome& o : c.outcomes) {
      if (o.check == "replay-ratio-bias") summary += "replay: " + o.finding + "\n";
    }
  }
  return summary;
}

// The session of the replay: its outputs, none of them an input (the suite file, what the engine's and the trainer's
// specs read: a plugin's library, the files a process command names), one writer each (as run's).
harness::SessionOptions SessionOf(const ReplayOptions& o) {
  harness::SessionOptions s = harness::SessionFor("replay", o.report, o.html, o.follow_symlinks);
  s.inputs = {harness::SuiteFileInput(o.suite)};
  for (NamedPath& in : harness::SpecInputs("--engine", o.engine)) s.inputs.push_back(std::move(in));
  for (NamedPath& in : harness::SpecInputs("--trainer", o.trainer)) s.inputs.push_back(std::move(in));
  s.progress = o.progress;
  return s;
}

harness::ReplayCampaignOptions ReplayOptionsOf(const ReplayOptions& o, const std::string& command_line) {
  harness::ReplayCampaignOptions options;
  options.engine = o.engine;
  options.trainer = o.trainer;
  options.profile = o.profile;
  options.seed = o.seed;
  options.rollout = o.rollout;
  options.max_ratio_bias = o.max_ratio_bias;
  options.generated = static_cast<size_t>(o.generated);
  options.jobs = o.jobs;
  options.quiet = o.progress == harness::Progress::Mode::kQuiet;
  options.command_line = command_line;
  options.version = SAMPLECHECK_VERSION;
  options.evidence = o.evidence;
  return options;
}

int Run(const ReplayOptions& o, const std::string& command_line) {
  if (o.list) return List();
  harness::RunSession session(SessionOf(o));
  if (o.suite.empty()) {
    return session.Fail("--suite is required (replay-smoke, replay-standard, or a replay suite file)");
  }
  if (Status st = session.Open(); !st.ok()) return session.Fail(st);
  auto suite = harness::LoadReplaySuite(o.suite);
  if (!suite.ok()) return session.Fail(suite.error().message);
  if (Status st = session.RefuseInputs(harness::SuiteInputs(*suite)); !st.ok()) return session.Fail(st);
  harness::ReplayCampaignOptions options = ReplayOptionsOf(o, command_line);
  Result<harness::CampaignReport> report = InvalidArgument("not run");
  {
    harness::StopSignals signals;
    options.stop = harness::StopSignals::Flag();
    report = harness::RunReplayCampaign(*suite, options);
  }
  if (!report.ok()) return session.CampaignFailed(report.error().message);  // replay's say no error kind
  return session.Finish(*report, ReplaySummary(*report), report->Passed());
}

const bool registered = RegisterCommand(
    {"replay", "judge processed logprobs of an engine and a trainer's replay of them (docs/replay.md)",
     [](CLI::App& cmd) {
       auto o = std::make_shared<ReplayOptions>();
       cmd.add_option("--suite", o->suite, "built-in replay suite (replay-smoke, replay-standard) or a suite file");
       cmd.add_option("--engine", o->engine,
                      "the engine side (default: the reference); " + harness::ReplaySourceSpecHelp());
       cmd.add_option("--trainer", o->trainer,
                      "the trainer side, sent the rows' labels when it takes them (default: the reference with the "
                      "label guard); same specs as --engine");
       cmd.add_option("--profile", o->profile,
                      "semantics profile both sides are judged against (default: the suite's, else a source's, "
                      "else vllm)");
       AddUnsigned(cmd, "--seed", o->seed, "campaign seed (default: the suite's)");
       AddUnsigned(cmd, "--rollout", o->rollout, "synthetic rollout tokens per row (default: the suite's)", 1,
                   uint64_t{1} << 20);
       AddReal(cmd, "--max-ratio-bias", o->max_ratio_bias,
               "bound on |mean importance ratio - 1| over the whole rollout (default: the suite's)", 0.0, 0.999);
       AddUnsigned(cmd, "--generated", o->generated, "add this many generated cases (seeded by the campaign seed)", 0,
                   10000);
       AddCount(cmd, "--jobs,-j", o->jobs, "cases run in parallel (default: one per core for CPU sources, else 1)",
                0u, 4096u);
       cmd.add_option("--report", o->report, "write the JSON report here");
       cmd.add_option("--html", o->html, "write the self-contained HTML report here");
       AddProgress(cmd, o->progress)->description("auto, bar, lines (replay prints a line per row), none");
       cmd.add_flag_callback(
           "--quiet,-q", [o]() { o->progress = harness::Progress::Mode::kQuiet; },
           "no progress lines (--progress none)");
       cmd.add_flag("--follow-symlinks", o->follow_symlinks,
                    "write reports through a symbolic link at their path (refused otherwise)");
       cmd.add_flag("--allow-skipped", o->evidence.allow_skipped,
                    "a skipped row (parameters a side cannot replay, e.g. min-p for prime-rl) does not fail the "
                    "verdict (it is still reported)");
       cmd.add_flag("--list", o->list, "list the replay sources, the planted faults and the built-in replay suites");
       GroupOptions(cmd, "What to replay, and where its report goes",
                    {"--suite", "--engine", "--trainer", "--profile", "--seed", "--report", "--html", "--jobs",
                     "--progress", "--quiet", "--list"});
       GroupOptions(cmd, "What is judged", {"--rollout", "--max-ratio-bias", "--generated", "--allow-skipped"});
       GroupOptions(cmd, "Writing reports", {"--follow-symlinks"});
       return [o]() {
         std::string command_line = "samplecheck replay --suite " + o->suite;
         if (!o->engine.empty()) command_line += " --engine '" + o->engine + "'";
         if (!o->trainer.empty()) command_line += " --trainer '" + o->trainer + "'";
         if (!o->profile.empty()) command_line += " --profile " + o->profile;
         if (o->seed) command_line += " --seed " + std::to_string(*o->seed);
         if (o->rollout) command_line += " --rollout " + std::to_string(*o->rollout);
         if (o->max_ratio_bias) command_line += " --max-ratio-bias " + FormatValue(*o->max_ratio_bias);
         if (o->generated) command_line += " --generated " + std::to_string(o->generated);
         return Run(*o, command_line);
       };
     }});

}  // namespace
}  // namespace samplecheck::tools
