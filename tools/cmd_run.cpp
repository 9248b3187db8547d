// samplecheck run: run a suite against a sampler, judge every case against the exact reference, write the JSON
// and HTML reports, print the gate summary. Exit codes (docs/cli.md): 0 every case passes with evidence, 1 a case
// fails or the evidence is short, 2 usage or input error, 130 / 143 interrupted by SIGINT / SIGTERM (the partial
// report and the journal are written; --resume finishes the run).
//
// Nothing is lost: the output paths are checked before the first draw; with --report every finished case is
// journaled (<report>.journal, fsynced) as it completes; reports replace their files atomically; a signal stops
// the draws, kills the sampler's child processes and writes what was judged. All of that is the run session's
// (harness/session: session.h); this file parses the options and hands them to it.
#include <algorithm>
#include <iostream>
#include <memory>
#include <optional>
#include <string>

#include "command_registry.h"
#include "options.h"
#include "run_verifier.h"
#include "samplecheck/campaign/campaign.h"
#include "samplecheck/campaign/shard.h"
#include "samplecheck/checks/result.h"
#include "samplecheck/core/files.h"
#include "samplecheck/samplers/devices.h"
#include "samplecheck/samplers/sampler_registry.h"
#include "samplecheck/session/session.h"
#include "samplecheck/suites/case_selection.h"
#include "samplecheck/suites/suite.h"

namespace samplecheck::tools {
namespace {

// Limits of a suite that `run` refuses unless --force: so many cases that preparing them alone takes hours (the
// session refuses a plan of more than harness::kMaxPlannedSeconds).
constexpr size_t kMaxCases = 10000;

struct RunOptions {
  std::string suite;
  std::string sampler = "exact";
  std::string profile;
  std::optional<uint64_t> seed;
  std::optional<uint64_t> draw_seed;
  std::optional<double> tv;
  bool tv_auto = false;  // --tv auto: the time budget chooses the TV
  std::optional<uint64_t> max_draws;
  unsigned jobs = 0;
  std::string report;
  std::string html;
  harness::Progress::Mode progress = harness::Progress::Mode::kAuto;
  bool follow_symlinks = false;
  bool resume = false;
  bool restart = false;
  bool no_journal = false;
  bool force = false;
  uint64_t generated = 0;
  double equivalence = 0.0;
  double equivalence_chi2 = 0.0;
  harness::EvidencePolicy evidence;
  std::string shard;    // --shard I/N | auto | auto/N
  std::string devices;  // --devices all | 0,1,...
  std::string verifier;   // --verifier: a speculative-decoding suite (run_verifier.h)
  std::string plan_from;  // --plan-from: a report (or a journal's plan) whose recorded plan this run draws
  std::optional<double> budget;  // --budget: the time budget in seconds (0: none), instead of the suite's
  std::vector<std::string> cases;  // --case: the named cases alone (case_selection.h)
};

// --devices all | I,J,...: the CUDA devices of this host to draw on.
Result<std::vector<int>> ParseDevices(const std::string& text) {
  const int available = harness::UsableCudaDevices();
  if (available == 0) {
    return InvalidArgument("--devices " + text + ": no usable CUDA device here (a build without CUDA, or no GPU)");
  }
  std::vector<int> devices;
  if (text == "all") {
    for (int d = 0; d < available; ++d) devices.push_back(d);
    return devices;
  }
  size_t start = 0;
  while (start <= text.size()) {
    const size_t comma = std::min(text.find(',', start), text.size());
    auto d = ParseUnsigned(std::string_view(text).substr(start, comma - start), "--devices entry", 0,
                           static_cast<uint64_t>(available - 1));
    if (!d.ok()) {
      return InvalidArgument(d.error().message + " (this host has " + std::to_string(available) +
                             " CUDA device(s); give all, or indices separated by commas)");
    }
    if (std::find(devices.begin(), devices.end(), int(*d)) != devices.end()) {
      return InvalidArgument("--devices " + text + " names device " + std::to_string(*d) + " twice");
    }
    devices.push_back(static_cast<int>(*d));
    start = comma + 1;
  }
  return devices;
}

int Fail(const std::string& message) {
  std::cerr << "samplecheck run: " << message << "\n";
  return kExitUsage;
}

// run --verifier: the speculative-decoding campaign (cmd_run_verifier.cpp).
int RunSpec(const RunOptions& o, const std::vector<std::string>& cases, const std::string& command_line) {
  if (!o.shard.empty() || !o.devices.empty() || o.resume) {
    return Fail("--shard, --devices and --resume do not apply to a spec suite (--verifier) yet: run it whole");
  }
  if (o.tv_auto) return Fail("--tv auto applies to --sampler campaigns (a time budget); give --verifier a --tv number");
  return RunSpecCampaignCommand({o.suite, o.verifier, o.profile, o.seed, o.tv, o.max_draws, o.jobs, o.report, o.html,
                                 o.progress == harness::Progress::Mode::kQuiet, o.follow_symlinks, o.evidence, cases},
                                command_line + " --verifier " + o.verifier);
}

// The session of the run: its outputs (the report, the HTML, the journal and its plan), what it reads (the suite
// file, --plan-from, a plugin's library), the journal's options and the plan's limit.
harness::SessionOptions SessionOf(const RunOptions& o) {
  harness::SessionOptions s = harness::SessionFor("run", o.report, o.html, o.follow_symlinks);
  s.inputs = {harness::SuiteFileInput(o.suite)};
  for (NamedPath& in : harness::SpecInputs("--sampler", o.sampler)) s.inputs.push_back(std::move(in));
  s.progress = o.progress;
  s.journal_outputs = true;
  s.no_journal = o.no_journal;
  s.resume = o.resume;
  s.restart = o.restart;
  s.plan_from = o.plan_from;
  if (!o.force) s.max_planned_seconds = harness::kMaxPlannedSeconds;
  return s;
}

// --shard and --devices into `options`, refused where they do not apply.
Status ParseShardAndDevices(const RunOptions& o, harness::CampaignOptions& options) {
  if (!o.shard.empty()) {
    auto parsed = harness::ParseShard(o.shard);
    if (!parsed.ok()) return parsed.error();
    options.shard = *parsed;
    if (o.report.empty())
      return InvalidArgument("--shard needs --report: the shard's evidence is what samplecheck merge reads");
    if (o.resume)
      return InvalidArgument("--resume does not apply to a shard: run the shard again (it is deterministic)");
    if (!o.html.empty()) {
      return InvalidArgument("--html does not apply to a shard (its evidence is not a verdict): merge writes it");
    }
  }
  if (!o.devices.empty()) {
    auto parsed = ParseDevices(o.devices);
    if (!parsed.ok()) return parsed.error();
    options.devices = *parsed;
  }
  return Status::Ok();
}

harness::CampaignOptions CampaignOptionsOf(const RunOptions& o, const std::string& command_line) {
  harness::CampaignOptions options;
  options.sampler_spec = o.sampler;
  options.profile = o.profile;
  options.seed = o.seed;
  options.draw_seed = o.draw_seed;
  options.tv = o.tv;
  options.tv_auto = o.tv_auto;
  options.max_draws = o.max_draws;
  options.jobs = o.jobs;
  options.command_line = command_line;
  options.version = SAMPLECHECK_VERSION;
  options.evidence = o.evidence;
  options.generated = o.generated;
  options.equivalence_eps = o.equivalence;
  options.equivalence_chi2_eps = o.equivalence_chi2;
  options.progress = o.progress;
  options.budget_seconds = o.budget;
  return options;
}

int Run(const RunOptions& o, const std::string& command_line) {
  auto cases = harness::ParseCaseNames(o.cases);
  if (!cases.ok()) return Fail(cases.error().message);
  if (!o.verifier.empty()) return RunSpec(o, *cases, command_line);
  harness::RunSession session(SessionOf(o));
  if (Status st = session.Open(); !st.ok()) return session.Fail(st);
  harness::CampaignOptions options = CampaignOptionsOf(o, command_line);
  options.only_cases = *cases;
  if (Status st = ParseShardAndDevices(o, options); !st.ok()) return session.Fail(st);
  auto suite = harness::LoadSuite(o.suite);
  if (!suite.ok()) return session.Fail(suite.error().message);
  if (suite->cases.size() > kMaxCases && !o.force) {
    return session.Fail("suite " + suite->name + " has " + std::to_string(suite->cases.size()) + " cases, more than " +
                        std::to_string(kMaxCases) +
                        " (a parameter cross product this large runs for days); --force runs it");
  }
  if (Status st = session.RefuseInputs(harness::SuiteInputs(*suite)); !st.ok()) return session.Fail(st);
  return session.RunSamplerCampaign(*suite, std::move(options));
}

const bool registered = RegisterCommand(
    {"run", "run a suite against a sampler and judge it against the exact reference", [](CLI::App& cmd) {
       auto o = std::make_shared<RunOptions>();
       cmd.add_option("--suite", o->suite, "built-in suite (smoke, standard, nightly) or a suite file")->required();
       cmd.add_option("--sampler", o->sampler, harness::SamplerSpecHelp())->capture_default_str();
       cmd.add_option("--profile", o->profile,
                      "semantics profile the draws are judged against (default: the suite's, else the sampler's)");
       AddUnsigned(cmd, "--seed", o->seed, "campaign seed (default: the suite's; nightly draws a fresh one)");
       cmd.add_option("--case", o->cases,
                      "run only these cases of the suite (repeatable, or names separated by commas; a batch's row "
                      "selects its batch), planned and seeded exactly as in the whole suite, so a failing case "
                      "reproduces with the same draws; an unknown name is exit 2")
           ->type_name("NAME");
       cmd.add_option("--report", o->report, "write the JSON report here (and journal finished cases beside it)");
       cmd.add_option("--html", o->html, "write the self-contained HTML report here");
       AddCount(cmd, "--jobs,-j", o->jobs, "cases run in parallel (default: one per core for exact, else 1)", 0u,
                4096u);
       AddProgress(cmd, o->progress);
       AddParsed(cmd, "--tv", o->tv,
                 "detectable total-variation distance the draws are planned for (default: the suite's; smoke 0.01, "
                 "standard 1e-3) [1e-09, 0.5], or auto: the least TV whose full-power plan the time budget (the "
                 "suite's or --budget S) affords at the measured rate, chosen before drawing",
                 "X|auto", [o](const std::string& text) -> Result<std::optional<double>> {
                   o->tv_auto = text == "auto";
                   if (o->tv_auto) return std::optional<double>();
                   Result<double> v = ParseReal(text, "--tv", 1e-9, 0.5);
                   if (!v.ok()) return InvalidArgument(v.error().message + ", or auto (the time budget chooses it)");
                   return std::optional<double>(*v);
                 });
       AddUnsigned(cmd, "--max-draws", o->max_draws, "cap on the draws of every case (lowers the suite's caps)", 1,
                   uint64_t{10000000000000});
       AddUnsigned(cmd, "--draw-seed", o->draw_seed,
                   "seed of the sampler's draws only (default: --seed): same rows, independent draws, for an A/B "
                   "run against a baseline report of the same --seed");
       AddReal(cmd, "--budget", o->budget,
               "time budget in seconds instead of the suite's (0: none): full power when the measured cost fits it",
               0.0, 604800.0);
       AddUnsigned(cmd, "--generated", o->generated,
                   "add this many generated cases (every filter and sentinel, V from 1 to 262144; seeded by the "
                   "campaign seed; a failing one is written out as a one-case suite that replays it)",
                   0, 10000);
       AddEquivalence(cmd, o->equivalence, o->equivalence_chi2);
       cmd.add_flag("--allow-skipped", o->evidence.allow_skipped,
                    "a skipped case does not fail the verdict (it is still reported)");
       cmd.add_flag("--allow-underpowered", o->evidence.allow_underpowered,
                    "a row case whose draws reach less than the target power at its TV does not fail the verdict");
       AddUnsigned(cmd, "--min-judged-cases", o->evidence.min_judged_cases,
                   "judged cases the verdict needs (default 1)", 1);
       AddUnsigned(cmd, "--min-draws", o->evidence.min_draws,
                   "draws over the judged cases the verdict needs (default 1)", 1);
       cmd.add_flag("--resume", o->resume,
                    "finish an interrupted run: reuse the cases of <report>.journal, draw the rest (same command line)");
       cmd.add_flag("--restart", o->restart,
                    "discard the journal of an unfinished run at <report>.journal and start afresh (without it, or "
                    "--resume, a pending journal is refused)");
       cmd.add_flag("--no-journal", o->no_journal, "do not journal finished cases (no --resume possible)");
       cmd.add_option("--plan-from", o->plan_from,
                      "draw exactly the plan recorded in this report (its draw_plan: every case's draws, whatever "
                      "the time budget would give here), to reproduce it; refused (exit 2) when its cases are not "
                      "this suite's");
       cmd.add_flag("--force", o->force,
                    "run a plan past the limits (more than 6 hours at the measured throughput, or 10000 cases)");
       cmd.add_flag("--follow-symlinks", o->follow_symlinks,
                    "write reports through a symbolic link at their path (refused otherwise)");
       cmd.add_option("--verifier", o->verifier,
                      "speculative decoding: run a spec suite (spec-smoke, spec-standard) against this verifier "
                      "(exact[:profile], cuda[:profile] (CUDA builds), mutant:<name>, plugin:<lib.so>[:config], "
                      "plugin-inproc:<lib.so>[:config], "
                      "process:<command>; docs/speculative.md); --max-draws caps the trials");
       cmd.add_option("--shard", o->shard,
                      "draw one part of the campaign: I/N (0-based index I of N shards), auto (the scheduler's index "
                      "and count: GTEST_SHARD_INDEX/GTEST_TOTAL_SHARDS, SLURM_ARRAY_TASK_ID/SLURM_ARRAY_TASK_COUNT) "
                      "or auto/N (also JOB_COMPLETION_INDEX); writes evidence for samplecheck merge (docs/scale.md)");
       cmd.add_option("--devices", o->devices,
                      "GPU samplers: draw on these CUDA devices of this host (all, or 0,1,...), one sampler per "
                      "device; the counts are the single-device run's");
       GroupOptions(
           cmd, "What to run, and where its report goes",
           {"--suite", "--sampler", "--profile", "--seed", "--case", "--report", "--html", "--jobs", "--progress"});
       GroupOptions(
           cmd, "Power and draws",
           {"--tv", "--max-draws", "--draw-seed", "--budget", "--generated", "--equivalence", "--equivalence-chi2"});
       GroupOptions(cmd, "What a pass needs",
                    {"--allow-skipped", "--allow-underpowered", "--min-judged-cases", "--min-draws"});
       GroupOptions(cmd, "Interrupted runs, recorded plans, limits",
                    {"--resume", "--restart", "--no-journal", "--plan-from", "--force", "--follow-symlinks"});
       GroupOptions(cmd, "Speculative decoding", {"--verifier"});
       GroupOptions(cmd, "Scale out", {"--shard", "--devices"});
       return [o]() {
         // The command line as the report records it (the options that change the verdict).
         std::string command_line = "samplecheck run --suite " + o->suite + " --sampler " + o->sampler;
         if (!o->profile.empty()) command_line += " --profile " + o->profile;
         if (o->seed) command_line += " --seed " + std::to_string(*o->seed);
         if (o->draw_seed) command_line += " --draw-seed " + std::to_string(*o->draw_seed);
         if (o->tv) command_line += " --tv " + std::to_string(*o->tv);
         if (o->tv_auto) command_line += " --tv auto";
         if (o->max_draws) command_line += " --max-draws " + std::to_string(*o->max_draws);
         if (!o->shard.empty()) command_line += " --shard " + o->shard;
         if (!o->plan_from.empty()) command_line += " --plan-from " + o->plan_from;
         if (o->budget) command_line += " --budget " + FormatValue(*o->budget);
         command_line += EquivalenceCommandLine(o->equivalence, o->equivalence_chi2);
         for (const std::string& c : o->cases) command_line += " --case " + c;
         return Run(*o, command_line);
       };
     }});

}  // namespace
}  // namespace samplecheck::tools
