// plugin_abi_fuzzer: the plugin C ABI boundary (harness/plugin_sampler.h). Each input scripts a plugin
// (fuzz/scripted_plugin.cc, loaded with dlopen like any `--sampler plugin:` library; the script travels as the
// hex-encoded config) that breaks the contract in every way a C function can without touching memory it was not
// given. The harness must turn each break into a typed error, never a crash or a value that breaks its own contract.
//
// Invariants (docs/fuzzing.md):
//   errors     every failure is a typed error: kPlugin (a broken contract, an undefined return code, a refused
//              config), kInvalidArgument / kUnsupported / kInvalidRow for the matching return codes; the message
//              is non-empty and NUL-safe (a plugin that fills the whole error buffer without a NUL).
//   Sample     ok => every token in [-1, vocab) (never the harness's "unwritten" sentinel).
//   processed  ok => vocab entries, finite, >= 0, summing to 1 within 1e-3.
//   count      ok => the histogram grew by exactly the draws minus the invalid ones, no 2^64 wrap.
//   misc       Name() and GetCapabilities() with NULL or odd name/profile/flags answers.
#include <dlfcn.h>

#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "fuzz_check.h"
#include <fuzzer/FuzzedDataProvider.h>
#include "samplecheck/samplers/plugin_sampler.h"

namespace samplecheck::fuzz {
namespace {

void CheckError(const Error& e, const char* call) {
  FUZZ_CHECK(e.code == ErrorCode::kPlugin || e.code == ErrorCode::kInvalidArgument ||
                 e.code == ErrorCode::kUnsupported || e.code == ErrorCode::kInvalidRow,
             "%s: unexpected error code %s", call, e.ToString().c_str());
  FUZZ_CHECK(!e.message.empty(), "%s: empty error message", call);
}

}  // namespace
}  // namespace samplecheck::fuzz

// The plugin stays mapped for the whole run (RTLD_NODELETE): the harness dlopens and dlcloses it for every input,
// and in the fuzz build the plugin carries coverage counters that libFuzzer reads after every input.
extern "C" int LLVMFuzzerInitialize(int*, char***) {
  if (!dlopen(SAMPLECHECK_SCRIPTED_PLUGIN_PATH, RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE)) {
    std::fprintf(stderr, "plugin_abi_fuzzer: cannot load %s: %s\n", SAMPLECHECK_SCRIPTED_PLUGIN_PATH, dlerror());
    std::abort();
  }
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace samplecheck;
  using namespace samplecheck::fuzz;
  FuzzedDataProvider in(data, size);
  const int request = in.ConsumeIntegralInRange<int>(0, 2);
  const int64_t rows = in.ConsumeIntegralInRange<int64_t>(1, 4);
  const int64_t vocab = in.ConsumeIntegralInRange<int64_t>(1, 16);
  const uint64_t draws = in.ConsumeBool() ? in.ConsumeIntegral<uint64_t>() : in.ConsumeIntegralInRange<uint64_t>(0, 100);
  const std::vector<uint8_t> script = in.ConsumeRemainingBytes<uint8_t>();
  static const char kHex[] = "0123456789abcdef";
  std::string config;
  for (uint8_t b : script) {
    config.push_back(kHex[b >> 4]);
    config.push_back(kHex[b & 15]);
  }
  auto made = harness::MakePluginSampler(SAMPLECHECK_SCRIPTED_PLUGIN_PATH, config);
  if (!made.ok()) {
    CheckError(made.error(), "create");
    FUZZ_CHECK(made.error().code == ErrorCode::kPlugin, "create failed with %s", made.error().ToString().c_str());
    return 0;
  }
  harness::Sampler& sampler = **made;
  (void)sampler.Name();
  (void)sampler.GetCapabilities();

  std::vector<float> logits(static_cast<size_t>(rows * vocab), 0.0f);
  std::vector<SamplingParams> params(static_cast<size_t>(rows));
  const std::span<const float> row(logits.data(), static_cast<size_t>(vocab));
  Status status;
  if (request == 0) {
    std::vector<int32_t> tokens(static_cast<size_t>(rows), 777);
    status = sampler.Sample(harness::RowBatch{logits.data(), rows, vocab, vocab}, params, tokens);
    if (status.ok()) {
      for (int32_t t : tokens) FUZZ_CHECK(t >= -1 && t < vocab, "Sample accepted token %d (vocab %lld)", t,
                                          static_cast<long long>(vocab));
    }
  } else if (request == 1) {
    auto probs = sampler.ProcessedDistribution(row, params[0]);
    if (probs.ok()) {
      FUZZ_CHECK(static_cast<int64_t>(probs->size()) == vocab, "processed: %zu entries", probs->size());
      double sum = 0;
      for (double p : *probs) {
        FUZZ_CHECK(std::isfinite(p) && p >= 0, "processed accepted probability %.17g", p);
        sum += p;
      }
      FUZZ_CHECK(std::fabs(sum - 1) <= 1e-3, "processed accepted a sum of %.17g", sum);
    } else {
      status = probs.status();
    }
  } else {
    std::vector<uint64_t> histogram(static_cast<size_t>(vocab), 0);
    uint64_t invalid = 0;
    status = sampler.CountDraws(row, params[0], draws, histogram, &invalid);
    if (status.ok()) {
      uint64_t total = invalid;
      bool wrapped = false;
      for (uint64_t c : histogram) wrapped |= __builtin_add_overflow(total, c, &total);
      FUZZ_CHECK(!wrapped && total == draws, "count accepted a histogram adding up to %llu%s for %llu draws",
                 static_cast<unsigned long long>(total), wrapped ? " (after a 2^64 wrap)" : "",
                 static_cast<unsigned long long>(draws));
    }
  }
  if (!status.ok()) CheckError(status.error(), "request");
  return 0;
}
