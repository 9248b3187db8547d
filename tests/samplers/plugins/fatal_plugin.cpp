// A plugin that takes its process down, the way its config names (plugin_isolation_test.cpp): a correct C ABI
// plugin otherwise (every row gets token 0; count_draws counts every draw as token 0; profile vllm).
//   config := fault "-in-" place [",pid=" path]
//   fault  := exit      _exit(0) (the status a harness must not mistake for success; exit-3 for status 3)
//           | hang      sleep forever
//           | segfault  a store through a null pointer (SIGSEGV)
//           | print     write text to stdout, then go on correctly (the protocol must not see it)
//           | none      no fault
//   place  := create | sample | count
//   pid=   write the process id to `path` when the handle is created (tests that kill the process around it)
#include <signal.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>

#include "samplecheck/samplers/plugin_abi.h"

namespace {

struct Handle {
  std::string fault;
  std::string place;
};

void Fault(const std::string& fault) {
  if (fault == "exit") _exit(0);
  if (fault == "exit-3") _exit(3);
  if (fault == "hang") {
    for (;;) pause();
  }
  if (fault == "segfault") {
    volatile uintptr_t address = 0;  // volatile: the compiler cannot see the null and turn the store into a trap
    *reinterpret_cast<volatile int*>(address) = 1;
  }
  if (fault == "print") {
    std::printf("fatal plugin: a line on stdout\n");
    std::fflush(stdout);
  }
}

}  // namespace

extern "C" {
__attribute__((visibility("default"))) int samplecheck_plugin_abi_version(void) {
  return SAMPLECHECK_PLUGIN_ABI_VERSION;
}

__attribute__((visibility("default"))) void* samplecheck_plugin_create(const char* config, char* err,
                                                                        size_t err_len) {
  std::string text = config ? config : "";
  std::string pidfile;
  if (const size_t comma = text.find(",pid="); comma != std::string::npos) {
    pidfile = text.substr(comma + 5);
    text.resize(comma);
  }
  const size_t in = text.find("-in-");
  if (in == std::string::npos) {
    std::snprintf(err, err_len, "config '%s' is not <fault>-in-<place>[,pid=<path>]", text.c_str());
    return nullptr;
  }
  auto* handle = new Handle{text.substr(0, in), text.substr(in + 4)};
  if (!pidfile.empty()) {
    if (FILE* f = std::fopen(pidfile.c_str(), "w")) {
      std::fprintf(f, "%d\n", static_cast<int>(getpid()));
      std::fclose(f);
    }
  }
  if (handle->place == "create") Fault(handle->fault);
  return handle;
}

__attribute__((visibility("default"))) void samplecheck_plugin_destroy(void* h) { delete static_cast<Handle*>(h); }

__attribute__((visibility("default"))) const char* samplecheck_plugin_name(void*) { return "fatal"; }

__attribute__((visibility("default"))) const char* samplecheck_plugin_profile(void*) { return "vllm"; }

__attribute__((visibility("default"))) int samplecheck_plugin_sample(void* h, const samplecheck_plugin_batch* batch,
                                                                      const samplecheck_plugin_params*,
                                                                      int32_t* tokens, char*, size_t) {
  const Handle& handle = *static_cast<Handle*>(h);
  if (handle.place == "sample") Fault(handle.fault);
  for (int64_t r = 0; r < batch->rows; ++r) tokens[r] = 0;
  return SAMPLECHECK_PLUGIN_OK;
}

__attribute__((visibility("default"))) int samplecheck_plugin_count_draws(void* h, const float*, int64_t,
                                                                           const samplecheck_plugin_params*,
                                                                           uint64_t draws, uint64_t* histogram,
                                                                           uint64_t*, char*, size_t) {
  const Handle& handle = *static_cast<Handle*>(h);
  if (handle.place == "count") Fault(handle.fault);
  histogram[0] += draws;
  return SAMPLECHECK_PLUGIN_OK;
}
}
