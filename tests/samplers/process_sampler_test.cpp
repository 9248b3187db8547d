// The process boundary: the Python reference client reproduces the exact sampler through the protocol, and every
// way a process can misbehave (exit, hang, garbage, a wrong answer) is a kPlugin error within the timeout, never a
// hang or a crash of the harness. Tests that need python3 skip without it.
#include "samplecheck/samplers/process_sampler.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <limits>
#include <thread>

#include "harness_test_rows.h"
#include "samplecheck/samplers/exact_sampler.h"
#include "samplecheck/samplers/sampler_registry.h"

namespace samplecheck::harness {
namespace {

using testing::Describe;
using testing::GaussianRow;
using testing::Params;
using Clock = std::chrono::steady_clock;

bool HavePython() { return SAMPLECHECK_PYTHON3[0] != '\0' && access(SAMPLECHECK_PYTHON3, X_OK) == 0; }

#define SKIP_WITHOUT_PYTHON() \
  if (!HavePython()) GTEST_SKIP() << "python3 was not found at configure time or is not executable"

std::string ClientCommand(const std::string& args = "") {
  return std::string(SAMPLECHECK_PYTHON3) + " " + SAMPLECHECK_PYTHON_CLIENT + (args.empty() ? "" : " " + args);
}

std::string MisbehavingCommand(const std::string& mode) {
  return std::string(SAMPLECHECK_PYTHON3) + " " + SAMPLECHECK_MISBEHAVING_CLIENT + " " + mode;
}

// The request deadline under test; the handshake keeps a generous one, so that a slow interpreter start on a
// loaded CI machine is never mistaken for the fault a test plants in a request.
ProcessSamplerOptions ShortTimeouts(double request_seconds = 30.0) {
  ProcessSamplerOptions options;
  options.handshake_timeout_s = 60.0;
  options.request_timeout_s = request_seconds;
  return options;
}

std::unique_ptr<Sampler> Start(const std::string& command, ProcessSamplerOptions options = ShortTimeouts()) {
  auto sampler = MakeProcessSampler(command, options);
  EXPECT_TRUE(sampler.ok()) << sampler.error().ToString();
  return sampler.ok() ? std::move(sampler).value() : nullptr;
}

Error StartError(const std::string& command, ProcessSamplerOptions options = ShortTimeouts()) {
  auto sampler = MakeProcessSampler(command, options);
  EXPECT_FALSE(sampler.ok()) << command << " started";
  return sampler.ok() ? Error{} : sampler.error();
}

// Samples one 16-token row with default params.
Status SampleOne(Sampler& sampler, int64_t vocab = 16) {
  const auto row = GaussianRow(vocab, 1);
  std::vector<SamplingParams> params(1);
  std::vector<int32_t> tokens(1);
  return sampler.Sample({row.data(), 1, vocab, vocab}, params, tokens);
}

TEST(ProcessSampler, ReferenceClientHandshakeNamesItsProfileAndCapabilities) {
  SKIP_WITHOUT_PYTHON();
  auto client = Start(ClientCommand());
  ASSERT_TRUE(client);
  EXPECT_EQ(client->Name(), "process:python-vllm");
  const Capabilities caps = client->GetCapabilities();
  EXPECT_EQ(caps.profile, "vllm");
  EXPECT_TRUE(caps.processed_distribution);
  EXPECT_TRUE(caps.count_draws);
  EXPECT_TRUE(caps.deterministic);
}

// Pure Python, same Philox uniform, same inverse CDF: the client draws the exact sampler's tokens.
TEST(ProcessSampler, ReferenceClientDrawsTheExactSamplersTokens) {
  SKIP_WITHOUT_PYTHON();
  auto client = Start(ClientCommand());
  auto exact = MakeExactSampler("vllm");
  ASSERT_TRUE(client && exact.ok());
  constexpr int64_t kVocab = 40, kStride = 48;
  std::vector<SamplingParams> params = testing::VllmParamGrid();
  const int64_t rows = static_cast<int64_t>(params.size());
  std::vector<float> logits(static_cast<size_t>(rows * kStride), 0.0f);
  for (int64_t r = 0; r < rows; ++r) {
    const auto row = GaussianRow(kVocab, static_cast<uint32_t>(r));
    std::copy(row.begin(), row.end(), logits.begin() + r * kStride);
    params[r].seed = 500 + r;
  }
  for (int repeat = 0; repeat < 10; ++repeat) {
    for (auto& p : params) p.offset += 17;
    std::vector<int32_t> got(params.size()), want(params.size());
    ASSERT_TRUE(client->Sample({logits.data(), rows, kVocab, kStride}, params, got).ok());
    ASSERT_TRUE((*exact)->Sample({logits.data(), rows, kVocab, kStride}, params, want).ok());
    for (int64_t r = 0; r < rows; ++r) {
      ASSERT_EQ(got[r], want[r]) << "row " << r << " (GaussianRow(40, " << r << ")), params " << Describe(params[r]);
    }
  }
}

TEST(ProcessSampler, ReferenceClientProcessedDistributionMatchesReference) {
  SKIP_WITHOUT_PYTHON();
  auto client = Start(ClientCommand());
  auto exact = MakeExactSampler("vllm");
  ASSERT_TRUE(client && exact.ok());
  const auto row = GaussianRow(64, 4);
  for (const SamplingParams& params : testing::VllmParamGrid()) {
    auto got = client->ProcessedDistribution(row, params);
    auto want = (*exact)->ProcessedDistribution(row, params);
    ASSERT_TRUE(got.ok()) << got.error().ToString();
    ASSERT_TRUE(want.ok());
    for (size_t t = 0; t < row.size(); ++t) {
      ASSERT_NEAR((*got)[t], (*want)[t], 1e-12) << "token " << t << ", params " << Describe(params);
    }
  }
}

TEST(ProcessSampler, ReferenceClientCountDrawsMatchesExactSampler) {
  SKIP_WITHOUT_PYTHON();
  auto client = Start(ClientCommand());
  auto exact = MakeExactSampler("vllm");
  ASSERT_TRUE(client && exact.ok());
  const auto row = GaussianRow(30, 2);
  const SamplingParams params = Params(0.9, 12, 0.9, 0.01, 3, 1u << 20);
  std::vector<uint64_t> got(row.size(), 0), want(row.size(), 0);
  uint64_t invalid = 0;
  ASSERT_TRUE(client->CountDraws(row, params, 20000, got, &invalid).ok());
  ASSERT_TRUE((*exact)->CountDraws(row, params, 20000, want, &invalid).ok());
  EXPECT_EQ(got, want) << "params " << Describe(params);
  EXPECT_EQ(invalid, 0u);
}

TEST(ProcessSampler, InvalidParamsAreInvalidArgumentAndTheProcessStaysUsable) {
  SKIP_WITHOUT_PYTHON();
  auto client = Start(ClientCommand());
  ASSERT_TRUE(client);
  const auto row = GaussianRow(16, 1);
  std::vector<SamplingParams> params = {Params(1.0, -1, 0.0, 0.0)};
  std::vector<int32_t> tokens(1);
  Status st = client->Sample({row.data(), 1, 16, 16}, params, tokens);
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.error().code, ErrorCode::kInvalidArgument);
  EXPECT_NE(st.error().message.find("top_p = 0.0 is outside (0, 1]"), std::string::npos) << st.error().message;
  EXPECT_TRUE(SampleOne(*client).ok());
}

TEST(ProcessSampler, InvalidRowsGetInvalidToken) {
  SKIP_WITHOUT_PYTHON();
  auto client = Start(ClientCommand());
  ASSERT_TRUE(client);
  std::vector<float> logits = {0.0f, std::nanf(""), testing::kNegInf, testing::kNegInf, 1.0f, 2.0f};
  std::vector<SamplingParams> params(3);
  std::vector<int32_t> tokens(3);
  ASSERT_TRUE(client->Sample({logits.data(), 3, 2, 2}, params, tokens).ok());
  EXPECT_EQ(tokens[0], kInvalidToken);
  EXPECT_EQ(tokens[1], kInvalidToken);
  EXPECT_GE(tokens[2], 0);
  EXPECT_EQ(client->ProcessedDistribution({logits.data(), 2}, params[0]).error().code, ErrorCode::kInvalidRow);
}

TEST(ProcessSampler, BuggyClientVariantDiffersFromReference) {
  SKIP_WITHOUT_PYTHON();
  auto client = Start(ClientCommand("--bug no-renorm"));
  auto exact = MakeExactSampler("vllm");
  ASSERT_TRUE(client && exact.ok());
  const std::vector<float> row = {2.0f, 1.7f, 1.5f, 1.2f, 1.0f, 0.9f, 0.5f, 0.2f};
  auto got = client->ProcessedDistribution(row, Params(1.0, 3, 0.7, 0.0));
  auto want = (*exact)->ProcessedDistribution(row, Params(1.0, 3, 0.7, 0.0));
  ASSERT_TRUE(got.ok() && want.ok());
  EXPECT_GT(std::abs((*got)[2] - (*want)[2]), 0.1);
}

// A batch whose logits exceed one request's budget (32 MiB) is split into several SAMPLE messages.
TEST(ProcessSampler, LargeBatchesAreChunkedIntoSeveralRequests) {
  SKIP_WITHOUT_PYTHON();
  auto client = Start("exec " + MisbehavingCommand("zeros"));
  ASSERT_TRUE(client);
  constexpr int64_t kVocab = 1 << 20, kRows = 9;  // 36 MiB of logits
  std::vector<float> logits(static_cast<size_t>(kVocab * kRows), 0.0f);
  std::vector<SamplingParams> params(kRows);
  std::vector<int32_t> tokens(kRows, 5);
  ASSERT_TRUE(client->Sample({logits.data(), kRows, kVocab, kVocab}, params, tokens).ok());
  for (int32_t t : tokens) EXPECT_EQ(t, 0);
}

// ---- Processes that are not samplers, or stop being ones ----

TEST(ProcessSampler, EmptyCommandIsInvalidArgument) {
  EXPECT_EQ(StartError("  ").code, ErrorCode::kInvalidArgument);
}

TEST(ProcessSampler, ProcessThatExitsBeforeTheHandshakeIsPluginError) {
  const Error error = StartError("echo 'no such sampler' >&2; exit 3");
  EXPECT_EQ(error.code, ErrorCode::kPlugin);
  EXPECT_NE(error.message.find("exited with status 3"), std::string::npos) << error.message;
  EXPECT_NE(error.message.find("no such sampler"), std::string::npos) << "stderr tail missing: " << error.message;
}

TEST(ProcessSampler, CommandNotFoundIsPluginError) {
  const Error error = StartError("/no/such/program --serve");
  EXPECT_EQ(error.code, ErrorCode::kPlugin);
  EXPECT_NE(error.message.find("exited with status 127"), std::string::npos) << error.message;
}

TEST(ProcessSampler, TextOnStdoutIsAProtocolError) {
  const Error error = StartError("echo 'Loading model weights...'; sleep 10");
  EXPECT_EQ(error.code, ErrorCode::kPlugin);
  EXPECT_NE(error.message.find("frame length"), std::string::npos) << error.message;
}

TEST(ProcessSampler, EchoIsAMalformedHello) {
  const Error error = StartError("cat");  // echoes the harness's own HELLO back: too short to be a client HELLO
  EXPECT_EQ(error.code, ErrorCode::kPlugin);
  EXPECT_NE(error.message.find("malformed HELLO"), std::string::npos) << error.message;
}

// A program that answers the HELLO with a frame of the right shape but another magic number: the message says so
// plainly, with both numbers in hex and as their four bytes (it used to print one in decimal, one in hex).
TEST(ProcessSampler, WrongMagicSaysTheProgramDoesNotSpeakTheProtocol) {
  // length 24, HELLO, magic "HTTP", version 1, capabilities 0, name "", profile "" (octal escapes: POSIX printf)
  const Error error = StartError(
      "printf '\\030\\0\\0\\0\\001\\0\\0\\0HTTP\\001\\0\\0\\0\\0\\0\\0\\0\\0\\0\\0\\0\\0\\0\\0\\0'; sleep 30");
  EXPECT_EQ(error.code, ErrorCode::kPlugin);
  for (const char* part : {"does not speak the samplecheck process protocol", "0x50545448 (bytes 'HTTP')",
                           "expected 0x4B484353 (bytes 'SCHK')"}) {
    EXPECT_NE(error.message.find(part), std::string::npos) << "'" << part << "' missing: " << error.message;
  }
  EXPECT_EQ(error.message.find("1347703880"), std::string::npos) << "a decimal magic: " << error.message;
}

TEST(ProcessSampler, TextOnStdoutShowsTheBytesItSent) {
  const Error error = StartError("echo 'Loading model weights...'; sleep 10");
  EXPECT_EQ(error.code, ErrorCode::kPlugin);
  EXPECT_NE(error.message.find("(bytes 'Load')"), std::string::npos) << error.message;
  EXPECT_NE(error.message.find("does not speak the samplecheck process protocol"), std::string::npos)
      << error.message;
}

// A client that cannot serve answers the HELLO with ERROR: the sampler is not made, with the client's code and words.
TEST(ProcessSampler, ErrorInAnswerToHelloIsTheErrorOfItsCode) {
  // length 23, ERROR, code 2 (unsupported), message "no GPU here" (11 bytes)
  const Error error = StartError(
      "printf '\\027\\0\\0\\0\\010\\0\\0\\0\\002\\0\\0\\0\\013\\0\\0\\0no GPU here'; sleep 30");
  EXPECT_EQ(error.code, ErrorCode::kUnsupported) << error.ToString();
  EXPECT_NE(error.message.find("cannot serve: no GPU here"), std::string::npos) << error.message;
}

// ---- SAMPLECHECK_PROCESS_TIMEOUT_S and the deadlines: strict, never a silent default ---------------------------

class TimeoutVariable : public ::testing::Test {
 protected:
  void TearDown() override { unsetenv("SAMPLECHECK_PROCESS_TIMEOUT_S"); }
};

TEST_F(TimeoutVariable, BadValuesAreInvalidArgumentNamingTheVariableTheValueAndTheRange) {
  for (const char* value : {"abc", "", "0", "-1", "inf", "nan", "1e20", "86400.5", " 5", "5 ", "5s", "0x10", "1e-400"}) {
    ASSERT_EQ(setenv("SAMPLECHECK_PROCESS_TIMEOUT_S", value, 1), 0);
    auto options = ProcessSamplerOptions::FromEnvironment();
    ASSERT_FALSE(options.ok()) << "'" << value << "' was accepted";
    EXPECT_EQ(options.error().code, ErrorCode::kInvalidArgument);
    const std::string& message = options.error().message;
    EXPECT_NE(message.find(std::string("SAMPLECHECK_PROCESS_TIMEOUT_S = '") + value + "'"), std::string::npos)
        << message;
    EXPECT_NE(message.find("(0, 86400]"), std::string::npos) << message;
  }
}

TEST_F(TimeoutVariable, GoodValuesSetBothDeadlines) {
  for (const auto& [value, seconds] : {std::pair{"2.5", 2.5}, std::pair{"86400", 86400.0}, std::pair{"1e-3", 1e-3}}) {
    ASSERT_EQ(setenv("SAMPLECHECK_PROCESS_TIMEOUT_S", value, 1), 0);
    auto options = ProcessSamplerOptions::FromEnvironment();
    ASSERT_TRUE(options.ok()) << value << ": " << options.error().ToString();
    EXPECT_EQ(options->handshake_timeout_s, seconds);
    EXPECT_EQ(options->request_timeout_s, seconds);
  }
  unsetenv("SAMPLECHECK_PROCESS_TIMEOUT_S");
  auto defaults = ProcessSamplerOptions::FromEnvironment();
  ASSERT_TRUE(defaults.ok());
  EXPECT_EQ(defaults->handshake_timeout_s, 60.0);
  EXPECT_EQ(defaults->request_timeout_s, 300.0);
}

TEST_F(TimeoutVariable, ABadValueFailsTheSamplerSpecBeforeAnythingStarts) {
  ASSERT_EQ(setenv("SAMPLECHECK_PROCESS_TIMEOUT_S", "-1", 1), 0);
  auto sampler = MakeSampler("process:cat", {});
  ASSERT_FALSE(sampler.ok());
  EXPECT_EQ(sampler.error().code, ErrorCode::kInvalidArgument);
  EXPECT_NE(sampler.error().message.find("SAMPLECHECK_PROCESS_TIMEOUT_S = '-1'"), std::string::npos)
      << sampler.error().message;
}

TEST(ProcessSampler, DeadlinesOutsideTheRangeAreInvalidArgument) {
  for (double bad : {0.0, -1.0, 1e20, std::numeric_limits<double>::infinity(), std::nan("")}) {
    ProcessSamplerOptions options;
    options.request_timeout_s = bad;
    const Error error = StartError("cat", options);
    EXPECT_EQ(error.code, ErrorCode::kInvalidArgument) << bad << ": " << error.ToString();
    EXPECT_NE(error.message.find("request_timeout_s"), std::string::npos) << error.message;
  }
}

TEST(ProcessSampler, SilentProcessTimesOutInTheHandshake) {
  const auto start = Clock::now();
  ProcessSamplerOptions options;
  options.handshake_timeout_s = 0.5;  // the deadline under test (`sleep` never answers, however loaded the machine)
  const Error error = StartError("sleep 30", options);
  const double elapsed = std::chrono::duration<double>(Clock::now() - start).count();
  EXPECT_EQ(error.code, ErrorCode::kPlugin);
  EXPECT_NE(error.message.find("did not answer in time"), std::string::npos) << error.message;
  EXPECT_LT(elapsed, 5.0) << "the harness waited " << elapsed << " s for a silent process";
}

TEST(ProcessSampler, WrongProtocolVersionIsPluginError) {
  SKIP_WITHOUT_PYTHON();
  const Error error = StartError(MisbehavingCommand("wrong-version"));
  EXPECT_EQ(error.code, ErrorCode::kPlugin);
  EXPECT_NE(error.message.find("protocol version 2"), std::string::npos) << error.message;
}

TEST(ProcessSampler, UnsolicitedBytesArePluginError) {
  SKIP_WITHOUT_PYTHON();
  auto client = Start(MisbehavingCommand("unsolicited"));
  ASSERT_TRUE(client);
  std::this_thread::sleep_for(std::chrono::milliseconds(300));  // let the extra bytes arrive
  Status st = SampleOne(*client);
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.error().code, ErrorCode::kPlugin);
  EXPECT_NE(st.error().message.find("nobody asked for"), std::string::npos) << st.error().message;
}

TEST(ProcessSampler, ProcessThatExitsMidSessionIsPluginErrorWithItsStderr) {
  SKIP_WITHOUT_PYTHON();
  auto client = Start(MisbehavingCommand("exit-on-request 5"));
  ASSERT_TRUE(client);
  Status st = SampleOne(*client);
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.error().code, ErrorCode::kPlugin);
  EXPECT_NE(st.error().message.find("exited with status 5"), std::string::npos) << st.error().message;
  EXPECT_NE(st.error().message.find("illegal memory access"), std::string::npos) << st.error().message;
  // The sampler stays failed: later calls return the same error at once.
  Status again = SampleOne(*client);
  ASSERT_FALSE(again.ok());
  EXPECT_EQ(again.error().message, st.error().message);
}

// The process is gone before the harness writes a 4 MB request: EPIPE, not SIGPIPE.
TEST(ProcessSampler, ProcessThatStopsReadingIsPluginErrorNotSigpipe) {
  SKIP_WITHOUT_PYTHON();
  auto client = Start(MisbehavingCommand("exit-after-hello"));
  ASSERT_TRUE(client);
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  Status st = SampleOne(*client, 1 << 20);
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.error().code, ErrorCode::kPlugin);
  EXPECT_NE(st.error().message.find("exited with status 0"), std::string::npos) << st.error().message;
}

TEST(ProcessSampler, HangingProcessTimesOutAndIsKilled) {
  SKIP_WITHOUT_PYTHON();
  auto client = Start(MisbehavingCommand("hang-on-request"), ShortTimeouts(1.0));
  ASSERT_TRUE(client);
  const auto start = Clock::now();
  Status st = SampleOne(*client);
  const double elapsed = std::chrono::duration<double>(Clock::now() - start).count();
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.error().code, ErrorCode::kPlugin);
  EXPECT_NE(st.error().message.find("did not answer in time"), std::string::npos) << st.error().message;
  EXPECT_NE(st.error().message.find("was killed"), std::string::npos) << st.error().message;
  EXPECT_LT(elapsed, 6.0);
}

// A process that ignores BYE, end of input and SIGTERM is killed when the sampler is destroyed.
TEST(ProcessSampler, DestroyingTheSamplerKillsAProcessThatWillNotExit) {
  SKIP_WITHOUT_PYTHON();
  const std::string pidfile = ::testing::TempDir() + "immortal_client.pid";
  std::remove(pidfile.c_str());
  {
    auto client = Start(MisbehavingCommand("immortal " + pidfile));
    ASSERT_TRUE(client);
  }
  std::ifstream in(pidfile);
  pid_t pid = 0;
  ASSERT_TRUE(in >> pid) << "the client wrote no pid to " << pidfile;
  bool gone = false;
  for (int i = 0; i < 300 && !gone; ++i) {  // the shell may be its parent: allow init a moment to reap it
    gone = kill(pid, 0) != 0 && errno == ESRCH;
    if (!gone) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  EXPECT_TRUE(gone) << "pid " << pid << " survived the sampler";
}

TEST(ProcessSampler, MalformedAnswersArePluginErrors) {
  SKIP_WITHOUT_PYTHON();
  for (const char* mode : {"short-tokens", "wrong-type"}) {
    auto client = Start(MisbehavingCommand(mode));
    ASSERT_TRUE(client);
    Status st = SampleOne(*client);
    ASSERT_FALSE(st.ok()) << mode;
    EXPECT_EQ(st.error().code, ErrorCode::kPlugin) << mode;
    EXPECT_NE(st.error().message.find("broke the protocol"), std::string::npos) << mode << ": " << st.error().message;
  }
}

TEST(ProcessSampler, HistogramThatAddsUpOnlyModulo2To64IsPluginError) {
  SKIP_WITHOUT_PYTHON();
  auto client = Start(MisbehavingCommand("wrapping-count"));
  ASSERT_TRUE(client);
  const auto row = GaussianRow(8, 1);
  std::vector<uint64_t> histogram(8, 0);
  Status st = client->CountDraws(row, Params(1.0, -1, 1.0, 0.0), 1000, histogram, nullptr);
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.error().code, ErrorCode::kPlugin);
  EXPECT_NE(st.error().message.find("asked for 1000 draws but counted more"), std::string::npos)
      << st.error().message;
  EXPECT_EQ(histogram, std::vector<uint64_t>(8, 0)) << "a bad count was added";
}

TEST(ProcessSampler, OutOfRangeTokenIsPluginError) {
  SKIP_WITHOUT_PYTHON();
  auto client = Start(MisbehavingCommand("out-of-range"));
  ASSERT_TRUE(client);
  Status st = SampleOne(*client);
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.error().code, ErrorCode::kPlugin);
  EXPECT_NE(st.error().message.find("token 16 for row 0"), std::string::npos) << st.error().message;
}

TEST(ProcessSampler, ErrorAnswerFailsTheCallWithItsMessage) {
  SKIP_WITHOUT_PYTHON();
  auto client = Start(MisbehavingCommand("error"));
  ASSERT_TRUE(client);
  for (int i = 0; i < 2; ++i) {  // an ERROR answer leaves the process usable
    Status st = SampleOne(*client);
    ASSERT_FALSE(st.ok());
    EXPECT_EQ(st.error().code, ErrorCode::kPlugin);
    EXPECT_NE(st.error().message.find("kernel exploded"), std::string::npos) << st.error().message;
  }
}

}  // namespace
}  // namespace samplecheck::harness
