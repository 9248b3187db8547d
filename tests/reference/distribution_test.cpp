// The processed distributions of the reference on the discriminating vectors of docs/semantics.md, on degenerate
// rows, and their invariants (mass sums to one, disabled values are exact no-ops, margins and ambiguity).
#include "samplecheck/reference/distribution.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "test_rows.h"

namespace samplecheck {
namespace {

using testing::CompensatedTotal;
using testing::Describe;
using testing::LogitsOf;
using testing::Params;

constexpr float kInf = std::numeric_limits<float>::infinity();
constexpr float kNan = std::numeric_limits<float>::quiet_NaN();

const Profile& P(std::string_view name) {
  const Profile* profile = FindProfile(name);
  EXPECT_NE(profile, nullptr) << name;
  return *profile;
}

ProcessedDistribution Compute(const std::vector<float>& logits, const SamplingParams& params, const Profile& profile,
                              AmbiguousPolicy policy = AmbiguousPolicy::kAsComputed) {
  Result<ProcessedDistribution> result = ComputeDistribution(LogitsView::Fp32(logits), params, profile, {policy});
  EXPECT_TRUE(result.ok()) << Describe(params, profile.name) << ": " << (result.ok() ? "" : result.error().ToString());
  return result.ok() ? *result : ProcessedDistribution{};
}

struct Expected {
  std::vector<int32_t> kept;
  std::vector<double> prob;
  std::vector<int32_t> ambiguous;
};

void ExpectDistribution(const ProcessedDistribution& dist, const Expected& expected, const std::string& where,
                        double tolerance = 2e-6) {
  EXPECT_EQ(dist.kept, expected.kept) << where;
  ASSERT_EQ(dist.prob.size(), dist.kept.size()) << where;
  if (dist.kept == expected.kept) {
    for (size_t i = 0; i < expected.prob.size(); ++i) {
      EXPECT_NEAR(static_cast<double>(dist.prob[i]), expected.prob[i], tolerance) << where << " token " << dist.kept[i];
    }
  }
  EXPECT_EQ(dist.ambiguous, expected.ambiguous) << where;
  EXPECT_NEAR(static_cast<double>(CompensatedTotal(dist.prob) - 1.0L), 0.0, 1e-15) << where;
}

// One discriminating vector: probabilities fed as logits = log p, parameters, the expected result per profile.
struct VectorCase {
  std::string name;
  std::vector<double> probs;
  SamplingParams params;
  std::map<std::string, Expected> by_profile;
};

std::map<std::string, Expected> Same(std::initializer_list<std::string> profiles, const Expected& expected,
                                     std::map<std::string, Expected> into = {}) {
  for (const std::string& name : profiles) into[name] = expected;
  return into;
}

const std::initializer_list<std::string> kAllNames = {"hf",           "vllm",        "vllm-api",   "vllm-triton",
                                                      "vllm-api-triton", "flashinfer-topk-first", "flashinfer-joint",
                                                      "trtllm-torch", "trtllm-cuda",  "sglang-torch",
                                                      "sglang-flashinfer", "llama-cpp", "tokenspeed"};
const std::initializer_list<std::string> kNucleusNames = {"hf",           "vllm",         "vllm-api",  "vllm-triton",
                                                          "vllm-api-triton", "flashinfer-topk-first",
                                                          "flashinfer-joint", "trtllm-torch", "sglang-torch",
                                                          "sglang-flashinfer", "llama-cpp", "tokenspeed"};

std::vector<VectorCase> DiscriminatingVectors() {
  std::vector<VectorCase> cases;
  const std::vector<double> v1 = {0.5, 0.375, 0.125};
  // V1 off the boundary: every profile agrees (the equality cases are tested as ambiguous below).
  {
    auto by = Same(kNucleusNames, {{0}, {1.0}, {}});
    by["trtllm-cuda"] = {{0}, {1.0}, {}};
    cases.push_back({"V1_top_p_0.49", v1, Params(1, -1, 0.49, 0), by});
  }
  {
    auto by = Same(kNucleusNames, {{0, 1}, {4.0 / 7, 3.0 / 7}, {}});
    by["trtllm-cuda"] = {{0, 1}, {0.5 / 0.51, 0.01 / 0.51}, {}};
    cases.push_back({"V1_top_p_0.51", v1, Params(1, -1, 0.51, 0), by});
  }
  {
    auto by = Same(kNucleusNames, {{0, 1, 2}, {0.5, 0.375, 0.125}, {}});
    by["trtllm-cuda"] = {{0, 1, 2}, {0.5 / 0.88, 0.375 / 0.88, 0.005 / 0.88}, {}};
    cases.push_back({"V1_top_p_0.88", v1, Params(1, -1, 0.88, 0), by});
  }
  // V2: four tied tokens, k = 2. Tie-keeping profiles stay uniform; exact-k profiles keep the two lowest ids and
  // report the whole tie group ambiguous (an engine with another sort order keeps another pair). The vLLM Triton
  // profiles keep a fully tied row whole, ambiguous as a whole: the logit log(0.25) is not exact enough in fp32 for
  // the kernel's statistics to be certain (Profile::tied_row_unmasked; TiedRows below).
  {
    auto by = Same({"hf", "vllm", "vllm-api", "flashinfer-topk-first", "flashinfer-joint", "trtllm-torch",
                    "sglang-flashinfer"},
                   {{0, 1, 2, 3}, {0.25, 0.25, 0.25, 0.25}, {}});
    by = Same({"trtllm-cuda", "sglang-torch", "llama-cpp", "tokenspeed"}, {{0, 1}, {0.5, 0.5}, {0, 1, 2, 3}}, by);
    by = Same({"vllm-triton", "vllm-api-triton"}, {{0, 1, 2, 3}, {0.25, 0.25, 0.25, 0.25}, {0, 1, 2, 3}}, by);
    cases.push_back({"V2_ties_top_k_2", {0.25, 0.25, 0.25, 0.25}, Params(1, 2, 1.0, 0), by});
  }
  // V2': [0.4, 0.3, 0.3], p = 0.5. Pivot top-p keeps the whole tie group; sort-based profiles cut it by position.
  {
    auto by = Same({"flashinfer-topk-first", "flashinfer-joint", "sglang-flashinfer"}, {{0, 1, 2}, {0.4, 0.3, 0.3}, {}});
    by = Same({"hf", "vllm", "vllm-api", "vllm-triton", "vllm-api-triton", "trtllm-torch", "sglang-torch",
               "llama-cpp", "tokenspeed"},
              {{0, 1}, {4.0 / 7, 3.0 / 7}, {1, 2}}, by);
    by["trtllm-cuda"] = {{0, 1}, {0.8, 0.2}, {1, 2}};
    cases.push_back({"V2prime_tie_at_top_p", {0.4, 0.3, 0.3}, Params(1, -1, 0.5, 0), by});
  }
  // V3: standard nucleus vs the TensorRT-LLM truncated CDF (TV 0.095).
  {
    auto by = Same(kNucleusNames, {{0, 1}, {4.0 / 7, 3.0 / 7}, {}});
    by["trtllm-cuda"] = {{0, 1}, {2.0 / 3, 1.0 / 3}, {}};
    cases.push_back({"V3_truncated_cdf", v1, Params(1, -1, 0.75, 0), by});
  }
  // V4: min-p before top-p (vLLM, TRT-LLM, FlashInfer engines) vs after (HF, llama.cpp, TokenSpeed) or joint
  // (SGLang). TV 0.222.
  {
    auto by = Same({"hf", "sglang-torch", "sglang-flashinfer", "llama-cpp", "tokenspeed"},
                   {{0, 1, 2}, {4.0 / 9, 3.0 / 9, 2.0 / 9}, {}});
    by = Same({"vllm", "vllm-api", "vllm-triton", "vllm-api-triton", "flashinfer-topk-first", "flashinfer-joint",
               "trtllm-torch"},
              {{0, 1}, {4.0 / 7, 3.0 / 7}, {}}, by);
    by["trtllm-cuda"] = {{0, 1}, {16.0 / 27, 11.0 / 27}, {}};
    cases.push_back({"V4_min_p_order", {0.4, 0.3, 0.2, 0.1}, Params(1, -1, 0.75, 0.3), by});
  }
  // V5: joint keeps 4 tokens, top_k_first keeps 3 (TV 0.059).
  {
    const double c = 0.6 / 0.85;  // mass above token 2 in the top-4-renormalized distribution
    auto by = Same({"flashinfer-joint", "sglang-torch", "sglang-flashinfer"},
                   {{0, 1, 2, 3}, {0.35 / 0.85, 0.25 / 0.85, 0.20 / 0.85, 0.05 / 0.85}, {}});
    by = Same({"hf", "vllm", "vllm-api", "vllm-triton", "vllm-api-triton", "flashinfer-topk-first", "trtllm-torch",
               "llama-cpp", "tokenspeed"},
              {{0, 1, 2}, {0.35 / 0.8, 0.25 / 0.8, 0.20 / 0.8}, {}}, by);
    by["trtllm-cuda"] = {{0, 1, 2}, {0.35 / 0.85 / 0.82, 0.25 / 0.85 / 0.82, (0.82 - c) / 0.82}, {}};
    cases.push_back({"V5_joint_vs_top_k_first",
                     {0.35, 0.25, 0.20, 0.05, 0.03, 0.03, 0.03, 0.03, 0.03},
                     Params(1, 4, 0.82, 0),
                     by});
  }
  // V6: temperature before the filters (every GPU engine, transformers) vs after them (llama.cpp). At T = 0.5 the
  // first profiles see p^2 / sum = [0.615, 0.346, 0.038]: the mass above token 1 (0.615) reaches top_p = 0.6, one
  // token is kept. llama.cpp's top-p sees the T = 1 p: mass above token 1 is 0.5 < 0.6, two tokens are kept and then
  // sharpened: [0.25, 0.140625] / 0.390625 = [0.64, 0.36]. TV 0.36.
  {
    auto by = Same(kAllNames, {{0}, {1.0}, {}});
    by["llama-cpp"] = {{0, 1}, {0.64, 0.36}, {}};
    cases.push_back({"V6_temperature_placement", v1, Params(0.5, -1, 0.6, 0), by});
  }
  // V7: vLLM's temperature floor. Two logits 0.01 apart at T = 0.001: every profile scales by 1 / 0.001 (token 1 at
  // e^-10 of token 0); vllm-api raises T to 0.01 first (sampling_params.py:450-459), so token 1 is at e^-1 of
  // token 0. TV 0.269. (At T = 5e-6 vllm, vllm-triton and trtllm-torch are greedy and vllm-api is not: identify's
  // probe "V2 T=5e-6".)
  {
    const double e10 = std::exp(-10.0), e1 = std::exp(-1.0);
    auto by = Same(kAllNames, {{0, 1}, {1 / (1 + e10), e10 / (1 + e10)}, {}});
    by["vllm-api"] = {{0, 1}, {1 / (1 + e1), e1 / (1 + e1)}, {}};
    by["vllm-api-triton"] = by["vllm-api"];
    cases.push_back({"V7_temperature_floor", {1 / (1 + std::exp(-0.01)), std::exp(-0.01) / (1 + std::exp(-0.01))},
                     Params(0.001, -1, 1.0, 0), by});
  }
  return cases;
}

TEST(DiscriminatingVectors, ExactKeptSetsAndProbabilitiesForEveryProfile) {
  for (const VectorCase& c : DiscriminatingVectors()) {
    ASSERT_EQ(c.by_profile.size(), AllProfiles().size()) << c.name << ": every profile needs an expectation";
    for (const Profile* profile : AllProfiles()) {
      const Expected& expected = c.by_profile.at(std::string(profile->name));
      const std::string where = c.name + " " + Describe(c.params, profile->name);
      ExpectDistribution(Compute(LogitsOf(c.probs), c.params, *profile), expected, where);
    }
  }
}

// On an equality boundary the fp32 rounding of the logs (and of any engine) decides: the token is ambiguous, and
// the two policies give the distribution with it out and in.
TEST(DiscriminatingVectors, EqualityBoundariesAreAmbiguousInEveryProfile) {
  const std::vector<double> v1 = {0.5, 0.375, 0.125};
  struct Boundary {
    double top_p;
    int32_t token;
  };
  for (const Boundary& b : {Boundary{0.5, 1}, Boundary{0.875, 2}}) {
    const SamplingParams params = Params(1, -1, b.top_p, 0);
    for (const Profile* profile : AllProfiles()) {
      const std::string where = "V1 " + Describe(params, profile->name);
      const ProcessedDistribution computed = Compute(LogitsOf(v1), params, *profile);
      EXPECT_EQ(computed.ambiguous, std::vector<int32_t>{b.token}) << where;
      const ProcessedDistribution out = Compute(LogitsOf(v1), params, *profile, AmbiguousPolicy::kAllOut);
      const ProcessedDistribution in = Compute(LogitsOf(v1), params, *profile, AmbiguousPolicy::kAllIn);
      EXPECT_FALSE(out.IsKept(b.token)) << where;
      EXPECT_EQ(static_cast<int32_t>(out.kept.size()), b.token) << where;
      if (profile->top_p_mass == TopPMass::kRenormalize) {
        EXPECT_TRUE(in.IsKept(b.token)) << where;
        EXPECT_EQ(static_cast<int32_t>(in.kept.size()), b.token + 1) << where;
      }
      for (const ProcessedDistribution* d : {&computed, &out, &in}) {
        EXPECT_NEAR(static_cast<double>(CompensatedTotal(d->prob) - 1.0L), 0.0, 1e-15) << where;
      }
    }
  }
}

// Equal logits give exactly dyadic probabilities, so the comparison rule itself is visible: with four tokens of
// 0.25 and top_p = 0.5 the third token has mass above exactly 0.5.
TEST(TopPComparison, StrictNonStrictAndPivotOnAnExactBoundary) {
  const std::vector<float> row = {0, 0, 0, 0};
  const SamplingParams params = Params(1, -1, 0.5, 0);
  ExpectDistribution(Compute(row, params, P("vllm")), {{0, 1}, {0.5, 0.5}, {0, 1, 2, 3}}, "vllm", 0);
  ExpectDistribution(Compute(row, params, P("sglang-torch")), {{0, 1, 2}, {1.0 / 3, 1.0 / 3, 1.0 / 3}, {0, 1, 2, 3}},
                     "sglang-torch", 1e-18);
  ExpectDistribution(Compute(row, params, P("flashinfer-joint")), {{0, 1, 2, 3}, {0.25, 0.25, 0.25, 0.25}, {}},
                     "flashinfer-joint", 0);
}

TEST(DegenerateRows, SingleTokenRowIsCertain) {
  for (const Profile* profile : AllProfiles()) {
    for (const SamplingParams& params : {Params(1, -1, 1, 0), Params(0.7, 1, 0.3, 0.9), Params(1.5, 5, 0.01, 1)}) {
      const ProcessedDistribution dist = Compute({3.5f}, params, *profile);
      ExpectDistribution(dist, {{0}, {1.0}, {}}, Describe(params, profile->name), 0);
    }
  }
}

TEST(DegenerateRows, InvalidRowsAreTypedErrors) {
  const std::vector<std::pair<std::string, std::vector<float>>> rows = {
      {"all -inf", {-kInf, -kInf, -kInf}},
      {"NaN", {1.0f, kNan, 2.0f}},
      {"NaN beside +inf", {kInf, kNan}},
      {"empty", {}},
  };
  for (const Profile* profile : AllProfiles()) {
    for (const auto& [name, row] : rows) {
      Result<ProcessedDistribution> result = ComputeDistribution(LogitsView::Fp32(row), {}, *profile);
      ASSERT_FALSE(result.ok()) << name << " " << profile->name;
      EXPECT_EQ(result.error().code, ErrorCode::kInvalidRow) << name << " " << profile->name;
    }
  }
  const std::vector<uint16_t> bf16_nan = {0x3f80, 0x7fc0};
  const std::vector<uint16_t> fp16_nan = {0x3c00, 0x7e00};
  EXPECT_EQ(ComputeDistribution(LogitsView::Bf16(bf16_nan), {}, P("vllm")).error().code, ErrorCode::kInvalidRow);
  EXPECT_EQ(ComputeDistribution(LogitsView::Fp16(fp16_nan), {}, P("vllm")).error().code, ErrorCode::kInvalidRow);
}

TEST(DegenerateRows, PositiveInfinityTokensShareTheMass) {
  const std::vector<float> row = {1.0f, kInf, 2.0f, -kInf, kInf, 1e38f};
  for (const Profile* profile : AllProfiles()) {
    ExpectDistribution(Compute(row, {}, *profile), {{1, 4}, {0.5, 0.5}, {}}, std::string(profile->name), 0);
    // Filters see the +inf tokens as an exact tie at the top.
    const SamplingParams filtered = Params(1, 1, 0.9, 0.5);
    const ProcessedDistribution dist = Compute(row, filtered, *profile);
    ASSERT_FALSE(dist.kept.empty());
    EXPECT_EQ(dist.kept.front(), 1) << profile->name;
    for (int32_t token : dist.kept) EXPECT_TRUE(token == 1 || token == 4) << profile->name;
  }
}

TEST(DegenerateRows, NegativeInfinityTokensAreNeverKept) {
  const std::vector<float> row = {-kInf, 0.0f, -kInf, 0.0f};
  for (const Profile* profile : AllProfiles()) {
    ExpectDistribution(Compute(row, Params(1, 3, 1, 0), *profile), {{1, 3}, {0.5, 0.5}, {}},
                       std::string(profile->name), 0);
  }
}

TEST(DegenerateRows, HugeAndTinyMagnitudes) {
  const float max = std::numeric_limits<float>::max();
  // +-FLT_MAX: the gap is far beyond any representable weight.
  ExpectDistribution(Compute({max, -max, max}, {}, P("vllm")), {{0, 2}, {0.5, 0.5}, {}}, "+-FLT_MAX", 0);
  // Two huge logits one fp32 ulp apart: gap 2^104 nats, the lower one vanishes.
  ExpectDistribution(Compute({1e38f, std::nextafter(1e38f, 0.0f)}, {}, P("vllm")), {{0}, {1.0}, {}}, "1e38 ulp", 0);
  // Denormal logits are all but equal: the distribution is uniform to ~1e-45.
  const float denorm = std::numeric_limits<float>::denorm_min();
  ExpectDistribution(Compute({denorm, 0.0f, -denorm, -0.0f}, {}, P("hf")),
                     {{0, 1, 2, 3}, {0.25, 0.25, 0.25, 0.25}, {}}, "denormals", 1e-18);
  // Large but finite gaps keep their (tiny) mass: exp(-200) relative to 1.
  const ProcessedDistribution gap = Compute({0.0f, -200.0f}, {}, P("vllm"));
  ASSERT_EQ(gap.kept.size(), 2u);
  EXPECT_NEAR(static_cast<double>(gap.prob[1] / std::exp(-200.0L)), 1.0, 1e-15);
}

TEST(DegenerateRows, AllEqualRowsAreExactlyUniform) {
  for (int64_t vocab : {2, 3, 1000, 65536}) {
    const std::vector<float> row(static_cast<size_t>(vocab), -3.25f);
    const ProcessedDistribution dist = Compute(row, {}, P("vllm"));
    ASSERT_EQ(static_cast<int64_t>(dist.kept.size()), vocab);
    for (long double p : dist.prob) EXPECT_EQ(p, 1.0L / static_cast<long double>(vocab));
  }
}

TEST(DegenerateRows, LargestVocabularySumsToOne) {
  const int64_t vocab = 1 << 20;
  std::mt19937 rng(7);
  std::normal_distribution<float> normal(0.0f, 3.0f);
  std::vector<float> row(static_cast<size_t>(vocab));
  for (float& x : row) x = normal(rng);
  row[12345] = -kInf;
  for (const SamplingParams& params : {Params(1, -1, 1, 0), Params(0.8, 40, 0.95, 0.02), Params(1.3, -1, 0.999, 0)}) {
    const ProcessedDistribution dist = Compute(row, params, P("vllm"));
    EXPECT_NEAR(static_cast<double>(CompensatedTotal(dist.prob) - 1.0L), 0.0, 1e-15) << Describe(params, "vllm");
    EXPECT_FALSE(dist.IsKept(12345));
  }
}

TEST(Temperature, ZeroAndBelowTheProfileThresholdAreGreedyWithLowestIdTieBreak) {
  const std::vector<float> row = {1.0f, 3.0f, 3.0f, 2.0f};
  for (const Profile* profile : AllProfiles()) {
    if (!profile->temperature_zero_allowed) continue;
    const ProcessedDistribution dist = Compute(row, Params(0, -1, 1, 0), *profile);
    EXPECT_TRUE(dist.greedy) << profile->name;
    // llama-cpp's greedy keeps the first maximal logit of its (possibly sorted) array: the tied maxima ambiguous.
    const std::vector<int32_t> ambiguous =
        profile->greedy_ties_by_position ? std::vector<int32_t>{1, 2} : std::vector<int32_t>{};
    ExpectDistribution(dist, {{1}, {1.0}, ambiguous}, std::string(profile->name), 0);
  }
  EXPECT_TRUE(Compute(row, Params(0.99e-5, -1, 1, 0), P("vllm")).greedy);
  EXPECT_FALSE(Compute(row, Params(1e-5, -1, 1, 0), P("vllm")).greedy);  // _SAMPLING_EPS itself samples
  EXPECT_TRUE(Compute(row, Params(1e-4, -1, 1, 0), P("trtllm-torch")).greedy);  // T <= 1e-4
  EXPECT_TRUE(Compute(row, Params(0.9e-6, -1, 1, 0), P("sglang-torch")).greedy);
  EXPECT_FALSE(Compute(row, Params(1e-6, -1, 1, 0), P("sglang-torch")).greedy);
}

TEST(Temperature, NearZeroSamplesTheTiedMaximaEvenly) {
  // T = 1e-5 in vllm is not greedy: the tied maxima share the mass, the next logit (1 below) is exp(-1e5) away.
  const ProcessedDistribution dist = Compute({1.0f, 3.0f, 3.0f, 2.0f}, Params(1e-5, -1, 1, 0), P("vllm"));
  ASSERT_EQ(dist.kept.size(), 2u);  // exp(-100000) is below the long double range
  EXPECT_EQ(dist.prob[0], 0.5L);
  EXPECT_EQ(dist.prob[1], 0.5L);
  // A gap of 1e-5 at T = 1e-5 is exactly one nat.
  const ProcessedDistribution nat = Compute({0.0f, -1e-5f}, Params(1e-5, -1, 1, 0), P("vllm"));
  const long double ratio = nat.prob[1] / nat.prob[0];
  EXPECT_NEAR(static_cast<double>(ratio), std::exp(static_cast<double>(-1e-5f) / 1e-5), 1e-15);
}

TEST(Greedy, TopKOneAndTopPZeroFollowTheProfile) {
  const std::vector<float> row = {2.0f, 2.0f, 1.0f};
  // Greedy path: one token, lowest id.
  EXPECT_TRUE(Compute(row, Params(1, 1, 1, 0), P("trtllm-torch")).greedy);
  EXPECT_TRUE(Compute(row, Params(1, 1, 1, 0), P("sglang-torch")).greedy);
  EXPECT_TRUE(Compute(row, Params(1, -1, 0, 0), P("hf")).greedy);
  EXPECT_TRUE(Compute(row, Params(1, -1, 0, 0), P("trtllm-torch")).greedy);
  // top_k = 1 as a filter: tie-keeping profiles keep every maximal token.
  ExpectDistribution(Compute(row, Params(1, 1, 1, 0), P("hf")), {{0, 1}, {0.5, 0.5}, {}}, "hf top_k=1", 0);
  ExpectDistribution(Compute(row, Params(1, 1, 1, 0), P("vllm")), {{0, 1}, {0.5, 0.5}, {}}, "vllm top_k=1", 0);
  ExpectDistribution(Compute(row, Params(1, 1, 1, 0), P("vllm-triton")), {{0}, {1.0}, {0, 1}}, "vllm-triton top_k=1", 0);
}

// Disabled values are exact no-ops: the distribution is bit-identical to the one without the filter.
TEST(DisabledValues, AreBitIdenticalNoOps) {
  std::mt19937 rng(3);
  std::normal_distribution<float> normal(0.0f, 2.0f);
  std::vector<float> row(5000);
  for (float& x : row) x = normal(rng);
  row[17] = row[18];  // a tie
  row[99] = -kInf;
  for (const Profile* profile : AllProfiles()) {
    const ProcessedDistribution base = Compute(row, Params(0.9, -1, 1.0, 0.0), *profile);
    std::vector<SamplingParams> same;
    if (profile->max_top_k == 0) {  // tokenspeed refuses every k >= 128: -1 is its only disabled encoding
      same = {Params(0.9, 5000, 1.0, 0.0), Params(0.9, 5001, 1.0, 0.0), Params(0.9, 1 << 30, 1.0, 0.0),
              Params(0.9, 4999, 1.0, 0.0)};
    }
    if (profile->top_k_zero_disables) same.push_back(Params(0.9, 0, 1.0, 0.0));
    for (const SamplingParams& params : same) {
      const ProcessedDistribution dist = Compute(row, params, *profile);  // k = 4999 = tokens of positive weight
      EXPECT_EQ(dist.kept, base.kept) << Describe(params, profile->name);
      EXPECT_TRUE(dist.prob == base.prob) << Describe(params, profile->name);
      EXPECT_TRUE(dist.ambiguous.empty()) << Describe(params, profile->name);
    }
  }
}

TEST(Invariants, MassSumsToOneAndPoliciesNest) {
  std::mt19937 rng(11);
  for (int trial = 0; trial < 60; ++trial) {
    const int vocab = std::uniform_int_distribution<int>(1, 3000)(rng);
    const float scale = std::uniform_real_distribution<float>(0.01f, 20.0f)(rng);
    std::normal_distribution<float> normal(0.0f, scale);
    std::vector<float> row(static_cast<size_t>(vocab));
    for (float& x : row) x = trial % 5 == 0 ? std::round(normal(rng)) : normal(rng);  // rounded rows have ties
    const SamplingParams params =
        Params(std::uniform_real_distribution<double>(0.05, 2.0)(rng), std::uniform_int_distribution<int>(-1, 60)(rng),
               std::uniform_real_distribution<double>(0.01, 1.0)(rng),
               trial % 2 ? std::uniform_real_distribution<double>(0.0, 0.5)(rng) : 0.0);
    for (const Profile* profile : AllProfiles()) {
      if (ValidateParams(params, *profile)) continue;
      const std::string where = Describe(params, profile->name) + " vocab=" + std::to_string(vocab);
      const ProcessedDistribution computed = Compute(row, params, *profile);
      const ProcessedDistribution in = Compute(row, params, *profile, AmbiguousPolicy::kAllIn);
      const ProcessedDistribution out = Compute(row, params, *profile, AmbiguousPolicy::kAllOut);
      for (const ProcessedDistribution* d : {&computed, &in, &out}) {
        ASSERT_FALSE(d->kept.empty()) << where;
        EXPECT_NEAR(static_cast<double>(CompensatedTotal(d->prob) - 1.0L), 0.0, 1e-15) << where;
        EXPECT_TRUE(std::is_sorted(d->kept.begin(), d->kept.end())) << where;
      }
      for (int32_t token : out.kept) EXPECT_TRUE(computed.IsKept(token)) << where << " token " << token;
      for (int32_t token : computed.kept) EXPECT_TRUE(in.IsKept(token)) << where << " token " << token;
      for (int32_t token : in.kept) {
        EXPECT_TRUE(out.IsKept(token) || computed.IsAmbiguous(token)) << where << " token " << token;
      }
    }
  }
}

TEST(Margins, MinPOnAndOffTheBoundary) {
  // p1 / p0 = exp(fp32(-ln 2)) = 0.5 (1 + ~1e-8): within a few ulps of min_p * p_max for min_p = 0.5.
  const std::vector<float> row = {0.0f, static_cast<float>(-std::log(2.0)), -5.0f};
  const ProcessedDistribution on = Compute(row, Params(1, -1, 1, 0.5), P("vllm"));
  EXPECT_TRUE(on.IsAmbiguous(1));
  bool found = false;
  for (const Decision& d : on.boundary) {
    if (d.token == 1 && d.filter == Filter::kMinP) {
      found = true;
      EXPECT_LT(d.margin_ulps, 4.0);
    }
  }
  EXPECT_TRUE(found);
  // min_p 1e-4 above 0.5: ~1700 ulps away, decided, dropped.
  const ProcessedDistribution off = Compute(row, Params(1, -1, 1, 0.5 * (1 + 1e-4)), P("vllm"));
  EXPECT_FALSE(off.IsAmbiguous(1));
  EXPECT_FALSE(off.IsKept(1));
  for (const Decision& d : off.boundary) {
    if (d.token == 1) {
      EXPECT_GT(d.margin_ulps, 1000.0);
    }
  }
}

TEST(Margins, TopPOnAndOffTheBoundary) {
  const std::vector<float> row = LogitsOf({0.5, 0.375, 0.125});
  const ProcessedDistribution on = Compute(row, Params(1, -1, 0.5, 0), P("flashinfer-joint"));
  for (const Decision& d : on.boundary) {
    if (d.token == 1) {
      EXPECT_LT(d.margin_ulps, 8.0);  // |mass above - 0.5| is a few fp32-log roundings
    }
  }
  // 0.5 + 2^-10 is 2^14 ulps of fp32(0.5) away.
  const ProcessedDistribution off = Compute(row, Params(1, -1, 0.5 + 0x1p-10, 0), P("flashinfer-joint"));
  EXPECT_TRUE(off.ambiguous.empty());
  for (const Decision& d : off.boundary) {
    if (d.token == 1) {
      EXPECT_NEAR(d.margin_ulps, 16384.0, 16.0);
    }
  }
}

TEST(Margins, TopKNearTiesDependOnWhatIsCompared) {
  const std::vector<float> row = {1.0f, std::nextafter(1.0f, 0.0f), 0.5f};
  // Unscaled logits are compared exactly: one ulp apart is decided.
  ExpectDistribution(Compute(row, Params(1, 1, 1, 0), P("vllm")), {{0}, {1.0}, {}}, "vllm T=1", 0);
  // fp32(x / T) can merge them: ambiguous.
  const ProcessedDistribution scaled = Compute(row, Params(0.7, 1, 1, 0), P("vllm"));
  EXPECT_EQ(scaled.kept, std::vector<int32_t>{0});
  EXPECT_EQ(scaled.ambiguous, std::vector<int32_t>{1});
  // Probabilities are compared in fp32 even at T = 1: ambiguous.
  const ProcessedDistribution probs = Compute(row, Params(1, 1, 1, 0), P("flashinfer-joint"));
  EXPECT_EQ(probs.ambiguous, std::vector<int32_t>{1});
}

// flashinfer-topk-first ranks logits for top-k only where top-p runs beside it (top_k_top_p_sampling_from_logits masks
// logits); a request with top-k alone goes to top_k_sampling_from_probs, a pivot on fp32 probabilities (vLLM's
// flashinfer_sample), where one-ulp-apart logits can tie. The H100 run's gen/1 (docs/conformance.md) drew such a token.
TEST(Margins, FlashinferTopkFirstRanksProbabilitiesForTopKAlone) {
  const std::vector<float> row = {1.0f, std::nextafter(1.0f, 0.0f), 0.5f};
  const Profile& topk_first = P("flashinfer-topk-first");
  EXPECT_EQ(Compute(row, Params(1, 1, 1, 0), topk_first).ambiguous, std::vector<int32_t>{1}) << "top-k alone";
  EXPECT_EQ(Compute(row, Params(1, 1, 1, 0), topk_first).ambiguous,
            Compute(row, Params(1, 1, 1, 0), P("flashinfer-joint")).ambiguous);
  // With top-p the logits mask decides: one ulp apart is decided exactly (token 0 alone is kept by top-k).
  const ProcessedDistribution with_p = Compute(row, Params(1, 1, 0.99, 0), topk_first);
  EXPECT_EQ(with_p.kept, std::vector<int32_t>{0});
  EXPECT_TRUE(with_p.ambiguous.empty());
}

TEST(StorageFormats, Bf16AndFp16RowsEqualTheirWidenedFp32Rows) {
  std::mt19937 rng(5);
  std::normal_distribution<float> normal(0.0f, 2.0f);
  std::vector<uint16_t> bf16(4000), fp16(4000);
  std::vector<float> bf16_wide, fp16_wide;
  for (size_t i = 0; i < bf16.size(); ++i) {
    const float x = normal(rng);
    bf16[i] = FloatToBFloat16(x);
    fp16[i] = FloatToFloat16(x);
    bf16_wide.push_back(BFloat16ToFloat(bf16[i]));
    fp16_wide.push_back(Float16ToFloat(fp16[i]));
  }
  const SamplingParams params = Params(0.8, 50, 0.9, 0.01);
  for (const Profile* profile : AllProfiles()) {
    const auto a = ComputeDistribution(LogitsView::Bf16(bf16), params, *profile);
    const ProcessedDistribution b = Compute(bf16_wide, params, *profile);
    ASSERT_TRUE(a.ok());
    EXPECT_EQ(a->kept, b.kept);
    EXPECT_TRUE(a->prob == b.prob);
    const auto c = ComputeDistribution(LogitsView::Fp16(fp16), params, *profile);
    const ProcessedDistribution d = Compute(fp16_wide, params, *profile);
    ASSERT_TRUE(c.ok());
    EXPECT_EQ(c->kept, d.kept);
    EXPECT_TRUE(c->prob == d.prob);
  }
}

TEST(Profiles, NamesAreUniqueAndFindable) {
  std::map<std::string, int> seen;
  for (const Profile* profile : AllProfiles()) {
    EXPECT_EQ(FindProfile(profile->name), profile);
    EXPECT_EQ(++seen[std::string(profile->name)], 1) << profile->name;
    EXPECT_FALSE(profile->summary.empty());
    EXPECT_FALSE(profile->source.empty());
  }
  for (const char* required : {"hf", "vllm", "vllm-api", "vllm-triton", "vllm-api-triton", "flashinfer-topk-first",
                               "flashinfer-joint",
                               "trtllm-torch", "sglang-torch", "sglang-flashinfer"}) {
    EXPECT_NE(FindProfile(required), nullptr) << required;
  }
  EXPECT_EQ(FindProfile("vLLM"), nullptr);
}

// One lookup and one message for a name no profile has, whichever library or command asks.
TEST(Profiles, AnUnknownNameIsOneMessageListingEveryProfile) {
  const Result<const Profile*> known = ProfileByName("hf");
  ASSERT_TRUE(known.ok());
  EXPECT_EQ(*known, FindProfile("hf"));
  const Result<const Profile*> unknown = ProfileByName("vLLM");
  ASSERT_FALSE(unknown.ok());
  EXPECT_EQ(unknown.error().code, ErrorCode::kInvalidArgument);
  EXPECT_EQ(unknown.error().message, "unknown profile 'vLLM' (known: " + KnownProfileNames() + ")");
  for (const Profile* profile : AllProfiles()) {
    EXPECT_NE(KnownProfileNames().find(std::string(profile->name)), std::string::npos) << profile->name;
  }
}

}  // namespace
// vLLM's Triton kernel masks nothing on a row whose finite logits are all equal (Profile::tied_row_unmasked,
// topk_topp_triton.py:285-366, 449-516, 676-677, 830-831 at 568afb3a; measured on an H100: zeros(1, 4), k = 2 kept
// 4). A partly tied row keeps exactly k; the other profiles keep their own tie rules.
TEST(TiedRows, TritonKeepsAFullyTiedRowWholeAndAPartlyTiedRowToExactlyK) {
  const std::vector<float> flat(4, 0.0f);
  const Expected whole{{0, 1, 2, 3}, {0.25, 0.25, 0.25, 0.25}, {}};
  for (const char* name : {"vllm-triton", "vllm-api-triton"}) {
    ExpectDistribution(Compute(flat, Params(1, 2, 1, 0), P(name)), whole, std::string(name) + " zeros k=2", 0);
    ExpectDistribution(Compute(flat, Params(1, 2, 0.5, 0), P(name)), whole, std::string(name) + " zeros k=2 p=0.5", 0);
    ExpectDistribution(Compute(flat, Params(1, -1, 0.5, 0), P(name)), whole, std::string(name) + " zeros p=0.5", 0);
    ExpectDistribution(Compute(flat, Params(0.7, 3, 0.3, 0), P(name)), whole, std::string(name) + " zeros T=0.7", 0);
    ExpectDistribution(Compute({0.0f, 0.0f, 0.0f, -1.0f}, Params(1, 2, 1, 0), P(name)), {{0, 1}, {0.5, 0.5}, {0, 1, 2}},
                       std::string(name) + " partly tied k=2", 0);
    // -inf entries do not count; min-p's masks make the kernel's row tied; an integer logit keeps the statistics
    // exact.
    ExpectDistribution(Compute({-kInf, 2.0f, 2.0f, 2.0f}, Params(1, 2, 1, 0), P(name)),
                       {{1, 2, 3}, {1.0 / 3, 1.0 / 3, 1.0 / 3}, {}}, std::string(name) + " -inf and 2s", 0);
    ExpectDistribution(Compute({1.0f, 1.0f, 1.0f, -5.0f}, Params(1, 2, 0.4, 0.5), P(name)),
                       {{0, 1, 2}, {1.0 / 3, 1.0 / 3, 1.0 / 3}, {}}, std::string(name) + " tied after min-p", 0);
    // Without min-p a finite logit far below the others is in the kernel's row (its weight underflows only here).
    ExpectDistribution(Compute({0.0f, 0.0f, 0.0f, -1e30f}, Params(1, 2, 1, 0), P(name)),
                       {{0, 1}, {0.5, 0.5}, {0, 1, 2}}, std::string(name) + " -1e30 is finite", 0);
    // Where fp32 statistics may put the outlier pivot below the tied value (1 / 0.7 is not short), the row is kept
    // whole as computed, the exact-k reading is the all-out one, and the whole row is ambiguous.
    const std::vector<float> ones(4, 1.0f);
    ExpectDistribution(Compute(ones, Params(0.7, 2, 1, 0), P(name)),
                       {{0, 1, 2, 3}, {0.25, 0.25, 0.25, 0.25}, {0, 1, 2, 3}}, std::string(name) + " ones T=0.7", 0);
    EXPECT_EQ(Compute(ones, Params(0.7, 2, 1, 0), P(name), AmbiguousPolicy::kAllOut).kept, (std::vector<int32_t>{0, 1}))
        << name;
    ExpectDistribution(Compute(ones, Params(1, 2, 1, 0), P(name)), whole, std::string(name) + " ones T=1", 0);
    // The rule reads the first tile: a tied row past token 255 with a nonzero value is not certain.
    std::vector<float> late(300, -kInf);
    late[280] = late[290] = late[299] = 1.0f;
    EXPECT_EQ(Compute(late, Params(1, 2, 1, 0), P(name)).ambiguous, (std::vector<int32_t>{280, 290, 299})) << name;
    late[280] = late[290] = late[299] = 0.0f;
    EXPECT_TRUE(Compute(late, Params(1, 2, 1, 0), P(name)).ambiguous.empty()) << name;
  }
  // Unchanged elsewhere: vllm keeps the tie group, the other exact-k profiles keep 2, strict top-p cuts by position.
  ExpectDistribution(Compute(flat, Params(1, 2, 1, 0), P("vllm")), whole, "vllm zeros k=2", 0);
  ExpectDistribution(Compute(flat, Params(1, -1, 0.5, 0), P("vllm")), {{0, 1}, {0.5, 0.5}, {0, 1, 2, 3}},
                     "vllm zeros p=0.5", 0);
  for (const char* name : {"trtllm-cuda", "sglang-torch", "llama-cpp"}) {
    ExpectDistribution(Compute(flat, Params(1, 2, 1, 0), P(name)), {{0, 1}, {0.5, 0.5}, {0, 1, 2, 3}},
                       std::string(name) + " zeros k=2", 0);
  }
  for (const Profile* profile : AllProfiles()) {
    const bool triton = profile->name == "vllm-triton" || profile->name == "vllm-api-triton";
    EXPECT_EQ(profile->tied_row_unmasked, triton) << profile->name;
  }
}

// Found by properties/ (tied-tokens-identical-probability): a tie group cut by position at the very top of the
// order is ambiguous as a whole, its first member included. Row [-16, -16], T = 0.5, top_p = 1/64. (The vLLM
// Triton profiles keep this fully tied row whole: TiedRows above.)
TEST(Ambiguity, TieGroupCutAtTheTopIsAmbiguousAsAWhole) {
  const std::vector<float> row = {-16.0f, -16.0f};
  for (const char* name : {"vllm", "hf", "trtllm-torch", "sglang-torch"}) {
    const auto dist = ComputeDistribution(LogitsView::Fp32(row), Params(0.5, -1, 0.015625, 0), *FindProfile(name));
    ASSERT_TRUE(dist.ok()) << name;
    EXPECT_EQ(dist->kept, std::vector<int32_t>{0}) << name;
    EXPECT_EQ(dist->ambiguous, (std::vector<int32_t>{0, 1})) << name;
  }
}

}  // namespace samplecheck
