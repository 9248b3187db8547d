// FUZZ_CHECK: the failing-invariant report of every fuzz target.
#pragma once

#include <cstdio>
#include <cstdlib>

#include "samplecheck/core/error.h"

// A broken invariant: print what and where, then abort (libFuzzer saves the input as crash-<sha1>).
#define FUZZ_CHECK(cond, ...)                                                              \
  do {                                                                                     \
    if (!(cond)) {                                                                         \
      std::fprintf(stderr, "FUZZ_CHECK failed at %s:%d: %s\n  ", __FILE__, __LINE__, #cond); \
      std::fprintf(stderr, __VA_ARGS__);                                                   \
      std::fprintf(stderr, "\n");                                                          \
      std::abort();                                                                        \
    }                                                                                      \
  } while (0)

namespace samplecheck::fuzz {

// A refusal of a file reader (suite, report, .npy): a typed error of the input's kind with a message.
inline void CheckInputError(const Error& e, const char* what) {
  FUZZ_CHECK(e.code == ErrorCode::kParse || e.code == ErrorCode::kInvalidArgument || e.code == ErrorCode::kIo,
             "%s: unexpected error %s", what, e.ToString().c_str());
  FUZZ_CHECK(!e.message.empty(), "%s: empty error message", what);
}

}  // namespace samplecheck::fuzz
