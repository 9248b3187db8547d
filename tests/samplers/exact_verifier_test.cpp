// The exact verifier (samplers/verifier.h): token for token the reference's VerifyChain under the Philox discipline,
// VerifyRepeated equal to Verify trial by trial, batch composition irrelevant, scripted uniforms honoured, bad input
// an error naming the value, the mutants listed and made by name.
#include "samplecheck/samplers/verifier.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "samplecheck/reference/exact_sampler.h"
#include "samplecheck/reference/philox.h"
#include "samplecheck/reference/speculative.h"

namespace samplecheck::harness {
namespace {

struct Fixture {
  int32_t g = 3;
  int64_t V = 50;
  std::vector<float> target, draft;
  Fixture() {
    std::mt19937 rng(3);
    std::normal_distribution<float> normal(0.0f, 2.0f);
    target.resize(static_cast<size_t>((g + 1) * V));
    for (float& x : target) x = normal(rng);
    for (int32_t j = 0; j < g; ++j) {  // draft probabilities: softmax of the target row plus noise
      std::vector<double> w(static_cast<size_t>(V));
      double total = 0;
      for (int64_t i = 0; i < V; ++i) total += (w[i] = std::exp(target[j * V + i] + normal(rng) * 0.5f));
      for (int64_t i = 0; i < V; ++i) draft.push_back(static_cast<float>(w[i] / total));
    }
  }
  VerifyRequest Request(const int32_t* tokens, uint64_t seed, uint64_t offset) const {
    VerifyRequest q;
    q.target = target.data();
    q.vocab = V;
    q.g = g;
    q.draft_tokens = tokens;
    q.draft_form = DraftForm::kProbabilities;
    q.draft = draft.data();
    q.params.seed = seed;
    q.params.offset = offset;
    return q;
  }
  ChainLaws Laws() const {
    ChainInput in;
    for (int32_t j = 0; j <= g; ++j) in.target.push_back(LogitsView::Fp32({target.data() + j * V, size_t(V)}));
    for (int32_t j = 0; j < g; ++j) in.draft_rows.emplace_back(draft.data() + j * V, size_t(V));
    in.profile = FindProfile("vllm");
    auto laws = ComputeChainLaws(in);
    EXPECT_TRUE(laws.ok());
    return *laws;
  }
};

TEST(ExactVerifier, TokenForTokenTheReferenceAndRepeatedEqualsSingle) {
  Fixture f;
  const ChainLaws laws = f.Laws();
  auto verifier = MakeExactVerifier("vllm");
  ASSERT_TRUE(verifier.ok());
  const size_t trials = 300;
  std::vector<int32_t> drafts(trials * f.g);
  for (size_t i = 0; i < trials; ++i) {
    for (int32_t j = 0; j < f.g; ++j) {
      drafts[i * f.g + j] = InverseCdf(laws.positions[j].q.tokens, laws.positions[j].q.prob)
                                .Draw(UniformForDraw(77, i * f.g + j));
    }
  }
  std::vector<VerifyResult> repeated(trials);
  const VerifyRequest base = f.Request(drafts.data(), 9, 1000);
  ASSERT_TRUE((*verifier)->VerifyRepeated(base, drafts, repeated).ok());
  int accepted_all = 0, rejected_some = 0;
  for (size_t i = 0; i < trials; ++i) {
    const uint64_t offset = 1000 + i * (f.g + 1);
    auto ref = VerifyChain(laws, std::span<const int32_t>(drafts.data() + i * f.g, f.g), 9, offset);
    ASSERT_TRUE(ref.ok());
    VerifyResult single;
    const VerifyRequest q = f.Request(drafts.data() + i * f.g, 9, offset);
    ASSERT_TRUE((*verifier)->Verify({&q, 1}, {&single, 1}).ok());
    ASSERT_EQ(single.accepted, ref->accepted) << "trial " << i;
    ASSERT_EQ(repeated[i].accepted, ref->accepted) << "trial " << i;
    for (int32_t j = 0; j <= ref->accepted; ++j) {
      EXPECT_EQ(single.emitted[j], ref->emitted[j]);
      EXPECT_EQ(repeated[i].emitted[j], ref->emitted[j]);
    }
    (ref->accepted == f.g ? accepted_all : rejected_some)++;
  }
  EXPECT_GT(accepted_all, 0);  // both branches were exercised
  EXPECT_GT(rejected_some, 0);
}

TEST(ExactVerifier, ScriptedUniformsDecideAndBadInputIsAnError) {
  Fixture f;
  auto verifier = MakeExactVerifier("vllm");
  ASSERT_TRUE(verifier.ok());
  EXPECT_TRUE((*verifier)->GetCapabilities().scripted_uniforms);
  const ChainLaws laws = f.Laws();
  std::vector<int32_t> tokens;
  for (int32_t j = 0; j < f.g; ++j) tokens.push_back(laws.positions[j].q.tokens.front());
  std::vector<double> stream(2 * (f.g + 1), 0.0);  // u = 0 everywhere: every draft of positive p is accepted
  VerifyRequest q = f.Request(tokens.data(), 1, 0);
  q.uniforms = stream;
  VerifyResult r;
  ASSERT_TRUE((*verifier)->Verify({&q, 1}, {&r, 1}).ok());
  auto ref = VerifyChain(laws, tokens, 1, 0, {stream});
  ASSERT_TRUE(ref.ok());
  EXPECT_EQ(r.accepted, ref->accepted);
  stream[0] = 1.0;  // outside [0, 1)
  EXPECT_EQ((*verifier)->Verify({&q, 1}, {&r, 1}).error().code, ErrorCode::kInvalidArgument);
  q.uniforms = {};
  q.g = kMaxSpecDraft + 1;
  Status st = (*verifier)->Verify({&q, 1}, {&r, 1});
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.error().message.find("g = 17"), std::string::npos) << st.error().message;
  EXPECT_FALSE(MakeVerifier("exact:nope", "vllm").ok());
  EXPECT_EQ(MakeVerifier("bogus", "vllm").error().code, ErrorCode::kInvalidArgument);
}

TEST(VerifierMutants, EveryMutantIsMadeByNameAndDiffersFromTheExactVerifierSomewhere) {
  EXPECT_GE(VerifierMutants().size(), 8u);
  for (const VerifierMutantInfo& m : VerifierMutants()) {
    auto made = MakeVerifier("mutant:" + m.name, "vllm");
    ASSERT_TRUE(made.ok()) << m.name;
    EXPECT_EQ((*made)->Name(), "mutant:" + m.name);
  }
  EXPECT_FALSE(MakeVerifier("mutant:none-such", "vllm").ok());
}

}  // namespace
}  // namespace samplecheck::harness
