// The run session of every command that writes a campaign's report (session.h): outputs, locks, the epilogue.
#include "samplecheck/session/session.h"

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>

#include "samplecheck/core/format.h"
#include "samplecheck/report/html_report.h"
#include "samplecheck/report/report.h"
#include "samplecheck/samplers/kinds.h"
#include "samplecheck/samplers/sampler_registry.h"
#include "samplecheck/session/stop_signals.h"

namespace samplecheck::harness {
namespace {

void AddRowInput(const RowSpec& row, const std::string& role, std::vector<NamedPath>& inputs) {
  if (row.kind != "npy" || row.path.empty()) return;
  std::filesystem::path p = row.path;
  if (p.is_relative() && !row.base_dir.empty()) p = row.base_dir / p;
  inputs.push_back({role, p});
}

void AddSuiteFile(const std::string& source, std::vector<NamedPath>& inputs) {
  if (source.empty() || source.rfind("builtin:", 0) == 0) return;
  if (std::filesystem::exists(source)) inputs.push_back({"the suite file", source});
}

// A program that runs samplecheck on its user's behalf names what the user ran in $SAMPLECHECK_RECORDED_COMMAND:
// samplecheck.check() of the Python package serves a callable through a relay process, whose command line (a
// socket of a Python process that is gone) tells a reader of the report nothing; it records the Python call, the
// callable's name and samplecheck's options instead. The report and its HTML record it as their command line.
inline constexpr char kRecordedCommandEnv[] = "SAMPLECHECK_RECORDED_COMMAND";

const CampaignReport& AsRecorded(const CampaignReport& report, std::optional<CampaignReport>& copy) {
  const char* recorded = std::getenv(kRecordedCommandEnv);
  if (recorded == nullptr || *recorded == '\0') return report;
  copy.emplace(report);
  copy->command_line = recorded;
  return *copy;
}

}  // namespace

std::vector<NamedPath> SuiteInputs(const Suite& suite) {
  std::vector<NamedPath> inputs;
  AddSuiteFile(suite.source, inputs);
  for (const CaseSpec& c : suite.cases) {
    AddRowInput(c.row, "the .npy of case " + c.name, inputs);
    for (const BatchEntry& e : c.batch) AddRowInput(e.row, "the .npy of case " + c.name, inputs);
  }
  return inputs;
}

std::vector<NamedPath> SuiteInputs(const SpecSuite& suite) {
  std::vector<NamedPath> inputs;
  AddSuiteFile(suite.source, inputs);
  for (const SpecCaseSpec& c : suite.cases) {
    for (const SpecRequestSpec& r : c.requests) {
      AddRowInput(r.target, "the .npy of case " + c.name, inputs);
      AddRowInput(r.draft.row, "the .npy of case " + c.name, inputs);
    }
  }
  return inputs;
}

std::vector<NamedPath> SuiteInputs(const ReplaySuite& suite) {
  std::vector<NamedPath> inputs;
  AddSuiteFile(suite.source, inputs);
  for (const ReplayCaseSpec& c : suite.cases) {
    for (const ReplayEntry& e : c.entries) AddRowInput(e.row, "the .npy of case " + c.name, inputs);
  }
  return inputs;
}

std::vector<std::string> CommandLineFiles(std::string_view command) {
  // The words as /bin/sh splits them (quotes, backslashes; the operators ; & | < > ( ) end a word), without its
  // expansions: a word that is a file's name when the shell runs it is one here too.
  std::vector<std::string> words;
  std::string word;
  bool in_word = false;
  auto end_word = [&] {
    if (in_word) words.push_back(word);
    word.clear();
    in_word = false;
  };
  for (size_t i = 0; i < command.size(); ++i) {
    const char c = command[i];
    if (c == '\'') {
      const size_t close = command.find('\'', i + 1);
      word.append(command.substr(i + 1, close == std::string_view::npos ? std::string_view::npos : close - i - 1));
      in_word = true;
      if (close == std::string_view::npos) break;
      i = close;
    } else if (c == '"') {
      in_word = true;
      for (++i; i < command.size() && command[i] != '"'; ++i) {
        if (command[i] == '\\' && i + 1 < command.size() &&
            std::string_view("\"\\$`").find(command[i + 1]) != std::string_view::npos) {
          ++i;
        }
        word.push_back(command[i]);
      }
    } else if (c == '\\') {
      if (i + 1 < command.size()) word.push_back(command[++i]);
      in_word = true;
    } else if (std::string_view(" \t\n;&|<>()").find(c) != std::string_view::npos) {
      end_word();
    } else {
      word.push_back(c);
      in_word = true;
    }
  }
  end_word();
  // Each word, and the value of an option or assignment word (--config=x.json, X=y): those naming a regular file.
  std::vector<std::string> files;
  auto add = [&](const std::string& candidate) {
    std::error_code ec;
    if (candidate.empty() || !std::filesystem::is_regular_file(candidate, ec)) return;
    if (std::find(files.begin(), files.end(), candidate) == files.end()) files.push_back(candidate);
  };
  for (const std::string& w : words) {
    add(w);
    if (const size_t eq = w.find('='); eq != std::string::npos) add(w.substr(eq + 1));
  }
  return files;
}

std::vector<NamedPath> SpecInputs(const std::string& option, const std::string& spec) {
  // Through the kinds that wrap another spec: lossy:<spec> (samplers, verifiers), sampler:<spec> (replay sources).
  KindSpec split = SplitKindSpec(spec);
  while (split.has_arg && (split.kind == "lossy" || split.kind == "sampler")) split = SplitKindSpec(split.arg);
  if (split.kind == "process" && split.has_arg) {
    std::vector<NamedPath> inputs;
    for (const std::string& file : CommandLineFiles(split.arg)) {
      inputs.push_back({"a file " + option + "'s process command names", file});
    }
    return inputs;
  }
  const std::string library = PluginLibraryOfSpec(split.text);
  if (library.empty()) return {};
  return {{option + "'s plugin", library}};
}

SessionOptions SessionFor(std::string command, std::filesystem::path report, std::filesystem::path html,
                          bool follow_symlinks) {
  SessionOptions s;
  s.command = std::move(command);
  s.report = std::move(report);
  s.html = std::move(html);
  s.follow_symlinks = follow_symlinks;
  return s;
}

NamedPath SuiteFileInput(const std::string& suite, std::string role) {
  return {std::move(role), std::filesystem::exists(suite) ? suite : ""};
}

RunSession::RunSession(SessionOptions options) : o_(std::move(options)), write_{o_.follow_symlinks} {
  if (!o_.report.empty() && o_.journal_outputs) {
    journal_path_ = JournalPathFor(o_.report);
    // Where a journaled run keeps its plan, so that --resume draws the plan the run started with.
    plan_path_ = journal_path_.string() + ".plan";
  }
}

RunSession::~RunSession() = default;

Status RunSession::Open() {
  // Output paths first: a run of hours must not end in "cannot write", nor destroy a file it reads; one writer per
  // report (its journal included).
  const std::vector<NamedPath> outputs{
      {"--report", o_.report}, {"--html", o_.html}, {"the journal", journal_path_}, {"the journal's plan", plan_path_}};
  std::vector<NamedPath> inputs = o_.inputs;
  inputs.push_back({"--plan-from", o_.plan_from});
  if (Status st = CheckOutputs(outputs, inputs, write_); !st.ok()) return st;
  auto locks = LockOutputs({{"--report", o_.report}, {"--html", o_.html}}, write_);
  if (!locks.ok()) return locks.error();
  locks_ = std::move(*locks);
  if (o_.resume && journal_path_.empty()) {
    return InvalidArgument("--resume needs --report (the journal is <report>.journal)");
  }
  if (o_.resume && o_.restart) {
    return InvalidArgument("--resume and --restart contradict each other: finish the run, or discard it");
  }
  return Status::Ok();
}

Status RunSession::RefuseInputs(const std::vector<NamedPath>& inputs) const {
  return CheckOutputsDistinct({{"--report", o_.report},
                               {"--html", o_.html},
                               {"the journal", journal_path_},
                               {"the journal's plan", plan_path_}},
                              inputs);
}

int RunSession::Fail(const std::string& message) const {
  *o_.err << "samplecheck " << o_.command << ": " << message << "\n";
  return kExitUsage;
}

int RunSession::CampaignFailed(const std::string& message) const {
  if (StopSignals::Stopped()) return StopSignals::ExitCode();
  return Fail(message);
}

int RunSession::Finish(const CampaignReport& report, const std::string& summary, bool passed) {
  // Stopped before a case of this run finished: the previous report (a finished run's, or the one the interrupted
  // run wrote) stays as it is; the journal holds everything.
  const size_t new_cases = report.cases.size() + (report.shard ? report.shard->evidence.size() : 0) - resumed_cases_;
  if (report.interrupted && new_cases == 0) {
    *o_.out << "interrupted before a case finished: nothing written"
            << (o_.report.empty() ? "" : ", " + o_.report.string() + " left as it was") << "\n";
    return StopSignals::ExitCode();
  }
  std::optional<CampaignReport> copy;
  const CampaignReport& saved = AsRecorded(report, copy);
  if (!o_.report.empty()) {
    if (Status st = SaveReport(saved, o_.report, write_); !st.ok()) return Fail(st);
  }
  if (!o_.html.empty()) {
    if (Status st = SaveHtmlReport(saved, o_.html, write_); !st.ok()) return Fail(st);
  }
  if (report.shard) return FinishShard(report);
  *o_.out << summary;
  if (!o_.report.empty()) *o_.out << "report: " << o_.report.string() << "\n";
  if (sampler_campaign_) WriteReplaySuites(report);
  if (!o_.html.empty()) *o_.out << "html:   " << o_.html.string() << "\n";
  if (report.interrupted) {
    *o_.out << "interrupted: " << report.cases.size() << " of " << report.planned_cases << " cases judged";
    if (journal_) *o_.out << "; finish with: " << command_line_ << " --report " << o_.report.string() << " --resume";
    *o_.out << "\n";
    return StopSignals::ExitCode();
  }
  // A finished run needs no journal: its report holds every case.
  if (journal_) {
    std::filesystem::remove(journal_path_);
    std::filesystem::remove(plan_path_);
  }
  return passed ? kExitPass : kExitCheckFailed;
}

int RunSession::FinishShard(const CampaignReport& report) {
  const ShardInfo& info = *report.shard;
  uint64_t draws = 0;
  for (const ShardRowEvidence& e : info.evidence) {
    for (const auto& [b, end] : e.pieces) draws += end - b;
  }
  for (const CaseResult& c : report.cases) draws += c.draws;
  *o_.out << "shard " << info.index << "/" << info.count << " of " << report.suite << " on " << report.sampler << ": "
          << info.items << " work items (" << info.evidence.size() << " row cases' counts, " << report.cases.size()
          << " batch rows and cases without draws), " << FormatCount(double(draws)) << " draws in "
          << Progress::FormatDuration(report.seconds) << "\n"
          << "report: " << o_.report.string() << "\n";
  if (report.interrupted) return StopSignals::ExitCode();
  *o_.out << "judge with: samplecheck merge <the " << info.count << " shard reports> --report merged.json\n";
  return kExitPass;
}

}  // namespace samplecheck::harness
