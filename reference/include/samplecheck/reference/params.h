// Per-row sampling parameters and their validation. The meaning of each value (which ones disable a filter,
// which ones trigger greedy decoding, which ones are invalid) depends on the semantics profile: see profile.h
// and docs/semantics.md. ValidateParams is the one place that decides whether a parameter set is valid.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "samplecheck/core/error.h"
#include "samplecheck/core/format.h"

namespace samplecheck {

struct Profile;

struct SamplingParams {
  double temperature = 1.0;  // logits are divided by it; 0 (or below the profile's threshold) is greedy
  int64_t top_k = -1;        // keep the k most probable tokens; -1 (and 0, in most profiles) = disabled
  double top_p = 1.0;        // nucleus mass; 1 = disabled
  double min_p = 0.0;        // keep p >= min_p * max p; 0 = disabled
  uint64_t seed = 0;         // RNG key of the row
  uint64_t offset = 0;       // RNG counter of the row's first draw; draw i of a row uses offset + i
};

enum class ParamField { kTemperature, kTopK, kTopP, kMinP };
const char* ParamFieldName(ParamField field);

// A typed error for one invalid value. message names the value and what is allowed.
struct ParamError {
  ParamField field;
  double value;         // the offending value (top_k converted to double)
  std::string allowed;  // the allowed range in words, e.g. "(0, 1]"
  std::string message;  // "top_p = 1.5 is outside (0, 1] for profile vllm"

  Error ToError() const { return InvalidArgument(message); }
};

// nullopt when every value is valid under the profile; else the first invalid value (in field order
// temperature, top_k, top_p, min_p). NaN is invalid everywhere.
std::optional<ParamError> ValidateParams(const SamplingParams& params, const Profile& profile);

// A value as error messages print it: FormatExact of core/format.h (17 significant digits, so the printed number
// reads back as the same double), under the name the parameter messages of every library have long used.
inline std::string FormatValue(double value) { return FormatExact(value); }

}  // namespace samplecheck
