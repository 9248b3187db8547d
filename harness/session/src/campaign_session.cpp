// The sampler campaign of `samplecheck run` in its session (session.h): the recorded plan of --plan-from, the
// journal and its plan file, --resume, the plan line and its limits (the session observes the campaign), the replay
// suites of failing generated cases.
#include <algorithm>
#include <filesystem>
#include <string>

#include "samplecheck/campaign/campaign.h"
#include "samplecheck/campaign/machine.h"
#include "samplecheck/core/files.h"
#include "samplecheck/core/format.h"
#include "samplecheck/report/failing_case_suite.h"
#include "samplecheck/report/journal.h"
#include "samplecheck/report/report.h"
#include "samplecheck/session/session.h"
#include "samplecheck/session/stop_signals.h"
#include "samplecheck/suites/generated.h"
#include "samplecheck/suites/json_text.h"
#include "samplecheck/suites/suite_file.h"

namespace samplecheck::harness {
namespace {

inline constexpr char kPlanSchema[] = "samplecheck-plan/1";
// The most a plan file (a journal's, samplecheck-plan/1) may hold: one short entry per case, as many as a suite file
// of kMaxSuiteBytes could list. A report given to --plan-from is read under a report's cap.
inline constexpr uint64_t kMaxPlanBytes = kMaxSuiteBytes;
inline constexpr uint64_t kMaxPlanReportBytes = uint64_t{1} << 30;

// The recorded plan of `path`: a journal's plan file, or a report's draw_plan (or, for a report written before
// plans were recorded, the draws of its cases). Only a regular file: a FIFO or a device would block the open.
Result<DrawPlan> LoadPlan(const std::filesystem::path& path, bool journal_plan) {
  std::error_code ec;
  const std::filesystem::file_status status = std::filesystem::status(path, ec);
  if (std::filesystem::exists(status) && !std::filesystem::is_regular_file(status)) {
    return InvalidArgument(path.string() + " is not a regular file (a plan is read from a report or plan file)");
  }
  auto text = journal_plan ? ReadFileCapped(path, kMaxPlanBytes, "a plan")
                           : ReadFileCapped(path, kMaxPlanReportBytes, "a report or plan");
  if (!text.ok()) return text.error();
  auto json = ParseJsonStrict(*text, path.string());
  if (!json.ok()) return json.error();
  if (json->is_object() && json->value("schema", "") == kPlanSchema) {
    if (text->size() > kMaxPlanBytes) {
      return InvalidArgument("a plan " + path.string() + " is larger than " + std::to_string(kMaxPlanBytes) +
                             " bytes, the most samplecheck reads as a plan");
    }
    auto plan = DrawPlanFromJson(json->contains("draw_plan") ? (*json)["draw_plan"] : nlohmann::json());
    if (!plan.ok()) return plan.error().WithContext(path.string());
    return plan;
  }
  auto report = ReportFromJson(*json);
  if (!report.ok()) return report.error().WithContext(path.string());
  auto plan = PlanOfReport(*report);
  if (!plan.ok()) return plan.error().WithContext(path.string());
  return plan;
}

std::string Describe(const CampaignPlan& plan) {
  std::string line = "plan: " + std::to_string(plan.cases) + " cases";
  if (plan.skipped) line += " (" + std::to_string(plan.skipped) + " skipped)";
  if (plan.resumed) line += ", " + std::to_string(plan.resumed) + " resumed from the journal";
  line += ", " + FormatCount(double(plan.draws)) + " draws to make";
  if (plan.draws_per_second > 0) {
    line += ", about " + Progress::FormatDuration(plan.estimated_seconds) + " at " +
            FormatCount(plan.draws_per_second) + " draws/s (measured)";
  }
  if (plan.draw_plan != nullptr) line += std::string("; draws by ") + PlanBasisName(plan.draw_plan->basis);
  return line;
}

// A generated (or corner) case that failed becomes a one-case suite beside the report, which replays it.
bool WantsReplaySuite(const CaseResult& c) {
  return MadeByGenerator(OriginOfCase(c.name)) && c.status == CaseStatus::kFail && c.batch.size == 0;
}

}  // namespace

int RunSession::RunSamplerCampaign(const Suite& suite, CampaignOptions options) {
  sampler_campaign_ = true;
  sampler_spec_ = options.sampler_spec;
  max_draws_ = options.max_draws;
  shard_ = options.shard;
  command_line_ = options.command_line;
  journal_ = !journal_path_.empty() && !o_.no_journal && !options.shard;
  if (Status st = Prepare(options); !st.ok()) return Fail(st);
  Result<CampaignReport> report = InvalidArgument("not run");
  {
    StopSignals signals;
    options.stop = StopSignals::Flag();
    report = RunCampaign(suite, options);
  }
  if (!report.ok()) return CampaignFailed(report.error());
  return Finish(*report, FormatSummary(*report), report->Passed());
}

Status RunSession::Prepare(CampaignOptions& options) {
  options.observer = this;
  if (!o_.plan_from.empty()) {
    auto plan = LoadPlan(o_.plan_from, false);
    if (!plan.ok()) return InvalidArgument("--plan-from " + o_.plan_from.string() + ": " + plan.error().message);
    options.plan_from = std::move(*plan);
    options.plan_from_source = o_.plan_from.string();
  }
  // The finished cases of an unfinished run are never discarded silently.
  if (!journal_path_.empty() && !o_.resume && !o_.restart) {
    if (Status st = CheckNoPendingJournal(journal_path_); !st.ok()) return st;
  }
  if (o_.resume) return Resume(options);
  return Status::Ok();
}

Status RunSession::Resume(CampaignOptions& options) {
  auto loaded = LoadJournal(journal_path_);
  if (!loaded.ok()) return loaded.error();
  // The journal fixes the seeds (a fresh-seed suite drew them at the first start).
  options.seed = loaded->identity.seed;
  options.draw_seed = loaded->identity.draw_seed;
  options.finished = std::move(loaded->cases);
  resumed_identity_ = loaded->identity;
  resumed_cases_ = options.finished.size();
  // The plan the run started with (its time budget measured a machine that may be another now).
  if (!options.plan_from && std::filesystem::exists(plan_path_)) {
    auto plan = LoadPlan(plan_path_, true);
    if (!plan.ok()) return InvalidArgument("cannot resume: " + plan.error().message);
    options.plan_from = std::move(*plan);
    options.plan_from_source = plan_path_.string();
    options.plan_from_journal = true;
  }
  if (o_.progress != Progress::Mode::kQuiet) {
    *o_.err << "resuming from " << journal_path_.string() << ": " << options.finished.size() << " case(s) judged"
            << (loaded->torn_lines ? " (a torn last line was dropped)" : "") << "\n";
  }
  return Status::Ok();
}

Status RunSession::OnPlan(const CampaignPlan& plan) {
  const CampaignReport& id = *plan.identity;
  const JournalIdentity identity{id.suite,
                                 id.suite_source,
                                 sampler_spec_,
                                 id.profile,
                                 id.seed,
                                 id.draw_seed,
                                 id.tv,
                                 max_draws_,
                                 id.git_revision.value_or(""),
                                 DetectSourceFingerprint().value_or("")};
  if (resumed_identity_) {
    if (std::string diff = resumed_identity_->Difference(identity); !diff.empty()) {
      return InvalidArgument("cannot resume from " + journal_path_.string() + ": " + diff +
                             " (resume with the same command line, or start afresh without --resume)");
    }
  }
  if (o_.progress != Progress::Mode::kQuiet) {
    if (shard_) *o_.err << "shard " << shard_->index << "/" << shard_->count << " (" << shard_->source << "): ";
    *o_.err << Describe(plan) << "\n";
  }
  if (o_.max_planned_seconds && plan.estimated_seconds > *o_.max_planned_seconds) {
    return InvalidArgument("the plan needs about " + Progress::FormatDuration(plan.estimated_seconds) + " (more than " +
                           Progress::FormatDuration(*o_.max_planned_seconds) +
                           "): lower --max-draws, shard the suite, or --force");
  }
  if (journal_ && !resumed_identity_) return StartJournal(journal_path_, identity);
  return Status::Ok();
}

Status RunSession::OnDrawPlan(const DrawPlan& plan) {
  if (!journal_) return Status::Ok();
  const nlohmann::json j{{"schema", kPlanSchema}, {"draw_plan", DrawPlanToJson(plan)}};
  return WriteFileAtomically(plan_path_, JsonText(j) + "\n", write_);
}

Status RunSession::OnCaseDone(const CaseResult& c) {
  if (!journal_) return Status::Ok();
  return AppendToJournal(journal_path_, c);
}

void RunSession::WriteReplaySuites(const CampaignReport& report) const {
  if (o_.report.empty()) return;
  for (const CaseResult& c : report.cases) {
    if (!WantsReplaySuite(c)) continue;
    std::string file = c.name;
    std::replace(file.begin(), file.end(), '/', '-');
    const std::filesystem::path path = o_.report.string() + "." + file + ".replay.json";
    if (Status st = WriteFileAtomically(path, JsonText(ReplaySuiteJson(report, c)) + "\n", write_); st.ok()) {
      *o_.out << "replay " << c.name << ": samplecheck run --suite " << path.string() << " --sampler " << sampler_spec_
              << (report.draw_seed != report.seed ? " --draw-seed " + std::to_string(report.draw_seed) : "") << "\n";
    } else {
      *o_.err << "samplecheck " << o_.command << ": " << st.error().message << "\n";
    }
  }
}

}  // namespace samplecheck::harness
