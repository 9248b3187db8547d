// The counter-based RNG shared by the exact CPU sampler and the CUDA kernels: Philox4x32-10 (Salmon et al.,
// SC'11; the generator of cuRAND's curand_Philox4x32_10 and Random123), keyed by the row's seed, counted by
// the row's offset. One draw consumes one Philox block; draw i of a row uses counter offset + i, so a row's
// draws depend on (seed, offset) only: not on the batch, the row's position or the other rows.
//
//   block  = Philox4x32_10(counter = {lo32(offset), hi32(offset), 0, 0}, key = {lo32(seed), hi32(seed)})
//   u      = (double((uint64(block[0]) << 32 | block[1]) >> 12) + 0.5) * 2^-52     in IEEE double arithmetic
//
// 52 random bits plus one half: every value is exact in a double, so u lies in [2^-53, 1 - 2^-53], never 0 or 1,
// on the CPU and on the GPU alike. (A 53-bit version, (bits + 0.5) * 2^-53, rounds to even once bits >= 2^52 and
// gives u == 1.0 for bits = 2^53 - 1; tests/reference/philox_test.cpp found it, and the formula was changed.)
#pragma once

#include <array>
#include <cstdint>

namespace samplecheck {

using PhiloxBlock = std::array<uint32_t, 4>;

PhiloxBlock Philox4x32_10(const PhiloxBlock& counter, uint32_t key0, uint32_t key1);

// The uniform of the draw at (seed, offset), as defined above.
double UniformForDraw(uint64_t seed, uint64_t offset);

}  // namespace samplecheck
