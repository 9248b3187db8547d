// samplecheck run: run a suite against a sampler, judge every case against the exact reference, write the JSON
// and HTML reports, print the gate summary. Exit codes (docs/cli.md): 0 every case passes with evidence, 1 a case
// fails or the evidence is short, 2 usage or input error, 130 / 143 interrupted by SIGINT / SIGTERM (the partial
// report and the journal are written; --resume finishes the run).
//
// Nothing is lost: the output paths are checked before the first draw; with --report every finished case is
// journaled (<report>.journal, fsynced) as it completes; reports replace their files atomically; a signal stops
// the draws, kills the sampler's child processes and writes what was judged.
#include <algorithm>
#include <csignal>
#include <filesystem>
#include <iostream>
#include <memory>
#include <optional>
#include <string>

#include "command_registry.h"
#include "options.h"
#include "run_spec.h"
#include "samplecheck/campaign/campaign.h"
#include "samplecheck/campaign/shard.h"
#include "samplecheck/checks/result.h"
#include "samplecheck/core/files.h"
#include "samplecheck/report/failing_case_suite.h"
#include "samplecheck/report/html_report.h"
#include "samplecheck/report/journal.h"
#include "samplecheck/report/report.h"
#include "samplecheck/samplers/devices.h"
#include "samplecheck/samplers/sampler_children.h"
#include "samplecheck/samplers/sampler_registry.h"
#include "samplecheck/suites/json_text.h"
#include "samplecheck/suites/suite.h"
#include "stop_signals.h"

namespace samplecheck::tools {
namespace {

// Limits of a plan that `run` refuses unless --force: a suite that would run for days, or so many cases that
// preparing them alone takes hours.
constexpr double kMaxPlannedSeconds = 6 * 3600.0;
constexpr size_t kMaxCases = 10000;

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
  std::string verifier;  // --verifier: a speculative-decoding suite (run_spec.h)
  std::string plan_from;  // --plan-from: a report (or a journal's plan) whose recorded plan this run draws
  std::optional<double> budget;  // --budget: the time budget in seconds (0: none), instead of the suite's
};

inline constexpr char kPlanSchema[] = "samplecheck-plan/1";

// The recorded plan of `path`: a journal's plan file, or a report's draw_plan (or, for a report written before
// plans were recorded, the draws of its cases).
Result<harness::DrawPlan> LoadPlan(const std::filesystem::path& path) {
  auto text = ReadFileCapped(path, uint64_t{1} << 30, "--plan-from");
  if (!text.ok()) return text.error();
  auto json = harness::ParseJsonStrict(*text, path.string());
  if (!json.ok()) return json.error();
  if (json->is_object() && json->value("schema", "") == kPlanSchema) {
    return harness::DrawPlanFromJson(json->contains("draw_plan") ? (*json)["draw_plan"] : nlohmann::json());
  }
  auto report = harness::ReportFromJson(*json);
  if (!report.ok()) return report.error().WithContext(path.string());
  auto plan = harness::PlanOfReport(*report);
  if (!plan.ok()) return plan.error().WithContext(path.string());
  return plan;
}

// Where a journaled run keeps its plan, so that --resume draws the plan the run started with.
std::filesystem::path PlanPathFor(const std::filesystem::path& journal) { return journal.string() + ".plan"; }

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

std::string Describe(const harness::CampaignPlan& plan) {
  std::string line = "plan: " + std::to_string(plan.cases) + " cases";
  if (plan.skipped) line += " (" + std::to_string(plan.skipped) + " skipped)";
  if (plan.resumed) line += ", " + std::to_string(plan.resumed) + " resumed from the journal";
  line += ", " + harness::FormatCount(double(plan.draws)) + " draws to make";
  if (plan.draws_per_second > 0) {
    line += ", about " + harness::Progress::FormatDuration(plan.estimated_seconds) + " at " +
            harness::FormatCount(plan.draws_per_second) + " draws/s (measured)";
  }
  if (plan.draw_plan != nullptr) line += "; draws by " + plan.draw_plan->basis;
  return line;
}

int Run(const RunOptions& o, const std::string& command_line) {
  if (!o.verifier.empty()) {
    if (!o.shard.empty() || !o.devices.empty() || o.resume) {
      return Fail("--shard, --devices and --resume do not apply to a spec suite (--verifier) yet: run it whole");
    }
    return RunSpecCampaignCommand({o.suite, o.verifier, o.profile, o.seed, o.tv, o.max_draws, o.jobs, o.report, o.html,
                                   o.progress == harness::Progress::Mode::kQuiet, o.follow_symlinks, o.evidence},
                                  command_line + " --verifier " + o.verifier);
  }
  const WriteOptions write{o.follow_symlinks};
  // Output paths first: a run of hours must not end in "cannot write", nor destroy a file it reads; one writer per
  // report (its journal included).
  const std::filesystem::path journal_path = o.report.empty() ? "" : harness::JournalPathFor(o.report);
  const std::filesystem::path plan_path = o.report.empty() ? "" : PlanPathFor(journal_path);
  const std::vector<NamedPath> outputs{
      {"--report", o.report}, {"--html", o.html}, {"the journal", journal_path}, {"the journal's plan", plan_path}};
  const std::vector<NamedPath> inputs{{"the suite file", std::filesystem::exists(o.suite) ? o.suite : ""},
                                      {"--plan-from", o.plan_from}};
  if (Status st = CheckOutputs(outputs, inputs, write); !st.ok()) return Fail(st.error().message);
  auto locks = LockOutputs({{"--report", o.report}, {"--html", o.html}});
  if (!locks.ok()) return Fail(locks.error().message);
  if (o.resume && o.report.empty()) return Fail("--resume needs --report (the journal is <report>.journal)");
  if (o.resume && o.restart) return Fail("--resume and --restart contradict each other: finish the run, or discard it");
  std::optional<harness::ShardSpec> shard;
  if (!o.shard.empty()) {
    auto parsed = harness::ParseShard(o.shard);
    if (!parsed.ok()) return Fail(parsed.error().message);
    shard = *parsed;
    if (o.report.empty()) return Fail("--shard needs --report: the shard's evidence is what samplecheck merge reads");
    if (o.resume) return Fail("--resume does not apply to a shard: run the shard again (it is deterministic)");
    if (!o.html.empty()) return Fail("--html does not apply to a shard (its evidence is not a verdict): merge writes it");
  }
  std::vector<int> devices;
  if (!o.devices.empty()) {
    auto parsed = ParseDevices(o.devices);
    if (!parsed.ok()) return Fail(parsed.error().message);
    devices = *parsed;
  }
  auto suite = harness::LoadSuite(o.suite);
  if (!suite.ok()) return Fail(suite.error().message);
  if (suite->cases.size() > kMaxCases && !o.force) {
    return Fail("suite " + suite->name + " has " + std::to_string(suite->cases.size()) + " cases, more than " +
                std::to_string(kMaxCases) + " (a parameter cross product this large runs for days); --force runs it");
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
  options.evidence = o.evidence;
  options.generated = o.generated;
  options.equivalence_eps = o.equivalence;
  options.equivalence_chi2_eps = o.equivalence_chi2;
  options.stop = StopSignals::Flag();
  options.progress = o.progress;
  options.shard = shard;
  options.devices = devices;
  options.budget_seconds = o.budget;
  if (!o.plan_from.empty()) {
    auto plan = LoadPlan(o.plan_from);
    if (!plan.ok()) return Fail("--plan-from " + o.plan_from + ": " + plan.error().message);
    options.plan_from = std::move(*plan);
    options.plan_from_source = o.plan_from;
  }

  const bool journal = !o.report.empty() && !o.no_journal && !shard;
  // The finished cases of an unfinished run are never discarded silently.
  if (!o.report.empty() && !o.resume && !o.restart) {
    if (Status st = harness::CheckNoPendingJournal(journal_path); !st.ok()) return Fail(st.error().message);
  }
  std::optional<harness::JournalIdentity> resumed_identity;
  if (o.resume) {
    auto loaded = harness::LoadJournal(journal_path);
    if (!loaded.ok()) return Fail(loaded.error().message);
    // The journal fixes the seeds (a fresh-seed suite drew them at the first start).
    options.seed = loaded->identity.seed;
    options.draw_seed = loaded->identity.draw_seed;
    options.finished = std::move(loaded->cases);
    resumed_identity = loaded->identity;
    // The plan the run started with (its time budget measured a machine that may be another now).
    if (!options.plan_from && std::filesystem::exists(plan_path)) {
      auto plan = LoadPlan(plan_path);
      if (!plan.ok()) return Fail("cannot resume: " + plan.error().message);
      options.plan_from = std::move(*plan);
      options.plan_from_source = plan_path.string();
    }
    if (o.progress != harness::Progress::Mode::kQuiet) {
      std::cerr << "resuming from " << journal_path.string() << ": " << options.finished.size() << " case(s) judged"
                << (loaded->torn_lines ? " (a torn last line was dropped)" : "") << "\n";
    }
  }
  options.on_plan = [&](const harness::CampaignPlan& plan) -> Status {
    const harness::CampaignReport& id = *plan.identity;
    const harness::JournalIdentity identity{id.suite, id.suite_source, o.sampler, id.profile, id.seed, id.draw_seed,
                                            id.tv, o.max_draws, id.git_revision.value_or("")};
    if (resumed_identity) {
      if (std::string diff = resumed_identity->Difference(identity); !diff.empty()) {
        return InvalidArgument("cannot resume from " + journal_path.string() + ": " + diff +
                               " (resume with the same command line, or start afresh without --resume)");
      }
    }
    if (o.progress != harness::Progress::Mode::kQuiet) {
      if (shard) {
        std::cerr << "shard " << shard->index << "/" << shard->count << " (" << shard->source << "): ";
      }
      std::cerr << Describe(plan) << "\n";
    }
    if (plan.estimated_seconds > kMaxPlannedSeconds && !o.force) {
      return InvalidArgument("the plan needs about " + harness::Progress::FormatDuration(plan.estimated_seconds) +
                             " (more than " + harness::Progress::FormatDuration(kMaxPlannedSeconds) +
                             "): lower --max-draws, shard the suite, or --force");
    }
    if (journal && !resumed_identity) return harness::StartJournal(journal_path, identity);
    return Status::Ok();
  };
  if (journal) {
    options.on_case_done = [&](const harness::CaseResult& c) { return harness::AppendToJournal(journal_path, c); };
    options.on_draw_plan = [&](const harness::DrawPlan& plan) {
      const nlohmann::json j{{"schema", kPlanSchema}, {"draw_plan", harness::DrawPlanToJson(plan)}};
      return WriteFileAtomically(plan_path, harness::JsonText(j) + "\n", write);
    };
  }

  const size_t resumed_cases = options.finished.size();
  std::optional<harness::CampaignReport> finished;
  {
    StopSignals signals;
    auto report = harness::RunCampaign(*suite, options);
    if (!report.ok()) {
      if (StopSignals::Stopped()) return StopSignals::ExitCode();
      return Fail(report.error().ToString());
    }
    finished = std::move(*report);
  }
  harness::CampaignReport* report = &*finished;
  // Stopped before a case of this run finished: the previous report (a finished run's, or the one the interrupted
  // run wrote) stays as it is; the journal holds everything.
  const size_t new_cases = report->cases.size() + (report->shard ? report->shard->evidence.size() : 0) - resumed_cases;
  if (report->interrupted && new_cases == 0) {
    std::cout << "interrupted before a case finished: nothing written"
              << (o.report.empty() ? "" : ", " + o.report + " left as it was") << "\n";
    return StopSignals::ExitCode();
  }
  if (!o.report.empty()) {
    if (Status st = harness::SaveReport(*report, o.report, write); !st.ok()) return Fail(st.error().message);
  }
  if (!o.html.empty()) {
    if (Status st = harness::SaveHtmlReport(*report, o.html, write); !st.ok()) return Fail(st.error().message);
  }
  if (report->shard) {
    const harness::ShardInfo& info = *report->shard;
    uint64_t draws = 0;
    for (const harness::ShardRowEvidence& e : info.evidence) {
      for (const auto& [b, end] : e.pieces) draws += end - b;
    }
    for (const harness::CaseResult& c : report->cases) draws += c.draws;
    std::cout << "shard " << info.index << "/" << info.count << " of " << report->suite << " on " << report->sampler
              << ": " << info.items << " work items (" << info.evidence.size() << " row cases' counts, "
              << report->cases.size() << " batch rows and cases without draws), " << harness::FormatCount(double(draws))
              << " draws in " << harness::Progress::FormatDuration(report->seconds) << "\n"
              << "report: " << o.report << "\n";
    if (report->interrupted) return StopSignals::ExitCode();
    std::cout << "judge with: samplecheck merge <the " << info.count << " shard reports> --report merged.json\n";
    return kExitOk;
  }
  std::cout << harness::FormatSummary(*report);
  if (!o.report.empty()) std::cout << "report: " << o.report << "\n";
  // A failing generated (or corner) case becomes a one-case suite beside the report, which replays it.
  for (const harness::CaseResult& c : report->cases) {
    const bool generated = c.name.rfind("gen/", 0) == 0 || c.name.rfind("cli-gen/", 0) == 0 ||
                           c.name.rfind("corner/", 0) == 0;
    if (!generated || c.status != harness::CaseStatus::kFail || c.batch.size != 0 || o.report.empty()) continue;
    std::string file = c.name;
    std::replace(file.begin(), file.end(), '/', '-');
    const std::filesystem::path path = o.report + "." + file + ".replay.json";
    if (Status st = WriteFileAtomically(path, harness::JsonText(harness::ReplaySuiteJson(*report, c)) + "\n", write);
        st.ok()) {
      std::cout << "replay " << c.name << ": samplecheck run --suite " << path.string() << " --sampler " << o.sampler
                << (report->draw_seed != report->seed ? " --draw-seed " + std::to_string(report->draw_seed) : "")
                << "\n";
    } else {
      std::cerr << "samplecheck run: " << st.error().message << "\n";
    }
  }
  if (!o.html.empty()) std::cout << "html:   " << o.html << "\n";
  if (report->interrupted) {
    std::cout << "interrupted: " << report->cases.size() << " of " << report->planned_cases << " cases judged";
    if (journal) std::cout << "; finish with: " << command_line << " --report " << o.report << " --resume";
    std::cout << "\n";
    return StopSignals::ExitCode();
  }
  // A finished run needs no journal: its report holds every case.
  if (journal) {
    std::filesystem::remove(journal_path);
    std::filesystem::remove(plan_path);
  }
  return report->Passed() ? kExitOk : kExitCheckFailed;
}

const bool registered = RegisterCommand(
    {"run", "run a suite against a sampler and judge it against the exact reference", [](CLI::App& cmd) {
       auto o = std::make_shared<RunOptions>();
       cmd.add_option("--suite", o->suite, "built-in suite (smoke, standard, nightly) or a suite file")->required();
       cmd.add_option("--sampler", o->sampler, harness::SamplerSpecHelp())->capture_default_str();
       cmd.add_option("--profile", o->profile,
                      "semantics profile the draws are judged against (default: the suite's, else the sampler's)");
       AddUnsigned(cmd, "--seed", o->seed, "campaign seed (default: the suite's; nightly draws a fresh one)");
       AddUnsigned(cmd, "--draw-seed", o->draw_seed,
                   "seed of the sampler's draws only (default: --seed): same rows, independent draws, for an A/B "
                   "run against a baseline report of the same --seed");
       AddReal(cmd, "--tv", o->tv, "detectable total-variation distance the draws are planned for (default 1e-3)",
               1e-9, 0.5);
       AddUnsigned(cmd, "--max-draws", o->max_draws, "cap on the draws of every case (lowers the suite's caps)", 1,
                   uint64_t{10000000000000});
       AddCount(cmd, "--jobs,-j", o->jobs, "cases run in parallel (default: one per core for exact, else 1)", 0u,
                4096u);
       cmd.add_option("--report", o->report, "write the JSON report here (and journal finished cases beside it)");
       cmd.add_option("--html", o->html, "write the self-contained HTML report here");
       AddProgress(cmd, o->progress);
       cmd.add_flag("--follow-symlinks", o->follow_symlinks,
                    "write reports through a symbolic link at their path (refused otherwise)");
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
       AddReal(cmd, "--budget", o->budget,
               "time budget in seconds instead of the suite's (0: none): full power when the measured cost fits it",
               0.0, 604800.0);
       cmd.add_flag("--force", o->force,
                    "run a plan past the limits (more than 6 hours at the measured throughput, or 10000 cases)");
       AddUnsigned(cmd, "--generated", o->generated,
                   "add this many generated cases (every filter and sentinel, V from 1 to 262144; seeded by the "
                   "campaign seed; a failing one is written out as a one-case suite that replays it)",
                   0, 10000);
       AddEquivalence(cmd, o->equivalence, o->equivalence_chi2);
       cmd.add_option("--verifier", o->verifier,
                      "speculative decoding: run a spec suite (spec-smoke, spec-standard) against this verifier "
                      "(exact[:profile], cuda[:profile] (CUDA builds), mutant:<name>, plugin:<lib.so>[:config], "
                      "plugin-inproc:<lib.so>[:config], "
                      "process:<command>; docs/speculative.md); --max-draws caps the trials");
       cmd.add_flag("--allow-skipped", o->evidence.allow_skipped,
                    "a skipped case does not fail the verdict (it is still reported)");
       cmd.add_flag("--allow-underpowered", o->evidence.allow_underpowered,
                    "a row case whose draws reach less than the target power at its TV does not fail the verdict");
       AddUnsigned(cmd, "--min-judged-cases", o->evidence.min_judged_cases,
                   "judged cases the verdict needs (default 1)", 1);
       AddUnsigned(cmd, "--min-draws", o->evidence.min_draws, "draws over the judged cases the verdict needs (default 1)",
                   1);
       cmd.add_option("--shard", o->shard,
                      "draw one part of the campaign: I/N (0-based index I of N shards), auto (the scheduler's index "
                      "and count: GTEST_SHARD_INDEX/GTEST_TOTAL_SHARDS, SLURM_ARRAY_TASK_ID/SLURM_ARRAY_TASK_COUNT) "
                      "or auto/N (also JOB_COMPLETION_INDEX); writes evidence for samplecheck merge (docs/scale.md)");
       cmd.add_option("--devices", o->devices,
                      "GPU samplers: draw on these CUDA devices of this host (all, or 0,1,...), one sampler per "
                      "device; the counts are the single-device run's");
       return [o]() {
         // The command line as the report records it (the options that change the verdict).
         std::string command_line = "samplecheck run --suite " + o->suite + " --sampler " + o->sampler;
         if (!o->profile.empty()) command_line += " --profile " + o->profile;
         if (o->seed) command_line += " --seed " + std::to_string(*o->seed);
         if (o->draw_seed) command_line += " --draw-seed " + std::to_string(*o->draw_seed);
         if (o->tv) command_line += " --tv " + std::to_string(*o->tv);
         if (o->max_draws) command_line += " --max-draws " + std::to_string(*o->max_draws);
         if (!o->shard.empty()) command_line += " --shard " + o->shard;
         if (!o->plan_from.empty()) command_line += " --plan-from " + o->plan_from;
         if (o->budget) command_line += " --budget " + FormatValue(*o->budget);
         command_line += EquivalenceCommandLine(o->equivalence, o->equivalence_chi2);
         return Run(*o, command_line);
       };
     }});

}  // namespace
}  // namespace samplecheck::tools
