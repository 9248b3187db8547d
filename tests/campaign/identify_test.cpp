// identify (campaign/identify.h): a run stopped between probes judges only the finished probes and says so.
#include "samplecheck/campaign/identify.h"

#include <atomic>
#include <string>
#include <vector>

#include <gtest/gtest.h>

namespace samplecheck::harness {
namespace {

TEST(Identify, CompleteRunNamesTheSamplersProfile) {
  IdentifyOptions o;
  o.sampler_spec = "exact:hf";
  std::vector<size_t> seen;
  o.on_probe = [&](const Probe&, size_t index, size_t total, double seconds) {
    seen.push_back(index);
    EXPECT_GE(seconds, 0.0);
    EXPECT_GT(total, 2u);
  };
  auto r = IdentifySampler(o);
  ASSERT_TRUE(r.ok()) << r.error().ToString();
  EXPECT_FALSE(r->interrupted);
  EXPECT_EQ(r->probes.size(), r->planned_probes);
  ASSERT_EQ(seen.size(), r->planned_probes);
  EXPECT_EQ(seen.front(), 1u);
  EXPECT_EQ(seen.back(), r->planned_probes);
  EXPECT_EQ(r->consistent_profiles, std::vector<std::string>{"hf"});
  const std::string text = FormatIdentify(*r);
  EXPECT_NE(text.find("consistent with: hf\n"), std::string::npos) << text;
  EXPECT_EQ(text.find("INTERRUPTED"), std::string::npos);
  EXPECT_EQ(IdentifyToJson(*r)["interrupted"], false);
}

// identify of `spec` at 2e4 draws a probe (seed 1): enough on rows of <= 17 tokens for the texts tested here.
Result<IdentifyResult> IdentifyQuickly(const std::string& spec) {
  IdentifyOptions o;
  o.sampler_spec = spec;
  o.draws = 20000;
  return IdentifySampler(o);
}

TEST(Identify, ShowsTheProbesAndRanksTheNearestProfiles) {
  auto r = IdentifyQuickly("exact:hf");
  ASSERT_TRUE(r.ok()) << r.error().ToString();
  ASSERT_EQ(r->nearest.size(), r->probes.front().profiles.size());
  EXPECT_EQ(r->nearest.front().profile, "hf");
  EXPECT_EQ(r->nearest.front().probes_against, 0u);
  EXPECT_LT(r->nearest.front().tv_sum, 0.1);  // 14 probes at 2e4 draws: each TV ~ 0.005 on rows of <= 5 tokens
  for (size_t i = 1; i < r->nearest.size(); ++i) {
    EXPECT_GE(r->nearest[i].probes_against, r->nearest[i - 1].probes_against);
    EXPECT_EQ(r->nearest[i].probes_against, r->nearest[i].against.size());
  }
  // V1 p=0.5 on (0.5, 0.375, 0.125): hf keeps tokens 0 and 1 (the mass ahead of token 1 is 0.5, not above p);
  // trtllm-cuda's truncated CDF keeps token 0 and a sliver of token 1.
  const Probe& v1 = r->probes.front();
  ASSERT_EQ(v1.name, "V1 p=0.5");
  const std::string text = FormatIdentify(*r);
  EXPECT_NE(text.find("  V1 p=0.5: strict vs non-strict top-p"), std::string::npos) << text;
  EXPECT_NE(text.find("(softmax {0: 0.5, 1: 0.375, 2: 0.125}), T=1 p=0.5\n"), std::string::npos) << text;
  EXPECT_NE(text.find("    predicted  {0: 0.571, 1: 0.429}  hf, vllm, "), std::string::npos) << text;
  EXPECT_NE(text.find("{0: 1, 1: 5.53e-09}   trtllm-cuda\n"), std::string::npos) << text;
  EXPECT_NE(text.find("nearest profiles"), std::string::npos) << text;
  EXPECT_NE(text.find("  1. hf "), std::string::npos) << text;
  const auto j = IdentifyToJson(*r);
  EXPECT_EQ(j["nearest"][0]["profile"], "hf");
  EXPECT_EQ(j["probes"][0]["profiles"]["hf"]["prediction"], "{0: 0.571, 1: 0.429}");
  EXPECT_TRUE(j["probes"][0]["profiles"]["hf"]["tv"].is_number());
}

TEST(Identify, NoProfileNamesTheNearest) {
  // min-p applied after top-p: no profile does that; the nearest is still named, with what excludes it.
  auto r = IdentifyQuickly("mutant:minp-after-topp");
  ASSERT_TRUE(r.ok()) << r.error().ToString();
  ASSERT_TRUE(r->consistent_profiles.empty());
  ASSERT_FALSE(r->nearest.empty());
  EXPECT_GT(r->nearest.front().probes_against, 0u);
  const std::string text = FormatIdentify(*r);
  EXPECT_NE(text.find("consistent with: no profile (nearest: " + r->nearest.front().profile + ")\n"), std::string::npos)
      << text;
}

TEST(Identify, StopBetweenProbesJudgesTheFinishedOnesAndIsNoVerdict) {
  std::atomic<bool> stop{false};
  IdentifyOptions o;
  o.sampler_spec = "exact:hf";
  o.stop = &stop;
  o.on_probe = [&](const Probe&, size_t index, size_t, double) {
    if (index == 2) stop = true;  // as a SIGINT during the third probe's setup would
  };
  auto r = IdentifySampler(o);
  ASSERT_TRUE(r.ok()) << r.error().ToString();
  EXPECT_TRUE(r->interrupted);
  ASSERT_EQ(r->probes.size(), 2u);
  EXPECT_GT(r->planned_probes, 2u);
  // Two probes exclude fewer profiles than the whole run: hf is among those left, and others with it.
  EXPECT_GT(r->consistent_profiles.size(), 1u);
  const std::string text = FormatIdentify(*r);
  EXPECT_NE(text.find("INTERRUPTED after 2 of " + std::to_string(r->planned_probes) + " probes: not a verdict"),
            std::string::npos)
      << text;
  EXPECT_EQ(text.find("consistent with:"), std::string::npos) << "a cut run must not read as a verdict";
  EXPECT_NE(text.find("not excluded by the finished probes: "), std::string::npos);
  const auto j = IdentifyToJson(*r);
  EXPECT_EQ(j["interrupted"], true);
  EXPECT_EQ(j["probes_planned"], r->planned_probes);
  EXPECT_EQ(j["probes"].size(), 2u);
}

TEST(Identify, StopBeforeTheFirstProbeJudgesNothing) {
  std::atomic<bool> stop{true};
  IdentifyOptions o;
  o.sampler_spec = "exact:hf";
  o.stop = &stop;
  auto r = IdentifySampler(o);
  ASSERT_TRUE(r.ok());
  EXPECT_TRUE(r->interrupted);
  EXPECT_TRUE(r->probes.empty());
}

}  // namespace
}  // namespace samplecheck::harness
