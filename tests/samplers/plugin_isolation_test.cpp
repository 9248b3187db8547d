// Isolated plugins (`plugin:`, MakeIsolatedPluginSampler): a plugin that exits, crashes or hangs fails the call with
// kPlugin naming the plugin and the exit status, the signal or the deadline, and every later call fails with the
// same message; the test process (standing in for samplecheck) goes on. The plugin is
// tests/samplers/plugins/fatal_plugin.cpp. Also: where the plugin host is found (FindPluginHost), and that a plugin
// printing to stdout does not corrupt the protocol.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <optional>
#include <sstream>
#include <string>

#include "harness_test_rows.h"
#include "samplecheck/samplers/plugin_sampler.h"
#include "samplecheck/samplers/sampler_registry.h"

namespace samplecheck::harness {
namespace {

using testing::GaussianRow;
using testing::Params;
using Clock = std::chrono::steady_clock;

bool Contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

std::unique_ptr<Sampler> StartFatal(const std::string& config, ProcessSamplerOptions options = {}) {
  auto sampler = MakeIsolatedPluginSampler(SAMPLECHECK_FATAL_PLUGIN, config, options);
  EXPECT_TRUE(sampler.ok()) << sampler.error().ToString();
  return sampler.ok() ? std::move(sampler).value() : nullptr;
}

Status SampleOne(Sampler& sampler) {
  const auto row = GaussianRow(16, 1);
  std::vector<SamplingParams> params(1);
  std::vector<int32_t> tokens(1, 99);
  return sampler.Sample({row.data(), 1, 16, 16}, params, tokens);
}

Status CountSome(Sampler& sampler) {
  const auto row = GaussianRow(16, 1);
  std::vector<uint64_t> histogram(16, 0);
  return sampler.CountDraws(row, Params(1.0, -1, 1.0, 0.0), 1000, histogram, nullptr);
}

// The message names the plugin (its name and its library), what happened, and it is the message of every later call.
void ExpectFailedForGood(Sampler& sampler, const Status& first, const std::string& what) {
  ASSERT_FALSE(first.ok()) << "the call succeeded";
  EXPECT_EQ(first.error().code, ErrorCode::kPlugin);
  const std::string& message = first.error().message;
  EXPECT_TRUE(Contains(message, "plugin:fatal")) << message;
  EXPECT_TRUE(Contains(message, SAMPLECHECK_FATAL_PLUGIN)) << message;
  EXPECT_TRUE(Contains(message, what)) << "'" << what << "' missing: " << message;
  Status again = SampleOne(sampler);
  ASSERT_FALSE(again.ok());
  EXPECT_EQ(again.error().message, message);
  Status count_again = CountSome(sampler);
  ASSERT_FALSE(count_again.ok());
  EXPECT_EQ(count_again.error().message, message);
}

TEST(PluginIsolation, NameProfileAndCapabilitiesComeThroughTheHost) {
  auto plugin = StartFatal("none-in-sample");
  ASSERT_TRUE(plugin);
  EXPECT_EQ(plugin->Name(), "plugin:fatal:none-in-sample");
  const Capabilities caps = plugin->GetCapabilities();
  EXPECT_EQ(caps.profile, "vllm");
  EXPECT_TRUE(caps.count_draws);
  EXPECT_FALSE(caps.processed_distribution);
  EXPECT_TRUE(caps.deterministic);
  EXPECT_TRUE(SampleOne(*plugin).ok());
  EXPECT_TRUE(CountSome(*plugin).ok());
}

TEST(PluginIsolation, PluginThatExitsZeroInSampleIsAFailedCallNotAnExitOfTheHarness) {
  auto plugin = StartFatal("exit-in-sample");
  ASSERT_TRUE(plugin);
  ExpectFailedForGood(*plugin, SampleOne(*plugin), "exited with status 0");
}

TEST(PluginIsolation, PluginThatExitsInCountDrawsIsAFailedCall) {
  auto plugin = StartFatal("exit-3-in-count");
  ASSERT_TRUE(plugin);
  ExpectFailedForGood(*plugin, CountSome(*plugin), "exited with status 3");
}

TEST(PluginIsolation, PluginThatSegfaultsIsAFailedCallNamingTheSignal) {
  auto plugin = StartFatal("segfault-in-sample");
  ASSERT_TRUE(plugin);
  ExpectFailedForGood(*plugin, SampleOne(*plugin), "killed by signal 11");
}

TEST(PluginIsolation, PluginThatHangsIsKilledAtTheDeadline) {
  ProcessSamplerOptions options;
  options.request_timeout_s = 2.0;  // the deadline under test; the handshake keeps its generous default
  auto plugin = StartFatal("hang-in-sample", options);
  ASSERT_TRUE(plugin);
  const auto start = Clock::now();
  Status st = SampleOne(*plugin);
  const double elapsed = std::chrono::duration<double>(Clock::now() - start).count();
  ExpectFailedForGood(*plugin, st, "did not answer in time");
  EXPECT_TRUE(Contains(st.error().message, "deadline of 2 s")) << st.error().message;
  EXPECT_TRUE(Contains(st.error().message, "was killed")) << st.error().message;
  EXPECT_GE(elapsed, 2.0);
  EXPECT_LT(elapsed, 60.0) << "the harness waited " << elapsed << " s for a 2 s deadline";
}

TEST(PluginIsolation, PluginThatExitsWhileLoadingFailsTheLoad) {
  auto plugin = MakeIsolatedPluginSampler(SAMPLECHECK_FATAL_PLUGIN, "exit-3-in-create");
  ASSERT_FALSE(plugin.ok());
  EXPECT_EQ(plugin.error().code, ErrorCode::kPlugin);
  EXPECT_TRUE(Contains(plugin.error().message, "exited with status 3")) << plugin.error().message;
  EXPECT_TRUE(Contains(plugin.error().message, SAMPLECHECK_FATAL_PLUGIN)) << plugin.error().message;
}

TEST(PluginIsolation, PluginThatSegfaultsWhileLoadingFailsTheLoad) {
  auto plugin = MakeIsolatedPluginSampler(SAMPLECHECK_FATAL_PLUGIN, "segfault-in-create");
  ASSERT_FALSE(plugin.ok());
  EXPECT_EQ(plugin.error().code, ErrorCode::kPlugin);
  EXPECT_TRUE(Contains(plugin.error().message, "killed by signal 11")) << plugin.error().message;
}

// The host keeps the protocol off fd 1: what a plugin prints shows up in the stderr tail, not in the protocol.
TEST(PluginIsolation, PluginThatPrintsToStdoutDoesNotBreakTheProtocol) {
  auto plugin = StartFatal("print-in-sample");
  ASSERT_TRUE(plugin);
  for (int i = 0; i < 3; ++i) EXPECT_TRUE(SampleOne(*plugin).ok());
}

TEST(PluginIsolation, PluginKindIsIsolatedAndPluginInprocIsNot) {
  const std::string spec = std::string(":") + SAMPLECHECK_FATAL_PLUGIN + ":exit-in-sample";
  auto isolated = MakeSampler("plugin" + spec, {});
  ASSERT_TRUE(isolated.ok()) << isolated.error().ToString();
  EXPECT_EQ((*isolated)->Name(), "plugin:fatal:exit-in-sample");
  Status st = SampleOne(**isolated);
  ASSERT_FALSE(st.ok());
  EXPECT_TRUE(Contains(st.error().message, "exited with status 0")) << st.error().message;
  // plugin-inproc loads the same library into this process (not called here: it would end the test).
  auto inproc = MakeSampler("plugin-inproc" + spec, {});
  ASSERT_TRUE(inproc.ok()) << inproc.error().ToString();
  EXPECT_EQ((*inproc)->Name(), "plugin:fatal:exit-in-sample");
}

// ---- The calls a plugin gets ------------------------------------------------------------------------------------

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

// The log of the recording plugin without its "pid P " prefixes.
std::string CallsOf(const std::string& log) {
  std::string calls, line;
  std::istringstream in(ReadFile(log));
  while (std::getline(in, line)) calls += line.substr(line.find(" sample ") + 1) + "\n";
  return calls;
}

// The bytes the plugin host has read so far (rchar of /proc/<pid>/io), its pid from the recording plugin's log;
// nullopt where that file is not readable.
std::optional<uint64_t> HostReadBytes(const std::string& log) {
  const std::string first = ReadFile(log);
  EXPECT_EQ(first.rfind("pid ", 0), 0u) << first;
  std::ifstream io("/proc/" + first.substr(4, first.find(' ', 4) - 4) + "/io");
  std::string key;
  uint64_t value = 0;
  while (io >> key >> value) {
    if (key == "rchar:") return value;
  }
  return std::nullopt;
}

// A plugin without count_draws: CountDraws goes through sample in the batches of the default CountDraws, in
// process and in the host alike (the harness sends the host COUNT, the host draws through sample), so the plugin
// sees the same calls and the histograms agree. A 1000-token row (batches of 4096) and a 131072-token row (batches
// of 128, 64 MiB), with draws that end in a partial batch.
TEST(PluginIsolation, APluginWithoutCountDrawsGetsTheSameSampleCallsIsolatedAndInProcess) {
  for (const auto& [vocab, draws] : {std::pair<size_t, uint64_t>{1000, 70000}, {131072, 1000}}) {
    std::string logs[2];
    std::vector<uint64_t> histograms[2];
    for (int isolated = 0; isolated < 2; ++isolated) {
      logs[isolated] = ::testing::TempDir() + "recording_" + std::to_string(getpid()) + "_" + std::to_string(isolated);
      std::remove(logs[isolated].c_str());
      auto plugin = isolated ? MakeIsolatedPluginSampler(SAMPLECHECK_RECORDING_PLUGIN, logs[isolated])
                             : MakePluginSampler(SAMPLECHECK_RECORDING_PLUGIN, logs[isolated]);
      ASSERT_TRUE(plugin.ok()) << plugin.error().ToString();
      EXPECT_FALSE((*plugin)->GetCapabilities().count_draws) << "isolated " << isolated;
      const auto row = GaussianRow(static_cast<int64_t>(vocab), 3);
      histograms[isolated].assign(vocab, 0);
      uint64_t invalid = 0;
      ASSERT_TRUE((*plugin)->CountDraws(row, Params(1.0, -1, 1.0, 0.0, 7, 5), draws, histograms[isolated], &invalid)
                      .ok());
      EXPECT_EQ(invalid, 0u);
    }
    const std::string in_process = CallsOf(logs[0]);
    EXPECT_FALSE(in_process.empty());
    EXPECT_EQ(CallsOf(logs[1]), in_process) << "vocab " << vocab;
    EXPECT_EQ(histograms[1], histograms[0]) << "vocab " << vocab;
  }
}

// ... and the row crosses the pipe once per request, not once per draw: the host reads a few MB for 1000 draws of a
// 131072-token row, where the logits of every draw would be 512 MiB (/proc/<pid>/io: bytes, not time).
TEST(PluginIsolation, APluginWithoutCountDrawsIsCountedInTheHostNotShippedEveryRow) {
  const std::string log = ::testing::TempDir() + "recording_io_" + std::to_string(getpid());
  std::remove(log.c_str());
  auto plugin = MakeIsolatedPluginSampler(SAMPLECHECK_RECORDING_PLUGIN, log);
  ASSERT_TRUE(plugin.ok()) << plugin.error().ToString();
  const auto row = GaussianRow(131072, 3);
  std::vector<uint64_t> histogram(row.size(), 0);
  ASSERT_TRUE((*plugin)->CountDraws(row, Params(1.0, -1, 1.0, 0.0, 7, 5), 1000, histogram, nullptr).ok());
  const auto read_bytes = HostReadBytes(log);
  if (!read_bytes) GTEST_SKIP() << "the host's /proc/<pid>/io is not readable here";
  EXPECT_LT(*read_bytes, uint64_t{64} << 20) << "the host read " << *read_bytes << " bytes for 1000 draws";
}

// Replicated batches (a campaign's batch cases, SampleReplicated) and the agreement check's repeated row
// (SampleRepeated) go to the host as SAMPLE_REPLICATED, each row once: the host makes the copies, in the batches of
// the default SampleReplicated, so the plugin gets the same sample calls isolated as in process, and the tokens
// agree.
TEST(PluginIsolation, ReplicatedBatchesGetTheSameSampleCallsIsolatedAndInProcess) {
  constexpr int64_t kRows = 3, kVocab = 1000;
  constexpr uint64_t kCopies = 2000;  // 6000 call rows: sample calls of 1365 copies (4095 rows), then 635 copies
  std::vector<float> logits;
  for (int64_t r = 0; r < kRows; ++r) {
    const auto row = GaussianRow(kVocab, static_cast<uint32_t>(r));
    logits.insert(logits.end(), row.begin(), row.end());
  }
  std::vector<SamplingParams> params(kRows * kCopies);
  for (size_t c = 0; c < params.size(); ++c) params[c] = Params(1.0, -1, 1.0, 0.0, 7, 11 * c);
  std::string logs[2];
  std::vector<int32_t> tokens[2], repeated[2];
  for (int isolated = 0; isolated < 2; ++isolated) {
    logs[isolated] = ::testing::TempDir() + "recording_replicated_" + std::to_string(getpid()) + "_" +
                     std::to_string(isolated);
    std::remove(logs[isolated].c_str());
    auto plugin = isolated ? MakeIsolatedPluginSampler(SAMPLECHECK_RECORDING_PLUGIN, logs[isolated])
                           : MakePluginSampler(SAMPLECHECK_RECORDING_PLUGIN, logs[isolated]);
    ASSERT_TRUE(plugin.ok()) << plugin.error().ToString();
    tokens[isolated].assign(params.size(), -7);
    ASSERT_TRUE((*plugin)->SampleReplicated({logits.data(), kRows, kVocab, kVocab}, kCopies, params, tokens[isolated])
                    .ok());
    repeated[isolated].assign(700, -7);
    ASSERT_TRUE((*plugin)->SampleRepeated({logits.data(), kVocab}, Params(1.0, -1, 1.0, 0.0, 7, 5), repeated[isolated])
                    .ok());
  }
  const std::string in_process = CallsOf(logs[0]);
  EXPECT_EQ(in_process,
            "sample rows 4095 vocab 1000 offsets 0..45034\n"
            "sample rows 1905 vocab 1000 offsets 45045..65989\n"
            "sample rows 700 vocab 1000 offsets 5..704\n");
  EXPECT_EQ(CallsOf(logs[1]), in_process);
  EXPECT_EQ(tokens[1], tokens[0]);
  EXPECT_EQ(repeated[1], repeated[0]);
}

// ... and the copies are made in the host, not shipped: 64 copies of a 131072-token row are 32 MiB of logits, the
// host reads the row once (512 KiB) and 64 params (/proc/<pid>/io: bytes, not time). The example plugin's tokens
// (8 copies) are the same isolated and in process.
TEST(PluginIsolation, AReplicatedRowCrossesToTheHostOnce) {
  const std::string log = ::testing::TempDir() + "recording_replicated_io_" + std::to_string(getpid());
  std::remove(log.c_str());
  auto plugin = MakeIsolatedPluginSampler(SAMPLECHECK_RECORDING_PLUGIN, log);
  ASSERT_TRUE(plugin.ok()) << plugin.error().ToString();
  const auto row = GaussianRow(131072, 3);
  std::vector<SamplingParams> params(64, Params(1.0, -1, 1.0, 0.0, 7, 0));
  for (size_t k = 0; k < params.size(); ++k) params[k].offset = k;
  std::vector<int32_t> tokens(params.size());
  ASSERT_TRUE((*plugin)->SampleReplicated({row.data(), 1, 131072, 131072}, 64, params, tokens).ok());
  EXPECT_EQ(CallsOf(log), "sample rows 64 vocab 131072 offsets 0..63\n");
  const auto read_bytes = HostReadBytes(log);
  if (!read_bytes) GTEST_SKIP() << "the host's /proc/<pid>/io is not readable here";
  EXPECT_LT(*read_bytes, uint64_t{4} << 20) << "the host read " << *read_bytes << " bytes for 64 copies of a 512 KiB row";

  auto isolated = MakeIsolatedPluginSampler(SAMPLECHECK_EXAMPLE_PLUGIN, "");
  auto in_process = MakePluginSampler(SAMPLECHECK_EXAMPLE_PLUGIN, "");
  ASSERT_TRUE(isolated.ok() && in_process.ok());
  const auto eight = std::span<const SamplingParams>(params).first(8);
  std::vector<int32_t> want(8, -7), got(8, -9);
  ASSERT_TRUE((*in_process)->SampleReplicated({row.data(), 1, 131072, 131072}, 8, eight, want).ok());
  ASSERT_TRUE((*isolated)->SampleReplicated({row.data(), 1, 131072, 131072}, 8, eight, got).ok());
  EXPECT_EQ(got, want);
}

// ---- Where the plugin host is found ----------------------------------------------------------------------------

class PluginHostSearchTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = ::testing::TempDir() + "plugin_host_search_" + std::to_string(getpid());
    std::string cmd = "rm -rf '" + dir_ + "' && mkdir -p '" + dir_ + "/bin' '" + dir_ + "/build'";
    ASSERT_EQ(std::system(cmd.c_str()), 0);
  }
  void TearDown() override {
    const std::string cmd = "rm -rf '" + dir_ + "'";
    (void)std::system(cmd.c_str());
  }
  std::string Script(const std::string& path, const std::string& body, bool executable = true) {
    std::ofstream(path) << "#!/bin/sh\n" << body << "\n";
    chmod(path.c_str(), executable ? 0755 : 0644);
    return path;
  }
  std::string dir_;
};

TEST_F(PluginHostSearchTest, TheVariableWinsWhenItNamesAnExecutable) {
  const std::string env = Script(dir_ + "/my-host", "exit 0");
  const std::string beside = Script(dir_ + "/bin/samplecheck-plugin-host", "exit 0");
  auto host = FindPluginHost({env, dir_ + "/bin/samplecheck", beside});
  ASSERT_TRUE(host.ok()) << host.error().ToString();
  EXPECT_EQ(*host, env);
}

TEST_F(PluginHostSearchTest, ABadVariableIsInvalidArgumentNamingItAndItsValue) {
  const std::string beside = Script(dir_ + "/bin/samplecheck-plugin-host", "exit 0");
  const std::string not_executable = Script(dir_ + "/plain", "exit 0", /*executable=*/false);
  for (const std::string& value : {std::string(""), dir_ + "/missing", dir_, not_executable}) {
    auto host = FindPluginHost({value, dir_ + "/bin/samplecheck", beside});
    ASSERT_FALSE(host.ok()) << "'" << value << "' was accepted";
    EXPECT_EQ(host.error().code, ErrorCode::kInvalidArgument);
    EXPECT_TRUE(Contains(host.error().message, "SAMPLECHECK_PLUGIN_HOST = '" + value + "'")) << host.error().message;
    EXPECT_TRUE(Contains(host.error().message, "does not name an executable file")) << host.error().message;
  }
}

TEST_F(PluginHostSearchTest, NextToTheProgramBeforeTheBuildTree) {
  const std::string beside = Script(dir_ + "/bin/samplecheck-plugin-host", "exit 0");
  const std::string built = Script(dir_ + "/build/samplecheck-plugin-host", "exit 0");
  auto host = FindPluginHost({std::nullopt, dir_ + "/bin/samplecheck", built});
  ASSERT_TRUE(host.ok()) << host.error().ToString();
  EXPECT_EQ(*host, beside);
}

TEST_F(PluginHostSearchTest, TheBuildTreeWhenNothingIsNextToTheProgram) {
  const std::string built = Script(dir_ + "/build/samplecheck-plugin-host", "exit 0");
  auto host = FindPluginHost({std::nullopt, dir_ + "/bin/samplecheck-kernel-mutants", built});
  ASSERT_TRUE(host.ok()) << host.error().ToString();
  EXPECT_EQ(*host, built);
}

TEST_F(PluginHostSearchTest, NoHostIsPluginErrorNamingWhereItLookedAndTheRemedies) {
  auto host = FindPluginHost({std::nullopt, dir_ + "/bin/samplecheck", dir_ + "/build/samplecheck-plugin-host"});
  ASSERT_FALSE(host.ok());
  EXPECT_EQ(host.error().code, ErrorCode::kPlugin);
  for (const std::string& part : {dir_ + "/bin/samplecheck-plugin-host", dir_ + "/build/samplecheck-plugin-host",
                                  std::string("SAMPLECHECK_PLUGIN_HOST"), std::string("plugin-inproc:")}) {
    EXPECT_TRUE(Contains(host.error().message, part)) << "'" << part << "' missing: " << host.error().message;
  }
}

// This test program lives in the build tree away from the host: the compiled-in build-tree path finds it.
TEST(PluginHostOfThisProcess, TheBuildTreesHostIsFoundFromATestProgram) {
  PluginHostSearch search = PluginHostSearchOfThisProcess();
  search.env.reset();
  auto host = FindPluginHost(search);
  ASSERT_TRUE(host.ok()) << host.error().ToString();
  EXPECT_EQ(*host, SAMPLECHECK_PLUGIN_HOST_BUILT);
}

// The variable is read when the sampler is made: a stand-in host that says who it is proves it was the one run.
TEST_F(PluginHostSearchTest, TheVariableIsTheHostThatRuns) {
  const std::string fake = Script(dir_ + "/fake-host", "echo \"fake host ran with $1\" >&2; exit 3");
  ASSERT_EQ(setenv("SAMPLECHECK_PLUGIN_HOST", fake.c_str(), 1), 0);
  auto plugin = MakeIsolatedPluginSampler(SAMPLECHECK_FATAL_PLUGIN, "none-in-sample");
  unsetenv("SAMPLECHECK_PLUGIN_HOST");
  ASSERT_FALSE(plugin.ok());
  EXPECT_EQ(plugin.error().code, ErrorCode::kPlugin);
  EXPECT_TRUE(Contains(plugin.error().message, std::string("fake host ran with ") + SAMPLECHECK_FATAL_PLUGIN))
      << plugin.error().message;
  EXPECT_TRUE(Contains(plugin.error().message, "exited with status 3")) << plugin.error().message;
}

TEST_F(PluginHostSearchTest, AHostThatCannotBeExecutedIsPluginErrorNamingWhy) {
  const std::string garbage = dir_ + "/garbage-host";
  std::ofstream(garbage) << "not a program\n";
  chmod(garbage.c_str(), 0755);
  ASSERT_EQ(setenv("SAMPLECHECK_PLUGIN_HOST", garbage.c_str(), 1), 0);
  auto plugin = MakeIsolatedPluginSampler(SAMPLECHECK_FATAL_PLUGIN, "none-in-sample");
  unsetenv("SAMPLECHECK_PLUGIN_HOST");
  ASSERT_FALSE(plugin.ok());
  EXPECT_EQ(plugin.error().code, ErrorCode::kPlugin);
  EXPECT_TRUE(Contains(plugin.error().message, "cannot start " + garbage + ": Exec format error"))
      << plugin.error().message;
}

TEST_F(PluginHostSearchTest, ABadVariableFailsTheSamplerSpec) {
  ASSERT_EQ(setenv("SAMPLECHECK_PLUGIN_HOST", (dir_ + "/missing").c_str(), 1), 0);
  auto plugin = MakeSampler(std::string("plugin:") + SAMPLECHECK_FATAL_PLUGIN + ":none-in-sample", {});
  unsetenv("SAMPLECHECK_PLUGIN_HOST");
  ASSERT_FALSE(plugin.ok());
  EXPECT_EQ(plugin.error().code, ErrorCode::kInvalidArgument);
  EXPECT_TRUE(Contains(plugin.error().message, "SAMPLECHECK_PLUGIN_HOST")) << plugin.error().message;
}

// The isolated kind reads SAMPLECHECK_PROCESS_TIMEOUT_S like process:, strictly.
TEST(PluginIsolation, BadTimeoutVariableFailsTheSamplerSpec) {
  ASSERT_EQ(setenv("SAMPLECHECK_PROCESS_TIMEOUT_S", "abc", 1), 0);
  auto plugin = MakeSampler(std::string("plugin:") + SAMPLECHECK_FATAL_PLUGIN + ":none-in-sample", {});
  unsetenv("SAMPLECHECK_PROCESS_TIMEOUT_S");
  ASSERT_FALSE(plugin.ok());
  EXPECT_EQ(plugin.error().code, ErrorCode::kInvalidArgument);
  EXPECT_TRUE(Contains(plugin.error().message, "SAMPLECHECK_PROCESS_TIMEOUT_S = 'abc'")) << plugin.error().message;
}

}  // namespace
}  // namespace samplecheck::harness
