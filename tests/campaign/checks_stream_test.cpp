// The stream family (checks_stream.cpp), on hand-built evidence over a top-k row's p0: streams under two seeds that
// are independent pass the seed test and identical ones (a stream that ignores its seed) are rejected; a fresh
// instance that draws otherwise fails fresh-handle at that draw; adjacent steps repeated in one alignment are
// rejected by step-repeats; a refusal that names the field passes, a token drawn instead (a silent clamp) or an error
// that does not name the field fails. Fixed seeds: each p-value test here has a false-alarm rate below 1e-6 at the
// thresholds used.
#include <gtest/gtest.h>

#include <random>

#include "case_fixture.h"
#include "samplecheck/campaign/campaign.h"
#include "samplecheck/checks/checks.h"
#include "samplecheck/checks/evidence.h"

namespace samplecheck::harness {
namespace {

using testing::Stream;

double Collision(const std::vector<double>& p) {
  double c = 0;
  for (double x : p) c += x * x;
  return c;
}

struct StreamCase {
  testing::DrawnCase d = testing::Drawn(20000);
  CaseResult Judge(const StreamEvidence& s) {
    CaseResult r = d.pc.result;
    EXPECT_TRUE(RunCaseChecks(CaseEvidence{d.pc.result, d.pc.p0, d.pc.binning, d.histogram, 0, "", nullptr, nullptr,
                                           nullptr, &s},
                              r)
                    .ok());
    return r;
  }
};

const CheckOutcome* Only(const CaseResult& r, const std::string& check) {
  const auto outcomes = r.OutcomesOf(check);
  EXPECT_EQ(outcomes.size(), 1u) << check;
  return outcomes.empty() ? nullptr : outcomes[0];
}

TEST(StreamChecksTest, IndependentSeedsPassAndAStreamThatIgnoresItsSeedIsRejected) {
  StreamCase c;
  const std::vector<int32_t> a = Stream(c.d.pc.p0, 256, 1), b = Stream(c.d.pc.p0, 256, 2);
  const std::vector<double> pi{Collision(c.d.pc.p0)};
  StreamEvidence s;
  s.seed_run = true;
  s.under_a = a;
  s.under_b = b;
  s.match_probability = pi;
  const CheckOutcome* ok = Only(c.Judge(s), "seed-dependence");
  ASSERT_NE(ok, nullptr);
  EXPECT_GT(ok->p_value, 1e-6);
  s.under_b = a;  // the same draws under the other seed
  const CaseResult r = c.Judge(s);
  const CheckOutcome* same = Only(r, "seed-dependence");
  ASSERT_NE(same, nullptr);
  EXPECT_LT(same->p_value, 1e-30);
  EXPECT_NE(same->finding.find("256 of 256 pairs equal"), std::string::npos) << same->finding;
  EXPECT_EQ(r.checks["seed_dependence"]["power_if_ignored"], 1);
}

TEST(StreamChecksTest, SeedTestNotRunSaysWhy) {
  StreamCase c;
  StreamEvidence s;
  s.seed_untested = "one kept token: every seed draws it";
  const CaseResult r = c.Judge(s);
  EXPECT_TRUE(r.OutcomesOf("seed-dependence").empty());
  EXPECT_EQ(r.checks["seed_dependence"]["why"], "one kept token: every seed draws it");
}

TEST(StreamChecksTest, AFreshInstanceThatDrawsOtherwiseFailsAtThatDraw) {
  StreamCase c;
  const std::vector<int32_t> a = Stream(c.d.pc.p0, 64, 5);
  std::vector<int32_t> fresh = a, calls(a.begin(), a.begin() + 16);
  StreamEvidence s;
  s.handles_run = true;
  s.reference = a;
  s.fresh_handle = fresh;
  s.fresh_calls = calls;
  EXPECT_FALSE(Only(c.Judge(s), "fresh-handle")->Fails());
  calls[9] = (calls[9] + 1) % 50;
  s.fresh_calls = calls;
  const CaseResult r = c.Judge(s);
  const CheckOutcome* o = Only(r, "fresh-handle");
  ASSERT_NE(o, nullptr);
  EXPECT_EQ(o->violations, 1u);
  EXPECT_NE(o->finding.find("draw 9"), std::string::npos) << o->finding;
  EXPECT_NE(o->finding.find("one call each"), std::string::npos) << o->finding;
}

TEST(StreamChecksTest, AdjacentStepsRepeatedInOneAlignmentAreRejected) {
  StreamCase c;
  std::vector<int32_t> steps = Stream(c.d.pc.p0, 4096, 11);
  StreamEvidence s;
  s.steps = steps;
  s.repeat_probability = Collision(c.d.pc.p0);
  const CheckOutcome* ok = Only(c.Judge(s), "step-repeats");
  ASSERT_NE(ok, nullptr);
  EXPECT_GT(ok->p_value, 1e-6);
  // A key reused across every other step: steps 2i + 1 and 2i + 2 draw the same token (the odd alignment).
  for (size_t i = 1; i + 1 < steps.size(); i += 2) steps[i + 1] = steps[i];
  s.steps = steps;
  const CaseResult r = c.Judge(s);
  const CheckOutcome* bad = Only(r, "step-repeats");
  ASSERT_NE(bad, nullptr);
  EXPECT_LT(bad->p_value, 1e-30);
  EXPECT_NE(bad->finding.find("odd pairs"), std::string::npos) << bad->finding;
  EXPECT_GT(r.checks["step_repeats"]["even"]["p_value"].get<double>(), 1e-6);  // the other alignment looks fine
}

TEST(StreamChecksTest, CertainRepeatsAreNotTested) {
  StreamCase c;
  const std::vector<int32_t> steps(100, 3);
  StreamEvidence s;
  s.steps = steps;
  s.repeat_probability = 1.0;
  const CaseResult r = c.Judge(s);
  EXPECT_TRUE(r.OutcomesOf("step-repeats").empty());
  EXPECT_FALSE(r.checks["step_repeats"]["tested"].get<bool>());
}

TEST(StreamChecksTest, ARefusalMustFailTheCallAndNameTheField) {
  StreamCase c;
  StreamEvidence s;
  s.refusal_run = true;
  s.refusal_field = "temperature";
  s.refusal_value = "4";
  s.refused = true;
  s.refusal_message = "row 0: temperature = 4 is outside [0, 2] for profile vllm";
  EXPECT_FALSE(Only(c.Judge(s), "refusal")->Fails());
  s.refusal_message = "bad request";
  const CheckOutcome* vague = Only(c.Judge(s), "refusal");
  EXPECT_TRUE(vague->Fails());
  EXPECT_NE(vague->finding.find("does not name temperature"), std::string::npos) << vague->finding;
  s.refused = false;
  s.refusal_message = "token 17";
  const CheckOutcome* clamped = Only(c.Judge(s), "refusal");
  EXPECT_TRUE(clamped->Fails());
  EXPECT_NE(clamped->finding.find("silent clamp"), std::string::npos) << clamped->finding;
}

TEST(StreamChecksTest, NoStreamEvidenceWritesNullFields) {
  StreamCase c;
  CaseResult r = c.d.pc.result;
  ASSERT_TRUE(RunCaseChecks(CaseEvidence{c.d.pc.result, c.d.pc.p0, c.d.pc.binning, c.d.histogram, 0, ""}, r).ok());
  for (const char* key : {"seed_dependence", "fresh_handle", "step_repeats", "refusal"}) {
    ASSERT_TRUE(r.checks.contains(key)) << key;
    EXPECT_TRUE(r.checks[key].is_null()) << key;
  }
}

}  // namespace
}  // namespace samplecheck::harness
