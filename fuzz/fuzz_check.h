// FUZZ_CHECK: the failing-invariant report of every fuzz target.
#pragma once

#include <cstdio>
#include <cstdlib>

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
