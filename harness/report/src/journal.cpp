#include "samplecheck/report/journal.h"

#include <cstdio>
#include <fstream>
#include <sstream>

#include "json_fields.h"
#include "samplecheck/checks/case_spec.h"
#include "samplecheck/core/files.h"
#include "samplecheck/core/format.h"
#include "samplecheck/report/report.h"
#include "samplecheck/suites/json_text.h"

namespace samplecheck::harness {

using nlohmann::json;

namespace {

json IdentityToJson(const JournalIdentity& id) {
  json j = {{"journal", kJournalSchema},
            {"suite", id.suite},
            {"suite_source", id.suite_source},
            {"sampler_spec", id.sampler_spec},
            {"profile", id.profile},
            {"seed", id.seed},
            {"draw_seed", id.draw_seed},
            {"tv", JsonNumber(id.tv)},
            {"max_draws", id.max_draws ? json(*id.max_draws) : json(nullptr)},
            {"git_revision", id.git_revision}};
  if (id.source_fingerprint) j["source_fingerprint"] = *id.source_fingerprint;
  return j;
}

JournalIdentity IdentityFromJson(const json& j) {
  JournalIdentity id;
  id.suite = Field<std::string>(j, "", "suite");
  id.suite_source = Field<std::string>(j, "", "suite_source");
  id.sampler_spec = Field<std::string>(j, "", "sampler_spec");
  id.profile = Field<std::string>(j, "", "profile");
  id.seed = Field<uint64_t>(j, "", "seed");
  id.draw_seed = Field<uint64_t>(j, "", "draw_seed");
  id.tv = NumberField(j, "", "tv");
  if (!Child(j, "", "max_draws").is_null()) id.max_draws = Field<uint64_t>(j, "", "max_draws");
  id.git_revision = Field<std::string>(j, "", "git_revision");
  if (j.contains("source_fingerprint")) id.source_fingerprint = Field<std::string>(j, "", "source_fingerprint");
  return id;
}

}  // namespace

std::string JournalIdentity::Difference(const JournalIdentity& o) const {
  auto diff = [](const char* field, const std::string& a, const std::string& b) {
    return "the journal's " + std::string(field) + " is " + a + ", this run's " + b;
  };
  if (suite != o.suite) return diff("suite", suite, o.suite);
  if (suite_source != o.suite_source) return diff("suite source", suite_source, o.suite_source);
  if (sampler_spec != o.sampler_spec) return diff("sampler", sampler_spec, o.sampler_spec);
  if (profile != o.profile) return diff("profile", profile, o.profile);
  if (seed != o.seed) return diff("seed", std::to_string(seed), std::to_string(o.seed));
  if (draw_seed != o.draw_seed) return diff("draw seed", std::to_string(draw_seed), std::to_string(o.draw_seed));
  if (tv != o.tv) return diff("tv", FormatSignificant(tv, 17), FormatSignificant(o.tv, 17));
  if (max_draws != o.max_draws) {
    return diff("--max-draws", max_draws ? std::to_string(*max_draws) : "unset",
                o.max_draws ? std::to_string(*o.max_draws) : "unset");
  }
  auto shown = [](const std::string& revision) { return revision.empty() ? std::string("unknown") : revision; };
  const bool fingerprinted =
      source_fingerprint && !source_fingerprint->empty() && o.source_fingerprint && !o.source_fingerprint->empty();
  if (fingerprinted) {
    if (*source_fingerprint == *o.source_fingerprint) return "";
    return "the campaign sources differ (core/, reference/, stats/, harness/, kernels/, tools/): the journal's "
           "source fingerprint is " +
           *source_fingerprint + " (samplecheck revision " + shown(git_revision) + "), this run's " +
           *o.source_fingerprint + " (revision " + shown(o.git_revision) + ")";
  }
  if (git_revision != o.git_revision) {
    if (!source_fingerprint) {
      return "the journal was written by a samplecheck that recorded no campaign-source fingerprint (revision " +
             shown(git_revision) + "); this run's revision is " + shown(o.git_revision) +
             ": such a journal resumes only under a build of its own revision";
    }
    return "the journal's samplecheck revision is " + shown(git_revision) + ", this run's " + shown(o.git_revision) +
           " (and a build without git records no campaign-source fingerprint to compare)";
  }
  return "";
}

std::filesystem::path JournalPathFor(const std::filesystem::path& report) {
  std::filesystem::path journal = report;
  journal += ".journal";
  return journal;
}

Status StartJournal(const std::filesystem::path& path, const JournalIdentity& identity) {
  return WriteFileAtomically(path, JsonText(IdentityToJson(identity), -1) + "\n");
}

namespace {

std::string SpecHashText(const CaseResult& c) {
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(CaseSpecHash(c)));
  return buf;
}

}  // namespace

Status CheckNoPendingJournal(const std::filesystem::path& path) {
  std::error_code ec;
  if (!std::filesystem::exists(std::filesystem::symlink_status(path, ec))) return Status::Ok();
  Result<Journal> journal = LoadJournal(path);
  if (!journal.ok()) {
    return InvalidArgument(path.string() + " exists and is not a journal samplecheck can read (" +
                           journal.error().message + "): remove it, or --restart replaces it");
  }
  return InvalidArgument(path.string() + " holds " + std::to_string(journal->cases.size()) +
                         " finished case(s) of an unfinished run of suite " + journal->identity.suite +
                         " (sampler " + journal->identity.sampler_spec + ", seed " +
                         std::to_string(journal->identity.seed) +
                         "): --resume finishes that run, --restart discards them and starts afresh");
}

Status AppendToJournal(const std::filesystem::path& path, const CaseResult& c) {
  return AppendLineDurably(path, JsonText(json{{"case", CaseToJson(c)}, {"spec", SpecHashText(c)}}, -1));
}

Result<Journal> LoadJournal(const std::filesystem::path& path) {
  std::ifstream in(path);
  if (!in) return Error{ErrorCode::kIo, "cannot read the journal " + path.string() + " (was the run started with --report?)"};
  std::vector<std::string> lines;
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  const bool last_complete = [&] {
    std::ifstream tail(path, std::ios::binary | std::ios::ate);
    if (!tail || tail.tellg() == 0) return true;
    tail.seekg(-1, std::ios::end);
    return tail.get() == '\n';
  }();
  Journal journal;
  if (lines.empty()) return Error{ErrorCode::kParse, path.string() + " is empty: not a samplecheck journal"};
  for (size_t i = 0; i < lines.size(); ++i) {
    const std::string where = path.string() + " line " + std::to_string(i + 1);
    Result<json> j = ParseJsonStrict(lines[i], where);
    if (!j.ok()) {
      if (i + 1 == lines.size() && !last_complete) {  // a line cut short by a crash: the case was not journaled
        ++journal.torn_lines;
        break;
      }
      return j.error();
    }
    try {
      if (i == 0) {
        if (!j->is_object() || j->value("journal", "") != kJournalSchema) {
          return Error{ErrorCode::kParse, where + ": not a samplecheck journal (no \"journal\": \"" +
                                              std::string(kJournalSchema) + "\")"};
        }
        journal.identity = IdentityFromJson(*j);
        continue;
      }
      Result<CaseResult> c = CaseFromJson(j->at("case"));
      if (!c.ok()) return c.error().WithContext(where);
      // Journals before the spec hash have none; the resumed campaign compares the case spec itself either way.
      if (j->contains("spec") && (*j)["spec"] != SpecHashText(*c)) {
        return Error{ErrorCode::kParse, where + ": case " + c->name + " does not match its spec hash " +
                                            (*j)["spec"].dump() + " (the line was edited)"};
      }
      journal.cases.push_back(std::move(*c));
    } catch (const std::exception& e) {
      return Error{ErrorCode::kParse, where + ": " + JsonErrorText(e)};
    }
  }
  return journal;
}

}  // namespace samplecheck::harness
