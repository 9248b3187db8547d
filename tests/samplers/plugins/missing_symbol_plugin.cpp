// A plugin with the right ABI version that lacks the required samplecheck_plugin_sample export.
#include <cstddef>

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
}
