// reference_fuzzer: ComputeDistribution on random rows (every float class, fp32/bf16/fp16, V in [1, 4096]) and
// random parameters under every semantics profile and every AmbiguousPolicy.
//
// Invariants (docs/fuzzing.md):
//   errors    invalid params (ValidateParams says so) => kInvalidArgument with ValidateParams' message; else an
//             empty row, a NaN or an all -inf row => kInvalidRow; no other error, and no error otherwise.
//   success   kept non-empty, strictly ascending, in [0, V); prob.size() == kept.size(); every prob finite, in
//             (0, 1]; sum within 1e-12 of 1; the top token (lowest id among the maximal logits) kept; the kept set
//             is upward closed in the order (logit desc, id asc); greedy => one token, probability 1; renormalizing
//             profiles: probability monotone in the logit (within the weights' 1e-15 relative error), equal for ties.
//   margins   every boundary decision names a token in [0, V), margin finite and >= 0; ambiguous ascending, in
//             range; with kAllIn every ambiguous token kept, with kAllOut none but the last token or a tie group cut
//             by position (renormalizing profiles); nested
//             kept sets kAllOut <= kAsComputed <= kAllIn.
//   helpers   Dense/Prob/IsKept/IsAmbiguous agree with kept/prob; two runs give bit-identical results.
//   time      V <= 4096 (a quarter of the rows above 64) and one profile per input (every profile when the selector's
//             top bit is set and V <= 256).
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "fuzz_decode.h"
#include "samplecheck/reference/distribution.h"
#include "samplecheck/reference/params.h"
#include "samplecheck/reference/profile.h"

namespace samplecheck::fuzz {
namespace {

constexpr int64_t kMaxVocab = 4096;
constexpr long double kWeightRelativeError = 1e-15L;  // reference/src/distribution.cpp, method step 2

struct RowFacts {
  bool has_nan = false;
  int64_t argmax = -1;  // lowest id among the maximal logits; -1 when every logit is -inf
};

RowFacts Facts(const FuzzRow& row) {
  RowFacts f;
  float best = -std::numeric_limits<float>::infinity();
  for (size_t i = 0; i < row.widened.size(); ++i) {
    const float x = row.widened[i];
    if (std::isnan(x)) f.has_nan = true;
    if (!std::isnan(x) && x > best) {
      best = x;
      f.argmax = static_cast<int64_t>(i);
    }
  }
  return f;
}

// (logit, id) order: a before b when a's logit is larger, ties by ascending id. -0 == +0.
bool Before(const FuzzRow& row, int32_t a, int32_t b) {
  const float xa = row.widened[a], xb = row.widened[b];
  return xa != xb ? xa > xb : a < b;
}

bool Contains(const std::vector<int32_t>& sorted, int32_t t) { return std::binary_search(sorted.begin(), sorted.end(), t); }

void CheckSuccess(const FuzzRow& row, const RowFacts& facts, const SamplingParams& params, const Profile& profile,
                  AmbiguousPolicy policy, const ProcessedDistribution& d) {
  const std::string what = std::string(profile.name) + " policy " + std::to_string(static_cast<int>(policy)) + " " +
                           DescribeParams(params) + " V=" + std::to_string(row.widened.size()) + " dtype " +
                           std::string(DTypeName(row.dtype));
  const int64_t vocab = static_cast<int64_t>(row.widened.size());
  FUZZ_CHECK(d.vocab == vocab, "%s: vocab %lld", what.c_str(), static_cast<long long>(d.vocab));
  FUZZ_CHECK(!d.kept.empty(), "%s: empty kept set for a valid row", what.c_str());
  FUZZ_CHECK(d.prob.size() == d.kept.size(), "%s: %zu probs for %zu kept", what.c_str(), d.prob.size(), d.kept.size());
  long double sum = 0;
  for (size_t i = 0; i < d.kept.size(); ++i) {
    FUZZ_CHECK(d.kept[i] >= 0 && d.kept[i] < vocab, "%s: kept token %d out of range", what.c_str(), d.kept[i]);
    FUZZ_CHECK(i == 0 || d.kept[i - 1] < d.kept[i], "%s: kept not strictly ascending at %zu", what.c_str(), i);
    const long double p = d.prob[i];
    FUZZ_CHECK(std::isfinite(static_cast<double>(p)) && p > 0 && p <= 1, "%s: prob[%zu] (token %d) = %.21Lg",
               what.c_str(), i, d.kept[i], p);
    sum += p;
  }
  FUZZ_CHECK(std::fabs(sum - 1.0L) <= 1e-12L, "%s: probabilities sum to %.21Lg", what.c_str(), sum);
  FUZZ_CHECK(facts.argmax >= 0 && Contains(d.kept, static_cast<int32_t>(facts.argmax)),
             "%s: the top token %lld is not kept", what.c_str(), static_cast<long long>(facts.argmax));
  if (d.greedy) {
    FUZZ_CHECK(d.kept.size() == 1 && d.prob[0] == 1.0L && d.kept[0] == facts.argmax,
               "%s: greedy result keeps %zu tokens (first %d), argmax %lld", what.c_str(), d.kept.size(), d.kept[0],
               static_cast<long long>(facts.argmax));
  }
  // Upward closed: the kept set is a prefix of the (logit desc, id asc) order.
  int32_t last = d.kept[0];
  for (int32_t t : d.kept) {
    if (Before(row, last, t)) last = t;
  }
  int64_t prefix = 0;
  for (int32_t t = 0; t < vocab; ++t) prefix += (t == last || Before(row, t, last)) ? 1 : 0;
  FUZZ_CHECK(prefix == static_cast<int64_t>(d.kept.size()),
             "%s: kept set (%zu tokens, last %d) is not a prefix of the logit order (%lld tokens up to it)",
             what.c_str(), d.kept.size(), last, static_cast<long long>(prefix));
  // Renormalizing profiles: probabilities are monotone in the logit, up to the weights' documented relative error
  // (distribution.cpp: below ~1e-15; logits a few ulps apart may swap by that much), and exactly equal for ties.
  if (profile.top_p_mass == TopPMass::kRenormalize) {
    for (size_t i = 0; i < d.kept.size(); ++i) {
      for (size_t j = i + 1; j < d.kept.size() && j < i + 8; ++j) {
        const int32_t a = d.kept[i], b = d.kept[j];
        const float xa = row.widened[a], xb = row.widened[b];
        if (xa > xb) {
          FUZZ_CHECK(d.prob[i] >= d.prob[j] * (1 - kWeightRelativeError), "%s: token %d (logit %.9g) above %d (logit %.9g) but less probable: %.21Lg < %.21Lg",
                     what.c_str(), a, xa, b, xb, d.prob[i], d.prob[j]);
        }
        if (xa == xb) {
          FUZZ_CHECK(d.prob[i] == d.prob[j], "%s: tied tokens %d %d (logit %.9g) differ: %.21Lg != %.21Lg", what.c_str(),
                     a, b, xa, d.prob[i], d.prob[j]);
        }
      }
    }
  }
  // Decisions and ambiguous tokens.
  for (size_t i = 0; i < d.boundary.size(); ++i) {
    const Decision& dec = d.boundary[i];
    FUZZ_CHECK(dec.token >= 0 && dec.token < vocab, "%s: decision token %d", what.c_str(), dec.token);
    FUZZ_CHECK(std::isfinite(dec.margin_ulps) && dec.margin_ulps >= 0.0, "%s: decision token %d margin %.17g",
               what.c_str(), dec.token, dec.margin_ulps);
    FUZZ_CHECK(i == 0 || d.boundary[i - 1].token <= dec.token, "%s: boundary not sorted by token", what.c_str());
  }
  for (size_t i = 0; i < d.ambiguous.size(); ++i) {
    FUZZ_CHECK(d.ambiguous[i] >= 0 && d.ambiguous[i] < vocab, "%s: ambiguous token %d", what.c_str(), d.ambiguous[i]);
    FUZZ_CHECK(i == 0 || d.ambiguous[i - 1] < d.ambiguous[i], "%s: ambiguous not strictly ascending", what.c_str());
  }
  // Helpers agree with the vectors.
  const std::vector<double> dense = d.Dense();
  FUZZ_CHECK(static_cast<int64_t>(dense.size()) == vocab, "%s: Dense() size %zu", what.c_str(), dense.size());
  size_t k = 0;
  for (int32_t t = 0; t < vocab; ++t) {
    const bool kept = k < d.kept.size() && d.kept[k] == t;
    FUZZ_CHECK(d.IsKept(t) == kept, "%s: IsKept(%d)", what.c_str(), t);
    FUZZ_CHECK(dense[t] == (kept ? static_cast<double>(d.prob[k]) : 0.0), "%s: Dense()[%d]", what.c_str(), t);
    FUZZ_CHECK(d.Prob(t) == (kept ? d.prob[k] : 0.0L), "%s: Prob(%d)", what.c_str(), t);
    FUZZ_CHECK(d.IsAmbiguous(t) == Contains(d.ambiguous, t), "%s: IsAmbiguous(%d)", what.c_str(), t);
    if (kept) ++k;
  }
}

// kAllOut <= kAsComputed <= kAllIn, and the ambiguous tokens are exactly what the policies disagree on.
void CheckPolicies(const Profile& profile, const SamplingParams& params, const ProcessedDistribution& computed,
                   const ProcessedDistribution& all_in, const ProcessedDistribution& all_out) {
  const std::string what = std::string(profile.name) + " " + DescribeParams(params);
  FUZZ_CHECK(computed.ambiguous == all_in.ambiguous && computed.ambiguous == all_out.ambiguous,
             "%s: the ambiguous list depends on the policy", what.c_str());
  if (profile.top_p_mass != TopPMass::kRenormalize || computed.greedy) return;
  FUZZ_CHECK(std::includes(all_in.kept.begin(), all_in.kept.end(), computed.kept.begin(), computed.kept.end()),
             "%s: kAllIn (%zu kept) does not contain kAsComputed (%zu kept)", what.c_str(), all_in.kept.size(),
             computed.kept.size());
  FUZZ_CHECK(std::includes(computed.kept.begin(), computed.kept.end(), all_out.kept.begin(), all_out.kept.end()),
             "%s: kAsComputed (%zu kept) does not contain kAllOut (%zu kept)", what.c_str(), computed.kept.size(),
             all_out.kept.size());
  for (int32_t t : computed.ambiguous) {
    FUZZ_CHECK(Contains(all_in.kept, t), "%s: ambiguous token %d dropped under kAllIn", what.c_str(), t);
  }
  // kAllOut drops every ambiguous token, except that the kept set never becomes empty (the top token stays) and a
  // tie group cut by position is ambiguous as a whole (distribution.cpp): an ambiguous token kept under kAllOut is
  // the one token left, or has the same weight (the same kAllIn probability) as an ambiguous token kAllOut drops.
  for (int32_t t : computed.ambiguous) {
    if (!Contains(all_out.kept, t) || all_out.kept.size() == 1) continue;
    bool tied_with_dropped = false;
    for (int32_t u : computed.ambiguous) {
      if (!Contains(all_out.kept, u) && all_in.Prob(u) == all_in.Prob(t)) tied_with_dropped = true;
    }
    FUZZ_CHECK(tied_with_dropped, "%s: ambiguous token %d kept under kAllOut (%zu kept), tied with no dropped one",
               what.c_str(), t, all_out.kept.size());
  }
}

bool SameDistribution(const ProcessedDistribution& a, const ProcessedDistribution& b) {
  if (a.kept != b.kept || a.greedy != b.greedy || a.ambiguous != b.ambiguous || a.prob.size() != b.prob.size() ||
      a.boundary.size() != b.boundary.size()) {
    return false;
  }
  for (size_t i = 0; i < a.prob.size(); ++i) {
    if (a.prob[i] != b.prob[i]) return false;
  }
  for (size_t i = 0; i < a.boundary.size(); ++i) {
    const Decision &x = a.boundary[i], &y = b.boundary[i];
    if (x.token != y.token || x.kept != y.kept || x.filter != y.filter || x.margin_ulps != y.margin_ulps) return false;
  }
  return true;
}

void RunProfile(const FuzzRow& row, const RowFacts& facts, const SamplingParams& params, const Profile& profile) {
  const std::string what = std::string(profile.name) + " " + DescribeParams(params) +
                           " V=" + std::to_string(row.widened.size());
  const std::optional<ParamError> bad = ValidateParams(params, profile);
  if (bad) {
    FUZZ_CHECK(!bad->message.empty() && !bad->allowed.empty(), "%s: ValidateParams gave an empty message",
               what.c_str());
    FUZZ_CHECK(bad->field == ParamField::kTemperature || bad->field == ParamField::kTopK ||
                   bad->field == ParamField::kTopP || bad->field == ParamField::kMinP,
               "%s: ValidateParams field", what.c_str());
  }
  const bool row_invalid = facts.has_nan || facts.argmax < 0;
  ProcessedDistribution by_policy[3];
  const AmbiguousPolicy policies[3] = {AmbiguousPolicy::kAsComputed, AmbiguousPolicy::kAllIn, AmbiguousPolicy::kAllOut};
  for (int i = 0; i < 3; ++i) {
    Result<ProcessedDistribution> r = ComputeDistribution(row.view, params, profile, ReferenceOptions{policies[i]});
    if (bad) {
      FUZZ_CHECK(!r.ok() && r.error().code == ErrorCode::kInvalidArgument,
                 "%s: invalid params (%s) gave %s", what.c_str(), bad->message.c_str(),
                 r.ok() ? "a distribution" : r.error().ToString().c_str());
      FUZZ_CHECK(r.error().message == bad->message, "%s: message '%s' differs from ValidateParams' '%s'", what.c_str(),
                 r.error().message.c_str(), bad->message.c_str());
      return;
    }
    if (row_invalid) {
      FUZZ_CHECK(!r.ok() && r.error().code == ErrorCode::kInvalidRow, "%s: invalid row (nan %d) gave %s",
                 what.c_str(), facts.has_nan, r.ok() ? "a distribution" : r.error().ToString().c_str());
      FUZZ_CHECK(!r.error().message.empty(), "%s: empty kInvalidRow message", what.c_str());
      return;
    }
    FUZZ_CHECK(r.ok(), "%s: valid row and params gave %s", what.c_str(), r.error().ToString().c_str());
    CheckSuccess(row, facts, params, profile, policies[i], *r);
    by_policy[i] = std::move(r).value();
  }
  CheckPolicies(profile, params, by_policy[0], by_policy[1], by_policy[2]);
  Result<ProcessedDistribution> again = ComputeDistribution(row.view, params, profile);
  FUZZ_CHECK(again.ok() && SameDistribution(*again, by_policy[0]), "%s: a second run differs", what.c_str());
}

}  // namespace
}  // namespace samplecheck::fuzz

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace samplecheck;
  using namespace samplecheck::fuzz;
  FuzzedDataProvider in(data, size);
  const uint8_t selector = in.ConsumeIntegral<uint8_t>();
  const FuzzRow row = DecodeRow(in, kMaxVocab);
  const SamplingParams params = DecodeParams(in, static_cast<int64_t>(row.widened.size()));
  const RowFacts facts = Facts(row);
  const auto profiles = AllProfiles();
  if ((selector & 0x80) && row.widened.size() <= 256) {
    for (const Profile* profile : profiles) RunProfile(row, facts, params, *profile);
  } else {
    RunProfile(row, facts, params, *profiles[selector % profiles.size()]);
  }
  // The empty row: always kInvalidRow once the params are valid.
  const Profile& first = *profiles[selector % profiles.size()];
  if (!ValidateParams(params, first)) {
    const Result<ProcessedDistribution> empty = ComputeDistribution(LogitsView{}, params, first);
    FUZZ_CHECK(!empty.ok() && empty.error().code == ErrorCode::kInvalidRow, "empty row: %s",
               empty.ok() ? "a distribution" : empty.error().ToString().c_str());
  }
  return 0;
}
