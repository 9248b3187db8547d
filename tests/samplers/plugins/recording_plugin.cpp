// A plugin without count_draws that records its calls (plugin_isolation_test.cpp): each sample call appends
// "pid P sample rows R vocab V offsets O1..O2" to the file its config names, and draws token
// (offset * 2654435761) % vocab, so a histogram shows which offsets were drawn. Isolated and in process it must
// see the same calls.
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <string>

#include "samplecheck/samplers/plugin_abi.h"

namespace {
struct Handle {
  std::string log;
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
__attribute__((visibility("default"))) const char* samplecheck_plugin_name(void*) { return "recording"; }
__attribute__((visibility("default"))) int samplecheck_plugin_sample(void* h, const samplecheck_plugin_batch* batch,
                                                                      const samplecheck_plugin_params* params,
                                                                      int32_t* tokens, char* err, size_t err_len) {
  const Handle& handle = *static_cast<Handle*>(h);
  for (int64_t r = 0; r < batch->rows; ++r) {
    tokens[r] = static_cast<int32_t>((params[r].offset * 2654435761u) % static_cast<uint64_t>(batch->vocab));
  }
  FILE* f = std::fopen(handle.log.c_str(), "a");
  if (f == nullptr) {
    std::snprintf(err, err_len, "cannot open the log '%s'", handle.log.c_str());
    return SAMPLECHECK_PLUGIN_ERROR;
  }
  std::fprintf(f, "pid %d sample rows %lld vocab %lld offsets %llu..%llu\n", static_cast<int>(getpid()),
               static_cast<long long>(batch->rows), static_cast<long long>(batch->vocab),
               static_cast<unsigned long long>(params[0].offset),
               static_cast<unsigned long long>(params[batch->rows - 1].offset));
  std::fclose(f);
  return SAMPLECHECK_PLUGIN_OK;
}
}
