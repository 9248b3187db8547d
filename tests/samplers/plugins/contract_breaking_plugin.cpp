// A plugin that loads fine and then breaks the contract in the way its config names:
//   unwritten        sample reports success without writing any token
//   bad-code         sample returns 42, not a code of plugin_abi.h, with no message
//   unsupported      sample returns SAMPLECHECK_PLUGIN_UNSUPPORTED
//   bad-distribution processed_distribution returns a NaN probability
//   unnormalized     processed_distribution returns probabilities summing to 2
//   negative-token   sample returns -7 for every row
//   int-min-token    sample returns INT32_MIN (-2147483648) for every row: the harness's own "unwritten" sentinel
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>

#include "samplecheck/samplers/plugin_abi.h"

namespace {
struct Handle {
  std::string mode;
};
}  // namespace

extern "C" {
__attribute__((visibility("default"))) int samplecheck_plugin_abi_version(void) {
  return SAMPLECHECK_PLUGIN_ABI_VERSION;
}
__attribute__((visibility("default"))) void* samplecheck_plugin_create(const char* config, char*, size_t) {
  return new Handle{config ? config : ""};
}
__attribute__((visibility("default"))) void samplecheck_plugin_destroy(void* h) { delete static_cast<Handle*>(h); }
__attribute__((visibility("default"))) int samplecheck_plugin_sample(void* h, const samplecheck_plugin_batch* batch,
                                                                      const samplecheck_plugin_params*,
                                                                      int32_t* tokens, char* err, size_t err_len) {
  const std::string& mode = static_cast<Handle*>(h)->mode;
  if (mode == "unwritten") return SAMPLECHECK_PLUGIN_OK;
  if (mode == "bad-code") return 42;
  if (mode == "unsupported") {
    std::snprintf(err, err_len, "vocab %lld is too large for this kernel", static_cast<long long>(batch->vocab));
    return SAMPLECHECK_PLUGIN_UNSUPPORTED;
  }
  const int32_t token = mode == "negative-token" ? -7 : mode == "int-min-token" ? INT32_MIN : 0;
  for (int64_t r = 0; r < batch->rows; ++r) tokens[r] = token;
  return SAMPLECHECK_PLUGIN_OK;
}
__attribute__((visibility("default"))) int samplecheck_plugin_processed_distribution(
    void* h, const float*, int64_t vocab, const samplecheck_plugin_params*, double* probs, char*, size_t) {
  const std::string& mode = static_cast<Handle*>(h)->mode;
  for (int64_t t = 0; t < vocab; ++t) probs[t] = 0.0;
  probs[0] = mode == "bad-distribution" ? std::nan("") : mode == "unnormalized" ? 2.0 : 1.0;
  return SAMPLECHECK_PLUGIN_OK;
}
}
