// Top-k pivot: the k-th largest logit of a row by MSD radix select on the order-preserving keys (row_values.cuh),
// 11 + 11 + 10 bits, one count histogram (2,048 bins in shared memory) per pass. Integer counts: exact and
// deterministic. Used by both profiles' top-k, which keeps every token tied with the k-th value (kept iff
// key >= the returned key).
//
// Invariants (every thread, after pass d): `prefix` holds the top bits of the k-th largest key resolved so far,
// and `remaining` = k - #{tokens whose key's resolved bits are above prefix}; 1 <= remaining <= #{tokens whose
// resolved bits equal prefix}. After the last pass prefix is the k-th largest key itself.
#pragma once

#include <cub/block/block_scan.cuh>

#include <cstdint>

#include "row_values.cuh"

namespace samplecheck::kernels::detail {

inline constexpr int kRadixBins = 2048;
inline constexpr int kRadixPasses = 3;
__device__ __forceinline__ int RadixShift(int pass) { return pass == 0 ? 21 : (pass == 1 ? 10 : 0); }
__device__ __forceinline__ uint32_t RadixDigitMask(int pass) { return pass == 2 ? 0x3ffu : 0x7ffu; }

template <int kThreads>
class BlockKthLargestKey {
  static_assert(kRadixBins % kThreads == 0 || kThreads % kRadixBins == 0, "bins must spread evenly");
  static constexpr int kBinsPerThread = kRadixBins >= kThreads ? kRadixBins / kThreads : 1;
  using Scan = cub::BlockScan<uint32_t, kThreads, cub::BLOCK_SCAN_WARP_SCANS>;

 public:
  struct TempStorage {
    uint32_t count[kRadixBins];
    typename Scan::TempStorage scan;
    uint32_t found_bin;
    uint32_t found_above;
  };

  __device__ explicit BlockKthLargestKey(TempStorage& storage) : storage_(storage) {}

  // Precondition: 1 <= k <= vocab. Returns the key of the k-th largest logit.
  template <class T>
  __device__ uint32_t Select(const T* row, int64_t vocab, int64_t k) {
    uint32_t prefix = 0;
    uint32_t prefix_mask = 0;
    uint32_t remaining = static_cast<uint32_t>(k);
    for (int pass = 0; pass < kRadixPasses; ++pass) {
      const int shift = RadixShift(pass);
      const uint32_t digit_mask = RadixDigitMask(pass);
      for (int b = threadIdx.x; b < kRadixBins; b += kThreads) storage_.count[b] = 0;
      __syncthreads();
      ForEachLogit<kThreads>(row, vocab, [&](int64_t, float x) {
        const uint32_t key = OrderedKey(x);
        if ((key & prefix_mask) == prefix) atomicAdd(&storage_.count[(key >> shift) & digit_mask], 1u);
      });
      __syncthreads();
      // Descending exclusive scan: position j holds bin kRadixBins - 1 - j.
      uint32_t counts[kBinsPerThread];
      uint32_t above[kBinsPerThread];
#pragma unroll
      for (int q = 0; q < kBinsPerThread; ++q) {
        const int j = threadIdx.x * kBinsPerThread + q;
        counts[q] = j < kRadixBins ? storage_.count[kRadixBins - 1 - j] : 0;
      }
      Scan(storage_.scan).ExclusiveSum(counts, above);
#pragma unroll
      for (int q = 0; q < kBinsPerThread; ++q) {
        if (counts[q] > 0 && above[q] < remaining && remaining <= above[q] + counts[q]) {
          storage_.found_bin = kRadixBins - 1 - (threadIdx.x * kBinsPerThread + q);
          storage_.found_above = above[q];
        }
      }
      __syncthreads();
      prefix |= storage_.found_bin << shift;
      prefix_mask |= digit_mask << shift;
      remaining -= storage_.found_above;
      __syncthreads();
    }
    return prefix;
  }

 private:
  TempStorage& storage_;
};

}  // namespace samplecheck::kernels::detail
