// The uniform of one draw, exactly as reference/include/samplecheck/reference/philox.h defines it:
//   block = Philox4x32_10(counter {lo32(offset), hi32(offset), 0, 0}, key {lo32(seed), hi32(seed)})
//   u     = (((uint64(block[0]) << 32 | block[1]) >> 12) + 0.5) * 2^-52, in [2^-53, 1 - 2^-53], never 0 or 1.
// and the fixed-point target of an inverse-CDF draw: the drawn token is the first whose inclusive cumulative
// fixed-point mass exceeds DrawTarget(u, kept_mass) (= floor(u * kept_mass) < kept_mass).
#pragma once

#include <curand_philox4x32_x.h>

#include <cstdint>

namespace samplecheck::kernels::detail {

__device__ __forceinline__ double UniformForDraw(uint64_t seed, uint64_t offset) {
  const uint4 counter = make_uint4(static_cast<uint32_t>(offset), static_cast<uint32_t>(offset >> 32), 0u, 0u);
  const uint2 key = make_uint2(static_cast<uint32_t>(seed), static_cast<uint32_t>(seed >> 32));
  const uint4 block = curand_Philox4x32_10(counter, key);
  const uint64_t bits = ((static_cast<uint64_t>(block.x) << 32) | block.y) >> 12;
  return (static_cast<double>(bits) + 0.5) * 0x1p-52;
}

__device__ __forceinline__ uint64_t DrawTarget(double u, uint64_t kept_mass) {
  uint64_t t = static_cast<uint64_t>(u * static_cast<double>(kept_mass));
  return t >= kept_mass ? kept_mass - 1 : t;
}

}  // namespace samplecheck::kernels::detail
