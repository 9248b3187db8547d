// The candidate list of a split-row plan: the few tokens of a row that can decide its threshold, gathered into
// the shared memory of one CTA as 64-bit sort keys and resolved there by that block alone (no more cluster
// barriers). Profiles `vllm` and `hf` (reference/ profile.h): the same thresholds as BlockKthLargestKey and
// BlockTopPThreshold compute over the whole row, and the same inverse-CDF draw as BlockInverseCdf::Draw.
//
// Item orders (unique keys: a token id appears once):
//   value-major  (~key << 32 | id): ascending = logit descending, ties by ascending id: the order of vLLM's and
//                HF's stable descending sort, in which top-p's tie cut by position keeps a prefix.
//   id-major     (id << 32 | key):  ascending = token id ascending: the order of the inverse-CDF draw.
//
// Invariants
// - After SortAscending(items, n): items[0, n) ascending; items[n, NextPow2(n)) hold the padding ~0 (last).
// - TopPOnSorted over a value-major prefix [0, m) whose tokens all lie below a mass M already counted: with
//   P_i = M + sum of masses of items [0, i) (exact integers), item i is kept iff double(P_i) < target, a prefix
//   [0, q), q >= 1 when double(M) < target. Members of one tie group have one mass w, so P_{g+j} = M_g + j w:
//   q - g is exactly BlockTopPThreshold::TieKept's r for the crossing group [g, h).
// - DrawOnKept: the first item in ascending id whose inclusive cumulative mass exceeds DrawTarget(u, S).
#pragma once

#include <cub/block/block_scan.cuh>

#include <cstdint>

#include "block_top_p_threshold.cuh"
#include "philox_uniform.cuh"
#include "row_values.cuh"

namespace samplecheck::kernels::detail {

inline constexpr int kListCapacity = 2048;

__device__ __forceinline__ uint64_t ValueMajor(uint32_t key, uint32_t id) {
  return (static_cast<uint64_t>(~key) << 32) | id;
}
__device__ __forceinline__ uint32_t ValueMajorKey(uint64_t item) { return ~static_cast<uint32_t>(item >> 32); }
__device__ __forceinline__ uint32_t ValueMajorId(uint64_t item) { return static_cast<uint32_t>(item); }
__device__ __forceinline__ uint64_t IdMajor(uint32_t key, uint32_t id) {
  return (static_cast<uint64_t>(id) << 32) | key;
}
__device__ __forceinline__ uint32_t IdMajorKey(uint64_t item) { return static_cast<uint32_t>(item); }
__device__ __forceinline__ uint32_t IdMajorId(uint64_t item) { return static_cast<uint32_t>(item >> 32); }

__device__ __forceinline__ int NextPow2(int n) {
  int p = 1;
  while (p < n) p <<= 1;
  return p;
}

// The first index i in [0, n) with pred(i) true, or n; pred must be false ... false true ... true. Every thread
// computes the same value (a binary search over shared memory; no barrier).
template <class Pred>
__device__ __forceinline__ int FirstIndexWhere(int n, const Pred& pred) {
  int lo = 0, hi = n;
  while (lo < hi) {
    const int mid = (lo + hi) >> 1;
    if (pred(mid)) {
      hi = mid;
    } else {
      lo = mid + 1;
    }
  }
  return lo;
}

// Top-p's cut over a value-major list: kappa and the crossing group's tie cut, as TopPCut (key, n, r), plus the
// id of the last member kept (the tie limit is that id + 1 when r < n).
struct ListTopPCut {
  TopPCut cut;
  uint32_t last_kept_id;
};

template <int kThreads>
class BlockCandidateList {
  static constexpr int kItems = kListCapacity / kThreads;  // blocked: thread t holds items [t * kItems, ...)
  static_assert(kListCapacity % kThreads == 0, "the list spreads evenly over the block");
  using Scan = cub::BlockScan<uint64_t, kThreads, cub::BLOCK_SCAN_WARP_SCANS>;

 public:
  struct TempStorage {
    typename Scan::TempStorage scan;
    int32_t prefix_end;
    int32_t token;
  };

  __device__ BlockCandidateList(TempStorage& storage, uint64_t* items) : storage_(storage), items_(items) {}

  // Sorts items[0, n) ascending (bitonic network over NextPow2(n), padding ~0). All threads call it; up to 64
  // items one warp sorts them (warp barriers only). Callers that read the list before must have passed a barrier
  // since (the padding and the network write it).
  __device__ void SortAscending(int n) {
    const int size = NextPow2(n);
    for (int i = n + static_cast<int>(threadIdx.x); i < size; i += kThreads) items_[i] = ~uint64_t{0};
    __syncthreads();
    if (size <= 64) {
      if (threadIdx.x < 32) {
        const int t = threadIdx.x;
        for (int k = 2; k <= size; k <<= 1) {
          for (int j = k >> 1; j > 0; j >>= 1) {
            if (t < size / 2) {
              const int lo = ((t & ~(j - 1)) << 1) | (t & (j - 1));
              const int hi = lo + j;
              const bool ascending = (lo & k) == 0;
              const uint64_t a = items_[lo];
              const uint64_t b = items_[hi];
              if ((a > b) == ascending) {
                items_[lo] = b;
                items_[hi] = a;
              }
            }
            __syncwarp();
          }
        }
      }
      __syncthreads();
      return;
    }
    for (int k = 2; k <= size; k <<= 1) {
      for (int j = k >> 1; j > 0; j >>= 1) {
        for (int t = threadIdx.x; t < size / 2; t += kThreads) {
          const int lo = ((t & ~(j - 1)) << 1) | (t & (j - 1));
          const int hi = lo + j;
          const bool ascending = (lo & k) == 0;
          const uint64_t a = items_[lo];
          const uint64_t b = items_[hi];
          if ((a > b) == ascending) {
            items_[lo] = b;
            items_[hi] = a;
          }
        }
        __syncthreads();
      }
    }
  }

  __device__ uint32_t KeyAt(int i) const { return ValueMajorKey(items_[i]); }
  __device__ uint32_t IdAt(int i) const { return ValueMajorId(items_[i]); }

  // Sorted value-major list of n items: the number of leading items whose key is >= key_floor.
  __device__ int CountKeyAtLeast(int n, uint32_t key_floor) const {
    return FirstIndexWhere(n, [&](int i) { return KeyAt(i) < key_floor; });
  }

  // Sorted value-major list; candidates = items [0, m). mass_above: the fixed mass of candidates above every item
  // of the list (0 when the list starts at the row max). target: top_p * (candidate mass) when known
  // (target_known), else computed here from the list's own total (the list holds every candidate). Precondition:
  // double(mass_above) < target, m >= 1.
  __device__ ListTopPCut TopPOnSorted(int m, const Softmax& softmax, uint64_t mass_above, double top_p,
                                      double target, bool target_known) {
    uint64_t mass[kItems];
    uint64_t prefix[kItems];
#pragma unroll
    for (int j = 0; j < kItems; ++j) {
      const int i = static_cast<int>(threadIdx.x) * kItems + j;
      mass[j] = i < m ? FixedMass(softmax.Numerator(KeyToFloat(KeyAt(i)))) : 0;
    }
    uint64_t total = 0;
    Scan(storage_.scan).ExclusiveSum(mass, prefix, total);
    if (!target_known) target = top_p * static_cast<double>(total);
    if (threadIdx.x == 0) storage_.prefix_end = 1;  // item 0 is always kept (double(mass_above) < target)
    __syncthreads();
    int last = 0;
#pragma unroll
    for (int j = 0; j < kItems; ++j) {
      const int i = static_cast<int>(threadIdx.x) * kItems + j;
      if (i < m && static_cast<double>(mass_above + prefix[j]) < target) last = i + 1;
    }
    if (last > 0) atomicMax(&storage_.prefix_end, last);
    __syncthreads();
    const int q = storage_.prefix_end;
    __syncthreads();  // storage_ is reused by the caller's next collective
    const uint32_t kappa = KeyAt(q - 1);
    const int g = FirstIndexWhere(m, [&](int i) { return KeyAt(i) <= kappa; });
    const int h = FirstIndexWhere(m, [&](int i) { return KeyAt(i) < kappa; });
    return {TopPCut{kappa, static_cast<uint64_t>(h - g), static_cast<uint64_t>(q - g)}, IdAt(q - 1)};
  }

  // Sorted value-major list whose leading items [0, e) are the kept set: the inverse-CDF draw over them in
  // ascending id order (re-sorts them id-major). Returns the token (every thread).
  __device__ int32_t DrawOnKept(int e, const Softmax& softmax, double u) {
    __syncthreads();  // every thread is done reading the value-major list (the callers' binary searches)
    for (int i = threadIdx.x; i < e; i += kThreads) items_[i] = IdMajor(ValueMajorKey(items_[i]), ValueMajorId(items_[i]));
    SortAscending(e);  // its first barrier orders the conversion above
    uint64_t mass[kItems];
    uint64_t prefix[kItems];
#pragma unroll
    for (int j = 0; j < kItems; ++j) {
      const int i = static_cast<int>(threadIdx.x) * kItems + j;
      mass[j] = i < e ? FixedMass(softmax.Numerator(KeyToFloat(IdMajorKey(items_[i])))) : 0;
    }
    uint64_t kept_mass = 0;
    Scan(storage_.scan).ExclusiveSum(mass, prefix, kept_mass);
    const uint64_t target = DrawTarget(u, kept_mass);
#pragma unroll
    for (int j = 0; j < kItems; ++j) {
      const int i = static_cast<int>(threadIdx.x) * kItems + j;
      if (i < e && prefix[j] <= target && target < prefix[j] + mass[j]) storage_.token = static_cast<int32_t>(IdMajorId(items_[i]));
    }
    __syncthreads();
    const int32_t token = storage_.token;
    __syncthreads();
    return token;
  }

  // The kept mass of the leading items [0, e) of a value-major list (every thread).
  __device__ uint64_t MassOfPrefix(int e, const Softmax& softmax) {
    uint64_t mass[kItems];
#pragma unroll
    for (int j = 0; j < kItems; ++j) {
      const int i = static_cast<int>(threadIdx.x) * kItems + j;
      mass[j] = i < e ? FixedMass(softmax.Numerator(KeyToFloat(KeyAt(i)))) : 0;
    }
    uint64_t prefix[kItems];
    uint64_t total = 0;
    Scan(storage_.scan).ExclusiveSum(mass, prefix, total);
    __syncthreads();
    return total;
  }

 private:
  TempStorage& storage_;
  uint64_t* items_;
};

}  // namespace samplecheck::kernels::detail
