// The speculation-invariance properties (properties/spec.h) against the CUDA verifier (`--verifier cuda`) of the
// profiles the kernels implement (label gpu). Skips when no CUDA device is usable.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <tuple>

#include "property_pairs.h"
#include "rc_defaults.h"
#include "samplecheck/properties/spec.h"
#include "samplecheck/reference/profile.h"
#include "samplecheck/samplers/verifier.h"

namespace samplecheck::properties {
namespace {

using testing_pairs::Param;

class CudaSpecProperties : public ::testing::TestWithParam<Param> {};

TEST_P(CudaSpecProperties, Holds) {
  const auto& [profile_name, property] = GetParam();
  auto verifier = harness::MakeVerifier("cuda:" + profile_name, profile_name);
  if (!verifier.ok()) GTEST_SKIP() << "no cuda verifier: " << verifier.error().ToString();
  PropertyOptions options = testing::OptionsFromRcParams();
  options.max_success = std::min(options.max_success, 40);  // as the exact verifier's (spec_suite_test.cpp)
  const PropertyResult r = RunSpecProperty(**verifier, *FindProfile(profile_name), property, options);
  if (r.status == PropertyStatus::kSkipped) GTEST_SKIP() << r.message;
  EXPECT_EQ(r.status, PropertyStatus::kPassed) << property << " under cuda:" << profile_name << ": " << r.message;
  EXPECT_EQ(r.cases, options.max_success) << "every case must run (none discarded)";
}

INSTANTIATE_TEST_SUITE_P(CudaSpec, CudaSpecProperties,
                         ::testing::ValuesIn(testing_pairs::ProfilesWith({"vllm", "hf"}, SpecProperties())),
                         testing_pairs::PairName);

}  // namespace
}  // namespace samplecheck::properties
