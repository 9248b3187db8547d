// The speculation-invariance properties (properties/spec.h) against the exact verifier of every profile, and the
// self-test: each verifier mutant of a class a property is built for fails it.
#include <gtest/gtest.h>

#include <string>
#include <tuple>

#include "property_pairs.h"
#include "rc_defaults.h"
#include "samplecheck/properties/spec.h"
#include "samplecheck/reference/profile.h"

namespace samplecheck::properties {
namespace {

using testing_pairs::Param;

class ExactSpecProperties : public ::testing::TestWithParam<Param> {};

TEST_P(ExactSpecProperties, Holds) {
  const auto& [profile_name, property] = GetParam();
  auto verifier = harness::MakeExactVerifier(profile_name);
  ASSERT_TRUE(verifier.ok());
  PropertyOptions options = testing::OptionsFromRcParams();
  options.max_success = std::min(options.max_success, 40);  // stratified cases verify up to 12 x 24 x 24 requests
  const PropertyResult r = RunSpecProperty(**verifier, *FindProfile(profile_name), property, options);
  if (r.status == PropertyStatus::kSkipped) GTEST_SKIP() << r.message;
  EXPECT_EQ(r.status, PropertyStatus::kPassed) << property << " under " << profile_name << ": " << r.message;
  EXPECT_EQ(r.cases, options.max_success) << "every case must run (none discarded)";
}

INSTANTIATE_TEST_SUITE_P(Spec, ExactSpecProperties,
                         ::testing::ValuesIn(testing_pairs::EveryProfileWith(SpecProperties())), testing_pairs::PairName);

// A property that cannot fail is a defect: each must catch a mutant of its class.
TEST(SpecPropertiesSelfTest, MutantsOfTheirClassFail) {
  const std::pair<const char*, const char*> expected[] = {
      {"spec-coin-edge", "spec-no-zero-emission"},
      {"spec-residual-from-p", "spec-stratified-marginal"},
      {"spec-residual-unnormalized", "spec-stratified-marginal"},
      {"spec-rng-reused", "spec-stratified-marginal"},
  };
  PropertyOptions options = testing::OptionsFromRcParams();
  options.max_success = 100;
  for (const auto& [mutant, property] : expected) {
    auto verifier = harness::MakeVerifierMutant(mutant, "vllm");
    ASSERT_TRUE(verifier.ok());
    const PropertyResult r = RunSpecProperty(**verifier, *FindProfile("vllm"), property, options);
    EXPECT_EQ(r.status, PropertyStatus::kFailed) << mutant << " passed " << property;
  }
}

}  // namespace
}  // namespace samplecheck::properties
