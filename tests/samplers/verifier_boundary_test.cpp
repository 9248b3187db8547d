// Verifiers across the plugin ABI and the process protocol (docs/speculative.md, "Plugging a verifier in"): the
// example plugin's verify_chain (in process and isolated) and the Python reference client's VERIFY reproduce the
// exact verifier token for token, with the Philox stream and with a scripted one; a version-1 plugin still samples
// and is refused as a verifier; a process that answers VERIFY wrongly is a kPlugin error within its deadline, never
// a crash or a hang. The campaigns (samplecheck run --suite spec-smoke --verifier ...) are in tests/tools.
#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <string>
#include <vector>

#include "harness_test_rows.h"
#include "samplecheck/samplers/plugin_sampler.h"
#include "samplecheck/samplers/process_sampler.h"
#include "samplecheck/samplers/verifier.h"

namespace samplecheck::harness {
namespace {

using testing::GaussianRow;
using testing::Params;

bool HavePython() { return SAMPLECHECK_PYTHON3[0] != '\0' && access(SAMPLECHECK_PYTHON3, X_OK) == 0; }
#define SKIP_WITHOUT_PYTHON() \
  if (!HavePython()) GTEST_SKIP() << "python3 was not found at configure time or is not executable"

ProcessSamplerOptions Timeouts(double request_seconds = 60.0) {
  ProcessSamplerOptions options;
  options.handshake_timeout_s = 60.0;
  options.request_timeout_s = request_seconds;
  return options;
}

std::string Misbehaving(const std::string& mode) {
  return "exec " + std::string(SAMPLECHECK_PYTHON3) + " " + SAMPLECHECK_MISBEHAVING_CLIENT + " " + mode;
}

// One chain request of g = 3 positions over a 40-token vocabulary, its draft tokens drawn from q by the test's own
// inverse CDF (so every draft token has positive draft probability).
struct Fixture {
  static constexpr int64_t kVocab = 40;
  static constexpr int32_t kG = 3;
  std::vector<float> target, draft;
  DraftForm form;
  SamplingParams params = Params(0.9, 20, 0.95, 0.0, /*seed=*/11, /*offset=*/5);

  explicit Fixture(DraftForm f) : form(f) {
    for (int32_t j = 0; j <= kG; ++j) {
      const auto row = GaussianRow(kVocab, 100 + static_cast<uint32_t>(j));
      target.insert(target.end(), row.begin(), row.end());
    }
    for (int32_t j = 0; j < kG; ++j) {
      auto row = GaussianRow(kVocab, 200 + static_cast<uint32_t>(j), 1.5f);
      if (form == DraftForm::kProbabilities) {  // a softmax, as a draft stores it
        double sum = 0;
        for (float& v : row) sum += v = static_cast<float>(std::exp(static_cast<double>(v)));
        for (float& v : row) v = static_cast<float>(v / sum);
      }
      draft.insert(draft.end(), row.begin(), row.end());
    }
  }
  VerifyRequest Request() const {
    VerifyRequest q;
    q.target = target.data();
    q.vocab = kVocab;
    q.g = kG;
    q.draft_form = form;
    q.draft = form == DraftForm::kOneHot ? nullptr : draft.data();
    q.params = params;
    q.draft_params = Params(1.0, -1, 1.0, 0.0);
    return q;
  }
  // Draft tokens every draft form accepts: the top-20 target tokens (in the kept set, and positive under the
  // draft's softmax / logits), cycled through the trials.
  std::vector<int32_t> Tokens(size_t trials) const {
    std::vector<int32_t> order(kVocab);
    std::vector<int32_t> tokens;
    for (size_t i = 0; i < trials * kG; ++i) {
      const size_t j = i % kG;
      const float* row = target.data() + j * kVocab;
      int32_t best = 0;
      for (int32_t t = 1; t < kVocab; ++t) if (row[t] > row[best]) best = t;
      // alternate the argmax and a token the target cuts often enough to exercise rejections
      tokens.push_back(i % 3 == 0 ? best : static_cast<int32_t>((i * 7) % kVocab));
    }
    return tokens;
  }
};

void ExpectSameAsExact(Verifier& verifier, DraftForm form, bool scripted) {
  SCOPED_TRACE(std::string(DraftFormName(form)) + (scripted ? ", scripted" : ", philox"));
  auto exact = MakeExactVerifier("vllm");
  ASSERT_TRUE(exact.ok());
  const Fixture f(form);
  constexpr size_t kTrials = 300;
  const std::vector<int32_t> tokens = f.Tokens(kTrials);
  std::vector<double> uniforms;
  VerifyRequest q = f.Request();
  if (scripted) {
    uniforms = {0.0, 0.3, 0.5, 0.7, 0.999, 0.1, 0.25, 0.9};  // u = 0 first: the edge of the acceptance test
    q.uniforms = uniforms;
  }
  std::vector<VerifyResult> want(kTrials), got(kTrials);
  ASSERT_TRUE((*exact)->VerifyRepeated(q, tokens, want).ok());
  const Status st = verifier.VerifyRepeated(q, tokens, got);
  ASSERT_TRUE(st.ok()) << st.error().ToString();
  size_t rejections = 0;
  for (size_t i = 0; i < kTrials; ++i) {
    ASSERT_EQ(got[i].accepted, want[i].accepted) << "trial " << i;
    for (int32_t j = 0; j <= want[i].accepted; ++j) ASSERT_EQ(got[i].emitted[j], want[i].emitted[j]) << "trial " << i;
    rejections += want[i].accepted < Fixture::kG;
  }
  EXPECT_GT(rejections, 0u);  // the comparison saw residual draws, not only accepted chains
  // A batch of different requests in one Verify call: each equals its VerifyRepeated trial.
  std::vector<VerifyRequest> batch(3, q);
  for (size_t i = 0; i < batch.size(); ++i) {
    batch[i].draft_tokens = tokens.data() + i * Fixture::kG;
    batch[i].params.offset = q.params.offset + i * (Fixture::kG + 1);
  }
  std::vector<VerifyResult> out(batch.size());
  const Status bst = verifier.Verify(batch, out);
  ASSERT_TRUE(bst.ok()) << bst.error().ToString();
  for (size_t i = 0; i < batch.size(); ++i) EXPECT_EQ(out[i].accepted, want[i].accepted) << "batch request " << i;
}

class PluginVerifierModes : public ::testing::TestWithParam<bool> {
 protected:
  Result<std::unique_ptr<Verifier>> Make(const std::string& path, const std::string& config) {
    return GetParam() ? MakeIsolatedPluginVerifier(path, config, Timeouts()) : MakePluginVerifier(path, config);
  }
};

TEST_P(PluginVerifierModes, ExamplePluginVerifiesAsTheExactVerifier) {
  auto verifier = Make(SAMPLECHECK_EXAMPLE_PLUGIN, "");
  ASSERT_TRUE(verifier.ok()) << verifier.error().ToString();
  EXPECT_EQ((*verifier)->Name(), "plugin:exact-vllm");
  const VerifierCapabilities caps = (*verifier)->GetCapabilities();
  EXPECT_TRUE(caps.scripted_uniforms);
  EXPECT_TRUE(caps.deterministic);
  EXPECT_EQ(caps.profile, "vllm");
  for (DraftForm form : {DraftForm::kProbabilities, DraftForm::kLogits, DraftForm::kOneHot}) {
    for (bool scripted : {false, true}) ExpectSameAsExact(**verifier, form, scripted);
  }
}

TEST_P(PluginVerifierModes, CoinEdgeBugAcceptsAZeroProbabilityDraftAtUZero) {
  auto verifier = Make(SAMPLECHECK_EXAMPLE_PLUGIN, "bug=coin-edge");
  ASSERT_TRUE(verifier.ok()) << verifier.error().ToString();
  const Fixture f(DraftForm::kProbabilities);
  VerifyRequest q = f.Request();
  q.params.top_k = 1;  // p is the point mass on the argmax: every other draft token has p = 0
  const std::vector<double> uniforms(2 * (Fixture::kG + 1), 0.0);
  q.uniforms = uniforms;
  const float* row = f.target.data();
  int32_t best = 0;
  for (int32_t t = 1; t < Fixture::kVocab; ++t) if (row[t] > row[best]) best = t;
  const std::vector<int32_t> tokens(Fixture::kG, best == 0 ? 1 : 0);
  q.draft_tokens = tokens.data();
  VerifyResult got;
  ASSERT_TRUE((*verifier)->Verify({&q, 1}, {&got, 1}).ok());
  EXPECT_GT(got.accepted, 0);  // the bug: u = 0 accepted a token the target never emits
  auto correct = Make(SAMPLECHECK_EXAMPLE_PLUGIN, "");
  ASSERT_TRUE(correct.ok());
  ASSERT_TRUE((*correct)->Verify({&q, 1}, {&got, 1}).ok());
  EXPECT_EQ(got.accepted, 0);
  EXPECT_EQ(got.emitted[0], best);
}

TEST_P(PluginVerifierModes, VersionOnePluginSamplesAndIsRefusedAsAVerifier) {
  auto sampler = GetParam() ? MakeIsolatedPluginSampler(SAMPLECHECK_V1_PLUGIN, "", Timeouts())
                            : MakePluginSampler(SAMPLECHECK_V1_PLUGIN, "");
  ASSERT_TRUE(sampler.ok()) << sampler.error().ToString();
  const auto row = GaussianRow(50, 3);
  int32_t best = 0;
  for (int32_t t = 1; t < 50; ++t) if (row[t] > row[best]) best = t;
  std::vector<SamplingParams> params(1, Params(1.0, -1, 1.0, 0.0));
  std::vector<int32_t> tokens(1, -7);
  ASSERT_TRUE((*sampler)->Sample({row.data(), 1, 50, 50}, params, tokens).ok());
  EXPECT_EQ(tokens[0], best);
  auto verifier = Make(SAMPLECHECK_V1_PLUGIN, "");
  ASSERT_FALSE(verifier.ok());
  EXPECT_EQ(verifier.error().code, ErrorCode::kInvalidArgument);
  EXPECT_NE(verifier.error().message.find("cannot be used as --verifier"), std::string::npos) << verifier.error().message;
  EXPECT_NE(verifier.error().message.find("samplecheck_plugin_verify_chain"), std::string::npos);
  EXPECT_NE(verifier.error().message.find(SAMPLECHECK_V1_PLUGIN), std::string::npos);
  // The same through the --verifier spec.
  auto by_spec = MakeVerifier(std::string(GetParam() ? "plugin:" : "plugin-inproc:") + SAMPLECHECK_V1_PLUGIN, "vllm");
  ASSERT_FALSE(by_spec.ok());
  EXPECT_EQ(by_spec.error().code, ErrorCode::kInvalidArgument);
}

INSTANTIATE_TEST_SUITE_P(Modes, PluginVerifierModes, ::testing::Values(false, true),
                         [](const ::testing::TestParamInfo<bool>& mode) { return mode.param ? "Isolated" : "InProcess"; });

TEST(ProcessVerifier, PythonClientVerifiesAsTheExactVerifier) {
  SKIP_WITHOUT_PYTHON();
  auto verifier = MakeProcessVerifier(std::string(SAMPLECHECK_PYTHON3) + " " + SAMPLECHECK_PYTHON_CLIENT, Timeouts());
  ASSERT_TRUE(verifier.ok()) << verifier.error().ToString();
  EXPECT_TRUE((*verifier)->GetCapabilities().scripted_uniforms);
  for (DraftForm form : {DraftForm::kProbabilities, DraftForm::kLogits, DraftForm::kOneHot}) {
    for (bool scripted : {false, true}) ExpectSameAsExact(**verifier, form, scripted);
  }
}

TEST(ProcessVerifier, ProcessWithoutTheVerifyBitIsRefused) {
  SKIP_WITHOUT_PYTHON();
  auto verifier = MakeProcessVerifier(Misbehaving("no-verify"), Timeouts());
  ASSERT_FALSE(verifier.ok());
  EXPECT_EQ(verifier.error().code, ErrorCode::kInvalidArgument);
  EXPECT_NE(verifier.error().message.find("VERIFY capability bit (8)"), std::string::npos) << verifier.error().message;
}

TEST(ProcessVerifier, MalformedAnswersAreErrorsNeverCrashesOrHangs) {
  SKIP_WITHOUT_PYTHON();
  struct Case {
    const char* mode;
    ErrorCode code;
    const char* says;
  };
  const Case cases[] = {
      {"verify-short", ErrorCode::kPlugin, "with a VERIFIED of"},
      {"verify-count", ErrorCode::kPlugin, "broke the protocol"},
      {"verify-accepted", ErrorCode::kPlugin, "accepted length 4 for request 0, trial 0 of VERIFY; allowed: 0..g = 0..3"},
      {"verify-token", ErrorCode::kPlugin, "returned token 40 at emitted slot 0 of request 0, trial 0"},
      {"verify-wrong-type", ErrorCode::kPlugin, "answered VERIFY with TOKENS, not VERIFIED"},
      {"verify-error", ErrorCode::kPlugin, "VERIFY failed: verifier exploded"},
      {"verify-exit", ErrorCode::kPlugin, "exited with status 3"},
      {"verify-hang", ErrorCode::kPlugin, "did not answer in time while answering VERIFY"},
  };
  const Fixture f(DraftForm::kProbabilities);
  const std::vector<int32_t> tokens = f.Tokens(1);
  VerifyRequest q = f.Request();
  q.draft_tokens = tokens.data();
  for (const Case& c : cases) {
    SCOPED_TRACE(c.mode);
    const auto started = std::chrono::steady_clock::now();
    auto verifier = MakeProcessVerifier(Misbehaving(c.mode), Timeouts(2.0));
    ASSERT_TRUE(verifier.ok()) << verifier.error().ToString();
    VerifyResult got;
    const Status st = (*verifier)->Verify({&q, 1}, {&got, 1});
    ASSERT_FALSE(st.ok());
    EXPECT_EQ(st.error().code, c.code);
    EXPECT_NE(st.error().message.find(c.says), std::string::npos) << st.error().message;
    EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count(), 30.0);
  }
}

}  // namespace
}  // namespace samplecheck::harness
