// Lossy samplers (Capabilities::lossy, `lossy:<spec>`; result.h, ApplyMaxTv): a sampler declared an approximation
// gets a distance, not a pass: its Holm rejections do not fail cases, its report is not a pass until a --max-tv
// judges it, and ApplyMaxTv passes it below a distance its bounds clear and fails it above the distance it has. A
// --max-tv outside (0, 1) is an error naming it. Fixed seed: deterministic.
#include <gtest/gtest.h>

#include "samplecheck/campaign/campaign.h"
#include "samplecheck/samplers/sampler_registry.h"

namespace samplecheck::harness {
namespace {

CampaignReport RunV3(const std::string& spec) {
  // V3 = [0.5, 0.375, 0.125], top_p 0.75: topp-truncated-cdf draws [0.5, 0.25] renormalized: TV 0.095.
  auto suite = ParseSuite(nlohmann::json::parse(R"({"schema": "samplecheck-suite/1", "name": "v3", "seed": 4,
      "alpha": 1e-4, "tv": 0.01, "max_draws": 200000, "min_draws": 200000,
      "cases": [{"name": "V3", "row": {"kind": "dyadic", "vector": "V3"}, "params": {"top_p": 0.75}}]})"),
                          ".", "test");
  EXPECT_TRUE(suite.ok());
  CampaignOptions o;
  o.sampler_spec = spec;
  o.progress = Progress::Mode::kQuiet;
  o.jobs = 1;
  auto report = RunCampaign(*suite, o);
  EXPECT_TRUE(report.ok()) << report.error().message;
  return report.ok() ? *report : CampaignReport{};
}

TEST(Lossy, TheWrapperDeclaresItAndDrawsWhatItWraps) {
  auto lossy = MakeSampler("lossy:exact", {});
  auto exact = MakeSampler("exact", {});
  ASSERT_TRUE(lossy.ok() && exact.ok());
  EXPECT_TRUE((*lossy)->GetCapabilities().lossy);
  EXPECT_FALSE((*exact)->GetCapabilities().lossy);
  EXPECT_EQ((*lossy)->Name(), "lossy:exact:vllm");
  const std::vector<float> row{0.0f, -1.0f, -2.0f};
  SamplingParams p;
  p.seed = 9;
  std::vector<int32_t> a(64), b(64);
  ASSERT_TRUE((*lossy)->SampleRepeated(row, p, a).ok());
  ASSERT_TRUE((*exact)->SampleRepeated(row, p, b).ok());
  EXPECT_EQ(a, b);
  auto bad = MakeSampler("lossy:", {});
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message.find("lossy"), std::string::npos);
}

TEST(Lossy, AnApproximationGetsADistanceNotAFailure) {
  const CampaignReport plain = RunV3("mutant:topp-truncated-cdf");
  EXPECT_FALSE(plain.lossy);
  EXPECT_EQ(plain.Count(CaseStatus::kFail), 1u);  // undeclared, it fails
  CampaignReport r = RunV3("lossy:mutant:topp-truncated-cdf");
  EXPECT_TRUE(r.lossy);
  EXPECT_EQ(r.Count(CaseStatus::kFail), 0u);
  ASSERT_EQ(r.VerdictProblems().size(), 1u);
  EXPECT_NE(r.VerdictProblems()[0].find("measured binned TV"), std::string::npos) << r.VerdictProblems()[0];
  CampaignReport loose = r;
  ASSERT_TRUE(ApplyMaxTv(loose, 0.2).ok());
  EXPECT_TRUE(loose.Passed()) << loose.VerdictProblems().front();
  CampaignReport tight = r;
  ASSERT_TRUE(ApplyMaxTv(tight, 0.05).ok());
  EXPECT_FALSE(tight.Passed());
  EXPECT_EQ(tight.Count(CaseStatus::kFail), 1u);
  const Status out_of_range = ApplyMaxTv(r, 1.5);
  ASSERT_FALSE(out_of_range.ok());
  EXPECT_NE(out_of_range.error().message.find("--max-tv 1.5"), std::string::npos);
}

TEST(Lossy, MaxTvCertifiesTheExactSamplerToo) {
  CampaignReport r = RunV3("exact");
  ASSERT_TRUE(r.Passed());
  ASSERT_TRUE(ApplyMaxTv(r, 0.05).ok());
  EXPECT_TRUE(r.Passed()) << r.VerdictProblems().front();
}

}  // namespace
}  // namespace samplecheck::harness
