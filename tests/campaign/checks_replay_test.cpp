// The replay family (checks_replay.cpp) on hand-built evidence: a side equal to the reference passes; a firm token
// dropped, a logprob off by more than the fp32 tolerance, a NaN fail; a token inside the numerics margin is drift;
// a silent -inf label fails and a restored one is a guard event; the agreement's causes; the aggregate's bound; the
// fields read back to the same outcomes and malformed fields are parse errors.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <vector>

#include "samplecheck/campaign/replay_campaign.h"
#include "samplecheck/checks/checks.h"

namespace samplecheck::harness {
namespace {

constexpr float kMinusInf = -std::numeric_limits<float>::infinity();

// A row, its reference under vllm and the reference's logprobs; a replay evidence of both sides given and equal to it.
struct Fixture {
  std::vector<float> row;
  SamplingParams params;
  ProcessedDistribution ref;
  std::vector<float> engine_lp, trainer_lp;
  std::vector<int32_t> rollout;
  ReplayEvidence ev;
  CaseResult planned;

  Fixture(std::vector<float> logits, SamplingParams p) : row(std::move(logits)), params(p) {
    ref = *ComputeDistribution(LogitsView::Fp32(row), params, *FindProfile("vllm"));
    engine_lp.assign(row.size(), kMinusInf);
    for (size_t i = 0; i < ref.kept.size(); ++i) engine_lp[size_t(ref.kept[i])] = float(std::log(ref.prob[i]));
    trainer_lp = engine_lp;
    rollout = {ref.kept.front(), ref.kept.front(), ref.kept.back()};
    ev.profile = FindProfile("vllm");
    ev.params = params;
    ev.dtype = "fp32";
    ev.trainer_logits = "same";
    ev.engine = {true, "engine", row, engine_lp, &ref, false};
    ev.trainer = {true, "trainer", row, trainer_lp, &ref, false};
    ev.label = ref.kept.back();
    ev.label_choice = "boundary";
    ev.labels_sent = true;
    ev.rollout = rollout;
    planned.name = "row";
  }

  CaseResult Judge() {
    ev.engine.logprobs = engine_lp;
    ev.trainer.logprobs = trainer_lp;
    CaseResult r = planned;
    const stats::BinningPlan none;
    EXPECT_TRUE(RunCaseChecks(CaseEvidence{.planned = r, .p0 = {}, .binning = none, .histogram = {},
                                           .sampler_error = {}, .replay = &ev},
                              r)
                    .ok());
    return r;
  }
};

uint64_t Violations(const CaseResult& r, const std::string& check) {
  uint64_t v = 0;
  for (const CheckOutcome* o : r.OutcomesOf(check)) v += o->violations;
  return v;
}

// Logits 3, 2, 1, 0, ... with top_k = 3: tokens 0..2 kept, firmly (distinct unscaled logits).
Fixture TopK() {
  SamplingParams p;
  p.top_k = 3;
  return Fixture({3.0f, 2.0f, 1.0f, 0.0f, -1.0f, -2.0f}, p);
}

TEST(ReplayChecks, ASideEqualToTheReferencePassesEveryCheck) {
  Fixture f = TopK();
  const CaseResult r = f.Judge();
  for (const char* check : {"replay-engine", "replay-trainer", "replay-label", "replay-agreement"}) {
    ASSERT_EQ(r.OutcomesOf(check).size(), 1u) << check;
    EXPECT_EQ(Violations(r, check), 0u) << check << ": " << r.OutcomesOf(check).front()->finding;
  }
  EXPECT_TRUE(r.OutcomesOf("replay-ratio-bias").empty());  // only on the aggregate case
  EXPECT_NEAR(ReadJsonNumber(r.checks["replay_agreement"]["rollout"]["mean_ratio"]), 1.0, 1e-12);
}

TEST(ReplayChecks, AFirmTokenDroppedFailsWithItsMargin) {
  Fixture f = TopK();
  f.trainer_lp[2] = kMinusInf;  // drop the k-th token: renormalize the rest over {0, 1}
  const float s = std::log(std::exp(f.trainer_lp[0]) + std::exp(f.trainer_lp[1]));
  f.trainer_lp[0] -= s;
  f.trainer_lp[1] -= s;
  const CaseResult r = f.Judge();
  EXPECT_EQ(Violations(r, "replay-trainer"), 1u);
  EXPECT_NE(r.OutcomesOf("replay-trainer").front()->finding.find("token 2 dropped"), std::string::npos)
      << r.OutcomesOf("replay-trainer").front()->finding;
  EXPECT_EQ(Violations(r, "replay-agreement"), 1u);  // both references keep it: "beyond"
  EXPECT_EQ(Violations(r, "replay-engine"), 0u);
}

TEST(ReplayChecks, LogprobsBeyondTheFp32ToleranceFailAndWithinItPass) {
  Fixture f = TopK();
  for (int32_t t : f.ref.kept) f.trainer_lp[size_t(t)] += 1e-7f;
  EXPECT_EQ(Violations(f.Judge(), "replay-trainer"), 0u);
  for (int32_t t : f.ref.kept) f.trainer_lp[size_t(t)] += 1e-3f;
  const CaseResult r = f.Judge();
  EXPECT_EQ(Violations(r, "replay-trainer"), 3u);
  EXPECT_NE(r.OutcomesOf("replay-trainer").front()->finding.find("logprob(s) off"), std::string::npos);
  f.trainer_lp[0] = std::numeric_limits<float>::quiet_NaN();
  EXPECT_GE(Violations(f.Judge(), "replay-trainer"), 1u);
}

TEST(ReplayChecks, ATokenInsideTheNumericsMarginIsDriftNotAFailure) {
  // Near-equal (distinct) probabilities at the top-p boundary: the numerics model makes the boundary ambiguous.
  std::vector<float> row(64);
  for (size_t i = 0; i < row.size(); ++i) row[i] = 1e-7f * float(i);
  SamplingParams p;
  p.top_p = 0.5;
  Fixture f(row, p);
  ASSERT_FALSE(f.ref.ambiguous.empty());
  const int32_t t = f.ref.ambiguous.front();
  const bool kept = f.ref.IsKept(t);
  f.trainer_lp[size_t(t)] = kept ? kMinusInf : -4.0f;
  std::vector<int32_t> set;
  for (size_t i = 0; i < row.size(); ++i) {
    if (std::isfinite(f.trainer_lp[i])) set.push_back(int32_t(i));
  }
  const auto lp = LogprobsOver(row, p, set);
  for (int32_t i : set) f.trainer_lp[size_t(i)] = float(lp[size_t(i)]);
  f.ev.label = f.ref.kept.front() == t ? f.ref.kept.back() : f.ref.kept.front();
  const CaseResult r = f.Judge();
  EXPECT_EQ(Violations(r, "replay-trainer"), 0u) << r.OutcomesOf("replay-trainer").front()->finding;
  EXPECT_EQ(r.checks["replay_trainer"]["numeric_drift"].get<uint64_t>(), 1u);
  EXPECT_EQ(r.checks["replay_agreement"]["by_cause"]["numeric_drift"].get<uint64_t>(), 1u);
  EXPECT_EQ(Violations(r, "replay-agreement"), 0u);
}

TEST(ReplayChecks, AnotherMemberOfATieGroupCutByPositionIsTieOrder) {
  // Logits 3, 2, 2, 2, 1 with top_k = 3 under vllm-triton (exactly k): the tie {1, 2, 3} is cut by position; the
  // reference keeps 1 and 2 (lowest ids) and reports the group ambiguous. A side that keeps 1 and 3 is inside it.
  SamplingParams p;
  p.top_k = 3;
  Fixture f({3.0f, 2.0f, 2.0f, 2.0f, 1.0f}, p);
  f.ref = *ComputeDistribution(LogitsView::Fp32(f.row), p, *FindProfile("vllm-triton"));
  ASSERT_EQ(f.ref.kept, (std::vector<int32_t>{0, 1, 2}));
  ASSERT_EQ(f.ref.ambiguous, (std::vector<int32_t>{1, 2, 3}));
  const auto lp = LogprobsOver(f.row, p, std::vector<int32_t>{0, 1, 3});
  f.trainer_lp.assign(f.row.size(), kMinusInf);
  for (int32_t t : {0, 1, 3}) f.trainer_lp[size_t(t)] = float(lp[size_t(t)]);
  const auto engine = LogprobsOver(f.row, p, std::vector<int32_t>{0, 1, 2});
  f.engine_lp.assign(f.row.size(), kMinusInf);
  for (int32_t t : {0, 1, 2}) f.engine_lp[size_t(t)] = float(engine[size_t(t)]);
  f.ev.profile = FindProfile("vllm-triton");
  f.ev.label = 0;
  const CaseResult r = f.Judge();
  EXPECT_EQ(Violations(r, "replay-engine"), 0u);
  EXPECT_EQ(Violations(r, "replay-trainer"), 0u) << r.OutcomesOf("replay-trainer").front()->finding;
  EXPECT_EQ(r.checks["replay_agreement"]["by_cause"]["tie_order"].get<uint64_t>(), 2u);
  EXPECT_EQ(Violations(r, "replay-agreement"), 0u);
}

TEST(ReplayChecks, ASilentMinusInfLabelFailsAndARestoredOneIsAGuardEvent) {
  Fixture f = TopK();
  // The trainer saw other logits that put token 3 above token 2: its reference keeps {0, 1, 3} (input drift).
  std::vector<float> trainer_row = f.row;
  trainer_row[3] = 1.5f;
  ProcessedDistribution tref = *ComputeDistribution(LogitsView::Fp32(trainer_row), f.params, *FindProfile("vllm"));
  f.ev.trainer.row = trainer_row;
  f.ev.trainer.reference = &tref;
  f.ev.label = 2;
  ASSERT_EQ(tref.kept, (std::vector<int32_t>{0, 1, 3}));
  const std::vector<int32_t> kept_plus_label = {0, 1, 2, 3};
  auto guarded = LogprobsOver(trainer_row, f.params, kept_plus_label);
  for (size_t t = 0; t < f.row.size(); ++t) f.trainer_lp[t] = float(guarded[t]);
  CaseResult r = f.Judge();
  EXPECT_EQ(Violations(r, "replay-label"), 0u);
  EXPECT_TRUE(r.checks["replay_label"]["guard_event"].get<bool>());
  EXPECT_EQ(Violations(r, "replay-trainer"), 0u) << r.OutcomesOf("replay-trainer").front()->finding;
  EXPECT_EQ(r.checks["replay_agreement"]["by_cause"]["input"].get<uint64_t>(), 1u);  // token 3
  EXPECT_EQ(Violations(r, "replay-agreement"), 0u);
  // Without the guard the label is -inf: a silent drop, whatever the reference says.
  auto plain = LogprobsOver(trainer_row, f.params, std::vector<int32_t>{0, 1, 3});
  for (size_t t = 0; t < f.row.size(); ++t) f.trainer_lp[t] = float(plain[t]);
  r = f.Judge();
  EXPECT_EQ(Violations(r, "replay-label"), 1u);
  EXPECT_TRUE(r.checks["replay_label"]["silent_drop"].get<bool>());
  EXPECT_EQ(Violations(r, "replay-trainer"), 0u);  // right for its own row
  EXPECT_EQ(r.checks["replay_agreement"]["by_cause"]["input"].get<uint64_t>(), 2u);  // tokens 2 and 3
  EXPECT_EQ(Violations(r, "replay-agreement"), 0u);
}

TEST(ReplayChecks, TheAggregateBoundsTheRatioBiasOfRowsOnTheSameLogits) {
  Fixture f = TopK();
  for (int32_t t : f.ref.kept) f.trainer_lp[size_t(t)] += std::log(0.9f);  // an unrenormalized-like replay
  std::vector<CaseResult> rows = {f.Judge()};
  ReplayEvidence agg;
  agg.role = ReplayRole::kAggregate;
  agg.max_ratio_bias = 0.01;
  agg.rows = rows;
  CaseResult a;
  a.name = kReplayAggregateCase;
  const stats::BinningPlan none;
  ASSERT_TRUE(RunCaseChecks(CaseEvidence{.planned = a, .p0 = {}, .binning = none, .histogram = {},
                                         .sampler_error = {}, .replay = &agg},
                            a)
                  .ok());
  EXPECT_EQ(Violations(a, "replay-ratio-bias"), 1u);
  EXPECT_NEAR(ReadJsonNumber(a.checks["replay_aggregate"]["same_logits"]["mean_ratio"]), 0.9, 1e-6);
  agg.max_ratio_bias = 0.2;
  ASSERT_TRUE(RunCaseChecks(CaseEvidence{.planned = a, .p0 = {}, .binning = none, .histogram = {},
                                         .sampler_error = {}, .replay = &agg},
                            a)
                  .ok());
  EXPECT_EQ(Violations(a, "replay-ratio-bias"), 0u);
}

TEST(ReplayChecks, StoredFieldsReadBackAndMalformedOnesAreParseErrors) {
  Fixture f = TopK();
  f.trainer_lp[2] = kMinusInf;
  const CaseResult r = f.Judge();
  nlohmann::json object = r.checks;
  CaseResult back = f.planned;
  ASSERT_TRUE(ReadCaseChecks(object, back).ok());
  EXPECT_EQ(back.HardViolations(), r.HardViolations());
  object["replay_trainer"].erase("violations");
  EXPECT_EQ(ReadCaseChecks(object, back).error().code, ErrorCode::kParse);
}

}  // namespace
}  // namespace samplecheck::harness
