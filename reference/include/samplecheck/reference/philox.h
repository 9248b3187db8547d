// The counter-based RNG shared by the exact CPU sampler and the CUDA kernels: Philox4x32-10 (Salmon et al.,
// SC'11; the generator of cuRAND's curand_Philox4x32_10 and Random123), keyed by the row's seed, counted by
// the row's offset. One draw consumes one Philox block; draw i of a row uses counter offset + i, so a row's
// draws depend on (seed, offset) only: not on the batch, the row's position or the other rows.
//
//   block  = Philox4x32_10(counter = {lo32(offset), hi32(offset), 0, 0}, key = {lo32(seed), hi32(seed)})
//   u      = ((uint64(block[0]) << 32 | block[1]) >> 11 + 0.5) * 2^-53      in (0, 1), never 0 or 1
#pragma once

#include <array>
#include <cstdint>

namespace samplecheck {

using PhiloxBlock = std::array<uint32_t, 4>;

PhiloxBlock Philox4x32_10(const PhiloxBlock& counter, uint32_t key0, uint32_t key1);

// The uniform of the draw at (seed, offset), as defined above.
double UniformForDraw(uint64_t seed, uint64_t offset);

}  // namespace samplecheck
