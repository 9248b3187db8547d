// Philox4x32-10 (Salmon, Moraes, Dror, Shaw, "Parallel random numbers: as easy as 1, 2, 3", SC'11), bit-exact with
// Random123's philox4x32_R(10, ...) and cuRAND's curand_Philox4x32_10 block function. Checked against the
// Random123 known-answer vectors (tests/kat_vectors) in tests/reference/philox_test.cpp.
#include "samplecheck/reference/philox.h"

namespace samplecheck {
namespace {

constexpr uint32_t kMultiplier0 = 0xD2511F53u;
constexpr uint32_t kMultiplier1 = 0xCD9E8D57u;
constexpr uint32_t kWeyl0 = 0x9E3779B9u;  // golden ratio
constexpr uint32_t kWeyl1 = 0xBB67AE85u;  // sqrt(3) - 1

inline void MulHiLo(uint32_t a, uint32_t b, uint32_t& hi, uint32_t& lo) {
  const uint64_t product = static_cast<uint64_t>(a) * b;
  hi = static_cast<uint32_t>(product >> 32);
  lo = static_cast<uint32_t>(product);
}

}  // namespace

PhiloxBlock Philox4x32_10(const PhiloxBlock& counter, uint32_t key0, uint32_t key1) {
  PhiloxBlock x = counter;
  for (int round = 0; round < 10; ++round) {
    if (round > 0) {  // the key schedule bumps the key before every round but the first
      key0 += kWeyl0;
      key1 += kWeyl1;
    }
    uint32_t hi0, lo0, hi1, lo1;
    MulHiLo(kMultiplier0, x[0], hi0, lo0);
    MulHiLo(kMultiplier1, x[2], hi1, lo1);
    x = {hi1 ^ x[1] ^ key0, lo1, hi0 ^ x[3] ^ key1, lo0};
  }
  return x;
}

double UniformForDraw(uint64_t seed, uint64_t offset) {
  const PhiloxBlock block = Philox4x32_10(
      {static_cast<uint32_t>(offset), static_cast<uint32_t>(offset >> 32), 0u, 0u}, static_cast<uint32_t>(seed),
      static_cast<uint32_t>(seed >> 32));
  const uint64_t bits = (static_cast<uint64_t>(block[0]) << 32 | block[1]) >> 12;  // 52 bits
  return (static_cast<double>(bits) + 0.5) * 0x1p-52;  // exact: in [2^-53, 1 - 2^-53], never 0 or 1
}

}  // namespace samplecheck
