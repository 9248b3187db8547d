// Parameter and shape validation of samplecheck::kernels: every call checks its inputs here, on the host, before
// anything is launched. The ranges are the profiles' of reference/ (reference/include/samplecheck/reference/
// profile.h, params.h: ValidateParams); docs/kernels.md lists them.
#include <cmath>
#include <sstream>
#include <string>

#include "samplecheck/kernels/sampling.h"

namespace samplecheck::kernels {
namespace {

struct Rules {
  double max_temperature;    // inclusive
  bool top_p_zero_allowed;   // hf: top_p == 0 is greedy
};

Rules RulesOf(Profile profile) {
  switch (profile) {
    case Profile::kVllm: return {2.0, false};
    case Profile::kHf: return {HUGE_VAL, true};
  }
  return {2.0, false};
}

std::string Num(double v) {
  std::ostringstream os;
  os.precision(17);
  os << v;
  return os.str();
}

Status Invalid(const std::string& message) { return {ErrorCode::kInvalidArgument, message}; }

}  // namespace

std::string_view ProfileName(Profile profile) { return profile == Profile::kVllm ? "vllm" : "hf"; }

bool ParseProfile(std::string_view name, Profile* profile) {
  if (name == "vllm") {
    *profile = Profile::kVllm;
    return true;
  }
  if (name == "hf") {
    *profile = Profile::kHf;
    return true;
  }
  return false;
}

Status ValidateRowParams(const RowParams& p, Profile profile) {
  const Rules rules = RulesOf(profile);
  const std::string suffix = " for profile " + std::string(ProfileName(profile));
  const std::string t_range = std::isinf(rules.max_temperature) ? "[0, inf)" : "[0, " + Num(rules.max_temperature) + "]";
  if (!(p.temperature >= 0.0 && p.temperature <= rules.max_temperature)) {
    return Invalid("temperature = " + Num(p.temperature) + " is outside " + t_range + suffix);
  }
  if (p.top_k < -1) {
    return Invalid("top_k = " + std::to_string(p.top_k) + " is outside {-1, 0 (disabled)} or [1, inf)" + suffix);
  }
  if (rules.top_p_zero_allowed ? !(p.top_p >= 0.0 && p.top_p <= 1.0) : !(p.top_p > 0.0 && p.top_p <= 1.0)) {
    return Invalid("top_p = " + Num(p.top_p) + " is outside " + (rules.top_p_zero_allowed ? "[0, 1]" : "(0, 1]") +
                   suffix);
  }
  if (!(p.min_p >= 0.0 && p.min_p <= 1.0)) {
    return Invalid("min_p = " + Num(p.min_p) + " is outside [0, 1]" + suffix);
  }
  return Status::Ok();
}

Status ValidateBatch(const LogitsBatch& l, const SamplingParams& params, Profile profile) {
  if (l.data == nullptr) return Invalid("logits data is null");
  if (l.vocab < 1 || l.vocab > kMaxVocab) {
    return Invalid("vocab = " + std::to_string(l.vocab) + " is outside [1, " + std::to_string(kMaxVocab) + "]");
  }
  if (l.batch < 1 || l.batch > kMaxBatch) {
    return Invalid("batch = " + std::to_string(l.batch) + " is outside [1, " + std::to_string(kMaxBatch) + "]");
  }
  if (l.row_stride != 0 && l.row_stride < l.vocab) {
    return Invalid("row_stride = " + std::to_string(l.row_stride) + " is below vocab = " + std::to_string(l.vocab));
  }
  if (l.logits_rows < 0) return Invalid("logits_rows = " + std::to_string(l.logits_rows) + " is negative");
  if (l.row_indices == nullptr && l.logits_rows != 0 && l.logits_rows < l.batch) {
    return Invalid("logits_rows = " + std::to_string(l.logits_rows) + " is below batch = " +
                   std::to_string(l.batch) + " without row_indices");
  }
  for (int64_t b = 0; b < l.batch; ++b) {
    Status st = ValidateRowParams(RowParamsAt(params, b), profile);
    if (!st.ok()) {
      st.message = "row " + std::to_string(b) + ": " + st.message;
      return st;
    }
    if (!params.temperature.values && !params.top_k.values && !params.top_p.values && !params.min_p.values) break;
  }
  return Status::Ok();
}

}  // namespace samplecheck::kernels
