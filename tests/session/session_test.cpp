// The run session (session/session.h): a second writer of one report refused, an output that is an input refused
// naming the path (the suite file, a case's .npy, a plugin's library, --report equal to --html), --resume finishing
// a journaled run, a stop signal ending a campaign with nothing written, the epilogue's exit codes. Tiny suites of the
// exact sampler (fixed seeds): deterministic, a few seconds.
#include <unistd.h>

#include <chrono>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <future>
#include <sstream>
#include <thread>

#include <gtest/gtest.h>

#include "samplecheck/report/journal.h"
#include "samplecheck/report/report.h"
#include "samplecheck/session/session.h"
#include "samplecheck/session/stop_signals.h"
#include "samplecheck/suites/suite.h"

namespace samplecheck::harness {
namespace {

namespace fs = std::filesystem;

class SessionTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("session_test." + std::to_string(::getpid()) + "." +
                                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  // A session of `command` writing `report` (in dir_), its messages and summary kept.
  SessionOptions Options(const std::string& command, const std::string& report) {
    SessionOptions o;
    o.command = command;
    o.report = report.empty() ? fs::path() : dir_ / report;
    o.progress = Progress::Mode::kQuiet;
    o.journal_outputs = command == "run";
    o.out = &out_;
    o.err = &err_;
    return o;
  }
  void Write(const fs::path& path, const std::string& text) { std::ofstream(path) << text; }
  // `cases` row cases of `draws` draws each on V=8.
  Suite TinySuite(int cases, uint64_t draws) {
    std::string json = R"({"schema": "samplecheck-suite/1", "name": "tiny", "seed": 3, "tv": 0.2, "min_draws": )" +
                       std::to_string(draws) + R"(, "max_draws": )" + std::to_string(draws) + R"(, "cases": [)";
    for (int c = 0; c < cases; ++c) {
      json += std::string(c ? ", " : "") + R"({"name": "c)" + std::to_string(c) +
              R"(", "row": {"kind": "gaussian", "vocab": 8}})";
    }
    Write(dir_ / "tiny.json", json + "]}");
    auto suite = LoadSuite((dir_ / "tiny.json").string());
    EXPECT_TRUE(suite.ok()) << suite.error().message;
    return *suite;
  }
  CampaignOptions Campaign() {
    CampaignOptions options;
    options.progress = Progress::Mode::kQuiet;
    options.command_line = "samplecheck run --suite tiny.json --sampler exact";
    options.version = "test";
    options.jobs = 1;
    return options;
  }

  fs::path dir_;
  std::ostringstream out_, err_;
};

TEST_F(SessionTest, SecondWriterOfOneReportIsRefused) {
  RunSession first(Options("replay", "r.json"));
  ASSERT_TRUE(first.Open().ok());
  RunSession second(Options("replay", "r.json"));
  const Status st = second.Open();
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.error().message.find("is writing " + (dir_ / "r.json").string()), std::string::npos)
      << st.error().message;
  EXPECT_NE(st.error().message.find("one writer per report"), std::string::npos);
  EXPECT_EQ(second.Fail(st), kExitUsage);
  EXPECT_NE(err_.str().find("samplecheck replay: another samplecheck (pid " + std::to_string(::getpid()) + ")"),
            std::string::npos)
      << err_.str();
}

TEST_F(SessionTest, LockGoesWithTheSession) {
  {
    RunSession first(Options("run", "r.json"));
    ASSERT_TRUE(first.Open().ok());
    EXPECT_TRUE(fs::exists(dir_ / "r.json.lock"));
  }
  EXPECT_FALSE(fs::exists(dir_ / "r.json.lock"));
  RunSession again(Options("run", "r.json"));
  EXPECT_TRUE(again.Open().ok());
}

TEST_F(SessionTest, OutputThatIsAnInputIsRefusedNamingThePath) {
  const fs::path suite = dir_ / "s.json";
  Write(suite, "{}");
  SessionOptions o = Options("run", "s.json");
  o.inputs = {{"the suite file", suite}};
  RunSession session(o);
  const Status st = session.Open();
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.error().code, ErrorCode::kInvalidArgument);
  EXPECT_NE(st.error().message.find("--report " + suite.string() + " is the suite file"), std::string::npos)
      << st.error().message;
  EXPECT_FALSE(fs::exists(dir_ / "s.json.lock"));  // refused before the lock
}

TEST_F(SessionTest, ReportEqualToHtmlIsRefused) {
  SessionOptions o = Options("merge", "x.out");
  o.html = dir_ / "x.out";
  RunSession session(o);
  const Status st = session.Open();
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.error().message.find("--html and --report name the same file (" + (dir_ / "x.out").string() + ")"),
            std::string::npos)
      << st.error().message;
}

TEST_F(SessionTest, CaseNpyAndPluginLibraryAreInputs) {
  Write(dir_ / "rows.npy", "not read here");
  Write(dir_ / "npy.json", R"({"schema": "samplecheck-suite/1", "name": "npy", "cases": [
      {"name": "real", "row": {"kind": "npy", "path": "rows.npy"}}]})");
  auto suite = LoadSuite((dir_ / "npy.json").string());
  ASSERT_TRUE(suite.ok()) << suite.error().message;
  const std::vector<NamedPath> inputs = SuiteInputs(*suite);
  ASSERT_EQ(inputs.size(), 2u);
  EXPECT_EQ(inputs[0].role, "the suite file");
  EXPECT_EQ(inputs[1].role, "the .npy of case real");

  RunSession session(Options("run", "rows.npy"));
  ASSERT_TRUE(session.Open().ok());
  const Status st = session.RefuseInputs(inputs);
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.error().message.find("is the .npy of case real (" + (dir_ / "rows.npy").string() + ")"),
            std::string::npos)
      << st.error().message;

  Write(dir_ / "lib.so", "");
  const std::string lib = (dir_ / "lib.so").string();
  for (const std::string& spec : {"plugin:" + lib, "plugin-inproc:" + lib + ":bug=x", "lossy:plugin:" + lib}) {
    const std::vector<NamedPath> plugin = SpecInputs("--sampler", spec);
    ASSERT_EQ(plugin.size(), 1u) << spec;
    EXPECT_EQ(plugin[0].role, "--sampler's plugin") << spec;
    EXPECT_EQ(plugin[0].path.string(), lib) << spec;
  }
  EXPECT_TRUE(SpecInputs("--sampler", "exact").empty());
  EXPECT_TRUE(SpecInputs("--sampler", "process:python3 /no/such/x.py").empty());
}

// The files a process: command names are inputs (issue 44: `replay --trainer "process:python3 t.py" --report t.py`
// replaced the trainer's script): each shell word, and an option's value, that is an existing regular file.
TEST_F(SessionTest, FilesAProcessCommandNamesAreInputs) {
  const std::string script = (dir_ / "my client.py").string();
  const std::string config = (dir_ / "c.json").string();
  Write(script, "");
  Write(config, "{}");
  EXPECT_EQ(CommandLineFiles("exec python3 '" + script + "' --config=" + config + " vllm"),
            (std::vector<std::string>{script, config}));
  EXPECT_EQ(CommandLineFiles("python3 \"" + script + "\" <" + config + ";echo " + config),
            (std::vector<std::string>{script, config}));
  EXPECT_EQ(CommandLineFiles("CFG=" + config + " python3 " + (dir_ / "my\\ client.py").string() + " " + dir_.string()),
            (std::vector<std::string>{config, script}));  // a directory is no file
  EXPECT_TRUE(CommandLineFiles("python3 /no/such/x.py 'unclosed").empty());
  for (const std::string option : {"--sampler", "--verifier", "--engine", "--trainer"}) {
    for (const std::string& spec : {"process:python3 '" + script + "'", "lossy:process:python3 '" + script + "'",
                                    "sampler:process:python3 '" + script + "'"}) {
      const std::vector<NamedPath> inputs = SpecInputs(option, spec);
      ASSERT_EQ(inputs.size(), 1u) << spec;
      EXPECT_EQ(inputs[0].role, "a file " + option + "'s process command names") << spec;
      EXPECT_EQ(inputs[0].path.string(), script) << spec;
    }
  }
  SessionOptions o = Options("replay", "");
  o.report = script;
  o.inputs = SpecInputs("--trainer", "process:python3 '" + script + "'");
  RunSession session(o);
  const Status st = session.Open();
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.error().message.find("--report " + script + " is a file --trainer's process command names (" + script +
                                    ") that this command reads"),
            std::string::npos)
      << st.error().message;
  std::ifstream in(script);
  EXPECT_EQ(std::string(std::istreambuf_iterator<char>(in), {}), "");  // left as it was
}

TEST_F(SessionTest, PendingJournalIsRefusedAndResumeFinishesIt) {
  const Suite suite = TinySuite(2, 200);
  {
    RunSession first(Options("run", "r.json"));
    ASSERT_TRUE(first.Open().ok());
    ASSERT_EQ(first.RunSamplerCampaign(suite, Campaign()), kExitPass) << err_.str();
  }
  auto full = LoadReport(dir_ / "r.json");
  ASSERT_TRUE(full.ok());
  ASSERT_EQ(full->cases.size(), 2u);
  EXPECT_FALSE(fs::exists(dir_ / "r.json.journal"));  // a finished run keeps no journal
  // The journal of the same run stopped after its first case, as a build before source fingerprints wrote it (no
  // fingerprint: the same git revision resumes it).
  const JournalIdentity identity{full->suite,   full->suite_source, "exact",
                                 full->profile, full->seed,         full->draw_seed,
                                 full->tv,      std::nullopt,       full->git_revision.value_or(""),
                                 std::nullopt};
  ASSERT_TRUE(StartJournal(dir_ / "r.json.journal", identity).ok());
  ASSERT_TRUE(AppendToJournal(dir_ / "r.json.journal", full->cases[0]).ok());

  SessionOptions o = Options("run", "r.json");
  {
    RunSession fresh(o);
    ASSERT_TRUE(fresh.Open().ok());
    EXPECT_EQ(fresh.RunSamplerCampaign(suite, Campaign()), kExitUsage);
    EXPECT_NE(err_.str().find("holds 1 finished case(s) of an unfinished run of suite tiny"), std::string::npos)
        << err_.str();
  }
  o.resume = true;
  o.progress = Progress::Mode::kLines;
  RunSession resumed(o);
  ASSERT_TRUE(resumed.Open().ok());
  ASSERT_EQ(resumed.RunSamplerCampaign(suite, Campaign()), kExitPass) << err_.str();
  EXPECT_NE(err_.str().find("resuming from " + (dir_ / "r.json.journal").string() + ": 1 case(s) judged"),
            std::string::npos)
      << err_.str();
  EXPECT_NE(err_.str().find("plan: 2 cases, 1 resumed from the journal"), std::string::npos) << err_.str();
  EXPECT_FALSE(fs::exists(dir_ / "r.json.journal"));
  auto report = LoadReport(dir_ / "r.json");
  ASSERT_TRUE(report.ok());
  ASSERT_EQ(report->cases.size(), 2u);
  EXPECT_EQ(CaseToJson(report->cases[0]).dump(), CaseToJson(full->cases[0]).dump());  // reused as it was
  EXPECT_EQ(report->cases[1].draws, full->cases[1].draws);                            // drawn again, the same
  EXPECT_EQ(report->cases[1].p_value, full->cases[1].p_value);
}

TEST_F(SessionTest, ResumeOfAnotherCampaignIsRefused) {
  const Suite suite = TinySuite(1, 200);
  ASSERT_TRUE(StartJournal(dir_ / "r.json.journal",
                           {"other", suite.source, "exact", "vllm", 3, 3, 0.2, std::nullopt, "", std::nullopt})
                  .ok());
  SessionOptions o = Options("run", "r.json");
  o.resume = true;
  RunSession session(o);
  ASSERT_TRUE(session.Open().ok());
  EXPECT_EQ(session.RunSamplerCampaign(suite, Campaign()), kExitUsage);
  EXPECT_NE(err_.str().find("cannot resume from " + (dir_ / "r.json.journal").string() +
                            ": the journal's suite is other, this run's tiny"),
            std::string::npos)
      << err_.str();
  EXPECT_FALSE(fs::exists(dir_ / "r.json"));
}

TEST_F(SessionTest, ResumeAndRestartContradict) {
  SessionOptions o = Options("run", "r.json");
  o.resume = true;
  o.restart = true;
  RunSession session(o);
  const Status st = session.Open();
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.error().message.find("--resume and --restart contradict each other"), std::string::npos);
  SessionOptions none = Options("run", "");
  none.resume = true;
  RunSession without(none);
  EXPECT_FALSE(without.Open().ok());
}

TEST_F(SessionTest, StopSignalSetsTheFlagAndTheExitCode) {
  {
    StopSignals signals;
    EXPECT_FALSE(StopSignals::Stopped());
    std::raise(SIGTERM);
    EXPECT_TRUE(StopSignals::Stopped());
    EXPECT_TRUE(StopSignals::Flag()->load());
    EXPECT_EQ(StopSignals::ExitCode(), 143);
  }
  StopSignals again;  // a new session starts unstopped
  EXPECT_FALSE(StopSignals::Stopped());
}

TEST_F(SessionTest, StopBeforeACaseFinishesWritesNothing) {
  // One case of 10^10 draws: stopped long before it finishes.
  Write(dir_ / "r.json", "previous");
  const Suite suite = TinySuite(1, uint64_t{10000000000});
  SessionOptions o = Options("run", "r.json");
  o.restart = true;
  RunSession session(o);
  ASSERT_TRUE(session.Open().ok());
  auto run = std::async(std::launch::async, [&] { return session.RunSamplerCampaign(suite, Campaign()); });
  // The journal is started once the plan is made, under the session's stop signals.
  for (int i = 0; i < 600 && !fs::exists(dir_ / "r.json.journal"); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  ASSERT_TRUE(fs::exists(dir_ / "r.json.journal"));
  ::kill(::getpid(), SIGINT);
  EXPECT_EQ(run.get(), 130);
  EXPECT_NE(out_.str().find("interrupted before a case finished: nothing written, " + (dir_ / "r.json").string() +
                            " left as it was"),
            std::string::npos)
      << out_.str();
  std::ifstream in(dir_ / "r.json");
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_EQ(text, "previous");
  EXPECT_TRUE(fs::exists(dir_ / "r.json.journal"));  // kept for --resume
}

TEST_F(SessionTest, FinishWritesAndSaysTheVerdict) {
  SessionOptions o = Options("merge", "m.json");
  o.html = dir_ / "m.html";
  RunSession session(o);
  ASSERT_TRUE(session.Open().ok());
  CampaignReport report;
  report.suite = "tiny";
  EXPECT_EQ(session.Finish(report, "SUMMARY\n", false), kExitCheckFailed);
  EXPECT_EQ(out_.str(),
            "SUMMARY\nreport: " + (dir_ / "m.json").string() + "\nhtml:   " + (dir_ / "m.html").string() + "\n");
  EXPECT_TRUE(fs::exists(dir_ / "m.json"));
  EXPECT_TRUE(fs::exists(dir_ / "m.html"));
}

}  // namespace
}  // namespace samplecheck::harness
