// Every property against the exact sampler of every profile: the reference must satisfy its own properties.
// A failure prints the shrunk counterexample and two replay lines (ctest and the samplecheck command).
#include <gtest/gtest.h>

#include <map>
#include <memory>
#include <string>
#include <tuple>

#include "property_pairs.h"
#include "rc_defaults.h"
#include "samplecheck/samplers/sampler_registry.h"
#include "samplecheck/properties/suite.h"
#include "samplecheck/reference/profile.h"

namespace samplecheck::properties {
namespace {

using testing_pairs::Param;

harness::Sampler& ExactSampler(const std::string& profile) {
  static std::map<std::string, std::unique_ptr<harness::Sampler>> samplers;
  auto& slot = samplers[profile];
  if (!slot) {
    auto made = harness::MakeSampler("exact:" + profile, {});
    if (!made.ok()) throw std::runtime_error(made.error().ToString());
    slot = std::move(made).value();
  }
  return *slot;
}

class ExactPropertySuite : public ::testing::TestWithParam<Param> {};

TEST_P(ExactPropertySuite, Holds) {
  const auto& [profile_name, property] = GetParam();
  const Profile* profile = FindProfile(profile_name);
  ASSERT_NE(profile, nullptr);
  const PropertyOptions options = testing::OptionsFromRcParams();
  const PropertyResult result = RunProperty(ExactSampler(profile_name), *profile, property, options, "exact");
  if (result.status == PropertyStatus::kSkipped) GTEST_SKIP() << result.message;
  EXPECT_EQ(result.status, PropertyStatus::kPassed)
      << "property " << property << " under profile " << profile_name << ": " << PropertyStatusName(result.status)
      << " after " << result.cases << " cases\n"
      << result.message << "\nreplay (ctest): RC_PARAMS=\"" << testing::RcParams() << " reproduce=" << result.reproduce
      << "\" ctest -R '" << ::testing::UnitTest::GetInstance()->current_test_info()->name() << "'"
      << "\nreplay (cli):   " << result.replay;
}

INSTANTIATE_TEST_SUITE_P(Exact, ExactPropertySuite,
                         ::testing::ValuesIn(testing_pairs::EveryProfileWith(AllProperties())), testing_pairs::PairName);

}  // namespace
}  // namespace samplecheck::properties
