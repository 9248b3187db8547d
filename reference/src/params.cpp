#include "samplecheck/reference/params.h"

#include <cmath>
#include <string>

#include "samplecheck/reference/profile.h"

namespace samplecheck {

namespace {

ParamError MakeError(ParamField field, double value, std::string allowed, const Profile& profile,
                     std::string_view why = "is outside") {
  ParamError error{field, value, std::move(allowed), {}};
  error.message = std::string(ParamFieldName(field)) + " = " + FormatValue(value) + " " + std::string(why) + " " +
                  error.allowed + " for profile " + std::string(profile.name);
  return error;
}

std::string TemperatureRange(const Profile& profile) {
  const char* low = profile.temperature_zero_allowed ? "[0, " : "(0, ";
  if (std::isinf(profile.max_temperature)) return std::string(low) + "inf)";
  return std::string(low) + FormatValue(profile.max_temperature) + "]";
}

std::string TopKRange(const Profile& profile) {
  std::string allowed;
  if (profile.top_k_minus_one_disables) allowed += "-1 (disabled), ";
  if (profile.top_k_zero_disables) allowed += "0 (disabled), ";
  if (profile.max_top_k > 0) return allowed + "or an integer in [1, " + std::to_string(profile.max_top_k) + "]";
  return allowed + "or an integer >= 1";
}

}  // namespace

const char* ParamFieldName(ParamField field) {
  switch (field) {
    case ParamField::kTemperature: return "temperature";
    case ParamField::kTopK: return "top_k";
    case ParamField::kTopP: return "top_p";
    case ParamField::kMinP: return "min_p";
  }
  return "unknown";
}

std::optional<ParamError> ValidateParams(const SamplingParams& params, const Profile& profile) {
  // temperature: finite, >= 0 (0 only where the profile has a greedy path for it), <= the profile's maximum.
  const double t = params.temperature;
  if (std::isnan(t) || std::isinf(t) || t < 0.0 || t > profile.max_temperature ||
      (t == 0.0 && !profile.temperature_zero_allowed)) {
    return MakeError(ParamField::kTemperature, t, TemperatureRange(profile), profile);
  }
  // top_k: -1 / 0 only where the profile defines them; k >= vocab is a no-op where the profile has no maximum.
  const int64_t k = params.top_k;
  if (k < -1 || (k == -1 && !profile.top_k_minus_one_disables) || (k == 0 && !profile.top_k_zero_disables) ||
      (profile.max_top_k > 0 && k > profile.max_top_k)) {
    return MakeError(ParamField::kTopK, static_cast<double>(k), TopKRange(profile), profile, "is not");
  }
  // top_p: (0, 1], or [0, 1] where top_p = 0 is greedy.
  const double p = params.top_p;
  const bool zero_ok = profile.top_p_zero_is_greedy;
  if (std::isnan(p) || p < 0.0 || p > 1.0 || (p == 0.0 && !zero_ok)) {
    return MakeError(ParamField::kTopP, p, zero_ok ? "[0, 1] (0 = greedy)" : "(0, 1]", profile);
  }
  const double m = params.min_p;
  if (std::isnan(m) || m < 0.0 || m > 1.0) return MakeError(ParamField::kMinP, m, "[0, 1]", profile);
  return std::nullopt;
}

}  // namespace samplecheck
