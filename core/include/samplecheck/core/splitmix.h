// splitmix64 (Steele, Lea and Flood, "Fast splittable pseudorandom number generators", OOPSLA 2014) and FNV-1a: the
// seed mixers of every host library (case seeds, row seeds, hash buckets, the property generators' streams). Header
// only, so the plugins of examples/ and adapters/, which link nothing, may include it too.
#pragma once

#include <cstdint>
#include <string_view>

namespace samplecheck {

// One splitmix64 output for the state x: x + the golden gamma, then the finalizer.
constexpr uint64_t SplitMix64(uint64_t x) {
  x += 0x9E3779B97F4A7C15ULL;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ULL;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBULL;
  return x ^ (x >> 31);
}

// The splitmix64 stream: the output for `state`, which then advances by the golden gamma.
constexpr uint64_t SplitMix64Next(uint64_t& state) {
  const uint64_t x = state;
  state += 0x9E3779B97F4A7C15ULL;
  return SplitMix64(x);
}

// 64-bit FNV-1a of the bytes of s.
constexpr uint64_t Fnv1a64(std::string_view s) {
  uint64_t h = 0xcbf29ce484222325ULL;
  for (unsigned char c : s) {
    h ^= c;
    h *= 0x100000001b3ULL;
  }
  return h;
}

}  // namespace samplecheck
