// The processed distribution of one row, planned by one thread block: which tokens are kept and their total mass.
// Semantics: the profiles `vllm` and `hf` of reference/ (profile.h; docs/semantics.md), realized as value
// thresholds (every filter of both profiles keeps a top set by value, ties included):
//
//   pass 0  BlockRowStats         max, greedy token (lowest id among maxima), NaN, #live. Invalid row -> stop.
//   greedy                        vllm: T < 1e-5; hf: T == 0 or top_p == 0 -> the greedy token, stop.
//   min-p key (min_p > 0)         the smallest key with exp((x - max) / T) >= min_p (double precision: p_i >=
//                                 min_p * p_max, relative to the full softmax; the ratio is the same after any
//                                 renormalization, so hf's min-p after top-p is the same threshold). No pass over
//                                 the row: the test is monotone in x, so every thread bisects the 2^32 keys below
//                                 the max (32 evaluations). The same search gives the weight floor (tokens whose
//                                 weight reference/ rounds to 0 are never kept) when the row's range makes it
//                                 matter; a +inf max keeps only +inf tokens.
//   pass 2-4 top-k key (0 < k < #live)  BlockKthLargestKey: the k-th largest logit; ties kept. For vllm it runs
//                                 after min-p: the k-th largest of the min-p survivors is max(min-p key, k-th key).
//   pass 5-7 top-p key (top_p < 1) BlockTopPThreshold over the candidates (vllm: min-p and top-k survivors;
//                                 hf: top-k survivors), renormalized over them; with the crossing tie group's cut
//                                 (r of its n members, lowest ids first).
//   threshold = max of the keys: vllm min-p -> top-k -> top-p; hf top-k -> top-p -> min-p.
//   tie cut   when the top-p key is the threshold and r < n: BlockInverseCdf::NthWithKey (2 passes) finds the id
//             of member r - 1; tie_limit = that id + 1 (min-p and top-k keep the whole group by value, so the
//             intersection with top-p's cut is the cut). Otherwise tie_limit = kNoTieCut.
//   pass 8  BlockInverseCdf::Accumulate: the kept mass S (2^-42 fixed point) and per-chunk prefixes.
//
// Invariant on return (every thread): plan.status is kRowInvalid, kRowGreedy (greedy_token set) or kRowSampled,
// and for kRowSampled the kept set is {(i, x) : plan.kept.Contains(i, x)} with fixed mass plan.kept_mass >= 2^42.
#pragma once


#include <cstdint>

#include "block_inverse_cdf.cuh"
#include "block_radix_select.cuh"
#include "block_row_stats.cuh"
#include "block_top_p_threshold.cuh"
#include "row_values.cuh"

namespace samplecheck::kernels::detail {

enum : int32_t { kProfileVllm = 0, kProfileHf = 1 };
enum : int32_t { kStatusSampled = 0, kStatusGreedy = 1, kStatusInvalid = 2, kStatusBadIndex = 3, kStatusBadParams = 4 };

inline constexpr double kVllmGreedyTemperatureBelow = 1e-5;  // vLLM _SAMPLING_EPS

struct DeviceRowParams {
  double temperature;
  double top_p;
  double min_p;
  int64_t top_k;
  uint64_t seed;
  uint64_t offset;
};

// The caller's device arrays of DeviceSamplingParams (each null: the scalar).
struct DeviceParamColumns {
  const double* temperature;
  const int64_t* top_k;
  const double* top_p;
  const double* min_p;
  const uint64_t* seed;
  const uint64_t* offset;
};

// Per-row parameters as the kernels read them: scalars, one DeviceRowParams per batch row (uploaded from host
// arrays, validated on the host), or the caller's device arrays (check_on_device: validated in the kernel).
struct DeviceParams {
  DeviceRowParams scalar;
  const DeviceRowParams* per_row;
  DeviceParamColumns columns;
  bool check_on_device;

  __device__ DeviceRowParams At(int64_t b) const {
    if (per_row) return per_row[b];
    DeviceRowParams p = scalar;
    if (columns.temperature) p.temperature = columns.temperature[b];
    if (columns.top_k) p.top_k = columns.top_k[b];
    if (columns.top_p) p.top_p = columns.top_p[b];
    if (columns.min_p) p.min_p = columns.min_p[b];
    if (columns.seed) p.seed = columns.seed[b];
    if (columns.offset) p.offset = columns.offset[b];
    return p;
  }
};

// The ranges of ValidateRowParams (validate.cpp; reference/'s ValidateParams), for parameters that live in
// device memory: a row outside them is not sampled (kStatusBadParams).
__device__ __forceinline__ bool RowParamsValid(const DeviceRowParams& p, int32_t profile) {
  const bool vllm = profile == kProfileVllm;
  if (!(p.temperature >= 0.0 && (vllm ? p.temperature <= 2.0 : p.temperature <= __builtin_huge_val()))) return false;
  if (p.top_k < -1) return false;
  if (vllm ? !(p.top_p > 0.0 && p.top_p <= 1.0) : !(p.top_p >= 0.0 && p.top_p <= 1.0)) return false;
  return p.min_p >= 0.0 && p.min_p <= 1.0;
}

// The weight floor of reference/: exp(z) is 0 in long double below about this z (2^-16445 = e^-11398.8).
inline constexpr double kMinScaledLogit = -11398.8;

struct RowPlan {
  int32_t status;
  int32_t greedy_token;
  Softmax softmax;
  KeptSet kept;
  uint64_t kept_mass;
};

__device__ __forceinline__ bool IsGreedy(int32_t profile, const DeviceRowParams& p) {
  if (profile == kProfileVllm) return p.temperature < kVllmGreedyTemperatureBelow;
  return p.temperature == 0.0 || p.top_p == 0.0;
}

// min-p on the probability ratio p / p_max = exp(z) (not z against log(min_p)), as the reference compares it:
// a token a hair below the max (exp(z) rounds to 1, as it does in any fp32 softmax) is tied with the max and
// kept at min_p = 1 (found by the CUDA fuzz target on an H200: vllm, T = 1, min_p = 1, logits 1e-30 apart). One
// exp only in the band where the log-space test could disagree with it (|z - log(min_p)| < 1e-9, far wider than
// the rounding of either).
struct MinPKeeps {
  Softmax softmax;
  double min_p;
  double log_min_p;
  __device__ bool operator()(float x) const {
    const double z = softmax.Scaled(x);
    const double d = z - log_min_p;
    return d >= 1e-9 || (d > -1e-9 && exp(z) >= min_p);
  }
};
// The weight floor: the reference's exp(z) is positive.
struct AboveWeightFloor {
  Softmax softmax;
  __device__ bool operator()(float x) const { return softmax.Scaled(x) >= kMinScaledLogit; }
};

// The smallest key k <= max_key whose value x = KeyToFloat(k) satisfies `keeps`, for a test that is monotone in
// x, false at -inf and true at the max (both tests above: z is non-decreasing in x). Every key between those of
// -inf and a finite max is a number (NaN keys lie outside), and a token of value x is kept iff key(x) >= k, which
// is the set the test keeps (-0 and +0 are one value: tokens are canonicalized to +0, and the test agrees on
// both). Bisection over the keys, the same in every thread: no pass over the row, no barrier.
template <class Keeps>
__device__ __forceinline__ uint32_t LowestKeyWhere(uint32_t max_key, const Keeps& keeps) {
  uint32_t lo = OrderedKey(kNegInf);  // keeps(-inf) is false
  uint32_t hi = max_key;              // keeps(max) is true
  while (hi - lo > 1) {
    const uint32_t mid = lo + (hi - lo) / 2;
    if (keeps(KeyToFloat(mid))) {
      hi = mid;
    } else {
      lo = mid;
    }
  }
  return hi;
}


// The value floors every plan starts from (identical in the single-block and the split-row planners):
// floor_key = the smallest key of positive weight (the reference's weight floor, or the +inf tokens of a +inf
// row); min_p_key = the min-p key (0 when min_p == 0), already raised to floor_key.
struct ValueFloorKeys {
  uint32_t floor_key;
  uint32_t min_p_key;
};

__device__ __forceinline__ ValueFloorKeys ComputeValueFloorKeys(const RowStats& stats, const Softmax& softmax,
                                                                double min_p) {
  // Weight floor: reference/ keeps only tokens of positive weight (long double exp underflows below z ~ -11398.8;
  // a +inf max leaves weight only on the +inf tokens). floor_key is the smallest key of positive weight.
  uint32_t floor_key = 0;
  uint32_t min_p_key = 0;
  const bool underflow = !softmax.infinite_max && softmax.Scaled(stats.min_live) < kMinScaledLogit;
  if (softmax.infinite_max) {
    floor_key = OrderedKey(kPosInf);
    if (min_p > 0.0) min_p_key = floor_key;  // only the +inf tokens have p > 0
  } else {
    const uint32_t max_key = OrderedKey(stats.max_logit);
    if (min_p > 0.0) min_p_key = LowestKeyWhere(max_key, MinPKeeps{softmax, min_p, log(min_p)});
    if (underflow) floor_key = LowestKeyWhere(max_key, AboveWeightFloor{softmax});
  }
  return {floor_key, max(min_p_key, floor_key)};
}

// The kept set's threshold from the filters' keys, as both planners combine them: every filter keeps a top set by
// value, so the kept threshold is the largest key; top-p's tie cut applies only when top-p's key is that threshold
// and the crossing group is cut (r < n).
__device__ __forceinline__ uint32_t KeptThreshold(uint32_t min_p_key, uint32_t top_k_key, uint32_t top_p_key,
                                                  uint32_t floor_key) {
  return max(max(min_p_key, top_k_key), max(top_p_key, floor_key));
}

template <int kThreads>
class BlockRowPlanner {
 public:
  // Phases never overlap, so their shared memory is one union (CUB's layering: caller-owned TempStorage).
  union TempStorage {
    typename BlockRowStats<kThreads>::TempStorage stats;
    typename BlockKthLargestKey<kThreads>::TempStorage top_k;
    typename BlockTopPThreshold<kThreads>::TempStorage top_p;
    typename BlockInverseCdf<kThreads>::TempStorage cdf;
  };

  __device__ explicit BlockRowPlanner(TempStorage& storage) : storage_(storage) {}

  template <class T>
  __device__ RowPlan Plan(const T* row, int64_t vocab, const DeviceRowParams& params, int32_t profile) {
    RowPlan plan{};
    const RowStats stats = BlockRowStats<kThreads>(storage_.stats).Compute(row, vocab);
    plan.greedy_token = stats.argmax;
    if (stats.Invalid()) {
      plan.status = kStatusInvalid;
      return plan;
    }
    if (IsGreedy(profile, params)) {
      plan.status = kStatusGreedy;
      return plan;
    }
    __syncthreads();  // the stats storage is reused below
    plan.status = kStatusSampled;
    plan.softmax = Softmax{stats.max_logit, 1.0 / params.temperature, stats.max_logit == kPosInf};

    const ValueFloorKeys floors = ComputeValueFloorKeys(stats, plan.softmax, params.min_p);
    const uint32_t floor_key = floors.floor_key;
    const uint32_t min_p_key = floors.min_p_key;

    uint32_t top_k_key = 0;
    if (params.top_k > 0 && params.top_k < stats.live) {
      top_k_key = BlockKthLargestKey<kThreads>(storage_.top_k).Select(row, vocab, params.top_k);
      __syncthreads();
    }

    const uint32_t top_p_candidates =
        profile == kProfileVllm ? max(min_p_key, top_k_key) : max(floor_key, top_k_key);
    TopPCut top_p{0, 0, 0};
    if (params.top_p < 1.0) {
      top_p = BlockTopPThreshold<kThreads>(storage_.top_p)
                  .Threshold(row, vocab, plan.softmax, top_p_candidates, params.top_p);
      __syncthreads();
    }
    plan.kept.threshold_key = KeptThreshold(min_p_key, top_k_key, top_p.key, floor_key);
    plan.kept.tie_limit = kNoTieCut;
    if (params.top_p < 1.0 && top_p.key == plan.kept.threshold_key && top_p.tie_kept < top_p.tie_count) {
      plan.kept.tie_limit =
          1 + static_cast<int64_t>(
                  BlockInverseCdf<kThreads>(storage_.cdf).NthWithKey(row, vocab, top_p.key, top_p.tie_kept - 1));
      __syncthreads();
    }
    plan.kept_mass = BlockInverseCdf<kThreads>(storage_.cdf).Accumulate(row, vocab, plan.softmax, plan.kept);
    return plan;
  }

  // After Plan returned kStatusSampled: the inverse-CDF collective over the same storage.
  __device__ BlockInverseCdf<kThreads> Cdf() { return BlockInverseCdf<kThreads>(storage_.cdf); }

 private:
  TempStorage& storage_;
};

}  // namespace samplecheck::kernels::detail
