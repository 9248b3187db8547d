// A plugin of ABI version 1, the ABI before the chain verifier: it must still load and sample, and be refused as a
// verifier. It is written against version 1 (its own copy of the version-1 declarations it needs, not
// plugin_abi.h), samples the argmax of each row (lowest id on ties), and exports a function named
// samplecheck_plugin_verify_chain that a version-1 plugin may have for its own reasons: the harness must not call it
// (it aborts if called).
#include <cstddef>
#include <cstdint>
#include <cstdlib>

extern "C" {
struct v1_batch {
  const float* logits;
  int64_t rows;
  int64_t vocab;
  int64_t row_stride;
};

__attribute__((visibility("default"))) int samplecheck_plugin_abi_version(void) { return 1; }
__attribute__((visibility("default"))) void* samplecheck_plugin_create(const char*, char*, size_t) {
  static int handle = 0;
  return &handle;
}
__attribute__((visibility("default"))) void samplecheck_plugin_destroy(void*) {}
__attribute__((visibility("default"))) const char* samplecheck_plugin_name(void*) { return "v1-argmax"; }
__attribute__((visibility("default"))) int samplecheck_plugin_sample(void*, const v1_batch* batch, const void*,
                                                                      int32_t* tokens_out, char*, size_t) {
  for (int64_t r = 0; r < batch->rows; ++r) {
    const float* row = batch->logits + r * batch->row_stride;
    int64_t best = 0;
    for (int64_t i = 1; i < batch->vocab; ++i) {
      if (row[i] > row[best]) best = i;
    }
    tokens_out[r] = static_cast<int32_t>(best);
  }
  return 0;
}
__attribute__((visibility("default"))) int samplecheck_plugin_verify_chain(void*, const void*, int64_t, char*,
                                                                            size_t) {
  std::abort();
}
}
