// Top-p pivot: among the candidate tokens C = {x : key(x) >= candidate_key, x > -inf} (the distribution top-p
// sees, renormalized over C), the smallest key kappa such that the mass of C strictly above kappa is < top_p times
// the mass of C. Keeping key >= kappa keeps a token iff the mass strictly above its value is < top_p (strict, as
// vLLM and HF), with every token tied with the crossing token kept (reference/ reports that tie group ambiguous;
// this kernel's documented rule keeps it).
//
// MSD radix over the order-preserving keys, 11 + 11 + 10 bits; each pass builds a 2^-42 fixed-point mass histogram
// and a count histogram of the candidates whose resolved bits equal `prefix` (integer sums: exact, deterministic).
// Invariants (every thread, after pass d): `above` = fixed mass of candidates whose resolved bits are above
// prefix, above < target = top_p * total mass; the kept threshold lies inside the prefix range. The crossing
// bucket is the lowest non-empty bucket whose mass above is still < target.
#pragma once

#include <cub/block/block_scan.cuh>

#include <cstdint>

#include "block_radix_select.cuh"
#include "row_values.cuh"

namespace samplecheck::kernels::detail {

template <int kThreads>
class BlockTopPThreshold {
  static constexpr int kBinsPerThread = kRadixBins >= kThreads ? kRadixBins / kThreads : 1;
  using Scan = cub::BlockScan<uint64_t, kThreads>;

 public:
  struct TempStorage {
    uint64_t mass[kRadixBins];
    uint32_t count[kRadixBins];
    typename Scan::TempStorage scan;
    int found_position;
    uint64_t found_above;
    uint64_t total;
  };

  __device__ explicit BlockTopPThreshold(TempStorage& storage) : storage_(storage) {}

  // Precondition: 0 < top_p < 1 and C holds the row max (mass 2^42). Returns kappa.
  template <class T>
  __device__ uint32_t Threshold(const T* row, int64_t vocab, const Softmax& softmax, uint32_t candidate_key,
                                double top_p) {
    uint32_t prefix = 0;
    uint32_t prefix_mask = 0;
    uint64_t above_prefix = 0;
    double target = 0.0;
    for (int pass = 0; pass < kRadixPasses; ++pass) {
      const int shift = RadixShift(pass);
      const uint32_t digit_mask = RadixDigitMask(pass);
      for (int b = threadIdx.x; b < kRadixBins; b += kThreads) {
        storage_.mass[b] = 0;
        storage_.count[b] = 0;
      }
      if (threadIdx.x == 0) storage_.found_position = -1;
      __syncthreads();
      ForEachLogit<kThreads>(row, vocab, [&](int64_t, float x) {
        if (!IsKept(x, candidate_key)) return;
        const uint32_t key = OrderedKey(x);
        if ((key & prefix_mask) != prefix) return;
        const uint32_t bin = (key >> shift) & digit_mask;
        const uint64_t mass = FixedMass(softmax.Numerator(x));
        if (mass) atomicAdd(reinterpret_cast<unsigned long long*>(&storage_.mass[bin]), mass);
        atomicAdd(&storage_.count[bin], 1u);
      });
      __syncthreads();
      uint64_t masses[kBinsPerThread];
      uint64_t above[kBinsPerThread];
#pragma unroll
      for (int q = 0; q < kBinsPerThread; ++q) {
        const int j = threadIdx.x * kBinsPerThread + q;
        masses[q] = j < kRadixBins ? storage_.mass[kRadixBins - 1 - j] : 0;
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
        if (threadIdx.x * kBinsPerThread + q == found) storage_.found_above = above[q];
      }
      __syncthreads();
      prefix |= static_cast<uint32_t>(kRadixBins - 1 - found) << shift;
      prefix_mask |= digit_mask << shift;
      above_prefix += storage_.found_above;
      __syncthreads();
    }
    return prefix;
  }

 private:
  TempStorage& storage_;
};

}  // namespace samplecheck::kernels::detail
