// Every property against the CUDA sampler (label gpu), for the profiles the kernels implement. Skips when no CUDA
// device is usable. fp32 kernels are held to PropertyOptions::tolerance (relative 1e-5) where the exact sampler is
// held to bit identity; exact-set comparisons skip the reference's ambiguous tokens.
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

class CudaPropertySuite : public ::testing::TestWithParam<Param> {};

TEST_P(CudaPropertySuite, Holds) {
  const auto& [profile_name, property] = GetParam();
  static std::map<std::string, std::unique_ptr<harness::Sampler>> samplers;
  auto& sampler = samplers[profile_name];
  if (!sampler) {
    auto made = harness::MakeSampler("cuda:" + profile_name, {});
    if (!made.ok()) GTEST_SKIP() << "no cuda sampler: " << made.error().ToString();
    sampler = std::move(made).value();
  }
  const PropertyOptions options = testing::OptionsFromRcParams();
  const PropertyResult result = RunProperty(*sampler, *FindProfile(profile_name), property, options, "cuda");
  if (result.status == PropertyStatus::kSkipped) GTEST_SKIP() << result.message;
  EXPECT_EQ(result.status, PropertyStatus::kPassed)
      << "property " << property << " of cuda:" << profile_name << ": " << PropertyStatusName(result.status) << " after "
      << result.cases << " cases\n" << result.message << "\nreplay (ctest): RC_PARAMS=\"" << testing::RcParams()
      << " reproduce=" << result.reproduce << "\" ctest -L gpu -R '"
      << ::testing::UnitTest::GetInstance()->current_test_info()->name() << "'\nreplay (cli):   " << result.replay;
}

INSTANTIATE_TEST_SUITE_P(Cuda, CudaPropertySuite,
                         ::testing::ValuesIn(testing_pairs::ProfilesWith({"vllm", "hf"}, AllProperties())),
                         testing_pairs::PairName);

}  // namespace
}  // namespace samplecheck::properties
