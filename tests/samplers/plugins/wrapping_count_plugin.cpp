// A plugin whose count_draws returns counts that add up to `draws` only modulo 2^64.
#include <cstddef>
#include <cstdint>

#include "samplecheck/samplers/plugin_abi.h"

extern "C" {
__attribute__((visibility("default"))) int samplecheck_plugin_abi_version(void) {
  return SAMPLECHECK_PLUGIN_ABI_VERSION;
}
__attribute__((visibility("default"))) void* samplecheck_plugin_create(const char*, char*, size_t) {
  static int handle = 0;
  return &handle;
}
__attribute__((visibility("default"))) void samplecheck_plugin_destroy(void*) {}
__attribute__((visibility("default"))) int samplecheck_plugin_sample(void*, const samplecheck_plugin_batch* batch,
                                                                      const samplecheck_plugin_params*,
                                                                      int32_t* tokens, char*, size_t) {
  for (int64_t r = 0; r < batch->rows; ++r) tokens[r] = 0;
  return SAMPLECHECK_PLUGIN_OK;
}
__attribute__((visibility("default"))) int samplecheck_plugin_count_draws(void*, const float*, int64_t vocab,
                                                                           const samplecheck_plugin_params*,
                                                                           uint64_t draws, uint64_t* histogram,
                                                                           uint64_t*, char*, size_t) {
  if (vocab < 2) return SAMPLECHECK_PLUGIN_UNSUPPORTED;
  histogram[0] += UINT64_MAX;  // UINT64_MAX + (draws + 1) == draws (mod 2^64)
  histogram[1] += draws + 1;
  return SAMPLECHECK_PLUGIN_OK;
}
}
