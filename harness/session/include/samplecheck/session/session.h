// One run session of a command that writes a campaign's report (run, run --verifier, verify, replay, merge): what
// the command does around the campaign, once for all of them.
//
//   - Outputs: the report and HTML paths (and for run the journal and its plan file beside the report) are checked
//     before anything is drawn (regular, writable, distinct, none of them an input: the suite file, a plugin's
//     library, a file a process: command names, a case's .npy, a baseline, a shard report), and locked: one writer
//     per report, a report written through a link locked on the file it names (core/files.h).
//   - The sampler campaign of run: the recorded plan of --plan-from, the journal and its plan file, --resume and
//     --restart, the plan line and its limits, the replay suites of failing generated cases. The session is the
//     campaign's observer (CampaignObserver, campaign/options.h): the campaign calls back into the session, never
//     into the command.
//   - The stop signals (stop_signals.h) and the epilogue: the report and HTML written, the summary printed, the exit
//     code (0 pass, 1 a check failed, 2 usage or input error, 130 / 143 interrupted).
//
//   RunSession session({.command = "replay", .report = o.report, .html = o.html, .inputs = {...}});
//   if (Status st = session.Open(); !st.ok()) return session.Fail(st);
//   ... the campaign, with options.stop = StopSignals::Flag() under a StopSignals ...
//   return session.Finish(*report, FormatSummary(*report), report->Passed());
#pragma once

#include <filesystem>
#include <iostream>
#include <optional>
#include <ostream>
#include <string>
#include <string_view>
#include <vector>

#include "samplecheck/campaign/campaign.h"
#include "samplecheck/campaign/options.h"
#include "samplecheck/campaign/progress.h"
#include "samplecheck/checks/result.h"
#include "samplecheck/core/error.h"
#include "samplecheck/core/files.h"
#include "samplecheck/report/journal.h"
#include "samplecheck/suites/replay_suite.h"
#include "samplecheck/suites/spec_suite.h"
#include "samplecheck/suites/suite.h"

namespace samplecheck::harness {

// The exit codes of every command (docs/cli.md); 128 + a signal when interrupted (StopSignals::ExitCode).
inline constexpr int kExitPass = 0;
inline constexpr int kExitCheckFailed = 1;
inline constexpr int kExitUsage = 2;

// Limits of a plan that run refuses unless --force: a suite that would run for days.
inline constexpr double kMaxPlannedSeconds = 6 * 3600.0;

struct SessionOptions {
  std::string command;            // "run", "verify", ...: messages start "samplecheck <command>: "
  std::filesystem::path report;   // --report ("" none)
  std::filesystem::path html;     // --html ("" none)
  bool follow_symlinks = false;   // --follow-symlinks
  std::vector<NamedPath> inputs;  // what the command reads (an empty path is ignored): no output may be one
  Progress::Mode progress = Progress::Mode::kAuto;  // kQuiet: no plan line, no resume line

  // The sampler campaign of run (RunSamplerCampaign): the report's journal and its plan file are outputs too; without
  // them the campaign keeps no journal and --resume is refused.
  bool journal_outputs = false;
  bool no_journal = false;          // --no-journal (a shard has none either: it is deterministic, run it again)
  bool resume = false;              // --resume: finish the run of <report>.journal
  bool restart = false;             // --restart: discard it
  std::filesystem::path plan_from;  // --plan-from: a report, or a journal's plan file
  std::optional<double> max_planned_seconds;  // a longer plan is refused (unset: --force, no limit)

  std::ostream* out = &std::cout;  // the summary and the paths written
  std::ostream* err = &std::cerr;  // the messages, the plan line
};

// The files a suite reads besides itself (a case's .npy), and the suite file when it is one (not a built-in): each
// named by its role ("the suite file", "the .npy of case c1").
std::vector<NamedPath> SuiteInputs(const Suite& suite);
std::vector<NamedPath> SuiteInputs(const SpecSuite& suite);
std::vector<NamedPath> SuiteInputs(const ReplaySuite& suite);
// What a spec given to `option` ("--sampler", "--verifier", "--engine", "--trainer") reads, through lossy: and
// sampler: (a replay source's sampler): the library of a plugin spec (plugin:<lib.so>[:config], plugin-inproc:) as
// "<option>'s plugin"; the files a process:<command> names (CommandLineFiles: its script, its config) as "a file
// <option>'s process command names"; none for other specs.
std::vector<NamedPath> SpecInputs(const std::string& option, const std::string& spec);
// The words of a shell command line (split as /bin/sh splits them: quotes and backslashes, the operators
// ; & | < > ( ) ending a word; no expansion), and the value of each option or assignment word (--config=x.json,
// X=y), that name an existing regular file, in order, each once: `python3 client.py --cfg c.json` gives client.py and
// c.json (relative to the working directory, where the command runs).
std::vector<std::string> CommandLineFiles(std::string_view command);
// What every command's session starts from: its name and its outputs (--report, --html, --follow-symlinks).
SessionOptions SessionFor(std::string command, std::filesystem::path report, std::filesystem::path html,
                          bool follow_symlinks);
// The suite a command reads as an input named `role`, when it is a file (a built-in suite's name is none).
NamedPath SuiteFileInput(const std::string& suite, std::string role = "the suite file");

class RunSession : private CampaignObserver {
 public:
  explicit RunSession(SessionOptions options);
  ~RunSession() override;
  RunSession(const RunSession&) = delete;
  RunSession& operator=(const RunSession&) = delete;

  // The outputs checked (CheckOutputs: writable, distinct, none an input) and locked (one writer each; a second
  // writer gets kIo naming the first one's pid), the combinations of --resume refused. Before anything is drawn.
  Status Open();
  // Inputs known only once the command has read something (a suite's .npy, the shards' suite): kInvalidArgument
  // naming the output and the input when an output is one of them.
  Status RefuseInputs(const std::vector<NamedPath>& inputs) const;

  // "samplecheck <command>: <message>" on err; kExitUsage.
  int Fail(const std::string& message) const;
  int Fail(const Status& status) const { return Fail(status.error().message); }
  // A campaign that returned an error: the stop signal's exit code when one stopped it, else Fail with the error's
  // kind and message (Error::ToString), or with `message` alone.
  int CampaignFailed(const Error& error) const { return CampaignFailed(error.ToString()); }
  int CampaignFailed(const std::string& message) const;

  // run: the sampler campaign of `suite` with this session's recorded plan, journal and --resume, under the stop
  // signals, and its epilogue (a shard's evidence, or the summary and the replay suites of failing generated
  // cases). `options` as the command parsed them (their stop, observer, plan_from and finished are the session's).
  int RunSamplerCampaign(const Suite& suite, CampaignOptions options);

  // The epilogue of every command: nothing written when interrupted before a case finished (the previous report
  // stays), else the report and HTML written, `summary` printed, the paths; 130 / 143 when interrupted, else
  // kExitPass when `passed`, kExitCheckFailed otherwise.
  int Finish(const CampaignReport& report, const std::string& summary, bool passed);

 private:
  Status OnPlan(const CampaignPlan& plan) override;
  Status OnDrawPlan(const DrawPlan& plan) override;
  Status OnCaseDone(const CaseResult& c) override;
  Status Prepare(CampaignOptions& options);
  Status Resume(CampaignOptions& options);
  int FinishShard(const CampaignReport& report);
  void WriteReplaySuites(const CampaignReport& report) const;

  SessionOptions o_;
  WriteOptions write_;
  std::filesystem::path journal_path_;  // <report>.journal ("" without a report)
  std::filesystem::path plan_path_;     // <report>.journal.plan
  std::vector<OutputLock> locks_;
  // The sampler campaign (RunSamplerCampaign): whom it is, what it resumes, what it journals.
  bool sampler_campaign_ = false;
  bool journal_ = false;
  std::string sampler_spec_;
  std::optional<uint64_t> max_draws_;
  std::optional<ShardSpec> shard_;
  std::string command_line_;
  std::optional<JournalIdentity> resumed_identity_;
  size_t resumed_cases_ = 0;
};

}  // namespace samplecheck::harness
