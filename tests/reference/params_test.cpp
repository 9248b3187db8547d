// ValidateParams: every invalid value of every field, per profile, as a typed error naming the value.
#include "samplecheck/reference/params.h"
#include "samplecheck/reference/distribution.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "samplecheck/reference/profile.h"
#include "test_rows.h"

namespace samplecheck {
namespace {

using testing::Describe;
using testing::Params;

constexpr double kNan = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();

void ExpectInvalid(const SamplingParams& params, const Profile& profile, ParamField field) {
  const std::optional<ParamError> error = ValidateParams(params, profile);
  ASSERT_TRUE(error.has_value()) << Describe(params, profile.name);
  EXPECT_EQ(error->field, field) << Describe(params, profile.name);
  EXPECT_NE(error->message.find(ParamFieldName(field)), std::string::npos) << error->message;
  EXPECT_NE(error->message.find(std::string(profile.name)), std::string::npos) << error->message;
  EXPECT_NE(error->message.find(error->allowed), std::string::npos) << error->message;
  EXPECT_EQ(error->ToError().code, ErrorCode::kInvalidArgument);
}

TEST(ValidateParams, DefaultsAreValidEverywhere) {
  for (const Profile* profile : AllProfiles()) EXPECT_FALSE(ValidateParams({}, *profile)) << profile->name;
}

// TokenSpeed's SamplingParams.verify refuses top_k >= 128 (the fused kernels' pad), even where k >= V would keep the
// whole row; -1 disables, 0 is refused (sampling_params.py:129-137 at f4d8ec6e).
TEST(ValidateParams, TokenspeedTakesTopKFromOneTo127AndMinusOne) {
  const Profile& ts = *FindProfile("tokenspeed");
  for (int64_t k : {-1, 1, 2, 64, 127}) EXPECT_FALSE(ValidateParams(Params(1, k, 1, 0), ts)) << k;
  for (int64_t k : {int64_t{0}, int64_t{128}, int64_t{200}, int64_t{1} << 40}) {
    ExpectInvalid(Params(1, k, 1, 0), ts, ParamField::kTopK);
  }
  const std::optional<ParamError> error = ValidateParams(Params(1, 128, 1, 0), ts);
  ASSERT_TRUE(error.has_value());
  EXPECT_EQ(error->message, "top_k = 128 is not -1 (disabled), or an integer in [1, 127] for profile tokenspeed");
  for (const Profile* profile : AllProfiles()) {   // no other profile has a maximum
    if (profile->name == "tokenspeed") continue;
    EXPECT_FALSE(ValidateParams(Params(1, int64_t{1} << 40, 1, 0), *profile)) << profile->name;
  }
}

TEST(ValidateParams, NanIsInvalidInEveryField) {
  for (const Profile* profile : AllProfiles()) {
    ExpectInvalid(Params(kNan, -1, 1, 0), *profile, ParamField::kTemperature);
    ExpectInvalid(Params(1, -1, kNan, 0), *profile, ParamField::kTopP);
    ExpectInvalid(Params(1, -1, 1, kNan), *profile, ParamField::kMinP);
  }
}

TEST(ValidateParams, TemperatureRange) {
  for (const Profile* profile : AllProfiles()) {
    ExpectInvalid(Params(-0.5, -1, 1, 0), *profile, ParamField::kTemperature);
    ExpectInvalid(Params(-1e-300, -1, 1, 0), *profile, ParamField::kTemperature);
    ExpectInvalid(Params(kInf, -1, 1, 0), *profile, ParamField::kTemperature);
    if (profile->temperature_zero_allowed) {
      EXPECT_FALSE(ValidateParams(Params(0, -1, 1, 0), *profile)) << profile->name;
    } else {
      ExpectInvalid(Params(0, -1, 1, 0), *profile, ParamField::kTemperature);
    }
    if (std::isfinite(profile->max_temperature)) {
      EXPECT_FALSE(ValidateParams(Params(profile->max_temperature, -1, 1, 0), *profile));
      ExpectInvalid(Params(std::nextafter(profile->max_temperature, kInf), -1, 1, 0), *profile,
                    ParamField::kTemperature);
    } else {
      EXPECT_FALSE(ValidateParams(Params(1e6, -1, 1, 0), *profile)) << profile->name;
    }
  }
  ExpectInvalid(Params(2.5, -1, 1, 0), *FindProfile("vllm"), ParamField::kTemperature);
  ExpectInvalid(Params(0, -1, 1, 0), *FindProfile("flashinfer-joint"), ParamField::kTemperature);
}

TEST(ValidateParams, TopKSentinels) {
  for (const Profile* profile : AllProfiles()) {
    ExpectInvalid(Params(1, -2, 1, 0), *profile, ParamField::kTopK);
    ExpectInvalid(Params(1, std::numeric_limits<int64_t>::min(), 1, 0), *profile, ParamField::kTopK);
    EXPECT_FALSE(ValidateParams(Params(1, 1, 1, 0), *profile));
    // int64 max is a no-op where the profile has no maximum (tokenspeed's: ValidateParams.TokenspeedTakes...)
    EXPECT_EQ(ValidateParams(Params(1, std::numeric_limits<int64_t>::max(), 1, 0), *profile).has_value(),
              profile->max_top_k > 0) << profile->name;
    if (profile->top_k_zero_disables) {
      EXPECT_FALSE(ValidateParams(Params(1, 0, 1, 0), *profile)) << profile->name;
    } else {
      ExpectInvalid(Params(1, 0, 1, 0), *profile, ParamField::kTopK);
    }
    EXPECT_EQ(ValidateParams(Params(1, -1, 1, 0), *profile).has_value(), !profile->top_k_minus_one_disables);
  }
  ExpectInvalid(Params(1, 0, 1, 0), *FindProfile("sglang-torch"), ParamField::kTopK);
}

TEST(ValidateParams, TopPRange) {
  for (const Profile* profile : AllProfiles()) {
    ExpectInvalid(Params(1, -1, -0.1, 0), *profile, ParamField::kTopP);
    ExpectInvalid(Params(1, -1, 1.0000001, 0), *profile, ParamField::kTopP);
    ExpectInvalid(Params(1, -1, kInf, 0), *profile, ParamField::kTopP);
    EXPECT_FALSE(ValidateParams(Params(1, -1, 1e-300, 0), *profile));
    if (profile->top_p_zero_is_greedy) {
      EXPECT_FALSE(ValidateParams(Params(1, -1, 0, 0), *profile)) << profile->name;
    } else {
      ExpectInvalid(Params(1, -1, 0, 0), *profile, ParamField::kTopP);
    }
  }
}

TEST(ValidateParams, MinPRange) {
  for (const Profile* profile : AllProfiles()) {
    ExpectInvalid(Params(1, -1, 1, -0.01), *profile, ParamField::kMinP);
    ExpectInvalid(Params(1, -1, 1, 1.5), *profile, ParamField::kMinP);
    EXPECT_FALSE(ValidateParams(Params(1, -1, 1, 0), *profile));
    EXPECT_FALSE(ValidateParams(Params(1, -1, 1, 1), *profile));
  }
}

TEST(ValidateParams, FirstInvalidFieldInFieldOrder) {
  const std::optional<ParamError> error = ValidateParams(Params(-1, -5, 2, 3), *FindProfile("vllm"));
  ASSERT_TRUE(error);
  EXPECT_EQ(error->field, ParamField::kTemperature);
  const std::optional<ParamError> top_p = ValidateParams(Params(1, -1, 1.5, 3), *FindProfile("vllm"));
  ASSERT_TRUE(top_p);
  EXPECT_EQ(top_p->message, "top_p = 1.5 is outside (0, 1] for profile vllm");
}

TEST(ValidateParams, ComputeDistributionReturnsTheParamError) {
  const std::vector<float> row = {1.0f, 2.0f};
  const Result<ProcessedDistribution> result =
      ComputeDistribution(LogitsView::Fp32(row), Params(1, -1, 1.5, 0), *FindProfile("hf"));
  ASSERT_FALSE(result.ok());
  EXPECT_EQ(result.error().code, ErrorCode::kInvalidArgument);
  EXPECT_NE(result.error().message.find("top_p = 1.5"), std::string::npos);
}

}  // namespace
}  // namespace samplecheck
