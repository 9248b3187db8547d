// The speculation-invariance properties (spec.h).
#include "samplecheck/properties/spec.h"

#include <rapidcheck.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <sstream>

#include "samplecheck/properties/generators.h"
#include "samplecheck/reference/distribution.h"
#include "samplecheck/reference/speculative.h"

namespace samplecheck::properties {
namespace {

struct Ctx {
  harness::Verifier* verifier;
  const Profile* profile;
};

// A target row of V in [2, 12], logits in [-4, 4] with some -inf, and valid parameters for the profile.
struct Case {
  int64_t V = 0;
  std::vector<float> rows;   // (g + 1) x V
  std::vector<float> draft;  // g x V probabilities
  SamplingParams params;
};

SamplingParams GenParams(const Profile& profile, bool greedy) {
  for (int attempt = 0; attempt < 50; ++attempt) {
    SamplingParams p;
    p.temperature = greedy ? 0.0 : *rc::gen::element(1.0, 0.7, 1.5, 0.3);
    p.top_k = *rc::gen::element<int64_t>(-1, 0, 2, 3, 5);
    p.top_p = *rc::gen::element(1.0, 0.9, 0.6);
    p.min_p = gen::MinPHeldAtZero() ? 0.0 : *rc::gen::element(0.0, 0.05, 0.2);
    if (!ValidateParams(p, profile)) return p;
  }
  SamplingParams p;
  if (greedy) p.temperature = 0.0;
  return p;
}

Case GenCase(const Profile& profile, int32_t g, bool greedy) {
  Case c;
  c.V = *rc::gen::inRange<int64_t>(2, 13);
  for (int64_t i = 0; i < (g + 1) * c.V; ++i) {
    const int v = *rc::gen::inRange(-40, 41);
    c.rows.push_back(v == -40 && i % c.V != 0 ? -INFINITY : static_cast<float>(v) / 10.0f);
  }
  for (int32_t j = 0; j < g; ++j) {
    std::vector<int> w;
    int total = 0;
    for (int64_t i = 0; i < c.V; ++i) total += w.emplace_back(*rc::gen::inRange(0, 5));
    if (total == 0) {
      w[0] = 1;
      total = 1;
    }
    for (int x : w) c.draft.push_back(static_cast<float>(x) / static_cast<float>(total));
  }
  c.params = GenParams(profile, greedy);
  return c;
}

ChainInput InputOf(const Case& c, const Profile& profile, int32_t g) {
  ChainInput in;
  for (int32_t j = 0; j <= g; ++j) in.target.push_back(LogitsView::Fp32({c.rows.data() + j * c.V, size_t(c.V)}));
  for (int32_t j = 0; j < g; ++j) in.draft_rows.emplace_back(c.draft.data() + j * c.V, size_t(c.V));
  in.params = c.params;
  in.profile = &profile;
  return in;
}

harness::VerifyRequest RequestOf(const Case& c, int32_t g, const int32_t* tokens, std::span<const double> uniforms) {
  harness::VerifyRequest q;
  q.target = c.rows.data();
  q.vocab = c.V;
  q.g = g;
  q.draft_tokens = tokens;
  q.draft_form = DraftForm::kProbabilities;
  q.draft = c.draft.data();
  q.params = c.params;
  q.uniforms = uniforms;
  return q;
}

void MarginalIsTarget(const Ctx& ctx) {
  const int32_t g = *rc::gen::inRange(1, 4);
  const Case c = GenCase(*ctx.profile, g, false);
  auto laws = ComputeChainLaws(InputOf(c, *ctx.profile, g));
  RC_ASSERT(laws.ok());
  long double total = 0;
  for (long double v : laws->length_law) total += v;
  RC_ASSERT(std::fabs(static_cast<double>(total) - 1.0) <= 1e-15);
  for (const PositionLaw& law : laws->positions) {
    long double tv = 0;
    for (int32_t t = 0; t < c.V; ++t) {
      RC_ASSERT(std::fabs(static_cast<double>(law.emitted.Prob(t) - law.p.Prob(t))) <= 1e-15);
      tv += std::fabs(law.p.Prob(t) - law.q.Prob(t));
    }
    RC_ASSERT(std::fabs(static_cast<double>(law.beta - (1 - tv / 2))) <= 1e-15);
  }
}

void StratifiedMarginal(const Ctx& ctx) {
  const Case c = GenCase(*ctx.profile, 1, false);
  auto laws = ComputeChainLaws(InputOf(c, *ctx.profile, 1));
  RC_ASSERT(laws.ok());
  const PositionLaw& law = laws->positions[0];
  constexpr int M = 24;
  std::vector<double> emitted(static_cast<size_t>(c.V), 0.0);
  std::vector<double> stream(4, 0.5);
  for (int32_t x : law.q.tokens) {
    for (int i = 0; i < M; ++i) {
      for (int k = 0; k < M; ++k) {
        stream[0] = (i + 0.5) / M;
        stream[1] = (k + 0.5) / M;
        const harness::VerifyRequest q = RequestOf(c, 1, &x, stream);
        harness::VerifyResult r;
        const Status st = ctx.verifier->Verify({&q, 1}, {&r, 1});
        RC_ASSERT(st.ok());
        RC_ASSERT(r.accepted >= 0 && r.accepted <= 1);
        const int32_t t = r.emitted[0];
        RC_ASSERT(t >= 0 && t < c.V);
        emitted[static_cast<size_t>(t)] += static_cast<double>(law.q.Prob(x)) / (double(M) * M);
      }
    }
  }
  // One coin threshold per draft token (<= 1/(2M) off) and two ends of each token's draw interval (<= 1/M).
  for (int32_t t = 0; t < c.V; ++t) {
    RC_ASSERT(std::fabs(emitted[static_cast<size_t>(t)] - static_cast<double>(law.p.Prob(t))) <= 1.5 / M + 1e-9);
  }
}

void NoZeroEmission(const Ctx& ctx) {
  const int32_t g = *rc::gen::inRange(1, 4);
  const Case c = GenCase(*ctx.profile, g, false);
  auto laws = ComputeChainLaws(InputOf(c, *ctx.profile, g));
  RC_ASSERT(laws.ok());
  std::vector<int32_t> tokens;
  for (int32_t j = 0; j < g; ++j) tokens.push_back(*rc::gen::elementOf(laws->positions[static_cast<size_t>(j)].q.tokens));
  std::vector<double> stream;
  for (int32_t i = 0; i < 2 * (g + 1); ++i) {
    stream.push_back(*rc::gen::element(0.0, 0x1p-53, 1.0 - 0x1p-53, 0.5, 0.999));
  }
  const harness::VerifyRequest q = RequestOf(c, g, tokens.data(), stream);
  harness::VerifyResult r;
  RC_ASSERT(ctx.verifier->Verify({&q, 1}, {&r, 1}).ok());
  RC_ASSERT(r.accepted >= 0 && r.accepted <= g);
  for (int32_t j = 0; j <= r.accepted; ++j) {
    const int32_t t = r.emitted[static_cast<size_t>(j)];
    const auto& p = j < g ? laws->positions[static_cast<size_t>(j)].p : FromProcessed(laws->bonus);
    RC_ASSERT(p.Prob(t) > 0);
    if (j < r.accepted) RC_ASSERT(t == tokens[static_cast<size_t>(j)]);
  }
}

void GreedyRule(const Ctx& ctx) {
  if (!ctx.profile->temperature_zero_allowed) RC_DISCARD("the profile has no greedy path at temperature 0");
  const int32_t g = *rc::gen::inRange(1, 4);
  const Case c = GenCase(*ctx.profile, g, true);
  auto laws = ComputeChainLaws(InputOf(c, *ctx.profile, g));
  RC_ASSERT(laws.ok());
  std::vector<int32_t> tokens;
  for (int32_t j = 0; j < g; ++j) {
    const auto& law = laws->positions[static_cast<size_t>(j)];
    RC_ASSERT(law.greedy);
    // the argmax when the draft can propose it (half the time), else any token of the draft
    const int32_t argmax = law.p.tokens.front();
    tokens.push_back(law.q.Prob(argmax) > 0 && *rc::gen::arbitrary<bool>() ? argmax : *rc::gen::elementOf(law.q.tokens));
  }
  std::vector<double> stream;
  for (int32_t i = 0; i < 2 * (g + 1); ++i) stream.push_back(*rc::gen::element(0.0, 0.5, 1.0 - 0x1p-53));
  const harness::VerifyRequest q = RequestOf(c, g, tokens.data(), stream);
  harness::VerifyResult r;
  RC_ASSERT(ctx.verifier->Verify({&q, 1}, {&r, 1}).ok());
  int32_t expected = 0;
  while (expected < g && tokens[static_cast<size_t>(expected)] ==
                             laws->positions[static_cast<size_t>(expected)].p.tokens.front()) {
    ++expected;
  }
  RC_ASSERT(r.accepted == expected);
  const int32_t argmax = expected < g ? laws->positions[static_cast<size_t>(expected)].p.tokens.front()
                                      : laws->bonus.kept.front();
  RC_ASSERT(r.emitted[static_cast<size_t>(expected)] == argmax);
}

struct Def {
  SpecPropertyInfo info;
  std::function<void(const Ctx&)> body;
};

const std::vector<Def>& Defs() {
  static const std::vector<Def> defs = {
      {{"spec-marginal-is-target", "the reference laws: emitted marginal = p_j, beta_j = 1 - TV, length law sums to 1",
        "residual not renormalized, residual from p (in the laws)"},
       MarginalIsTarget},
      {{"spec-stratified-marginal", "the verifier, g = 1, stratified scripted coins: emitted law = p within 1.5 / M",
        "residual from p, residual not renormalized, reused RNG, coin and draw confused"},
       StratifiedMarginal},
      {{"spec-no-zero-emission", "any scripted coins (u = 0 included): every emitted token has p_j > 0",
        "coin edge u <= p/q, residual from p"},
       NoZeroEmission},
      {{"spec-greedy-rule", "greedy targets: accepted iff the draft is the argmax, the emitted token is the argmax",
        "greedy handled wrong"},
       GreedyRule},
  };
  return defs;
}

class Quiet final : public rc::detail::TestListener {
 public:
  void onTestCaseFinished(const rc::detail::CaseDescription&) override {}
  void onShrinkTried(const rc::detail::CaseDescription&, bool) override {}
  void onTestFinished(const rc::detail::TestMetadata&, const rc::detail::TestResult&) override {}
};

}  // namespace

const std::vector<SpecPropertyInfo>& SpecProperties() {
  static const std::vector<SpecPropertyInfo> infos = [] {
    std::vector<SpecPropertyInfo> v;
    for (const Def& d : Defs()) v.push_back(d.info);
    return v;
  }();
  return infos;
}

PropertyResult RunSpecProperty(harness::Verifier& verifier, const Profile& profile, const std::string& name,
                               const PropertyOptions& options) {
  PropertyResult result;
  result.name = name;
  const Def* def = nullptr;
  for (const Def& d : Defs()) {
    if (d.info.name == name) def = &d;
  }
  if (def == nullptr) {
    result.status = PropertyStatus::kError;
    result.message = "no spec property named '" + name + "'";
    return result;
  }
  gen::SetMinPHeldAtZero(options.hold_min_p_zero);  // GenParams: min_p 0 only (--no-min-p)
  if (name != "spec-marginal-is-target" && !verifier.GetCapabilities().scripted_uniforms) {
    result.message = verifier.Name() + " does not take scripted uniforms";
    return result;
  }
  rc::detail::TestParams params;
  params.seed = options.seed;
  params.maxSuccess = std::max(1, options.max_success);
  params.maxSize = options.max_size;
  params.maxDiscardRatio = 1000;
  rc::detail::TestMetadata metadata;
  metadata.id = std::string(profile.name) + "/" + name;
  metadata.description = metadata.id;
  Quiet listener;
  const Ctx ctx{&verifier, &profile};
  const auto body = def->body;
  const rc::detail::TestResult outcome = rc::detail::checkProperty(
      rc::detail::toProperty([ctx, body] { body(ctx); }), metadata, params, listener, {});
  std::ostringstream message;
  rc::detail::printResultMessage(outcome, message);
  if (outcome.is<rc::detail::SuccessResult>()) {
    result.status = PropertyStatus::kPassed;
    result.cases = outcome.get<rc::detail::SuccessResult>().numSuccess;
  } else if (outcome.is<rc::detail::FailureResult>()) {
    result.status = PropertyStatus::kFailed;
    result.cases = outcome.get<rc::detail::FailureResult>().numSuccess;
    result.message = message.str();
  } else if (outcome.is<rc::detail::GaveUpResult>()) {
    // Every case discarded: the profile has no case for this property (no greedy path at temperature 0).
    result.status = outcome.get<rc::detail::GaveUpResult>().numSuccess == 0 ? PropertyStatus::kSkipped
                                                                            : PropertyStatus::kGaveUp;
    result.message = message.str();
  } else {
    result.status = PropertyStatus::kError;
    result.message = message.str();
  }
  return result;
}

}  // namespace samplecheck::properties
