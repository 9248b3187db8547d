// Pass 0 of every row: one read of the row gives its max, the lowest token id among the tied maxima (the greedy
// token), whether any logit is NaN, and how many logits are above -inf.
//
// Invariant after the pass (every thread of the block holds it): stats.max_logit = max over non-NaN logits,
// stats.argmax = the lowest i with x_i == max, stats.has_nan, stats.live = #{i : x_i > -inf},
// stats.min_live = min over those. The row is
// invalid iff has_nan or live == 0.
#pragma once

#include <cub/block/block_reduce.cuh>

#include <cstdint>

#include "row_values.cuh"

namespace samplecheck::kernels::detail {

struct RowStats {
  float max_logit;
  int32_t argmax;
  int32_t has_nan;
  int64_t live;
  float min_live;  // min over logits > -inf (+inf when none)

  __device__ bool Invalid() const { return has_nan != 0 || live == 0; }
};

struct RowStatsCombine {
  __device__ RowStats operator()(const RowStats& a, const RowStats& b) const {
    RowStats r;
    const bool take_b = b.max_logit > a.max_logit || (b.max_logit == a.max_logit && b.argmax < a.argmax);
    r.max_logit = take_b ? b.max_logit : a.max_logit;
    r.argmax = take_b ? b.argmax : a.argmax;
    r.has_nan = a.has_nan | b.has_nan;
    r.live = a.live + b.live;
    r.min_live = fminf(a.min_live, b.min_live);
    return r;
  }
};

template <int kThreads>
class BlockRowStats {
  using Reduce = cub::BlockReduce<RowStats, kThreads>;

 public:
  struct TempStorage {
    typename Reduce::TempStorage reduce;
    RowStats result;
  };

  __device__ explicit BlockRowStats(TempStorage& storage) : storage_(storage) {}

  template <class T>
  __device__ RowStats Compute(const T* row, int64_t vocab) {
    RowStats local{kNegInf, INT32_MAX, 0, 0, kPosInf};
    ForEachLogit<kThreads>(row, vocab, [&](int64_t i, float x) {
      if (x != x) {
        local.has_nan = 1;
        return;
      }
      if (x > kNegInf) {
        ++local.live;
        local.min_live = fminf(local.min_live, x);
      }
      if (local.argmax == INT32_MAX || x > local.max_logit) {  // ascending i: keeps this thread's first maximum
        local.max_logit = x;
        local.argmax = static_cast<int32_t>(i);
      }
    });
    const RowStats total = Reduce(storage_.reduce).Reduce(local, RowStatsCombine{});
    if (threadIdx.x == 0) storage_.result = total;
    __syncthreads();
    return storage_.result;
  }

 private:
  TempStorage& storage_;
};

}  // namespace samplecheck::kernels::detail
