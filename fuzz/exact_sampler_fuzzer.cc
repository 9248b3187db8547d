// exact_sampler_fuzzer: the draw path of the exact sampler against the reference distribution, with a scripted
// RNG (statistics.md 5.9): M uniforms u_i = (i + 1/2) / M fed to InverseCdfDraw must give counts equal to M times
// the CDF differences within +-1 per boundary. A deterministic oracle: no statistics, so it can run under libFuzzer.
//
// Invariants (docs/fuzzing.md):
//   scripted   for every kept index j, |#{draws <= kept[j]} - M * cdf_j| <= 1 (cdf in ascending token id, long
//              double), every draw kept, draws non-decreasing in u (the inverse CDF is monotone).
//   philox     UniformForDraw(seed, offset + i) in (0, 1); ExactCountDraws adds exactly `draws` counts, all on kept
//              tokens, equal to InverseCdfDraw at those uniforms; the harness's exact sampler (Sample, CountDraws,
//              ProcessedDistribution) draws the same tokens, returns the reference's dense distribution, and
//              rejects invalid params with kInvalidArgument and invalid rows with kInvalidToken.
//   time       V <= 512, M <= 2048 (InverseCdfDraw builds its table per call: O(M V)).
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "fuzz_decode.h"
#include "samplecheck/samplers/exact_sampler.h"
#include "samplecheck/reference/distribution.h"
#include "samplecheck/reference/exact_sampler.h"
#include "samplecheck/reference/philox.h"
#include "samplecheck/reference/profile.h"

namespace samplecheck::fuzz {
namespace {

constexpr int64_t kMaxVocab = 512;
constexpr uint64_t kMaxScriptedDraws = 2048;
constexpr uint64_t kMaxPhiloxDraws = 64;

harness::Sampler& ExactSamplerFor(const Profile& profile) {
  static std::vector<std::unique_ptr<harness::Sampler>> samplers = [] {
    std::vector<std::unique_ptr<harness::Sampler>> all;
    for (const Profile* p : AllProfiles()) {
      auto s = harness::MakeExactSampler(p->name);
      FUZZ_CHECK(s.ok(), "MakeExactSampler(%s): %s", std::string(p->name).c_str(), s.error().ToString().c_str());
      all.push_back(std::move(s).value());
    }
    return all;
  }();
  const auto profiles = AllProfiles();
  const size_t index = static_cast<size_t>(std::find(profiles.begin(), profiles.end(), &profile) - profiles.begin());
  return *samplers[index];
}

void CheckScripted(const ProcessedDistribution& d, uint64_t m, const std::string& what) {
  // Index of each kept token, for the monotonicity check.
  std::vector<uint64_t> counts(d.kept.size(), 0);
  size_t previous = 0;
  for (uint64_t i = 0; i < m; ++i) {
    const double u = (static_cast<double>(i) + 0.5) / static_cast<double>(m);
    const int32_t t = InverseCdfDraw(d, u);
    const auto it = std::lower_bound(d.kept.begin(), d.kept.end(), t);
    FUZZ_CHECK(it != d.kept.end() && *it == t, "%s: u=%.17g drew token %d outside the kept set", what.c_str(), u, t);
    const size_t j = static_cast<size_t>(it - d.kept.begin());
    FUZZ_CHECK(j >= previous, "%s: u=%.17g drew kept index %zu after index %zu (not monotone)", what.c_str(), u, j,
               previous);
    previous = j;
    ++counts[j];
  }
  long double cdf = 0;
  uint64_t cumulative = 0;
  for (size_t j = 0; j < d.kept.size(); ++j) {
    cdf += d.prob[j];
    cumulative += counts[j];
    const long double expected = static_cast<long double>(m) * std::min(cdf, 1.0L);
    // +-1 per boundary, plus the double rounding of the sampler's CDF table and of u (far below one draw).
    const long double slack = 1.0L + static_cast<long double>(m) * 1e-12L;
    FUZZ_CHECK(std::fabs(static_cast<long double>(cumulative) - expected) <= slack,
               "%s: M=%llu, %llu draws up to kept[%zu]=%d, M*cdf = %.10Lf", what.c_str(),
               static_cast<unsigned long long>(m), static_cast<unsigned long long>(cumulative), j, d.kept[j],
               expected);
  }
  FUZZ_CHECK(cumulative == m, "%s: %llu draws counted of %llu", what.c_str(), static_cast<unsigned long long>(cumulative),
             static_cast<unsigned long long>(m));
}

void CheckPhilox(const FuzzRow& row, const SamplingParams& params, const Profile& profile,
                 const Result<ProcessedDistribution>& dist, uint64_t draws, const std::string& what) {
  const size_t vocab = row.widened.size();
  std::vector<uint64_t> histogram(vocab, 0);
  const Status st = ExactCountDraws(row.view, params, profile, draws, histogram);
  if (!dist.ok()) {
    FUZZ_CHECK(!st.ok() && st.error().code == dist.error().code, "%s: ExactCountDraws error differs from reference",
               what.c_str());
    return;
  }
  FUZZ_CHECK(st.ok(), "%s: ExactCountDraws failed: %s", what.c_str(), st.error().ToString().c_str());
  std::vector<uint64_t> expected(vocab, 0);
  for (uint64_t i = 0; i < draws; ++i) {
    const double u = UniformForDraw(params.seed, params.offset + i);
    FUZZ_CHECK(u > 0.0 && u < 1.0, "%s: UniformForDraw(%llu, %llu) = %.17g", what.c_str(),
               static_cast<unsigned long long>(params.seed), static_cast<unsigned long long>(params.offset + i), u);
    const int32_t t = InverseCdfDraw(*dist, u);
    FUZZ_CHECK(dist->IsKept(t), "%s: philox draw %llu gave token %d outside the kept set", what.c_str(),
               static_cast<unsigned long long>(i), t);
    ++expected[static_cast<size_t>(t)];
  }
  FUZZ_CHECK(histogram == expected, "%s: ExactCountDraws differs from InverseCdfDraw at the same uniforms",
             what.c_str());
}

void CheckHarnessSampler(const FuzzRow& row, const SamplingParams& params, const Profile& profile,
                         const Result<ProcessedDistribution>& dist, uint64_t draws, const std::string& what) {
  if (row.dtype != DType::kFloat32) return;  // the Sampler interface takes fp32 rows
  harness::Sampler& sampler = ExactSamplerFor(profile);
  const int64_t vocab = static_cast<int64_t>(row.fp32.size());
  const harness::RowBatch batch{row.fp32.data(), 1, vocab, vocab};
  int32_t token = 12345;
  const Status st = sampler.Sample(batch, std::span<const SamplingParams>(&params, 1), std::span<int32_t>(&token, 1));
  if (!dist.ok() && dist.error().code == ErrorCode::kInvalidArgument) {
    FUZZ_CHECK(!st.ok() && st.error().code == ErrorCode::kInvalidArgument, "%s: exact sampler accepted bad params (%s)",
               what.c_str(), st.ok() ? "ok" : st.error().ToString().c_str());
    return;
  }
  FUZZ_CHECK(st.ok(), "%s: exact sampler Sample failed: %s", what.c_str(), st.error().ToString().c_str());
  if (!dist.ok()) {
    FUZZ_CHECK(token == harness::kInvalidToken, "%s: invalid row sampled as %d", what.c_str(), token);
    return;
  }
  const int32_t want = InverseCdfDraw(*dist, UniformForDraw(params.seed, params.offset));
  FUZZ_CHECK(token == want, "%s: exact sampler drew %d, reference %d", what.c_str(), token, want);

  auto dense = sampler.ProcessedDistribution(row.fp32, params);
  FUZZ_CHECK(dense.ok() && *dense == dist->Dense(), "%s: exact sampler ProcessedDistribution differs (%s)",
             what.c_str(), dense.ok() ? "values" : dense.error().ToString().c_str());

  std::vector<uint64_t> histogram(row.fp32.size(), 0), reference(row.fp32.size(), 0);
  uint64_t invalid = 0;
  const Status counted = sampler.CountDraws(row.fp32, params, draws, histogram, &invalid);
  FUZZ_CHECK(counted.ok() && invalid == 0, "%s: exact sampler CountDraws: %s, %llu invalid", what.c_str(),
             counted.ok() ? "ok" : counted.error().ToString().c_str(), static_cast<unsigned long long>(invalid));
  const Status st2 = ExactCountDraws(row.view, params, profile, draws, reference);
  FUZZ_CHECK(st2.ok() && histogram == reference, "%s: exact sampler CountDraws differs from ExactCountDraws",
             what.c_str());
}

}  // namespace
}  // namespace samplecheck::fuzz

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace samplecheck;
  using namespace samplecheck::fuzz;
  FuzzedDataProvider in(data, size);
  const auto profiles = AllProfiles();
  const Profile& profile = *profiles[in.ConsumeIntegralInRange<size_t>(0, profiles.size() - 1)];
  const uint64_t m = in.ConsumeBool() ? in.ConsumeIntegralInRange<uint64_t>(1, kMaxScriptedDraws)
                                     : in.ConsumeIntegralInRange<uint64_t>(1, 128);
  const uint64_t philox_draws = in.ConsumeIntegralInRange<uint64_t>(0, kMaxPhiloxDraws);
  const bool finite_only = in.ConsumeIntegralInRange<int>(0, 7) != 0;
  const FuzzRow row = DecodeRow(in, kMaxVocab, finite_only);
  const SamplingParams params = DecodeParams(in, static_cast<int64_t>(row.widened.size()));
  const std::string what = std::string(profile.name) + " " + DescribeParams(params) + " V=" +
                           std::to_string(row.widened.size()) + " dtype " + std::string(DTypeName(row.dtype));

  const Result<ProcessedDistribution> dist = ComputeDistribution(row.view, params, profile);
  if (dist.ok()) CheckScripted(*dist, m, what);
  CheckPhilox(row, params, profile, dist, philox_draws, what);
  CheckHarnessSampler(row, params, profile, dist, philox_draws, what);
  return 0;
}
