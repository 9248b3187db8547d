// The journal of a run (`samplecheck run --report r.json` keeps r.json.journal): one JSON line naming the campaign,
// then one line per finished case, appended and fsynced as each case finishes. An interrupted run (SIGINT,
// SIGTERM, a crash, a lost machine) loses no finished case: `samplecheck run ... --resume` reads the journal,
// reuses its cases (their rows, seeds and draws are deterministic, so the final report is the one an uninterrupted
// run writes, times aside) and draws the rest.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "samplecheck/checks/result.h"
#include "samplecheck/core/error.h"

namespace samplecheck::harness {

inline constexpr char kJournalSchema[] = "samplecheck-journal/1";

// What makes two runs the same campaign.
struct JournalIdentity {
  std::string suite;
  std::string suite_source;
  std::string sampler_spec;
  std::string profile;                // the judged profile
  uint64_t seed = 0;
  uint64_t draw_seed = 0;
  double tv = 0.0;
  std::optional<uint64_t> max_draws;  // --max-draws, when given
  std::string git_revision;           // of the samplecheck that started the run ("" unknown)
  // The fingerprint of the campaign sources that samplecheck was built from (machine.h, DetectSourceFingerprint: ""
  // without git); nullopt in a journal written before it was recorded.
  std::optional<std::string> source_fingerprint;

  // "" when `other` is the same campaign, else the first field that differs with both values. Builds are the same
  // campaign when their campaign-source fingerprints are equal, whatever their git revisions; when either side has
  // none (a journal from before fingerprints, a build without git) their git revisions must be equal.
  std::string Difference(const JournalIdentity& other) const;
};

struct Journal {
  JournalIdentity identity;
  std::vector<CaseResult> cases;  // in completion order
  size_t torn_lines = 0;          // a last line cut short by a crash (dropped)
};

// Ok when no journal is at `path`; else kInvalidArgument saying how many finished cases of an unfinished run it
// holds: a run started without --resume never resets it silently (the CLI's --resume finishes the run, --restart
// discards it).
Status CheckNoPendingJournal(const std::filesystem::path& path);
// Starts a journal at `path`, replacing any (atomically, refusing a symbolic link): the identity line.
Status StartJournal(const std::filesystem::path& path, const JournalIdentity& identity);
// Appends one finished case (durably: fsync), with the hash of its case spec (checks/case_spec.h: CaseSpecHash);
// LoadJournal refuses a line whose case does not match its hash (a hand-edited journal).
Status AppendToJournal(const std::filesystem::path& path, const CaseResult& c);
// kIo when unreadable; kParse naming the line for a malformed line other than a torn last one.
Result<Journal> LoadJournal(const std::filesystem::path& path);

// The journal path of a report path: "<report>.journal".
std::filesystem::path JournalPathFor(const std::filesystem::path& report);

}  // namespace samplecheck::harness
