// The agreement family (checks_agreement.cpp): a deterministic sampler whose counting fast path and sampling call
// disagree fails at the first differing draw; equal histograms of a non-deterministic sampler give a two-sample
// p-value that does not reject.
#include <gtest/gtest.h>

#include "case_fixture.h"
#include "samplecheck/campaign/campaign.h"
#include "samplecheck/checks/checks.h"

namespace samplecheck::harness {
namespace {

TEST(AgreementChecksTest, ADeterministicDisagreementFailsAtItsFirstDraw) {
  testing::DrawnCase d = testing::Drawn(65536);
  std::vector<uint64_t> fast = d.histogram, sampled = d.histogram;
  size_t a = 0;
  while (sampled[a] == 0) ++a;
  size_t b = a + 1;
  while (d.pc.p0[b] == 0) ++b;
  --sampled[a];
  ++sampled[b];
  AgreementEvidence agreement{65536, true, fast, sampled, 123, static_cast<int32_t>(a), static_cast<int32_t>(b)};
  EvaluateCase(d.pc, d.histogram, 0, "", nullptr, &agreement);
  const auto outcome = d.pc.result.OutcomesOf("agreement");
  ASSERT_EQ(outcome.size(), 1u);
  EXPECT_TRUE(outcome[0]->Fails());
  EXPECT_NE(outcome[0]->finding.find("first at draw 123: the same row, seed and offset gave token " +
                                     std::to_string(a) + " through CountDraws and token " + std::to_string(b) +
                                     " through Sample: your draws are not a function of (seed, offset)"),
            std::string::npos)
      << outcome[0]->finding;
  // Sample's draw alone differs from Sample's among the others: Sample is the path that is not a function.
  agreement.sampled_alone_token = static_cast<int32_t>(a);
  EvaluateCase(d.pc, d.histogram, 0, "", nullptr, &agreement);
  EXPECT_NE(d.pc.result.OutcomesOf("agreement")[0]->finding.find(
                "gave token " + std::to_string(b) + " through Sample among the case's draws and token " +
                std::to_string(a) + " through Sample in a call of its own"),
            std::string::npos)
      << d.pc.result.OutcomesOf("agreement")[0]->finding;
  // The draw asked again agrees both ways (the bisection's counts differed around it): never "token a counted, a
  // sampled" as if that were a difference.
  agreement.fast_token = agreement.sampled_token = agreement.sampled_alone_token = static_cast<int32_t>(a);
  EvaluateCase(d.pc, d.histogram, 0, "", nullptr, &agreement);
  EXPECT_NE(d.pc.result.OutcomesOf("agreement")[0]->finding.find(
                "no single draw shows it: draw 123 asked again alone gives token " + std::to_string(a) +
                " both ways, so what CountDraws draws depends on how the draws are split into calls"),
            std::string::npos)
      << d.pc.result.OutcomesOf("agreement")[0]->finding;
  agreement = AgreementEvidence{65536, true, fast, fast, -1, 0, 0};
  EvaluateCase(d.pc, d.histogram, 0, "", nullptr, &agreement);
  EXPECT_FALSE(d.pc.result.OutcomesOf("agreement")[0]->Fails());
}

TEST(AgreementChecksTest, ANonDeterministicSamplerGetsATwoSampleTest) {
  testing::DrawnCase d = testing::Drawn(65536);
  AgreementEvidence agreement{65536, false, d.histogram, d.histogram, -1, 0, 0};
  EvaluateCase(d.pc, d.histogram, 0, "", nullptr, &agreement);
  const auto outcome = d.pc.result.OutcomesOf("agreement");
  ASSERT_EQ(outcome.size(), 1u);
  EXPECT_EQ(outcome[0]->kind, CheckOutcome::Kind::kPValue);
  EXPECT_GT(outcome[0]->p_value, 0.5);  // identical histograms: the statistic is 0
}

}  // namespace
}  // namespace samplecheck::harness
