// A plugin built against a future ABI: every symbol is there, the version is not ours.
#include <cstddef>
#include <cstdint>

#include "samplecheck/samplers/plugin_abi.h"

extern "C" {
__attribute__((visibility("default"))) int samplecheck_plugin_abi_version(void) { return 999; }
__attribute__((visibility("default"))) void* samplecheck_plugin_create(const char*, char*, size_t) {
  static int handle = 0;
  return &handle;
}
__attribute__((visibility("default"))) void samplecheck_plugin_destroy(void*) {}
__attribute__((visibility("default"))) int samplecheck_plugin_sample(void*, const samplecheck_plugin_batch*,
                                                                      const samplecheck_plugin_params*, int32_t*,
                                                                      char*, size_t) {
  return SAMPLECHECK_PLUGIN_ERROR;
}
}
