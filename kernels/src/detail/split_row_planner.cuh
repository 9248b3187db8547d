// The split-row planner: the CTAs of one thread-block cluster (2-16 CTAs, DSMEM; cluster.cuh's protocol) plan
// one row together, each holding a contiguous slice of the row in its shared memory, so the row is read from
// device memory once and every later pass runs on chip. Semantics: the profiles `vllm` and `hf` of reference/
// (profile.h; docs/semantics.md), with exactly the kept set and fixed-point masses of the single-block planner
// (row_plan.cuh): the same keys, the same tie cut, the same integers, so the same token for the same row, params,
// seed and offset (tests/kernels/split_row_test.cpp checks it token for token).
//
//   load      every CTA copies its slice into shared memory (16-byte loads) and reduces the row's stats over it
//             (max, NaN, #live, min live; the greedy token's lowest-id argmax only when the row is greedy, a
//             second look at the slice); the partial stats are pushed to every CTA and combined there (max, or,
//             sum, min: order-independent): after it every CTA holds the row's stats.
//   levels    a 16-bit level per logit, monotone non-increasing in the value: level(x) = floor((max - x) * scale),
//             capped at 65535, in fp32 (a rounded subtraction and product by a positive constant are monotone, so
//             equal logits share a level and a higher level never holds a larger logit). scale spreads the range
//             that matters (top-k: the live range; top-p: at most 32 temperatures below the max, where the fixed
//             mass reaches 0) over the levels.
//   cut       radix select over the level's two 8-bit digits: per-CTA 256-bin histograms (counts, or counts and
//             2^-42 fixed masses split into three 14-bit-aligned words summed without carries), packed as one
//             16-byte word per bin; each CTA sums the bins of every CTA (16-byte DSMEM reads, four ranks in
//             flight) and scans them: the crossing bin (top-k: where the cumulative count reaches k; top-p: the
//             lowest-valued non-empty bin whose mass above is < top_p * candidate mass). The first digit's
//             histogram covers only the top of the row (kTopKWindow / kTopPWindow bins); the rest is one virtual
//             bin summed in registers, and a crossing inside it repeats the pass over all bins. The second digit
//             runs only when the first digit's bin holds more than kDirectListLimit tokens.
//   compact   top-p: each vector's highest candidate's first-digit bin, recorded by the first digit's pass, keeps
//             only the vectors at or above the crossing bin (about a fifth of them on N(0, 3^2) logits at top_p
//             0.9): every later pass (second digit, gather, accumulate, draw) visits those alone.
//   gather    the tokens that can still decide the threshold go to a candidate list (candidate_list.cuh): top-k
//             (select first): every token at or above the crossing level (k plus the bucket) into rank 0's list,
//             which holds the whole top-k set, so min-p, top-p and the draw run on the list alone; top-p without
//             top-k: the crossing bucket only, with the mass above it; the sampling kernel gathers a whole
//             first-digit bin of up to kTopPDirectLimit tokens (else the second digit's bin) into every CTA's list,
//             PlanSplitRow (processed outputs, labels) up to kDirectListLimit into rank 0's.
//   resolve   rank 0 sorts the list (value-major) and computes the k-th key, top-p's kappa and tie cut exactly as
//             the single-block planner does (integer prefix sums, the same double comparisons), and pushes the plan.
//             The sampling kernel's top-p: every CTA narrows a first-digit bucket to its crossing second-digit bin
//             over its own list (NarrowBucket), sorts it and resolves the same cut: no push, no cluster barrier
//             (in PlanSplitRow's kernels the extra code cost more in register allocation than it saved).
//   draw      select first: rank 0 draws on the list. Otherwise every CTA sums the kept mass of its slice per
//             warp segment, the CTA sums are pushed to every CTA, and the CTA whose range holds u * S finds the
//             warp segment, sums that segment's 32-vector chunks with all its warps, and one warp scans the chunk
//             that holds the target (ascending ids throughout).
//
// Fallback (the single-block planner, run by rank 0 over the row in device memory, so still exact): a +inf max,
// a candidate list that would exceed kListCapacity (very large k, or a crossing bucket of thousands of equal or
// nearly equal logits), or a crossing bin that cannot be found (never for valid input; a guard).
#pragma once

#include <cub/block/block_reduce.cuh>
#include <cub/block/block_scan.cuh>

#include <cstdint>

#include "candidate_list.cuh"
#include "cluster.cuh"
#include "philox_uniform.cuh"
#include "row_plan.cuh"

namespace samplecheck::kernels::detail {

#ifndef SAMPLECHECK_SPLIT_THREADS
#define SAMPLECHECK_SPLIT_THREADS 512
#endif
// Threads per CTA of the split-row kernels (a build-time knob for benchmarking variants; 1024 threads at 64
// registers measured 5-10% slower than 512 on an H100).
inline constexpr int kSplitThreads = SAMPLECHECK_SPLIT_THREADS;
#ifndef SAMPLECHECK_SPLIT_MIN_BLOCKS
#define SAMPLECHECK_SPLIT_MIN_BLOCKS 2
#endif
// CTAs per SM the register budget allows: 2 (64 registers per thread, 64 bytes of spills) so that one CTA loads or
// waits at a cluster barrier while the other computes; measured 1.2-1.7x faster than 1 CTA of 128 registers at
// B >= 16 on an H100 (docs/performance.md), the same at B = 1.
inline constexpr int kSplitMinBlocks = SAMPLECHECK_SPLIT_MIN_BLOCKS;
inline constexpr int kLevelBins = 256;         // one 8-bit digit of the 16-bit level
inline constexpr int kDirectListLimit = 256;   // a first-digit top-k bucket this small is gathered as it is
// A first-digit top-p bucket this small is gathered as it is (rank 0 sorts it: a 1,024-item bitonic sort costs less
// on the critical path than a second digit's pass, cluster barrier and merge).
inline constexpr int kTopPDirectLimit = 1024;
// A gathered bucket of more items than one warp sorts (candidate_list.cuh) is first narrowed to its crossing second
// digit by the CTA (SplitRowPlanner::NarrowBucket).
inline constexpr int kWarpSortItems = 64;
inline constexpr int kSliceAlign = 8;          // slice lengths are multiples of 8 elements (16 bytes of 16-bit data)
inline constexpr int kMaxSegmentChunks = 64;   // 32-vector chunks of one warp segment the draw can sum at once
// First-digit windows: the histogram of the first pass covers the bins [0, window) (the top of the row); every
// token past it is counted (and its mass summed) in registers as one virtual bin. When the crossing falls into
// that virtual bin the pass is repeated over all 256 bins (exact either way; the window only saves atomics).
inline constexpr int kTopKWindow = 64;
inline constexpr int kTopPWindow = 128;

// Elements per CTA when a row of `vocab` is split over `ranks` CTAs (host and device agree).
__host__ __device__ __forceinline__ int64_t SplitSliceLength(int64_t vocab, int64_t ranks) {
  const int64_t per = (vocab + ranks - 1) / ranks;
  return (per + kSliceAlign - 1) / kSliceAlign * kSliceAlign;
}

// Dynamic shared memory of a slice beyond the fixed part: the elements (16-byte vectors), then one 16-bit word per
// vector (the vector list: first each vector's highest first-digit bin, then the compacted indices; see
// SplitRowPlanner::CompactVectors). A slice of slice_len elements of element_bytes holds slice_len * element_bytes
// / 16 vectors, so the list takes an eighth of the elements' bytes (a multiple of 16: slice_len is).
__host__ __device__ __forceinline__ int64_t SplitSliceBytes(int64_t slice_len, int64_t element_bytes) {
  return slice_len * element_bytes + slice_len * element_bytes / 8;
}

// The monotone level of a logit (see the header comment): floor(min((max - x) * scale, 65535)), the floor taken by
// an fp32 add of 2^23 rounding toward zero (exact for 0 <= s < 2^23, no conversion instruction).
struct Levels {
  float max_logit;
  float scale;

  __device__ __forceinline__ uint32_t Of(float x) const { return OfDifference(x - max_logit); }
  // The level of x from d = x - max_logit (fp32; max - x is exactly -d, so the same level as Of(x)).
  __device__ __forceinline__ uint32_t OfDifference(float d) const {
    const float s = fminf(-d * scale, 65535.0f);
    return __float_as_uint(__fadd_rz(s, 8388608.0f)) - 0x4b000000u;
  }
  // span: the distance below the max spread over the 65536 levels (> 0 and finite; anything else: one level).
  __device__ static Levels Over(float max_logit, double span) {
    double scale = span > 0.0 ? 65536.0 / span : 1.0;
    scale = fmin(fmax(scale, 1e-30), 1e30);
    return {max_logit, static_cast<float>(scale)};
  }
};

// One digit's crossing bin (bin < 0: none; the caller falls back).
struct LevelCut {
  int32_t bin;
  uint32_t count_above;  // tokens of the digit's prefix in bins above (larger values)
  uint32_t count_in;
  uint64_t mass_above;   // mass mode: fixed mass of those tokens
  uint64_t mass_in;
  double target;         // mass mode: top_p * candidate mass
};

template <int kThreads>
struct SplitRowShared {
  static constexpr int kWarps = kThreads / 32;
  RowStats stats_slot[kMaxClusterSize];  // slot q: rank q's partial stats (pushed by q)
  uint64_t mass_slot[kMaxClusterSize];   // slot q: the kept mass of rank q's slice (pushed by q)
  int32_t argmax_slot[kMaxClusterSize];  // slot q: the lowest id of a maximum in rank q's slice (pushed by q)
  uint64_t warp_mass[kWarps];            // kept mass of each warp segment of this slice
  uint32_t warp_count[kWarps];           // CompactVectors: the vectors each warp keeps
  uint64_t chunk_mass[kMaxSegmentChunks];
  uint32_t list_count;                   // items gathered into this CTA's list
  uint32_t published_key;                // rank 0 -> every rank: the kept set and its mass
  int64_t published_tie_limit;
  uint64_t published_mass;
  int32_t published_status;
  int32_t found_bin;
  uint32_t found_count_above;
  uint32_t found_count_in;
  uint64_t found_mass_above;
  uint64_t found_mass_in;
  int32_t token;
  int32_t owner;
  uint64_t owner_target;
  union {
    typename cub::BlockReduce<RowStats, kThreads>::TempStorage stats;
    typename cub::BlockReduce<int32_t, kThreads>::TempStorage argmax;
    typename cub::BlockScan<uint64_t, kThreads, cub::BLOCK_SCAN_WARP_SCANS>::TempStorage scan;
    typename BlockCandidateList<kThreads>::TempStorage list;
  } collective;
  union {
    struct {
      // This CTA's histogram of the current digit (shared atomics): counts and the fixed masses split into
      // three words, mass = w2 * 2^28 + w1 * 2^14 + w0 (w0, w1 < 2^14, w2 <= 2^14), summed per word without
      // carries: a slice holds < 2^17 tokens, so no word's sum reaches 2^32 (see Cut).
      uint32_t count[kLevelBins];
      uint32_t w0[kLevelBins];
      uint32_t w1[kLevelBins];
      uint32_t w2[kLevelBins];
      uint4 packed[2][kLevelBins];  // [digit][bin] {count, w0, w1, w2}: what the peers read
      uint64_t list[kListCapacity];    // rank 0: the candidate list
    } split;
    typename BlockRowPlanner<kThreads>::TempStorage single;  // rank 0: the single-block fallback
  } scratch;
};

// Dynamic shared memory of a split-row CTA: the fixed part, then the slice (16-byte aligned).
template <int kThreads>
constexpr size_t SplitSharedBytes() {
  return (sizeof(SplitRowShared<kThreads>) + 15) / 16 * 16;
}

template <class T>
__device__ __forceinline__ T NegInfValue();
template <>
__device__ __forceinline__ float NegInfValue<float>() {
  return kNegInf;
}
template <>
__device__ __forceinline__ __nv_bfloat16 NegInfValue<__nv_bfloat16>() {
  return __ushort_as_bfloat16(static_cast<unsigned short>(0xff80u));
}
template <>
__device__ __forceinline__ __half NegInfValue<__half>() {
  return __ushort_as_half(static_cast<unsigned short>(0xfc00u));
}

// Partial row statistics without the argmax (max of the non-NaN logits, NaN seen, #live, min live).
struct LeanStats {
  float max_logit;
  int32_t has_nan;
  int64_t live;
  float min_live;
};

template <class T, int kThreads>
class SplitRowPlanner {
 public:
  using Shared = SplitRowShared<kThreads>;
  static constexpr int kWarps = kThreads / 32;
  static constexpr int kVec = 16 / static_cast<int>(sizeof(T));
  static_assert(kSliceAlign % kVec == 0, "a slice is whole 16-byte vectors");

  __device__ SplitRowPlanner(Shared& shared, T* slice, const T* row, int64_t vocab, int64_t slice_len)
      : shared_(shared),
        slice_(slice),
        row_(row),
        vocab_(vocab),
        rank_(ClusterRank()),
        ranks_(ClusterSize()) {
    begin_ = static_cast<int64_t>(rank_) * slice_len;
    count_ = vocab - begin_ < 0 ? 0 : (vocab - begin_ < slice_len ? vocab - begin_ : slice_len);
    vectors_ = static_cast<int32_t>((count_ + kVec - 1) / kVec);
    vlist_ = reinterpret_cast<uint16_t*>(slice + slice_len);  // SplitSliceBytes: one word per vector after it
  }

  __device__ bool Leader() const { return rank_ == 0; }
  __device__ int64_t SliceBegin() const { return begin_; }
  __device__ int64_t SliceCount() const { return count_; }

  // Load: the slice into shared memory, -inf padding to whole vectors; the row's stats (argmax = -1: see Argmax)
  // in every CTA. Contains the start barrier's wait and one ClusterSync.
  __device__ RowStats LoadAndExchangeStats() {
    if (threadIdx.x == 0) shared_.list_count = 0;  // every CTA's list (top-p gathers into all of them)
    float max_logit = kNegInf;
    float min_live = kPosInf;
    int32_t live = 0;
    bool has_nan = false;
    auto visit = [&](float x) {  // x raw (a -0 is folded below, in the max)
      has_nan |= x != x;
      max_logit = fmaxf(max_logit, x);  // ignores NaN
      const bool is_live = x > kNegInf;
      live += is_live;
      min_live = fminf(min_live, is_live ? x : kPosInf);
    };
    const T* src = row_ + begin_;
    int64_t scalar_begin = 0;
    if ((reinterpret_cast<uintptr_t>(src) & 15u) == 0) {
      const int32_t full = static_cast<int32_t>(count_ / kVec);
      const uint4* vsrc = reinterpret_cast<const uint4*>(src);
      uint4* vdst = reinterpret_cast<uint4*>(slice_);
      constexpr int kUnroll = 4;
      int32_t v = threadIdx.x;
      for (; v + (kUnroll - 1) * kThreads < full; v += kUnroll * kThreads) {
        uint4 raw[kUnroll];
#pragma unroll
        for (int u = 0; u < kUnroll; ++u) raw[u] = vsrc[v + u * kThreads];
#pragma unroll
        for (int u = 0; u < kUnroll; ++u) {
          vdst[v + u * kThreads] = raw[u];
          const T* e = reinterpret_cast<const T*>(&raw[u]);
#pragma unroll
          for (int q = 0; q < kVec; ++q) visit(ToFloat(e[q]));
        }
      }
      for (; v < full; v += kThreads) {
        const uint4 raw = vsrc[v];
        vdst[v] = raw;
        const T* e = reinterpret_cast<const T*>(&raw);
#pragma unroll
        for (int q = 0; q < kVec; ++q) visit(ToFloat(e[q]));
      }
      scalar_begin = static_cast<int64_t>(full) * kVec;
    }
    for (int64_t j = scalar_begin + threadIdx.x; j < count_; j += kThreads) {
      const T raw = src[j];
      slice_[j] = raw;
      visit(ToFloat(raw));
    }
    for (int64_t j = count_ + threadIdx.x; j < static_cast<int64_t>(vectors_) * kVec; j += kThreads) {
      slice_[j] = NegInfValue<T>();
    }
    const RowStats local{max_logit, -1, has_nan ? 1 : 0, live, min_live};
    const RowStats cta = cub::BlockReduce<RowStats, kThreads>(shared_.collective.stats).Reduce(local, LeanCombine{});
    if (threadIdx.x == 0) shared_.stats_slot[rank_] = cta;  // the reduction's result is thread 0's
    __syncthreads();
    ClusterWait();  // every peer has started: remote stores are safe
    if (threadIdx.x < ranks_ && threadIdx.x != rank_) {
      *AtRank(&shared_.stats_slot[rank_], threadIdx.x) = shared_.stats_slot[rank_];
    }
    ClusterSync();
    RowStats total = shared_.stats_slot[0];
    for (uint32_t q = 1; q < ranks_; ++q) total = LeanCombine{}(total, shared_.stats_slot[q]);
    total.max_logit += 0.0f;  // -0 -> +0: the canonical max, as every pass sees the logits
    return total;
  }

  // The greedy token: the lowest id whose logit equals max_logit (every CTA; one ClusterSync). Whole cluster.
  __device__ int32_t Argmax(float max_logit) {
    int32_t best = INT32_MAX;
    ForEachElement([&](int64_t i, float x) {
      if (x == max_logit && static_cast<int32_t>(i) < best) best = static_cast<int32_t>(i);
    });
    const int32_t cta = cub::BlockReduce<int32_t, kThreads>(shared_.collective.argmax).Reduce(best, MinId{});
    if (threadIdx.x == 0) shared_.token = cta;
    __syncthreads();
    if (threadIdx.x < ranks_) *AtRank(&shared_.argmax_slot[rank_], threadIdx.x) = shared_.token;
    ClusterSync();
    int32_t row_best = INT32_MAX;
    for (uint32_t q = 0; q < ranks_; ++q) row_best = min(row_best, shared_.argmax_slot[q]);
    return row_best;
  }

  // Calls f(i, x) for every element of this CTA's slice (pads are -inf: every consumer skips them).
  template <class F>
  __device__ __forceinline__ void ForEachElement(F&& f) const {
    const uint4* vslice = reinterpret_cast<const uint4*>(slice_);
#pragma unroll 4
    for (int32_t v = threadIdx.x; v < vectors_; v += kThreads) {
      const uint4 raw = vslice[v];
      const T* e = reinterpret_cast<const T*>(&raw);
#pragma unroll
      for (int q = 0; q < kVec; ++q) f(begin_ + v * kVec + q, Canonical(e[q]));
    }
  }

  // The vectors the later passes visit: every vector of the slice, or after CompactVectors only those that can hold
  // a token at or above the top-p crossing (ascending). VectorAt(i), i in [0, VectorCount()): a vector index.
  __device__ __forceinline__ int32_t VectorCount() const { return listed_ < 0 ? vectors_ : listed_; }
  __device__ __forceinline__ int32_t VectorAt(int32_t i) const { return listed_ < 0 ? i : static_cast<int32_t>(vlist_[i]); }

  // Calls f(v, raw) for every vector the later passes visit (VectorAt), thread-strided.
  template <class F>
  __device__ __forceinline__ void ForEachListedVector(F&& f) const {
    const uint4* vslice = reinterpret_cast<const uint4*>(slice_);
    const int32_t n = VectorCount();
#pragma unroll 4
    for (int32_t i = threadIdx.x; i < n; i += kThreads) {
      const int32_t v = VectorAt(i);
      f(v, vslice[v]);
    }
  }

  // Keeps only the vectors whose recorded first-digit bin (the highest-valued candidate's, MassCut digit 0) is at
  // most max_bin, in ascending order: every token at or above the crossing level lies in one of them (levels are
  // monotone), so the gather, the accumulation and the draw skip the rest of the slice, which holds no kept token.
  // Whole CTA (three barriers); a slice of more vectors than the per-warp bit masks hold keeps every vector.
  __device__ void CompactVectors(uint32_t max_bin) {
    constexpr int kMaxRounds = 32;  // a warp's keep flags fit one 32-bit mask per lane
    if (vectors_ > kWarps * 32 * kMaxRounds) return;
    const int warp = threadIdx.x / 32;
    const int lane = threadIdx.x & 31;
    const int32_t per_warp = (vectors_ + kWarps - 1) / kWarps;
    const int32_t first = warp * per_warp;
    const int32_t end = min(first + per_warp, vectors_);
    uint32_t keep_bits = 0;
    uint32_t kept = 0;
#pragma unroll 4
    for (int k = 0; k < kMaxRounds; ++k) {
      if (first + k * 32 >= end) break;  // warp-uniform
      const int32_t v = first + k * 32 + lane;
      const bool keep = v < end && vlist_[v] <= max_bin;
      keep_bits |= static_cast<uint32_t>(keep) << k;
      kept += __popc(__ballot_sync(0xffffffffu, keep));
    }
    if (lane == 0) shared_.warp_count[warp] = kept;
    __syncthreads();  // every count is written, and every thread has read its flags from vlist_
    uint32_t pos = 0, total = 0;
    for (int w = 0; w < kWarps; ++w) {
      const uint32_t c = shared_.warp_count[w];
      pos += w < warp ? c : 0u;
      total += c;
    }
    const uint32_t lower_lanes = (1u << lane) - 1u;
#pragma unroll 4
    for (int k = 0; k < kMaxRounds; ++k) {
      if (first + k * 32 >= end) break;
      const bool keep = (keep_bits >> k) & 1u;
      const uint32_t ballot = __ballot_sync(0xffffffffu, keep);
      if (keep) vlist_[pos + __popc(ballot & lower_lanes)] = static_cast<uint16_t>(first + k * 32 + lane);
      pos += __popc(ballot);
    }
    listed_ = static_cast<int32_t>(total);
    __syncthreads();  // the list is complete; warp_count may be reused
  }

  // One digit of the top-k radix select over levels (counts of live tokens). k_rem: the rank still to find
  // within the digit's prefix (1 <= k_rem <= tokens in it). Contains one ClusterSync (remote reads follow it).
  __device__ LevelCut CountCut(const Levels& levels, int digit, uint32_t coarse, uint32_t k_rem,
                               int window = kLevelBins) {
    return Cut<false>(levels, digit, coarse, 0u, Softmax{}, k_rem, 0, 0.0, 0.0, window);
  }

  // One digit of the top-p select over levels (counts and fixed masses of the candidates key >= cand_key).
  // Digit 0 computes target = top_p * (candidate mass); digit 1 takes it with mass_prev, the mass above the
  // digit-0 bin.
  __device__ LevelCut MassCut(const Levels& levels, int digit, uint32_t coarse, uint32_t cand_key,
                              const Softmax& softmax, uint64_t mass_prev, double top_p, double target,
                              int window = kLevelBins) {
    return Cut<true>(levels, digit, coarse, cand_key, softmax, 0u, mass_prev, top_p, target, window);
  }

  // The tokens with cand_key <= key, lmin <= level <= lmax into rank 0's list, or with kEverywhere into every CTA's
  // list (warp-aggregated slots: one remote atomic a rank, from one lane each), then a ClusterSync. Precondition: at
  // most kListCapacity tokens match (the histograms counted them).
  template <bool kEverywhere = false>
  __device__ void Gather(const Levels& levels, uint32_t lmin, uint32_t lmax, uint32_t cand_key) {
    const uint32_t targets = kEverywhere ? ranks_ : 1u;  // ranks 0 .. targets - 1 (at most 16 <= 32 lanes)
    const uint4* vslice = reinterpret_cast<const uint4*>(slice_);
    const int lane = threadIdx.x & 31;
    const int32_t listed = VectorCount();
    const float cand_x = cand_key > OrderedKey(kNegInf) ? KeyToFloat(cand_key) : kNegInf;  // as Cut's
    for (int32_t base = 0; base < listed; base += kThreads) {  // the same trip count in every lane
      const int32_t i = base + threadIdx.x;
      int32_t v = 0;
      uint4 raw = make_uint4(0, 0, 0, 0);
      uint32_t mask = 0;
      if (i < listed) {
        v = VectorAt(i);
        raw = vslice[v];
        const T* e = reinterpret_cast<const T*>(&raw);
#pragma unroll
        for (int q = 0; q < kVec; ++q) {
          const float x = Canonical(e[q]);
          if (x > kNegInf && x >= cand_x) {
            const uint32_t level = levels.Of(x);
            if (level >= lmin && level <= lmax) mask |= 1u << q;
          }
        }
      }
      const uint32_t mine = __popc(mask);
      if (!__any_sync(0xffffffffu, mine != 0)) continue;
      uint32_t inclusive = mine;
#pragma unroll
      for (int d = 1; d < 32; d <<= 1) {
        const uint32_t n = __shfl_up_sync(0xffffffffu, inclusive, d);
        if (lane >= d) inclusive += n;
      }
      const uint32_t warp_total = __shfl_sync(0xffffffffu, inclusive, 31);
      uint32_t first = 0;  // lane r < targets: the warp's first slot in rank r's list
      if (static_cast<uint32_t>(lane) < targets) first = atomicAdd(AtRank(&shared_.list_count, lane), warp_total);
      const T* e = reinterpret_cast<const T*>(&raw);
      for (uint32_t r = 0; r < targets; ++r) {
        uint32_t slot = __shfl_sync(0xffffffffu, first, static_cast<int>(r)) + inclusive - mine;
        uint64_t* list = AtRank(&shared_.scratch.split.list[0], r);
#pragma unroll
        for (int q = 0; q < kVec; ++q) {
          if (mask & (1u << q)) {
            if (slot < kListCapacity) {
              list[slot] = ValueMajor(OrderedKey(Canonical(e[q])), static_cast<uint32_t>(begin_ + v * kVec + q));
            }
            ++slot;
          }
        }
      }
    }
    ClusterSync();
  }

  // Rank 0 after Gather: the candidate list.
  __device__ BlockCandidateList<kThreads> List() {
    return BlockCandidateList<kThreads>(shared_.collective.list, shared_.scratch.split.list);
  }
  __device__ int ListCount() const { return static_cast<int>(shared_.list_count); }

  // Rank 0 (thread 0 acts): the kept set (and its mass, and a status) into every CTA; every CTA then
  // ClusterSync()s and reads it with Published*().
  __device__ void PushPlan(const KeptSet& kept, uint64_t kept_mass, int32_t status) {
    if (threadIdx.x != 0) return;
    for (uint32_t q = 0; q < ranks_; ++q) {
      Shared* peer = AtRank(&shared_, q);
      peer->published_key = kept.threshold_key;
      peer->published_tie_limit = kept.tie_limit;
      peer->published_mass = kept_mass;
      peer->published_status = status;
    }
  }
  __device__ KeptSet PublishedKept() const { return {shared_.published_key, shared_.published_tie_limit}; }
  __device__ uint64_t PublishedMass() const { return shared_.published_mass; }
  __device__ int32_t PublishedStatus() const { return shared_.published_status; }

  // The kept mass of the row: per-warp segment sums of this slice, the CTA sums pushed to every CTA, one
  // ClusterSync. Returns S (every CTA); remembers this CTA's range [before, before + mine) of the CDF.
  __device__ uint64_t AccumulateKept(const Softmax& softmax, const KeptSet& kept) {
    const int warp = threadIdx.x / 32;
    const int lane = threadIdx.x & 31;
    const uint4* vslice = reinterpret_cast<const uint4*>(slice_);
    int32_t first, end;
    SegmentOf(warp, &first, &end);
    uint64_t sum = 0;
    for (int32_t i = first + lane; i < end; i += 32) {
      const int32_t v = VectorAt(i);
      sum += VectorMass(vslice[v], v, softmax, kept, nullptr);
    }
#pragma unroll
    for (int d = 16; d > 0; d >>= 1) sum += __shfl_xor_sync(0xffffffffu, sum, d);
    if (lane == 0) shared_.warp_mass[warp] = sum;
    __syncthreads();
    if (threadIdx.x < ranks_) {
      uint64_t cta = 0;
      for (int w = 0; w < kWarps; ++w) cta += shared_.warp_mass[w];
      *AtRank(&shared_.mass_slot[rank_], threadIdx.x) = cta;
    }
    ClusterSync();
    uint64_t before = 0, total = 0;
    for (uint32_t q = 0; q < ranks_; ++q) {
      const uint64_t m = shared_.mass_slot[q];
      if (q < rank_) before += m;
      total += m;
    }
    before_ = before;
    mine_ = shared_.mass_slot[rank_];
    return total;
  }

  // After AccumulateKept: the token whose CDF interval holds target, or -1 when another CTA owns it (uniform in
  // the CTA). The owner finds the warp segment, sums its 32-vector chunks with all warps, and one warp scans the
  // chunk that holds the target.
  __device__ int32_t DrawOwned(const Softmax& softmax, const KeptSet& kept, uint64_t target) {
    if (!(before_ <= target && target < before_ + mine_)) return -1;
    if (threadIdx.x == 0) {
      uint64_t acc = before_;
      for (int w = 0; w < kWarps; ++w) {
        const uint64_t m = shared_.warp_mass[w];
        if (acc <= target && target < acc + m) {
          shared_.owner = w;
          shared_.owner_target = target - acc;
        }
        acc += m;
      }
    }
    __syncthreads();
    const int warp = threadIdx.x / 32;
    const int lane = threadIdx.x & 31;
    const uint4* vslice = reinterpret_cast<const uint4*>(slice_);
    int32_t first, end;
    SegmentOf(shared_.owner, &first, &end);
    const uint64_t segment_target = shared_.owner_target;
    const int32_t chunks = (end - first + 31) / 32;
    if (chunks <= kMaxSegmentChunks) {
      for (int32_t c = warp; c < chunks; c += kWarps) {
        const int32_t i = first + c * 32 + lane;
        uint64_t m = 0;
        if (i < end) {
          const int32_t v = VectorAt(i);
          m = VectorMass(vslice[v], v, softmax, kept, nullptr);
        }
#pragma unroll
        for (int d = 16; d > 0; d >>= 1) m += __shfl_xor_sync(0xffffffffu, m, d);
        if (lane == 0) shared_.chunk_mass[c] = m;
      }
      __syncthreads();
      if (threadIdx.x == 0) {
        uint64_t acc = 0;
        for (int32_t c = 0; c < chunks; ++c) {
          const uint64_t m = shared_.chunk_mass[c];
          if (acc <= segment_target && segment_target < acc + m) {
            shared_.owner = c;
            shared_.owner_target = segment_target - acc;
          }
          acc += m;
        }
        shared_.token = -1;
      }
      __syncthreads();
      if (warp == 0) {
        const int32_t c = shared_.owner;
        ScanChunks(first + c * 32, first + c * 32 + 32 < end ? first + c * 32 + 32 : end, shared_.owner_target,
                   softmax, kept);
      }
    } else {  // a segment longer than the chunk table (a very long slice): one warp walks it
      if (threadIdx.x == 0) shared_.token = -1;
      __syncthreads();
      if (warp == 0) ScanChunks(first, end, segment_target, softmax, kept);
    }
    __syncthreads();
    return shared_.token;
  }

  // Select first (0 < k < #live): the count cut (1-2 digits) and the gather of every token at or above the
  // k-th largest's level into rank 0's list. false: the list would exceed kListCapacity (fall back); the whole
  // cluster gets the same answer.
  __device__ bool GatherTopK(const RowStats& stats, uint32_t k) {
    const Levels levels =
        Levels::Over(stats.max_logit, static_cast<double>(stats.max_logit) - static_cast<double>(stats.min_live));
    LevelCut c0 = CountCut(levels, 0, 0, k, kTopKWindow);
    if (c0.bin == kTopKWindow) c0 = CountCut(levels, 0, 0, k);  // the k-th lies past the window: every bin
    if (c0.bin < 0) return false;
    uint32_t lmax = (static_cast<uint32_t>(c0.bin) << 8) | 0xffu;
    uint32_t n = c0.count_above + c0.count_in;
    if (n > static_cast<uint32_t>(kDirectListLimit)) {
      const LevelCut c1 = CountCut(levels, 1, static_cast<uint32_t>(c0.bin), k - c0.count_above);
      if (c1.bin < 0) return false;
      lmax = (static_cast<uint32_t>(c0.bin) << 8) | static_cast<uint32_t>(c1.bin);
      n = c0.count_above + c1.count_above + c1.count_in;
    }
    if (n > static_cast<uint32_t>(kListCapacity)) return false;
    Gather(levels, 0, lmax, 0);
    return true;
  }

  // Rank 0 after GatherTopK: the list holds the whole top-k set, so every filter resolves on it (the single-block
  // planner's order: min-p key, k-th key, top-p over the candidates, the threshold and the tie cut). Sorts the
  // list value-major; *kept_items = the number of leading items kept.
  __device__ KeptSet ResolveTopK(uint32_t k, const ValueFloorKeys& floors, const Softmax& softmax, double top_p,
                                 int32_t profile, int* kept_items) {
    auto list = List();
    const int items = ListCount();
    list.SortAscending(items);
    const uint32_t top_k_key = list.KeyAt(static_cast<int>(k) - 1);
    const uint32_t candidates =
        profile == kProfileVllm ? max(floors.min_p_key, top_k_key) : max(floors.floor_key, top_k_key);
    TopPCut cut{0, 0, 0};
    uint32_t last_kept_id = 0;
    if (top_p < 1.0) {
      const ListTopPCut list_cut =
          list.TopPOnSorted(list.CountKeyAtLeast(items, candidates), softmax, 0, top_p, 0.0, false);
      cut = list_cut.cut;
      last_kept_id = list_cut.last_kept_id;
    }
    KeptSet kept{KeptThreshold(floors.min_p_key, top_k_key, cut.key, floors.floor_key), kNoTieCut};
    if (top_p < 1.0 && cut.key == kept.threshold_key && cut.tie_kept < cut.tie_count) {
      kept.tie_limit = static_cast<int64_t>(last_kept_id) + 1;
    }
    *kept_items = FirstIndexWhere(items, [&](int i) { return !kept.Contains(list.IdAt(i), KeyToFloat(list.KeyAt(i))); });
    return kept;
  }

  // Top-p without top-k: the mass cut over the candidates key >= candidates (1-2 digits) and the gather of the
  // crossing bucket into rank 0's list; remembers the mass above the bucket and the target. false: fall back.
  template <bool kEverywhere>
  __device__ bool GatherTopPBucket(const RowStats& stats, uint32_t candidates, const Softmax& softmax,
                                   double temperature, double top_p) {
    constexpr int kDirectLimit = kEverywhere ? kTopPDirectLimit : kDirectListLimit;
    const double span =
        fmin(static_cast<double>(stats.max_logit) - static_cast<double>(stats.min_live), 32.0 * temperature);
    const Levels levels = Levels::Over(stats.max_logit, span);
    LevelCut c0 = MassCut(levels, 0, 0, candidates, softmax, 0, top_p, 0.0, kTopPWindow);
    if (c0.bin == kTopPWindow) c0 = MassCut(levels, 0, 0, candidates, softmax, 0, top_p, 0.0);  // past the window
    if (c0.bin < 0) return false;
    CompactVectors(static_cast<uint32_t>(c0.bin));  // from here on only the vectors at or above the crossing bin
    uint32_t lmin = static_cast<uint32_t>(c0.bin) << 8;
    uint32_t lmax = lmin | 0xffu;
    uint32_t n = c0.count_in;
    bucket_mass_above_ = c0.mass_above;
    bucket_target_ = c0.target;
    if (n > static_cast<uint32_t>(kDirectLimit)) {
      const LevelCut c1 = MassCut(levels, 1, static_cast<uint32_t>(c0.bin), candidates, softmax, c0.mass_above,
                                  top_p, c0.target);
      if (c1.bin < 0) return false;
      lmin = lmax = (static_cast<uint32_t>(c0.bin) << 8) | static_cast<uint32_t>(c1.bin);
      n = c1.count_in;
      bucket_mass_above_ = c0.mass_above + c1.mass_above;
    }
    if (n > static_cast<uint32_t>(kListCapacity)) return false;
    bucket_levels_ = levels;
    bucket_coarse_ = lmin != lmax;  // a whole first-digit bin: ResolveTopPBucket<true> narrows it to its crossing
    Gather<kEverywhere>(levels, lmin, lmax, candidates);
    return true;
  }

  // After GatherTopPBucket<kEverywhere>: kappa and the tie cut from the bucket, the kept set (min-p may still raise
  // the threshold under hf). kEverywhere: every CTA (each holds the whole bucket in its list, so each resolves the
  // same kept set without a push and a cluster barrier), a whole first-digit bucket narrowed first; else rank 0,
  // which pushes the plan. Whole CTA.
  template <bool kEverywhere>
  __device__ KeptSet ResolveTopPBucket(const ValueFloorKeys& floors, const Softmax& softmax, double top_p) {
    if constexpr (kEverywhere) {
      if (bucket_coarse_ && ListCount() > kWarpSortItems) NarrowBucket(softmax);
    }
    auto list = List();
    const int items = ListCount();
    list.SortAscending(items);
    const ListTopPCut cut = list.TopPOnSorted(items, softmax, bucket_mass_above_, top_p, bucket_target_, true);
    KeptSet kept{KeptThreshold(floors.min_p_key, 0, cut.cut.key, floors.floor_key), kNoTieCut};
    if (cut.cut.key == kept.threshold_key && cut.cut.tie_kept < cut.cut.tie_count) {
      kept.tie_limit = static_cast<int64_t>(cut.last_kept_id) + 1;
    }
    return kept;
  }

  // A gathered first-digit bucket (the candidates of one coarse bin, all of them in this CTA's list) narrowed to its
  // crossing bin of the level's low byte: the second digit, computed over the list in this CTA instead of over the
  // slices in a cluster round (the same counts, integer masses and crossing rule as MassCut's: the lowest-valued
  // non-empty bin whose mass above is < target; every token of a bin above it is kept, none of a bin below it is).
  // Adds the mass of the bins above to bucket_mass_above_ and keeps the crossing bin's items. Whole CTA.
  __device__ void NarrowBucket(const Softmax& softmax) {
    constexpr int kPerThread = kListCapacity / kThreads;
    uint32_t* count = shared_.scratch.split.count;
    uint32_t* w0 = shared_.scratch.split.w0;
    uint32_t* w1 = shared_.scratch.split.w1;
    uint32_t* w2 = shared_.scratch.split.w2;
    uint64_t* items = shared_.scratch.split.list;
    const int n = ListCount();
    for (int t = threadIdx.x; t < kLevelBins; t += kThreads) {
      count[t] = 0;
      w0[t] = 0;
      w1[t] = 0;
      w2[t] = 0;
    }
    if (threadIdx.x == 0) shared_.found_bin = -1;
    __syncthreads();
    uint64_t mine[kPerThread];
    uint32_t bin[kPerThread];
#pragma unroll
    for (int j = 0; j < kPerThread; ++j) {
      const int i = static_cast<int>(threadIdx.x) + j * kThreads;
      bin[j] = kLevelBins;  // none
      mine[j] = 0;
      if (i < n) {
        mine[j] = items[i];
        const float x = KeyToFloat(ValueMajorKey(mine[j]));
        bin[j] = bucket_levels_.Of(x) & 0xffu;
        const uint64_t mass = FixedMass(softmax.Numerator(x));  // < 2^43 each, <= 2^11 items: no word overflows
        atomicAdd(&count[bin[j]], 1u);
        atomicAdd(&w0[bin[j]], static_cast<uint32_t>(mass & 0x3fffu));
        atomicAdd(&w1[bin[j]], static_cast<uint32_t>((mass >> 14) & 0x3fffu));
        atomicAdd(&w2[bin[j]], static_cast<uint32_t>(mass >> 28));
      }
    }
    __syncthreads();
    uint64_t bin_count = 0, bin_mass = 0;
    if (threadIdx.x < kLevelBins) {
      bin_count = count[threadIdx.x];
      bin_mass = (static_cast<uint64_t>(w2[threadIdx.x]) << 28) + (static_cast<uint64_t>(w1[threadIdx.x]) << 14) +
                 w0[threadIdx.x];
    }
    uint64_t mass_above = 0, mass_total = 0;
    cub::BlockScan<uint64_t, kThreads, cub::BLOCK_SCAN_WARP_SCANS>(shared_.collective.scan)
        .ExclusiveSum(bin_mass, mass_above, mass_total);
    if (threadIdx.x < kLevelBins && bin_count > 0 &&
        static_cast<double>(bucket_mass_above_ + mass_above) < bucket_target_) {
      atomicMax(&shared_.found_bin, static_cast<int32_t>(threadIdx.x));
    }
    __syncthreads();
    const int32_t found = shared_.found_bin;
    if (found < 0) return;  // never for valid input (the first bin's mass above is the bucket's); the list stays whole
    if (static_cast<int32_t>(threadIdx.x) == found) shared_.found_mass_above = mass_above;
    if (threadIdx.x == 0) shared_.list_count = 0;
    __syncthreads();  // every item is in registers: the list is rewritten below
    bucket_mass_above_ += shared_.found_mass_above;
#pragma unroll
    for (int j = 0; j < kPerThread; ++j) {
      if (bin[j] == static_cast<uint32_t>(found)) items[atomicAdd(&shared_.list_count, 1u)] = mine[j];
    }
    __syncthreads();
  }

  // Rank 0: the single-block planner over the row in device memory (its storage aliases the histograms and the
  // list: call only after a ClusterSync that follows every peer's last access to them).
  __device__ BlockRowPlanner<kThreads> Single() { return BlockRowPlanner<kThreads>(shared_.scratch.single); }

 private:
  struct MinId {
    __device__ int32_t operator()(int32_t a, int32_t b) const { return a < b ? a : b; }
  };
  struct LeanCombine {
    __device__ RowStats operator()(const RowStats& a, const RowStats& b) const {
      return {fmaxf(a.max_logit, b.max_logit), -1, a.has_nan | b.has_nan, a.live + b.live,
              fminf(a.min_live, b.min_live)};
    }
  };

  // Warp w's segment of the listed vectors: list indices [first, end) (VectorAt; ascending vector order).
  __device__ void SegmentOf(int w, int32_t* first, int32_t* end) const {
    const int32_t listed = VectorCount();
    const int32_t per_warp = (listed + kWarps - 1) / kWarps;
    *first = w * per_warp;
    *end = min(*first + per_warp, listed);
    if (*first > *end) *first = *end;
  }

  // The kept mass of vector v (and of each element, into mass[] when given).
  __device__ __forceinline__ uint64_t VectorMass(const uint4& raw, int32_t v, const Softmax& softmax,
                                                 const KeptSet& kept, uint64_t* mass) const {
    const T* e = reinterpret_cast<const T*>(&raw);
    float x[kVec];
#pragma unroll
    for (int q = 0; q < kVec; ++q) x[q] = Canonical(e[q]);
    uint64_t full[kVec];
    MassesOf(softmax, UnitTemperature(softmax), x, full);
    uint64_t sum = 0;
#pragma unroll
    for (int q = 0; q < kVec; ++q) {
      const uint64_t m = kept.Contains(begin_ + v * kVec + q, x[q]) ? full[q] : 0;
      if (mass) mass[q] = m;
      sum += m;
    }
    return sum;
  }

  // Whether Softmax::Numerator(x) is expf(x - max) (a finite max at T = 1).
  __device__ __forceinline__ static bool UnitTemperature(const Softmax& softmax) {
    return !softmax.infinite_max && softmax.inv_temperature == 1.0;
  }

  // FixedMass(softmax.Numerator(x[q])) for every element of a vector, bit for bit (Numerator's two paths: expf of the
  // fp32 difference at T = 1, else of the rounded double exponent), with no branch between the elements: -inf gives
  // 0. `unit` = UnitTemperature(softmax), uniform.
  __device__ __forceinline__ static void MassesOf(const Softmax& softmax, bool unit, const float (&x)[kVec],
                                                  uint64_t (&mass)[kVec]) {
    float z[kVec];
    if (unit) {
#pragma unroll
      for (int q = 0; q < kVec; ++q) z[q] = x[q] - softmax.max_logit;
    } else {
#pragma unroll
      for (int q = 0; q < kVec; ++q) z[q] = static_cast<float>(softmax.Scaled(x[q]));
    }
#pragma unroll
    for (int q = 0; q < kVec; ++q) mass[q] = FixedMass(expf(z[q]));
  }

  // One warp: the first kept token of the listed vectors [first, end) whose inclusive cumulative mass exceeds target
  // (< the range's kept mass) into shared_.token.
  __device__ void ScanChunks(int32_t first, int32_t end, uint64_t target, const Softmax& softmax,
                             const KeptSet& kept) {
    const int lane = threadIdx.x & 31;
    const uint4* vslice = reinterpret_cast<const uint4*>(slice_);
    uint64_t running = 0;
    int32_t token = -1;
    for (int32_t base = first; base < end; base += 32) {
      const int32_t i = base + lane;
      const int32_t v = i < end ? VectorAt(i) : 0;
      uint64_t mass[kVec];
      uint64_t lane_mass = 0;
      if (i < end) {
        lane_mass = VectorMass(vslice[v], v, softmax, kept, mass);
      } else {
#pragma unroll
        for (int q = 0; q < kVec; ++q) mass[q] = 0;
      }
      const uint64_t inclusive = WarpInclusiveSum(lane_mass);
      const unsigned crossed = __ballot_sync(0xffffffffu, running + inclusive > target);
      if (crossed) {
        const int src = __ffs(crossed) - 1;
        if (lane == src) {
          uint64_t r = running + inclusive - lane_mass;
#pragma unroll
          for (int q = 0; q < kVec; ++q) {
            r += mass[q];
            if (token < 0 && r > target) token = static_cast<int32_t>(begin_ + v * kVec + q);
          }
        }
        token = __shfl_sync(0xffffffffu, token, src);
        break;
      }
      running += __shfl_sync(0xffffffffu, inclusive, 31);
    }
    if (lane == 0) shared_.token = token;
  }

  template <bool kMass>
  __device__ LevelCut Cut(const Levels& levels, int digit, uint32_t coarse, uint32_t cand_key,
                          const Softmax& softmax, uint32_t k_rem, uint64_t mass_prev, double top_p, double target,
                          int window) {
    uint32_t* count = shared_.scratch.split.count;
    uint32_t* w0 = shared_.scratch.split.w0;
    uint32_t* w1 = shared_.scratch.split.w1;
    uint32_t* w2 = shared_.scratch.split.w2;
    uint4* packed = shared_.scratch.split.packed[digit];
    for (int t = threadIdx.x; t < kLevelBins; t += kThreads) {
      count[t] = 0;
      w0[t] = 0;
      w1[t] = 0;
      w2[t] = 0;
    }
    __syncthreads();
    // Bins at or past `window` are one virtual bin (`window`), summed in registers: no shared atomics for the
    // bulk of the row, which lies far below a top-k or top-p threshold.
    uint32_t rest_count = 0;
    uint64_t rest_mass = 0;
    auto add = [&](uint32_t bin, uint32_t n, uint64_t mass) {
      atomicAdd(&count[bin], n);
      if (kMass && mass) {
        atomicAdd(&w0[bin], static_cast<uint32_t>(mass & 0x3fffu));
        atomicAdd(&w1[bin], static_cast<uint32_t>((mass >> 14) & 0x3fffu));
        atomicAdd(&w2[bin], static_cast<uint32_t>(mass >> 28));
      }
    };
    // Candidates: x > -inf and key(x) >= cand_key, i.e. x >= the candidate floor's value (x is canonical, so the
    // float order is the key order; a cand_key at or below -inf's admits every live token).
    const float cand_x = cand_key > OrderedKey(kNegInf) ? KeyToFloat(cand_key) : kNegInf;
    // MassCut digit 0 over every vector records each vector's highest-valued candidate's bin (0xffff: none) in
    // vlist_, for CompactVectors.
    const bool record = kMass && digit == 0 && listed_ < 0;
    const bool unit_temperature = UnitTemperature(softmax);
    // Each vector's levels and masses are computed for all its elements first, without branches (independent
    // chains the scheduler interleaves), then the candidates go to the histogram.
    ForEachListedVector([&](int32_t v, const uint4& raw) {
      const T* e = reinterpret_cast<const T*>(&raw);
      float x[kVec];
      uint32_t bin[kVec];
      bool in[kVec];
#pragma unroll
      for (int q = 0; q < kVec; ++q) {
        x[q] = Canonical(e[q]);
        const uint32_t level = levels.OfDifference(x[q] - levels.max_logit);
        in[q] = x[q] > kNegInf && (!kMass || x[q] >= cand_x) && (digit == 0 || (level >> 8) == coarse);
        bin[q] = digit == 0 ? (level >> 8) : (level & 0xffu);
      }
      uint64_t mass[kVec];
      if (kMass) {
        MassesOf(softmax, unit_temperature, x, mass);
      } else {
#pragma unroll
        for (int q = 0; q < kVec; ++q) mass[q] = 0;
      }
      uint32_t vector_bin = 0xffffu;
#pragma unroll
      for (int q = 0; q < kVec; ++q) {
        if (!in[q]) continue;
        vector_bin = min(vector_bin, bin[q]);
        if (bin[q] >= static_cast<uint32_t>(window)) {
          ++rest_count;
          rest_mass += mass[q];
        } else {
          add(bin[q], 1u, mass[q]);
        }
      }
      if (record) vlist_[v] = static_cast<uint16_t>(vector_bin);
    });
    if (window < kLevelBins && rest_count > 0) {
      // A thread holds < 2^8 tokens of a slice (< 2^17 tokens over >= 512 threads), so its rest mass is < 2^50
      // and its words are < 2^14, 2^14 and 2^22: summed over the CTA's threads they stay below 2^32 too.
      add(static_cast<uint32_t>(window), rest_count, rest_mass);
    }
    __syncthreads();
    for (int t = threadIdx.x; t < kLevelBins; t += kThreads) packed[t] = make_uint4(count[t], w0[t], w1[t], w2[t]);
    if (threadIdx.x == 0) shared_.found_bin = -1;
    ClusterSync();  // every CTA's histogram is packed
    uint64_t bin_count = 0;
    uint64_t bin_mass = 0;
    if (threadIdx.x < kLevelBins) {
      constexpr int kInFlight = 4;  // independent 16-byte DSMEM loads per round trip
      for (uint32_t q0 = 0; q0 < ranks_; q0 += kInFlight) {
        uint4 word[kInFlight];
#pragma unroll
        for (int j = 0; j < kInFlight; ++j) {
          word[j] = q0 + j < ranks_ ? AtRank(packed, q0 + j)[threadIdx.x] : make_uint4(0, 0, 0, 0);
        }
#pragma unroll
        for (int j = 0; j < kInFlight; ++j) {
          bin_count += word[j].x;
          if (kMass) {
            bin_mass += (static_cast<uint64_t>(word[j].w) << 28) + (static_cast<uint64_t>(word[j].z) << 14) + word[j].y;
          }
        }
      }
    }
    // Bins ascend with the level, i.e. descend in value: "above" = lower bins.
    uint64_t count_above = 0, count_total = 0;
    using Scan = cub::BlockScan<uint64_t, kThreads, cub::BLOCK_SCAN_WARP_SCANS>;
    Scan(shared_.collective.scan).ExclusiveSum(bin_count, count_above, count_total);
    uint64_t mass_above = 0, mass_total = 0;
    if (kMass) {
      __syncthreads();
      Scan(shared_.collective.scan).ExclusiveSum(bin_mass, mass_above, mass_total);
      if (digit == 0) target = top_p * static_cast<double>(mass_total);
    }
    if (threadIdx.x < kLevelBins && bin_count > 0) {
      if (!kMass) {
        if (count_above < k_rem && k_rem <= count_above + bin_count) shared_.found_bin = threadIdx.x;
      } else if (static_cast<double>(mass_prev + mass_above) < target) {
        atomicMax(&shared_.found_bin, static_cast<int32_t>(threadIdx.x));
      }
    }
    __syncthreads();
    const int32_t found = shared_.found_bin;
    if (static_cast<int32_t>(threadIdx.x) == found) {
      shared_.found_count_above = static_cast<uint32_t>(count_above);
      shared_.found_count_in = static_cast<uint32_t>(bin_count);
      shared_.found_mass_above = mass_above;
      shared_.found_mass_in = bin_mass;
    }
    __syncthreads();
    LevelCut cut{found, 0, 0, 0, 0, target};
    if (found >= 0) {
      cut.count_above = shared_.found_count_above;
      cut.count_in = shared_.found_count_in;
      cut.mass_above = shared_.found_mass_above;
      cut.mass_in = shared_.found_mass_in;
    }
    return cut;
  }

  Shared& shared_;
  T* slice_;
  const T* row_;
  int64_t vocab_;
  uint32_t rank_;
  uint32_t ranks_;
  uint16_t* vlist_;
  int64_t begin_ = 0;
  int64_t count_ = 0;
  int32_t vectors_ = 0;
  int32_t listed_ = -1;  // -1: every vector; else the length of the compacted list in vlist_
  uint64_t before_ = 0;
  uint64_t mine_ = 0;
  uint64_t bucket_mass_above_ = 0;
  double bucket_target_ = 0.0;
  Levels bucket_levels_{0.0f, 1.0f};  // the levels GatherTopPBucket cut with
  bool bucket_coarse_ = false;        // the gathered bucket is a whole first-digit bin (NarrowBucket applies)
};

// The plan of a row in every CTA of its cluster (ComputeProcessedDistribution, ComputeLabelLogprobs): the same
// RowPlan as BlockRowPlanner::Plan (status, greedy token, softmax, kept set, kept mass). The whole cluster calls
// it; on return no CTA accesses another's shared memory any more.
template <class T, int kThreads>
__device__ RowPlan PlanSplitRow(SplitRowPlanner<T, kThreads>& planner, const T* row, int64_t vocab,
                                const DeviceRowParams& p, int32_t profile) {
  RowPlan plan{};
  const RowStats stats = planner.LoadAndExchangeStats();
  if (stats.Invalid()) {
    plan.status = kStatusInvalid;
    return plan;
  }
  if (IsGreedy(profile, p)) {
    plan.status = kStatusGreedy;
    plan.greedy_token = planner.Argmax(stats.max_logit);
    return plan;
  }
  plan.status = kStatusSampled;
  plan.softmax = Softmax{stats.max_logit, 1.0 / p.temperature, stats.max_logit == kPosInf};
  // Every branch either completes the plan or sets single_block (uniform in the cluster): rank 0 then runs the
  // single-block planner over the row in device memory and pushes its plan.
  bool single_block = plan.softmax.infinite_max;
  bool published = false;  // rank 0 pushed the plan: read it after a ClusterSync
  if (!single_block) {
    const ValueFloorKeys floors = ComputeValueFloorKeys(stats, plan.softmax, p.min_p);
    if (p.top_k > 0 && p.top_k < stats.live) {
      const uint32_t k = static_cast<uint32_t>(p.top_k);
      single_block = !planner.GatherTopK(stats, k);
      if (!single_block) {
        if (planner.Leader()) {
          int kept_items = 0;
          const KeptSet kept = planner.ResolveTopK(k, floors, plan.softmax, p.top_p, profile, &kept_items);
          const uint64_t kept_mass = planner.List().MassOfPrefix(kept_items, plan.softmax);
          planner.PushPlan(kept, kept_mass, kStatusSampled);
        }
        published = true;
      }
    } else {
      plan.kept = KeptSet{floors.min_p_key, kNoTieCut};
      if (p.top_p < 1.0) {
        const uint32_t candidates = profile == kProfileVllm ? floors.min_p_key : floors.floor_key;
        single_block =
            !planner.template GatherTopPBucket<false>(stats, candidates, plan.softmax, p.temperature, p.top_p);
        if (!single_block) {  // rank 0 resolves and pushes (the sampling kernel resolves in every CTA instead)
          if (planner.Leader()) {
            const KeptSet kept = planner.template ResolveTopPBucket<false>(floors, plan.softmax, p.top_p);
            planner.PushPlan(kept, 0, kStatusSampled);
          }
          ClusterSync();
          plan.kept = planner.PublishedKept();
        }
      }
      if (!single_block) {
        plan.kept_mass = planner.AccumulateKept(plan.softmax, plan.kept);
        return plan;
      }
    }
  }
  if (single_block) {
    ClusterSync();  // every peer is done reading rank 0's histograms
    if (planner.Leader()) {
      const RowPlan single = planner.Single().Plan(row, vocab, p, profile);
      planner.PushPlan(single.kept, single.kept_mass, single.status);
    }
    published = true;
  }
  if (published) {
    ClusterSync();
    plan.kept = planner.PublishedKept();
    plan.kept_mass = planner.PublishedMass();
    plan.status = planner.PublishedStatus();
  }
  return plan;
}

}  // namespace samplecheck::kernels::detail
