// exact-tie-boundary-count (properties/src/boundary_properties.cpp) against the mutant zoo: the non-strict top-p
// mutant (topp-nonstrict, which survived every other check: docs/mutants.md) must be caught under the profiles that
// cut tie groups by position, in both directions (strict profiles judged against a non-strict mutant and the
// reverse), both through the processed distribution and through draws alone; the control `mutant:none` must pass.
// (Not under trtllm-cuda: with the truncated CDF the extra token a non-strict rule keeps gets top_p - mass_above = 0,
// so the flip changes nothing there; not under the keep-tied profiles, which keep the whole group either way.)
#include <gtest/gtest.h>

#include <cctype>
#include <iostream>
#include <memory>
#include <string>
#include <tuple>

#include "rc_defaults.h"
#include "samplecheck/samplers/sampler.h"
#include "samplecheck/samplers/sampler_registry.h"
#include "samplecheck/properties/suite.h"
#include "samplecheck/reference/profile.h"

namespace samplecheck::properties {
namespace {

constexpr char kProperty[] = "exact-tie-boundary-count";

std::unique_ptr<harness::Sampler> Mutant(const std::string& name, const std::string& profile) {
  harness::SamplerOptions options;
  options.profile = profile;
  auto made = harness::MakeSampler("mutant:" + name, options);
  if (!made.ok()) throw std::runtime_error(made.error().ToString());
  return std::move(made).value();
}

// The mutant with its processed distribution hidden: only draws can catch it (check (b)).
class DrawsOnly final : public harness::Sampler {
 public:
  explicit DrawsOnly(std::unique_ptr<harness::Sampler> inner) : inner_(std::move(inner)) {}
  std::string Name() const override { return "draws-only:" + inner_->Name(); }
  harness::Capabilities GetCapabilities() const override {
    harness::Capabilities caps = inner_->GetCapabilities();
    caps.processed_distribution = false;
    return caps;
  }
  Result<std::vector<double>> ProcessedDistribution(std::span<const float> row, const SamplingParams& params) override {
    return inner_->ProcessedDistribution(row, params);
  }
  Status Sample(const harness::RowBatch& batch, std::span<const SamplingParams> params, std::span<int32_t> tokens) override {
    return inner_->Sample(batch, params, tokens);
  }
  Status CountDraws(std::span<const float> row, const SamplingParams& params, uint64_t draws,
                    std::span<uint64_t> histogram, uint64_t* invalid_draws) override {
    return inner_->CountDraws(row, params, draws, histogram, invalid_draws);
  }

 private:
  std::unique_ptr<harness::Sampler> inner_;
};

using Param = std::tuple<std::string, bool>;  // profile, draws only

class ExactTieBoundaryCount : public ::testing::TestWithParam<Param> {};

TEST_P(ExactTieBoundaryCount, CatchesNonStrictMutantAndPassesControl) {
  const auto& [profile_name, draws_only] = GetParam();
  const Profile* profile = FindProfile(profile_name);
  ASSERT_NE(profile, nullptr);
  PropertyOptions options = testing::OptionsFromRcParams();
  options.reproduce.clear();

  std::unique_ptr<harness::Sampler> control = Mutant("none", profile_name);
  if (draws_only) control = std::make_unique<DrawsOnly>(std::move(control));
  const PropertyResult passed = RunProperty(*control, *profile, kProperty, options, "mutant:none");
  EXPECT_EQ(passed.status, PropertyStatus::kPassed) << "control under " << profile_name << ": " << passed.message;

  std::unique_ptr<harness::Sampler> mutant = Mutant("topp-nonstrict", profile_name);
  if (draws_only) mutant = std::make_unique<DrawsOnly>(std::move(mutant));
  const PropertyResult caught = RunProperty(*mutant, *profile, kProperty, options, "mutant:topp-nonstrict");
  EXPECT_EQ(caught.status, PropertyStatus::kFailed)
      << "topp-nonstrict under " << profile_name << " not caught (" << PropertyStatusName(caught.status) << " after "
      << caught.cases << " cases)\n" << caught.message;
  EXPECT_FALSE(caught.reproduce.empty());
  std::cout << "[topp-nonstrict under " << profile_name << (draws_only ? ", draws only" : "") << " caught after "
            << caught.cases << " cases]\n" << caught.message << "\nreplay: " << caught.replay << "\n";
}

INSTANTIATE_TEST_SUITE_P(
    Mutants, ExactTieBoundaryCount,
    ::testing::Combine(::testing::Values("vllm", "hf", "sglang-torch"), ::testing::Bool()),
    [](const ::testing::TestParamInfo<Param>& param_info) {
      std::string name = std::get<0>(param_info.param) + (std::get<1>(param_info.param) ? "_draws_only" : "_processed");
      for (char& ch : name) {
        if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
      }
      return name;
    });

}  // namespace
}  // namespace samplecheck::properties
