// The plugin boundary: the example plugin (a standalone vllm sampler) reproduces the exact sampler's draws through
// the C ABI, and every way a plugin can break the ABI is an error value, never a crash. Every test runs twice: in
// process (`plugin-inproc:`, MakePluginSampler) and isolated in the plugin host (`plugin:`,
// MakeIsolatedPluginSampler), which must give the same names, capabilities, tokens, codes and messages.
#include "samplecheck/samplers/plugin_sampler.h"

#include <gtest/gtest.h>

#include <numeric>

#include "harness_test_rows.h"
#include "samplecheck/samplers/exact_sampler.h"

namespace samplecheck::harness {
namespace {

using testing::Describe;
using testing::GaussianRow;
using testing::Params;

enum class Mode { kInProcess, kIsolated };

class PluginSampler : public ::testing::TestWithParam<Mode> {
 protected:
  static Result<std::unique_ptr<Sampler>> Make(const std::string& path, const std::string& config) {
    return GetParam() == Mode::kInProcess ? MakePluginSampler(path, config) : MakeIsolatedPluginSampler(path, config);
  }

  static std::unique_ptr<Sampler> LoadExample(const std::string& config = "") {
    auto sampler = Make(SAMPLECHECK_EXAMPLE_PLUGIN, config);
    EXPECT_TRUE(sampler.ok()) << sampler.error().ToString();
    return sampler.ok() ? std::move(sampler).value() : nullptr;
  }

  static std::unique_ptr<Sampler> LoadContractBreaking(const std::string& mode) {
    auto sampler = Make(SAMPLECHECK_CONTRACT_BREAKING_PLUGIN, mode);
    EXPECT_TRUE(sampler.ok()) << sampler.error().ToString();
    return sampler.ok() ? std::move(sampler).value() : nullptr;
  }

  // One row of 10 tokens sampled by the contract-breaking plugin in `mode`: the call's status.
  static Status SampleOneRowBreaking(const std::string& mode) {
    auto plugin = LoadContractBreaking(mode);
    if (!plugin) return InternalError("the contract-breaking plugin did not load in mode " + mode);
    const auto row = GaussianRow(10, 1);
    std::vector<SamplingParams> params(1);
    std::vector<int32_t> tokens(1);
    return plugin->Sample({row.data(), 1, 10, 10}, params, tokens);
  }

  static Error LoadError(const std::string& path, const std::string& config = "") {
    auto sampler = Make(path, config);
    EXPECT_FALSE(sampler.ok()) << path << " loaded";
    return sampler.ok() ? Error{} : sampler.error();
  }
};

INSTANTIATE_TEST_SUITE_P(Modes, PluginSampler, ::testing::Values(Mode::kInProcess, Mode::kIsolated),
                         [](const ::testing::TestParamInfo<Mode>& mode) {
                           return mode.param == Mode::kInProcess ? "InProcess" : "Isolated";
                         });

// One batch: the grid's rows, GaussianRow(vocab, r), seed 100 + r, offset 7 * r.
struct Batch {
  std::vector<float> logits;
  std::vector<SamplingParams> params;
  int64_t vocab;
  RowBatch View() const { return {logits.data(), static_cast<int64_t>(params.size()), vocab, vocab}; }
};

Batch GridBatch(int64_t vocab) {
  Batch batch{{}, testing::VllmParamGrid(), vocab};
  for (size_t r = 0; r < batch.params.size(); ++r) {
    const auto row = GaussianRow(vocab, static_cast<uint32_t>(r));
    batch.logits.insert(batch.logits.end(), row.begin(), row.end());
    batch.params[r].seed = 100 + r;
    batch.params[r].offset = 7 * r;
  }
  return batch;
}

TEST_P(PluginSampler, ExamplePluginLoadsWithItsNameProfileAndCapabilities) {
  auto plugin = LoadExample();
  ASSERT_TRUE(plugin);
  EXPECT_EQ(plugin->Name(), "plugin:exact-vllm");
  const Capabilities caps = plugin->GetCapabilities();
  EXPECT_EQ(caps.profile, "vllm");
  EXPECT_TRUE(caps.processed_distribution);
  EXPECT_TRUE(caps.count_draws);
  EXPECT_TRUE(caps.deterministic);
}

// Same Philox uniform, same inverse CDF: the example plugin draws the exact sampler's tokens.
TEST_P(PluginSampler, ExamplePluginDrawsTheExactSamplersTokens) {
  auto plugin = LoadExample();
  auto exact = MakeExactSampler("vllm");
  ASSERT_TRUE(plugin && exact.ok());
  for (int64_t vocab : {1, 7, 300}) {
    Batch batch = GridBatch(vocab);
    for (int repeat = 0; repeat < 20; ++repeat) {
      for (auto& p : batch.params) p.offset += 1000;
      std::vector<int32_t> got(batch.params.size()), want(batch.params.size());
      ASSERT_TRUE(plugin->Sample(batch.View(), batch.params, got).ok());
      ASSERT_TRUE((*exact)->Sample(batch.View(), batch.params, want).ok());
      for (size_t r = 0; r < got.size(); ++r) {
        ASSERT_EQ(got[r], want[r]) << "vocab " << vocab << ", row " << r << " (GaussianRow(" << vocab << ", " << r
                                   << ")), params " << Describe(batch.params[r]);
      }
    }
  }
}

TEST_P(PluginSampler, ExamplePluginProcessedDistributionMatchesReference) {
  auto plugin = LoadExample();
  auto exact = MakeExactSampler("vllm");
  ASSERT_TRUE(plugin && exact.ok());
  const auto row = GaussianRow(200, 5);
  for (const SamplingParams& params : testing::VllmParamGrid()) {
    auto got = plugin->ProcessedDistribution(row, params);
    auto want = (*exact)->ProcessedDistribution(row, params);
    ASSERT_TRUE(got.ok() && want.ok()) << Describe(params);
    for (size_t t = 0; t < row.size(); ++t) {
      ASSERT_NEAR((*got)[t], (*want)[t], 1e-12) << "token " << t << ", params " << Describe(params);
    }
  }
}

TEST_P(PluginSampler, ExamplePluginCountDrawsMatchesExactSampler) {
  auto plugin = LoadExample();
  auto exact = MakeExactSampler("vllm");
  ASSERT_TRUE(plugin && exact.ok());
  const auto row = GaussianRow(120, 9);
  const SamplingParams params = Params(0.9, 30, 0.9, 0.02, 77, 5000);
  std::vector<uint64_t> got(row.size(), 0), want(row.size(), 0);
  uint64_t invalid = 0;
  ASSERT_TRUE(plugin->CountDraws(row, params, 50000, got, &invalid).ok());
  ASSERT_TRUE((*exact)->CountDraws(row, params, 50000, want, &invalid).ok());
  EXPECT_EQ(got, want) << "params " << Describe(params);
  EXPECT_EQ(invalid, 0u);
}

// The V4-style case: min-p and top-k remove mass, so top-p on the full softmax keeps a different set.
TEST_P(PluginSampler, NoRenormVariantHasADifferentProcessedDistribution) {
  auto buggy = LoadExample("bug=no-renorm");
  auto exact = MakeExactSampler("vllm");
  ASSERT_TRUE(buggy && exact.ok());
  const std::vector<float> row = {2.0f, 1.7f, 1.5f, 1.2f, 1.0f, 0.9f, 0.5f, 0.2f};
  const SamplingParams params = Params(1.0, 3, 0.7, 0.0);
  auto got = buggy->ProcessedDistribution(row, params);
  auto want = (*exact)->ProcessedDistribution(row, params);
  ASSERT_TRUE(got.ok() && want.ok());
  double tv = 0.0;
  for (size_t t = 0; t < row.size(); ++t) tv += 0.5 * std::abs((*got)[t] - (*want)[t]);
  EXPECT_GT(tv, 0.05) << "bug=no-renorm should keep a different top-p set for " << Describe(params);
}

TEST_P(PluginSampler, InvalidRowsGetInvalidToken) {
  auto plugin = LoadExample();
  ASSERT_TRUE(plugin);
  std::vector<float> logits = {0.0f, std::nanf(""), testing::kNegInf, testing::kNegInf};
  std::vector<SamplingParams> params(2);
  std::vector<int32_t> tokens(2);
  ASSERT_TRUE(plugin->Sample({logits.data(), 2, 2, 2}, params, tokens).ok());
  EXPECT_EQ(tokens[0], kInvalidToken);
  EXPECT_EQ(tokens[1], kInvalidToken);
  EXPECT_EQ(plugin->ProcessedDistribution({logits.data(), 2}, params[0]).error().code, ErrorCode::kInvalidRow);
}

TEST_P(PluginSampler, InvalidParamsAreInvalidArgumentWithThePluginsMessage) {
  auto plugin = LoadExample();
  ASSERT_TRUE(plugin);
  const auto row = GaussianRow(10, 1);
  std::vector<SamplingParams> params = {Params(3.0, -1, 1.0, 0.0)};
  std::vector<int32_t> tokens(1);
  Status st = plugin->Sample({row.data(), 1, 10, 10}, params, tokens);
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.error().code, ErrorCode::kInvalidArgument);
  EXPECT_NE(st.error().message.find("temperature = 3 is outside [0, 2]"), std::string::npos) << st.error().message;
}

TEST_P(PluginSampler, OutOfRangeTokenIsAFailingSamplerNotACrash) {
  auto plugin = LoadExample("bug=out-of-range");
  ASSERT_TRUE(plugin);
  const auto row = GaussianRow(10, 1);
  std::vector<SamplingParams> params(1);
  std::vector<int32_t> tokens(1);
  Status st = plugin->Sample({row.data(), 1, 10, 10}, params, tokens);
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.error().code, ErrorCode::kPlugin);
  EXPECT_NE(st.error().message.find("token 10 for row 0"), std::string::npos) << st.error().message;
  // The native count path reports the draws as invalid: a campaign sees support violations.
  std::vector<uint64_t> histogram(10, 0);
  uint64_t invalid = 0;
  ASSERT_TRUE(plugin->CountDraws(row, params[0], 100, histogram, &invalid).ok());
  EXPECT_EQ(invalid, 100u);
}

TEST_P(PluginSampler, NegativeTokenOtherThanInvalidIsPluginError) {
  const Status st = SampleOneRowBreaking("negative-token");
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.error().code, ErrorCode::kPlugin);
  EXPECT_NE(st.error().message.find("token -7 for row 0; a token must be in [-1, 10)"), std::string::npos)
      << st.error().message;
  EXPECT_NE(st.error().message.find("-1 marks a row that cannot be sampled"), std::string::npos) << st.error().message;
}

// INT32_MIN is the value the harness pre-fills: the message says what the slot holds, both ways it can get there,
// and what is allowed (it used to say only "left the token unwritten").
TEST_P(PluginSampler, IntMinTokenIsNamedWithWhatIsAllowed) {
  const Status st = SampleOneRowBreaking("int-min-token");
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.error().code, ErrorCode::kPlugin);
  for (const char* part : {"-2147483648 (INT32_MIN)", "returned INT32_MIN or left the token unwritten",
                           "a token must be in [-1, 10)", "-1 marks a row that cannot be sampled"}) {
    EXPECT_NE(st.error().message.find(part), std::string::npos) << "'" << part << "' missing: " << st.error().message;
  }
}

TEST_P(PluginSampler, ReportedErrorIsPluginErrorWithItsMessage) {
  auto plugin = LoadExample("bug=error");
  ASSERT_TRUE(plugin);
  const auto row = GaussianRow(10, 1);
  std::vector<SamplingParams> params(1);
  std::vector<int32_t> tokens(1);
  Status st = plugin->Sample({row.data(), 1, 10, 10}, params, tokens);
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.error().code, ErrorCode::kPlugin);
  EXPECT_NE(st.error().message.find("injected failure"), std::string::npos) << st.error().message;
  std::vector<uint64_t> histogram(10, 0);
  EXPECT_EQ(plugin->CountDraws(row, params[0], 10, histogram, nullptr).error().code, ErrorCode::kPlugin);
}

TEST_P(PluginSampler, HistogramThatDoesNotAddUpIsPluginError) {
  auto plugin = LoadExample("bug=miscount");
  ASSERT_TRUE(plugin);
  const auto row = GaussianRow(10, 1);
  std::vector<uint64_t> histogram(10, 0);
  Status st = plugin->CountDraws(row, Params(1.0, -1, 1.0, 0.0), 1000, histogram, nullptr);
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.error().code, ErrorCode::kPlugin);
  EXPECT_NE(st.error().message.find("asked for 1000 draws but counted 999"), std::string::npos)
      << st.error().message;
  EXPECT_EQ(std::accumulate(histogram.begin(), histogram.end(), uint64_t{0}), 0u) << "a bad count was added";
}

TEST_P(PluginSampler, HistogramThatAddsUpOnlyModulo2To64IsPluginError) {
  auto plugin = Make(SAMPLECHECK_WRAPPING_COUNT_PLUGIN, "");
  ASSERT_TRUE(plugin.ok()) << plugin.error().ToString();
  const auto row = GaussianRow(10, 1);
  std::vector<uint64_t> histogram(10, 0);
  Status st = (*plugin)->CountDraws(row, Params(1.0, -1, 1.0, 0.0), 1000, histogram, nullptr);
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.error().code, ErrorCode::kPlugin);
  EXPECT_NE(st.error().message.find("asked for 1000 draws but counted more"), std::string::npos)
      << st.error().message;
  EXPECT_EQ(histogram, std::vector<uint64_t>(10, 0)) << "a bad count was added";
}

TEST_P(PluginSampler, UnwrittenTokensArePluginError) {
  const Status st = SampleOneRowBreaking("unwritten");
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.error().code, ErrorCode::kPlugin);
  EXPECT_NE(st.error().message.find("unwritten"), std::string::npos) << st.error().message;
}

TEST_P(PluginSampler, UnknownReturnCodeIsPluginError) {
  const Status st = SampleOneRowBreaking("bad-code");
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.error().code, ErrorCode::kPlugin);
  EXPECT_NE(st.error().message.find("returned 42"), std::string::npos) << st.error().message;
}

TEST_P(PluginSampler, UnsupportedIsUnsupported) {
  const Status st = SampleOneRowBreaking("unsupported");
  EXPECT_EQ(st.error().code, ErrorCode::kUnsupported);
  EXPECT_NE(st.error().message.find("vocab 10 is too large"), std::string::npos) << st.error().message;
}

TEST_P(PluginSampler, DistributionThatIsNotADistributionIsPluginError) {
  const auto row = GaussianRow(10, 1);
  for (const char* mode : {"bad-distribution", "unnormalized"}) {
    auto plugin = LoadContractBreaking(mode);
    ASSERT_TRUE(plugin);
    auto probs = plugin->ProcessedDistribution(row, Params(1.0, -1, 1.0, 0.0));
    ASSERT_FALSE(probs.ok()) << mode;
    EXPECT_EQ(probs.error().code, ErrorCode::kPlugin) << mode << ": " << probs.error().message;
  }
}

TEST_P(PluginSampler, WithoutNativeCountDrawsTheDefaultLoopsOverSample) {
  auto plugin = LoadContractBreaking("zero");  // every row gets token 0; no count_draws export
  ASSERT_TRUE(plugin);
  EXPECT_FALSE(plugin->GetCapabilities().count_draws);
  EXPECT_EQ(plugin->GetCapabilities().profile, "");
  const auto row = GaussianRow(10, 1);
  std::vector<uint64_t> histogram(10, 0);
  ASSERT_TRUE(plugin->CountDraws(row, Params(1.0, -1, 1.0, 0.0), 5000, histogram, nullptr).ok());
  EXPECT_EQ(histogram[0], 5000u);
}

TEST_P(PluginSampler, MissingFileIsPluginErrorNamingThePath) {
  const Error error = LoadError("/nonexistent/libnothing.so");
  EXPECT_EQ(error.code, ErrorCode::kPlugin);
  EXPECT_NE(error.message.find("cannot load plugin /nonexistent/libnothing.so"), std::string::npos)
      << error.message;
}

TEST_P(PluginSampler, LibraryThatIsNotAPluginIsPluginError) {
  const Error error = LoadError("libm.so.6");
  EXPECT_EQ(error.code, ErrorCode::kPlugin);
  EXPECT_NE(error.message.find("samplecheck_plugin_abi_version"), std::string::npos) << error.message;
}

TEST_P(PluginSampler, MissingRequiredSymbolIsPluginErrorNamingIt) {
  const Error error = LoadError(SAMPLECHECK_MISSING_SYMBOL_PLUGIN);
  EXPECT_EQ(error.code, ErrorCode::kPlugin);
  EXPECT_NE(error.message.find("samplecheck_plugin_sample"), std::string::npos) << error.message;
}

TEST_P(PluginSampler, WrongAbiVersionIsPluginErrorNamingBothVersions) {
  const Error error = LoadError(SAMPLECHECK_WRONG_ABI_PLUGIN);
  EXPECT_EQ(error.code, ErrorCode::kPlugin);
  EXPECT_NE(error.message.find("version 999"), std::string::npos) << error.message;
  EXPECT_NE(error.message.find("speaks 1"), std::string::npos) << error.message;
}

TEST_P(PluginSampler, RefusedConfigIsPluginErrorWithThePluginsMessage) {
  const Error error = LoadError(SAMPLECHECK_EXAMPLE_PLUGIN, "bug=nonsense");
  EXPECT_EQ(error.code, ErrorCode::kPlugin);
  EXPECT_NE(error.message.find("unknown config item 'bug=nonsense'"), std::string::npos) << error.message;
}

}  // namespace
}  // namespace samplecheck::harness
