// The report tests' campaign: a suite run quietly at seed 1 with version "test" (deterministic reports to read).
#pragma once

#include <gtest/gtest.h>

#include "samplecheck/campaign/campaign.h"
#include "samplecheck/suites/suite.h"

namespace samplecheck::harness {

inline CampaignReport RunQuietCampaign(const Suite& suite, CampaignOptions options) {
  options.seed = 1;
  options.progress = Progress::Mode::kQuiet;
  options.version = "test";
  auto report = RunCampaign(suite, options);
  EXPECT_TRUE(report.ok()) << report.error().message;
  return report.ok() ? *report : CampaignReport{};
}

}  // namespace samplecheck::harness
