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
  EXPECT_NE(outcome[0]->finding.find("first at draw 123: token " + std::to_string(a) + " counted, " +
                                     std::to_string(b) + " sampled"),
            std::string::npos)
      << outcome[0]->finding;
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
