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
