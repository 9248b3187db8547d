// The speculative family (checks_speculative.cpp) on hand-built evidence: the rejection count of a position against
// Binomial(n, 1 - beta), and the request's hard checks, which fail with the finding the campaign gave them.
#include <gtest/gtest.h>

#include "case_fixture.h"
#include "samplecheck/campaign/campaign.h"
#include "samplecheck/checks/checks.h"

namespace samplecheck::harness {
namespace {

CaseResult Judge(const SpecEvidence& spec) {
  testing::DrawnCase d = testing::Drawn(20000);
  CaseResult r = d.pc.result;
  EXPECT_TRUE(RunCaseChecks(CaseEvidence{d.pc.result, d.pc.p0, d.pc.binning, d.histogram, 0, "", nullptr, nullptr,
                                         &spec},
                            r)
                  .ok());
  return r;
}

TEST(SpecChecksTest, RejectionsAreJudgedAgainstOneMinusBeta) {
  SpecEvidence spec;
  spec.role = SpecRole::kPosition;
  spec.position = 2;
  spec.has_rejection_test = true;
  spec.reached = 10000;
  spec.rejected = 1000;
  spec.beta = 0.9;  // expected 1000 rejections
  auto outcome = Judge(spec).OutcomesOf("spec-rejection");
  ASSERT_EQ(outcome.size(), 1u);
  EXPECT_EQ(outcome[0]->scope, "position 2");
  EXPECT_GT(outcome[0]->p_value, 0.5);
  spec.rejected = 1500;  // 16 standard deviations off
  outcome = Judge(spec).OutcomesOf("spec-rejection");
  EXPECT_LT(outcome[0]->p_value, 1e-30);
}

TEST(SpecChecksTest, HardChecksFailWithTheirFinding) {
  SpecEvidence spec;
  spec.role = SpecRole::kLength;
  spec.structure_violations = 2;
  spec.structure_finding = "accepted length 5 outside 0..4";
  spec.scripted_run = true;
  spec.scripted_probes = 6;
  const CaseResult r = Judge(spec);
  ASSERT_EQ(r.OutcomesOf("spec-structure").size(), 1u);
  EXPECT_EQ(r.OutcomesOf("spec-structure")[0]->violations, 2u);
  EXPECT_EQ(r.OutcomesOf("spec-structure")[0]->finding, "accepted length 5 outside 0..4");
  ASSERT_EQ(r.OutcomesOf("spec-scripted").size(), 1u);
  EXPECT_FALSE(r.OutcomesOf("spec-scripted")[0]->Fails());
  EXPECT_TRUE(r.OutcomesOf("spec-determinism").empty());  // not run: null fields, no outcome
}

}  // namespace
}  // namespace samplecheck::harness
