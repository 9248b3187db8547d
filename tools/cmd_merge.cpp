// samplecheck merge: judge the shards of one campaign together (docs/scale.md). Each shard report (run --shard I/N)
// holds the counts of the draws it made; merge adds them per case, runs every check once and applies Holm over all
// cases: the verdict, p-values and report are those of the unsharded run of the same seeds. Exit codes: 0 the merged
// campaign passes, 1 it fails, 2 bad input (a file that is not a shard report, shards of different campaigns, a
// shard missing or given twice, a suite that no longer plans as the shards did).
#include <memory>
#include <string>
#include <vector>

#include "command_registry.h"
#include "options.h"
#include "samplecheck/campaign/shard.h"
#include "samplecheck/report/report.h"
#include "samplecheck/session/session.h"
#include "samplecheck/suites/suite.h"

namespace samplecheck::tools {
namespace {

struct MergeOptions {
  std::vector<std::string> shards;
  std::string report;
  std::string html;
  std::string suite;  // overrides the suite the shards name (a suite file that moved)
  bool follow_symlinks = false;
};

// The session of the merge: its outputs, none of them a shard report or the suite this merge reads.
harness::SessionOptions SessionOf(const MergeOptions& o) {
  harness::SessionOptions s = harness::SessionFor("merge", o.report, o.html, o.follow_symlinks);
  s.inputs = {harness::SuiteFileInput(o.suite, "--suite")};
  for (size_t k = 0; k < o.shards.size(); ++k) {
    s.inputs.push_back({"shard report " + std::to_string(k + 1), o.shards[k]});
  }
  return s;
}

int Merge(const MergeOptions& o) {
  harness::RunSession session(SessionOf(o));
  if (Status st = session.Open(); !st.ok()) return session.Fail(st);
  std::vector<harness::CampaignReport> shards;
  for (const std::string& path : o.shards) {
    auto r = harness::LoadReport(path);
    if (!r.ok()) return session.Fail(r.error().message);  // LoadReport names the file
    shards.push_back(std::move(*r));
  }
  // The suite the shards ran: a built-in one by name, a file by its path (or --suite).
  std::string suite_name = o.suite;
  if (suite_name.empty()) {
    const std::string& source = shards.front().suite_source;
    suite_name = source.rfind("builtin:", 0) == 0 ? source.substr(8) : source;
  }
  if (Status st = session.RefuseInputs({harness::SuiteFileInput(suite_name, "the shards' suite file")}); !st.ok()) {
    return session.Fail(st);
  }
  auto suite = harness::LoadSuite(suite_name);
  if (!suite.ok()) return session.Fail("the shards' suite: " + suite.error().message);
  if (suite->name != shards.front().suite) {
    return session.Fail("suite " + suite_name + " is named " + suite->name + ", the shards ran " +
                        shards.front().suite);
  }
  if (Status st = session.RefuseInputs(harness::SuiteInputs(*suite)); !st.ok()) return session.Fail(st);
  std::string command_line = "samplecheck merge";
  for (const std::string& path : o.shards) command_line += " " + path;
  auto merged = harness::MergeShards(*suite, shards, o.shards, command_line);
  if (!merged.ok()) return session.Fail(merged.error().message);
  return session.Finish(
      *merged, "merged " + std::to_string(merged->merged_shards) + " shards\n" + harness::FormatSummary(*merged),
      merged->Passed());
}

const bool registered = RegisterCommand(
    {"merge", "judge the shard reports of one campaign (run --shard I/N) together, as the unsharded run",
     [](CLI::App& cmd) {
       auto o = std::make_shared<MergeOptions>();
       cmd.add_option("shards", o->shards, "every shard's report (run --shard I/N --report ...)")->required();
       cmd.add_option("--report", o->report, "write the merged JSON report here");
       cmd.add_option("--html", o->html, "write the merged HTML report here");
       cmd.add_option("--suite", o->suite,
                      "the suite the shards ran, when its file moved (default: the built-in or path they name)");
       cmd.add_flag("--follow-symlinks", o->follow_symlinks,
                    "write reports through a symbolic link at their path (refused otherwise)");
       return [o]() { return Merge(*o); };
     }});

}  // namespace
}  // namespace samplecheck::tools
