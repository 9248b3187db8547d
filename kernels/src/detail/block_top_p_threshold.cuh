// Top-p pivot: among the candidate tokens C = {x : key(x) >= candidate_key, x > -inf} (the distribution top-p
// sees, renormalized over C), the smallest key kappa such that the mass of C strictly above kappa is < top_p times
// the mass of C. Keeping key >= kappa keeps a token iff the mass strictly above its value is < top_p (strict, as
// vLLM and HF). The crossing tie group (value kappa, n members of mass w each, mass M strictly above it) is then cut
// by sort position as vLLM's PyTorch path and HF do (stable descending sort: ascending id first): member j (0-based,
// ascending id) is kept iff M + j * w < top_p * mass(C), compared exactly as the buckets are (the integer sum, as a
// double, against the double target); member 0 always is. Threshold returns kappa, n and r = the members kept.
//
// MSD radix over the order-preserving keys, 11 + 11 + 10 bits; each pass builds a 2^-42 fixed-point mass histogram
// and a count histogram of the candidates whose resolved bits equal `prefix` (integer sums: exact, deterministic).
// Only native 32-bit shared-memory atomics: a 64-bit shared atomicAdd is emulated (compare-and-swap loop), and in
// the first pass most logits land in a few dozen buckets, so those loops serialized. Each bin's 64-bit mass is
// kept as two 32-bit words, lo (the low words of the masses, modulo 2^32) and hi (the high words plus one per
// wrap of lo): the atomicAdd on lo returns the old value, so the adder whose addition wraps knows it (a single
// add of a value < 2^32 wraps at most once) and adds the carry to hi. The bin's mass is hi * 2^32 + lo, exactly
// (hi <= 2^20 * 2^10 + 2^20 < 2^31 for a row of <= 2^20 tokens of mass <= 2^42). The hi add is skipped when it
// is 0, i.e. for every token of mass < 2^32 (e < 2^-10) whose add does not wrap: nearly all of them. Each bin has
// kLoCopies lo words, adjacent (different banks), one per thread parity, so lanes of one warp that hit the same bin
// serialize half as often; the bin's mass is hi * 2^32 + the sum of its lo words. Every sum is an integer sum:
// the histograms are the same in any order, batch composition or launch configuration. (Warp aggregation with
// __match_any_sync + __reduce_add_sync before the atomics was measured 4x slower than these plain atomics.)
// Invariants (every thread, after pass d): `above` = fixed mass of candidates whose resolved bits are above
// prefix, above < target = top_p * total mass; the kept threshold lies inside the prefix range. The crossing
// bucket is the lowest non-empty bucket whose mass above is still < target.
#pragma once

#include <cub/block/block_scan.cuh>

#include <cstdint>

#include "block_radix_select.cuh"
#include "row_values.cuh"

namespace samplecheck::kernels::detail {

struct TopPCut {
  uint32_t key;         // kappa: every candidate above it is kept
  uint64_t tie_count;   // n: candidates whose key is kappa
  uint64_t tie_kept;    // r in [1, n]: the lowest-id members of the group kept
};

template <int kThreads>
class BlockTopPThreshold {
  static constexpr int kBinsPerThread = kRadixBins >= kThreads ? kRadixBins / kThreads : 1;
  static constexpr int kLoCopies = 2;  // even and odd threads add to different (adjacent, other-bank) lo words
  using Scan = cub::BlockScan<uint64_t, kThreads, cub::BLOCK_SCAN_WARP_SCANS>;

 public:
  struct TempStorage {
    uint32_t mass_lo[kRadixBins * kLoCopies];  // [bin][copy]: sums of the low words modulo 2^32
    uint32_t mass_hi[kRadixBins];  // sum of the high words + the wraps of mass_lo
    uint32_t count[kRadixBins];
    typename Scan::TempStorage scan;
    int found_position;
    uint64_t found_above;
    uint64_t found_mass;
    uint32_t found_count;
    uint64_t total;
  };

  __device__ explicit BlockTopPThreshold(TempStorage& storage) : storage_(storage) {}

  // Precondition: 0 < top_p < 1 and C holds the row max (mass 2^42). Returns kappa and the tie cut.
  template <class T>
  __device__ TopPCut Threshold(const T* row, int64_t vocab, const Softmax& softmax, uint32_t candidate_key,
                                double top_p) {
    uint32_t prefix = 0;
    uint32_t prefix_mask = 0;
    uint64_t above_prefix = 0;
    double target = 0.0;
    for (int pass = 0; pass < kRadixPasses; ++pass) {
      const int shift = RadixShift(pass);
      const uint32_t digit_mask = RadixDigitMask(pass);
      for (int b = threadIdx.x; b < kRadixBins; b += kThreads) {
#pragma unroll
        for (int c = 0; c < kLoCopies; ++c) storage_.mass_lo[b * kLoCopies + c] = 0;
        storage_.mass_hi[b] = 0;
        storage_.count[b] = 0;
      }
      if (threadIdx.x == 0) storage_.found_position = -1;
      __syncthreads();
      const int copy = threadIdx.x & 1;
      ForEachLogit<kThreads>(row, vocab, [&](int64_t, float x) {
        if (!IsKept(x, candidate_key)) return;
        const uint32_t key = OrderedKey(x);
        if ((key & prefix_mask) != prefix) return;
        const uint32_t bin = (key >> shift) & digit_mask;
        const uint64_t mass = FixedMass(softmax.Numerator(x));
        const uint32_t lo = static_cast<uint32_t>(mass);
        uint32_t hi = static_cast<uint32_t>(mass >> 32);
        if (lo) {
          const uint32_t old = atomicAdd(&storage_.mass_lo[bin * kLoCopies + copy], lo);
          hi += old + lo < old ? 1u : 0u;  // this add wrapped its lo word: carry one 2^32 into hi
        }
        if (hi) atomicAdd(&storage_.mass_hi[bin], hi);
        atomicAdd(&storage_.count[bin], 1u);
      });
      __syncthreads();
      uint64_t masses[kBinsPerThread];
      uint64_t above[kBinsPerThread];
#pragma unroll
      for (int q = 0; q < kBinsPerThread; ++q) {
        const int j = threadIdx.x * kBinsPerThread + q;
        masses[q] = 0;
        if (j < kRadixBins) {
          const int bin = kRadixBins - 1 - j;
          masses[q] = static_cast<uint64_t>(storage_.mass_hi[bin]) << 32;
#pragma unroll
          for (int c = 0; c < kLoCopies; ++c) masses[q] += storage_.mass_lo[bin * kLoCopies + c];
        }
      }
      uint64_t aggregate = 0;
      Scan(storage_.scan).ExclusiveSum(masses, above, aggregate);
      if (pass == 0) target = top_p * static_cast<double>(aggregate);
      // The crossing position: the largest j (lowest bucket) that is non-empty with mass above < target.
#pragma unroll
      for (int q = 0; q < kBinsPerThread; ++q) {
        const int j = threadIdx.x * kBinsPerThread + q;
        if (j < kRadixBins && storage_.count[kRadixBins - 1 - j] > 0 &&
            static_cast<double>(above_prefix + above[q]) < target) {
          atomicMax(&storage_.found_position, j);
        }
      }
      __syncthreads();
      const int found = storage_.found_position < 0 ? 0 : storage_.found_position;  // never < 0 (see above)
#pragma unroll
      for (int q = 0; q < kBinsPerThread; ++q) {
        if (threadIdx.x * kBinsPerThread + q == found) {
          storage_.found_above = above[q];
          storage_.found_mass = masses[q];
          storage_.found_count = storage_.count[kRadixBins - 1 - found];
        }
      }
      __syncthreads();
      prefix |= static_cast<uint32_t>(kRadixBins - 1 - found) << shift;
      prefix_mask |= digit_mask << shift;
      above_prefix += storage_.found_above;
      const uint64_t group_mass = storage_.found_mass;
      const uint64_t group_count = storage_.found_count;
      __syncthreads();
      if (pass == kRadixPasses - 1) {
        // The bucket of the last pass is one exact key: n equal values, each of mass w (the same Numerator).
        return TopPCut{prefix, group_count, TieKept(above_prefix, group_mass, group_count, target)};
      }
    }
    return TopPCut{prefix, 0, 0};  // not reached
  }

  // r = #{j in [0, n) : double(M + j * w) < target}, a prefix of j (monotone); M < target so r >= 1.
  __device__ static uint64_t TieKept(uint64_t above, uint64_t group_mass, uint64_t n, double target) {
    if (n <= 1) return n;
    const uint64_t w = group_mass / n;
    if (w == 0) return n;
    auto keep = [&](uint64_t j) { return static_cast<double>(above + j * w) < target; };
    const double estimate = ceil((target - static_cast<double>(above)) / static_cast<double>(w));
    uint64_t r = estimate >= static_cast<double>(n) ? n : (estimate <= 1.0 ? 1 : static_cast<uint64_t>(estimate));
    while (r > 1 && !keep(r - 1)) --r;
    while (r < n && keep(r)) ++r;
    return r;
  }

 private:
  TempStorage& storage_;
};

}  // namespace samplecheck::kernels::detail
