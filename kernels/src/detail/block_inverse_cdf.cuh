// The kept mass of a row and the inverse-CDF draw over the kept tokens in ascending token-id order.
//
// Every kept test is KeptSet::Contains(i, x) (the threshold value plus the top-p tie cut by id).
// Accumulate: one pass; warp w sums the 2^-42 fixed-point masses of the kept tokens of chunks w, w + warps, ...
// (kChunk consecutive tokens each, coalesced), then one block-wide exclusive scan over the chunk sums.
// Invariant after Accumulate (every thread): chunk_start[c] = fixed mass of kept tokens with id < c * kChunk, and
// the returned total = the kept mass S. Integer sums: the same S and the same prefixes in any launch
// configuration, batch size or run.
// Draw(target): the first kept token whose inclusive cumulative mass exceeds target (0 <= target < S): the chunk
// is found from chunk_start, then one warp walks that chunk with warp-wide inclusive scans.
// WriteCdf: cdf[i] = inclusive cumulative kept mass of token i (the CountDraws table; same sums as Draw).
#pragma once

#include <cub/block/block_scan.cuh>

#include <cstdint>

#include "row_values.cuh"

namespace samplecheck::kernels::detail {

inline constexpr int kCdfChunk = 256;
inline constexpr int kCdfMaxChunks = 4096;  // kMaxVocab / kCdfChunk

__device__ __forceinline__ uint64_t WarpInclusiveSum(uint64_t v) {
  const int lane = threadIdx.x & 31;
#pragma unroll
  for (int d = 1; d < 32; d <<= 1) {
    const uint64_t n = __shfl_up_sync(0xffffffffu, v, d);
    if (lane >= d) v += n;
  }
  return v;
}

template <int kThreads>
class BlockInverseCdf {
  static constexpr int kWarps = kThreads / 32;
  static constexpr int kChunksPerThread = (kCdfMaxChunks + kThreads - 1) / kThreads;
  using Scan = cub::BlockScan<uint64_t, kThreads, cub::BLOCK_SCAN_WARP_SCANS>;  // small storage; exact sums

 public:
  struct TempStorage {
    uint64_t chunk_start[kCdfMaxChunks];
    typename Scan::TempStorage scan;
    uint64_t total;
    int32_t chunk;
    int32_t token;
  };

  __device__ explicit BlockInverseCdf(TempStorage& storage) : storage_(storage) {}

  template <class T>
  __device__ uint64_t Accumulate(const T* row, int64_t vocab, const Softmax& softmax, const KeptSet& kept) {
    return AccumulateMass(row, vocab, KeptMass{softmax, kept});
  }

  // Precondition: Accumulate ran with the same arguments, and target < its total. Every thread gets the token.
  template <class T>
  __device__ int32_t Draw(const T* row, int64_t vocab, const Softmax& softmax, const KeptSet& kept, uint64_t target) {
    return DrawMass(row, vocab, KeptMass{softmax, kept}, target);
  }

  // The id of member n (0-based, ascending id) of the tokens whose key is `key`; precondition: more than n exist.
  // Reuses the chunk scan with mass 1 per member (the top-p tie cut; overwrites the Accumulate state).
  template <class T>
  __device__ int32_t NthWithKey(const T* row, int64_t vocab, uint32_t key, uint64_t n) {
    const KeyCount count{key};
    AccumulateMass(row, vocab, count);
    return DrawMass(row, vocab, count, n);
  }

 private:
  struct KeptMass {
    Softmax softmax;
    KeptSet kept;
    __device__ __forceinline__ uint64_t operator()(int64_t i, float x) const {
      return kept.Contains(i, x) ? FixedMass(softmax.Numerator(x)) : 0;
    }
  };
  struct KeyCount {
    uint32_t key;
    __device__ __forceinline__ uint64_t operator()(int64_t, float x) const {
      return x > kNegInf && OrderedKey(x) == key ? 1 : 0;
    }
  };

  template <class T, class Mass>
  __device__ uint64_t AccumulateMass(const T* row, int64_t vocab, const Mass& mass_of) {
    const int chunks = static_cast<int>((vocab + kCdfChunk - 1) / kCdfChunk);
    const int warp = threadIdx.x / 32;
    const int lane = threadIdx.x & 31;
    // 16-byte loads when the row is 16-byte aligned (then so is every chunk): lane reads vectors lane, lane + 32,
    // ... of its warp's chunk; an element past the vocab, or a vector that straddles it, is read element-wise.
    constexpr int kVec = 16 / static_cast<int>(sizeof(T));
    constexpr int kVecSteps = kCdfChunk / (32 * kVec);
    static_assert(kVecSteps >= 1 && kCdfChunk % (32 * kVec) == 0, "a chunk is whole warp-wide vectors");
    const bool aligned = (reinterpret_cast<uintptr_t>(row) & 15u) == 0;
    for (int c = warp; c < chunks; c += kWarps) {
      uint64_t sum = 0;
      if (aligned) {
        uint4 raw[kVecSteps];
#pragma unroll
        for (int s = 0; s < kVecSteps; ++s) {
          const int64_t i0 = static_cast<int64_t>(c) * kCdfChunk + (s * 32 + lane) * kVec;
          if (i0 + kVec <= vocab) raw[s] = reinterpret_cast<const uint4*>(row)[i0 / kVec];
        }
#pragma unroll
        for (int s = 0; s < kVecSteps; ++s) {
          const int64_t i0 = static_cast<int64_t>(c) * kCdfChunk + (s * 32 + lane) * kVec;
          const bool whole = i0 + kVec <= vocab;
          const T* e = reinterpret_cast<const T*>(&raw[s]);
#pragma unroll
          for (int q = 0; q < kVec; ++q) {
            const float x = whole ? Canonical(e[q]) : (i0 + q < vocab ? LoadLogit(row, i0 + q) : kNegInf);
            sum += mass_of(i0 + q, x);
          }
        }
      } else {
        constexpr int kSteps = kCdfChunk / 32;
        float xs[kSteps];
#pragma unroll
        for (int s = 0; s < kSteps; ++s) {
          const int64_t i = static_cast<int64_t>(c) * kCdfChunk + s * 32 + lane;
          xs[s] = i < vocab ? LoadLogit(row, i) : kNegInf;
        }
#pragma unroll
        for (int s = 0; s < kSteps; ++s) {
          sum += mass_of(static_cast<int64_t>(c) * kCdfChunk + s * 32 + lane, xs[s]);
        }
      }
#pragma unroll
      for (int d = 16; d > 0; d >>= 1) sum += __shfl_xor_sync(0xffffffffu, sum, d);
      if (lane == 0) storage_.chunk_start[c] = sum;
    }
    __syncthreads();
    uint64_t mass[kChunksPerThread];
    uint64_t start[kChunksPerThread];
#pragma unroll
    for (int q = 0; q < kChunksPerThread; ++q) {
      const int c = threadIdx.x * kChunksPerThread + q;
      mass[q] = c < chunks ? storage_.chunk_start[c] : 0;
    }
    uint64_t total = 0;
    Scan(storage_.scan).ExclusiveSum(mass, start, total);
    __syncthreads();  // every read of chunk_start above happens before it is overwritten
#pragma unroll
    for (int q = 0; q < kChunksPerThread; ++q) {
      const int c = threadIdx.x * kChunksPerThread + q;
      if (c < chunks) storage_.chunk_start[c] = start[q];
    }
    if (threadIdx.x == 0) storage_.total = total;
    __syncthreads();
    return total;
  }

  template <class T, class Mass>
  __device__ int32_t DrawMass(const T* row, int64_t vocab, const Mass& mass_of, uint64_t target) {
    const int chunks = static_cast<int>((vocab + kCdfChunk - 1) / kCdfChunk);
    for (int c = threadIdx.x; c < chunks; c += kThreads) {
      const uint64_t begin = storage_.chunk_start[c];
      const uint64_t end = c + 1 < chunks ? storage_.chunk_start[c + 1] : storage_.total;
      if (begin <= target && target < end) storage_.chunk = c;  // unique: the chunk has mass, the ranges tile [0, S)
    }
    __syncthreads();
    if (threadIdx.x < 32) {
      const int lane = threadIdx.x;
      const int c = storage_.chunk;
      uint64_t running = storage_.chunk_start[c];
      int32_t token = -1;
      for (int s = 0; s < kCdfChunk && token < 0; s += 32) {
        const int64_t i = static_cast<int64_t>(c) * kCdfChunk + s + lane;
        uint64_t mass = 0;
        if (i < vocab) mass = mass_of(i, LoadLogit(row, i));
        const uint64_t inclusive = WarpInclusiveSum(mass);
        const unsigned crossed = __ballot_sync(0xffffffffu, running + inclusive > target);
        if (crossed) token = static_cast<int32_t>(static_cast<int64_t>(c) * kCdfChunk + s + __ffs(crossed) - 1);
        running += __shfl_sync(0xffffffffu, inclusive, 31);
      }
      if (lane == 0) storage_.token = token;
    }
    __syncthreads();
    return storage_.token;
  }

 public:
  // cdf[i] = inclusive cumulative kept mass of token i, i < vocab. Precondition: Accumulate ran.
  template <class T>
  __device__ void WriteCdf(const T* row, int64_t vocab, const Softmax& softmax, const KeptSet& kept,
                           uint64_t* cdf) {
    const KeptMass mass_of{softmax, kept};
    const int chunks = static_cast<int>((vocab + kCdfChunk - 1) / kCdfChunk);
    const int warp = threadIdx.x / 32;
    const int lane = threadIdx.x & 31;
    for (int c = warp; c < chunks; c += kWarps) {
      uint64_t running = storage_.chunk_start[c];
      for (int s = 0; s < kCdfChunk; s += 32) {
        const int64_t i = static_cast<int64_t>(c) * kCdfChunk + s + lane;
        uint64_t mass = 0;
        if (i < vocab) mass = mass_of(i, LoadLogit(row, i));
        const uint64_t inclusive = WarpInclusiveSum(mass);
        if (i < vocab) cdf[i] = running + inclusive;
        running += __shfl_sync(0xffffffffu, inclusive, 31);
      }
    }
  }

 private:
  TempStorage& storage_;
};

}  // namespace samplecheck::kernels::detail
