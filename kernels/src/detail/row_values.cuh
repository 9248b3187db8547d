// What every pass computes from one logit: its value as fp32, its order-preserving key, its softmax numerator
// (relative to the row max, after temperature) and that numerator in 2^-42 fixed point.
//
// Invariants
// - key(a) < key(b) iff a < b for non-NaN floats; -0 and +0 share one key (the value is canonicalized), so every
//   value-threshold filter keeps ties, whatever the sign of a zero.
// - Numerator(x) = exp((x - max) / T) computed from a double-precision z, so it is within a few fp32 ulps of the
//   exact value; it is exactly 1 at the max. A row whose max is +inf puts numerator 1 on its +inf tokens and 0
//   elsewhere (they share the mass equally, as reference/ defines).
// - FixedMass(e) = round(e * 2^42): integer, so every sum of masses is exact and independent of summation order
//   (determinism and batch invariance of the draw). A row of at most 2^20 tokens sums to at most 2^62.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>

namespace samplecheck::kernels::detail {

inline constexpr float kNegInf = -__builtin_huge_valf();
inline constexpr float kPosInf = __builtin_huge_valf();

__device__ __forceinline__ float ToFloat(float v) { return v; }
__device__ __forceinline__ float ToFloat(__nv_bfloat16 v) { return __bfloat162float(v); }
__device__ __forceinline__ float ToFloat(__half v) { return __half2float(v); }

// The logit at i as fp32 (exact for every dtype), -0 folded into +0.
template <class T>
__device__ __forceinline__ float LoadLogit(const T* row, int64_t i) {
  const float x = ToFloat(row[i]);
  return x == 0.0f ? 0.0f : x;
}

// The logit of a raw element as fp32, -0 folded into +0 (the element of a 16-byte vector load).
template <class T>
__device__ __forceinline__ float Canonical(T v) {
  const float x = ToFloat(v);
  return x == 0.0f ? 0.0f : x;
}

// Calls f(i, x_i) for every token of the row this thread owns, in ascending i for each thread (BlockRowStats'
// lowest-id argmax relies on it). A 16-byte-aligned row is read with 16-byte vector loads: vector v (elements
// v * kVec ... v * kVec + kVec - 1, kVec = 16 / sizeof(T)) belongs to thread v % kThreads, kVecUnroll vectors in
// flight per thread; the tail of fewer than kVec elements and unaligned rows (a row_stride or base pointer not a
// multiple of 16 bytes) take the scalar path, i = threadIdx.x + j * kThreads with kUnroll loads in flight. Which
// thread owns a token never changes a result: every consumer reduces with exact or order-independent operations.
template <int kThreads, int kUnroll = 8, class T, class F>
__device__ __forceinline__ void ForEachLogit(const T* row, int64_t vocab, F&& f) {
  constexpr int kVec = 16 / static_cast<int>(sizeof(T));
  constexpr int kVecUnroll = 4;
  int64_t scalar_begin = 0;
  if ((reinterpret_cast<uintptr_t>(row) & 15u) == 0) {
    const int64_t vectors = vocab / kVec;
    const uint4* vrow = reinterpret_cast<const uint4*>(row);
    int64_t v = threadIdx.x;
    for (; v + (kVecUnroll - 1) * static_cast<int64_t>(kThreads) < vectors; v += kVecUnroll * kThreads) {
      uint4 raw[kVecUnroll];
#pragma unroll
      for (int j = 0; j < kVecUnroll; ++j) raw[j] = vrow[v + j * kThreads];
#pragma unroll
      for (int j = 0; j < kVecUnroll; ++j) {
        const T* e = reinterpret_cast<const T*>(&raw[j]);
#pragma unroll
        for (int q = 0; q < kVec; ++q) f((v + j * kThreads) * kVec + q, Canonical(e[q]));
      }
    }
    for (; v < vectors; v += kThreads) {
      const uint4 raw = vrow[v];
      const T* e = reinterpret_cast<const T*>(&raw);
#pragma unroll
      for (int q = 0; q < kVec; ++q) f(v * kVec + q, Canonical(e[q]));
    }
    scalar_begin = vectors * kVec;
  }
  int64_t base = scalar_begin + threadIdx.x;
  for (; base + (kUnroll - 1) * static_cast<int64_t>(kThreads) < vocab; base += kUnroll * kThreads) {
    float x[kUnroll];
#pragma unroll
    for (int j = 0; j < kUnroll; ++j) x[j] = LoadLogit(row, base + j * kThreads);
#pragma unroll
    for (int j = 0; j < kUnroll; ++j) f(base + j * kThreads, x[j]);
  }
  for (; base < vocab; base += kThreads) f(base, LoadLogit(row, base));
}

__device__ __forceinline__ uint32_t OrderedKey(float x) {
  const uint32_t bits = __float_as_uint(x);
  return (bits & 0x80000000u) ? ~bits : (bits | 0x80000000u);
}

__device__ __forceinline__ float KeyToFloat(uint32_t key) {
  const uint32_t bits = (key & 0x80000000u) ? (key & 0x7fffffffu) : ~key;
  return __uint_as_float(bits);
}

inline constexpr double kFixedScale = 4398046511104.0;  // 2^42

// The softmax numerator of a row after temperature: exp((x - max) / T).
struct Softmax {
  float max_logit;
  double inv_temperature;
  bool infinite_max;  // the row max is +inf

  // z = (x - max) / T in double (-inf for -inf logits; 0 / -inf for +inf-max rows). A temperature below ~5.6e-309
  // makes 1 / T infinite: the maxima stay at 0 (never 0 * inf = NaN) and every other token goes to -inf, the limit
  // the reference computes in extended precision (found by fuzz/cuda_fuzzer.cc: hf, T = 4.9e-324).
  __device__ __forceinline__ double Scaled(float x) const {
    if (infinite_max) return x == kPosInf ? 0.0 : -__builtin_huge_val();
    const double shifted = static_cast<double>(x) - static_cast<double>(max_logit);
    return shifted == 0.0 ? 0.0 : shifted * inv_temperature;
  }
  // At T = 1 (inv_temperature exactly 1) float(Scaled(x)) is the fp32 difference x - max itself: the difference of
  // two floats rounds once to fp32 whether or not it passes through an exact-or-rounded double first (checked on
  // 2e8 random pairs, every exponent gap), so the conversions to and from double are skipped: the same bits.
  __device__ __forceinline__ float Numerator(float x) const {
    if (!infinite_max && inv_temperature == 1.0) return expf(x - max_logit);
    return expf(static_cast<float>(Scaled(x)));
  }
};

// round(e * 2^42), ties to even. e * 2^42 is exact in fp32 (a power-of-two scaling of e <= 1, subnormals
// included), so rounding it from fp32 or from double gives the same integer; fp32 skips a conversion.
__device__ __forceinline__ uint64_t FixedMass(float e) {
  return __float2ull_rn(e * 0x1p42f);
}

// Value-threshold membership {x : key(x) >= threshold_key and x > -inf}: min-p and top-k keep a top set by value
// with its ties (the top-p candidates are such a set).
__device__ __forceinline__ bool IsKept(float x, uint32_t threshold_key) {
  return x > kNegInf && OrderedKey(x) >= threshold_key;
}

inline constexpr int64_t kNoTieCut = INT64_MAX;

// The kept set of a sampled row: every token above the threshold value, plus the members of the threshold's tie
// group whose id is below tie_limit. tie_limit = kNoTieCut keeps the whole group; top-p (strict, vLLM and HF cut
// the crossing tie group by sort position: ascending id first) sets tie_limit = 1 + the id of the last member kept.
struct KeptSet {
  uint32_t threshold_key;
  int64_t tie_limit;

  __device__ __forceinline__ bool Contains(int64_t i, float x) const {
    if (!(x > kNegInf)) return false;
    const uint32_t key = OrderedKey(x);
    return key > threshold_key || (key == threshold_key && i < tie_limit);
  }
};

}  // namespace samplecheck::kernels::detail
