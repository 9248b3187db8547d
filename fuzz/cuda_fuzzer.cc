// cuda_fuzzer: samplecheck's CUDA kernels (through the `cuda` sampler of the harness) against the reference, on
// random fp32 rows (every float class, V in [1, 4096]) and parameters under the profiles the kernels implement
// (vllm, hf). Host code compiled by clang with ASan/UBSan and libFuzzer; the kernels built by nvcc
// (samplecheck_kernels). Runs only on the device machine; run it once under compute-sanitizer too
// (docs/fuzzing.md). Without a usable CUDA device the program exits 77 at start (the replay ctest reports a skip).
//
// Invariants (docs/fuzzing.md), with the reference's ambiguous tokens free to go either way:
//   errors     invalid params => kInvalidArgument (the cuda sampler validates with ValidateParams); an invalid
//              row (NaN, all -inf) => kInvalidRow from ProcessedDistribution and kInvalidToken from Sample.
//   support    the kernels' kept set K lies between the reference's kAllOut and kAllIn kept sets; every drawn
//              token (Sample, and CountDraws over up to 4096 draws) lies in kAllIn's kept set; no invalid draw.
//   processed  on K the kernels' probabilities equal the reference weights renormalized over K within
//              1e-6 + 1e-5 p (the kernels accumulate in 2^-42 fixed point); they sum to 1 within 1e-6.
//   greedy     a greedy case draws the reference's greedy token.
#include <algorithm>
#include <limits>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "fuzz_decode.h"
#include "samplecheck/samplers/cuda_sampler.h"
#include "samplecheck/reference/distribution.h"
#include "samplecheck/reference/profile.h"

namespace samplecheck::fuzz {
namespace {

constexpr int64_t kMaxVocab = 4096;
constexpr uint64_t kMaxDraws = 4096;
const char* const kProfiles[] = {"vllm", "hf"};

harness::Sampler* CudaSampler(int which) {
  static std::unique_ptr<harness::Sampler> samplers[2];
  if (!samplers[which]) {
    auto made = harness::MakeCudaSampler(kProfiles[which]);
    FUZZ_CHECK(made.ok(), "MakeCudaSampler(%s): %s", kProfiles[which], made.error().ToString().c_str());
    samplers[which] = std::move(made).value();
  }
  return samplers[which].get();
}

bool Contains(const std::vector<int32_t>& sorted, int32_t t) { return std::binary_search(sorted.begin(), sorted.end(), t); }

}  // namespace
}  // namespace samplecheck::fuzz

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  auto probe = samplecheck::harness::MakeCudaSampler("vllm");
  if (!probe.ok()) {
    std::fprintf(stderr, "SKIPPED: cuda_fuzzer: no usable CUDA device (%s): nothing to fuzz\n",
                 probe.error().ToString().c_str());
    std::exit(77);
  }
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace samplecheck;
  using namespace samplecheck::fuzz;
  FuzzedDataProvider in(data, size);
  const int which = in.ConsumeIntegralInRange<int>(0, 1);
  const Profile& profile = *FindProfile(kProfiles[which]);
  const uint64_t draws = in.ConsumeIntegralInRange<uint64_t>(1, kMaxDraws);
  FuzzRow row = DecodeRow(in, kMaxVocab);
  if (row.dtype != DType::kFloat32) {  // the Sampler interface takes fp32 rows: use the widened values
    row.fp32 = row.widened;
    row.dtype = DType::kFloat32;
    row.view = LogitsView::Fp32(row.fp32);
  }
  const SamplingParams params = DecodeParams(in, static_cast<int64_t>(row.fp32.size()));
  const int64_t vocab = static_cast<int64_t>(row.fp32.size());
  const std::string what = std::string(profile.name) + " " + DescribeParams(params) + " V=" + std::to_string(vocab);
  harness::Sampler& cuda = *CudaSampler(which);

  const Result<ProcessedDistribution> all_in = ComputeDistribution(row.view, params, profile, {AmbiguousPolicy::kAllIn});
  const Result<ProcessedDistribution> all_out = ComputeDistribution(row.view, params, profile, {AmbiguousPolicy::kAllOut});

  // Sample one token.
  int32_t token = 12345;
  const harness::RowBatch batch{row.fp32.data(), 1, vocab, vocab};
  const Status sampled = cuda.Sample(batch, std::span<const SamplingParams>(&params, 1), std::span<int32_t>(&token, 1));
  if (!all_in.ok() && all_in.error().code == ErrorCode::kInvalidArgument) {
    FUZZ_CHECK(!sampled.ok() && sampled.error().code == ErrorCode::kInvalidArgument,
               "%s: the kernels accepted params the reference rejects (%s)", what.c_str(),
               all_in.error().message.c_str());
    return 0;
  }
  FUZZ_CHECK(sampled.ok(), "%s: Sample failed: %s", what.c_str(), sampled.error().ToString().c_str());
  if (!all_in.ok()) {  // invalid row
    FUZZ_CHECK(token == harness::kInvalidToken, "%s: an invalid row (%s) was sampled as %d", what.c_str(),
               all_in.error().message.c_str(), token);
    auto dense = cuda.ProcessedDistribution(row.fp32, params);
    FUZZ_CHECK(!dense.ok() && dense.error().code == ErrorCode::kInvalidRow,
               "%s: ProcessedDistribution of an invalid row: %s", what.c_str(),
               dense.ok() ? "a distribution" : dense.error().ToString().c_str());
    return 0;
  }
  FUZZ_CHECK(Contains(all_in->kept, token), "%s: Sample drew token %d outside the kept set (%zu tokens)", what.c_str(),
             token, all_in->kept.size());
  if (all_in->greedy) FUZZ_CHECK(token == all_in->kept[0], "%s: greedy drew %d, not %d", what.c_str(), token, all_in->kept[0]);

  // Processed distribution.
  auto dense = cuda.ProcessedDistribution(row.fp32, params);
  FUZZ_CHECK(dense.ok() && static_cast<int64_t>(dense->size()) == vocab, "%s: ProcessedDistribution: %s", what.c_str(),
             dense.ok() ? "wrong size" : dense.error().ToString().c_str());
  std::vector<int32_t> kernel_kept;
  double sum = 0;
  for (int32_t t = 0; t < vocab; ++t) {
    const double p = (*dense)[t];
    FUZZ_CHECK(std::isfinite(p) && p >= 0 && p <= 1, "%s: probability %.17g for token %d", what.c_str(), p, t);
    if (p > 0) kernel_kept.push_back(t);
    sum += p;
  }
  FUZZ_CHECK(std::fabs(sum - 1) <= 1e-6, "%s: kernel probabilities sum to %.17g", what.c_str(), sum);
  FUZZ_CHECK(std::includes(all_in->kept.begin(), all_in->kept.end(), kernel_kept.begin(), kernel_kept.end()),
             "%s: the kernels keep a token outside the reference's kAllIn set", what.c_str());
  // The kernels return fp32 probabilities: a token whose exact probability is below the smallest normal fp32
  // (2^-126) may come back as 0 (as in any fp32 softmax) without leaving the profile's kept set. Every other token
  // the reference keeps unambiguously must have a positive kernel probability. (Found by this target on an H200:
  // hf, no filters, V = 23, a token ~100 logits below the maximum.)
  for (int32_t t : all_out->kept) {
    if (all_out->Prob(t) < static_cast<long double>(std::numeric_limits<float>::min())) continue;
    FUZZ_CHECK(std::binary_search(kernel_kept.begin(), kernel_kept.end(), t),
               "%s: the kernels drop token %d, which the reference keeps unambiguously with probability %.6Lg",
               what.c_str(), t, all_out->Prob(t));
  }
  long double mass = 0;
  for (int32_t t : kernel_kept) mass += all_in->Prob(t);
  for (int32_t t : kernel_kept) {
    const long double want = all_in->Prob(t) / mass;
    const double got = (*dense)[t];
    FUZZ_CHECK(std::fabs(static_cast<long double>(got) - want) <= 1e-6L + 1e-5L * want,
               "%s: token %d has probability %.17g, the reference %.17Lg", what.c_str(), t, got, want);
  }

  // Many draws.
  std::vector<uint64_t> histogram(static_cast<size_t>(vocab), 0);
  uint64_t invalid = 0;
  const Status counted = cuda.CountDraws(row.fp32, params, draws, histogram, &invalid);
  FUZZ_CHECK(counted.ok() && invalid == 0, "%s: CountDraws: %s, %llu invalid", what.c_str(),
             counted.ok() ? "ok" : counted.error().ToString().c_str(), static_cast<unsigned long long>(invalid));
  uint64_t total = 0;
  for (int32_t t = 0; t < vocab; ++t) {
    if (histogram[t] == 0) continue;
    FUZZ_CHECK(Contains(kernel_kept, t), "%s: CountDraws drew token %d (%llu times) outside the kernels' kept set",
               what.c_str(), t, static_cast<unsigned long long>(histogram[t]));
    total += histogram[t];
  }
  FUZZ_CHECK(total == draws, "%s: CountDraws counted %llu of %llu draws", what.c_str(),
             static_cast<unsigned long long>(total), static_cast<unsigned long long>(draws));
  return 0;
}
