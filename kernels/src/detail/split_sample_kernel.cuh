// The split-row SampleFromLogits kernel: one thread-block cluster per batch row (blockIdx.x / cluster size), the
// row planned on chip by SplitRowPlanner (split_row_planner.cuh), then one draw:
//   u = UniformForDraw(seed, counter); target = floor(u * S); token = the first kept token in ascending id order
//   whose inclusive cumulative fixed-point mass exceeds target.
// Semantics and result: exactly SampleKernel's (sample_kernel.cuh): the same kept set, the same integers, the same
// token for the same row, params, seed and offset, at any batch size or cluster size. Invalid rows get
// FaultPolicy::InvalidRowToken() (kInvalidToken), never token 0 and never an id >= vocab.
//
// FaultPolicy: the compile-time hook of sample_kernel.cuh (NoFault = the shipped kernel), with the same
// customization points, so the test-only mutants (tests/kernel_mutants/) run this kernel too.
//
// Paths (every branch that holds a cluster barrier is taken by the whole cluster; see cluster.cuh):
//   invalid / greedy           after the stats exchange; rank 0 writes the token.
//   top-k (0 < k < #live)      select first: count cut (1-2 digits), gather, rank 0 resolves and draws.
//   top-p without top-k        mass cut (1-2 digits), gather the crossing bucket into every CTA, each resolves the
//                              same cut, then the cluster-wide accumulate and draw.
//   none / min-p               the kept set is the min-p / weight-floor key: accumulate and draw.
//   fallback                   rank 0 runs SampleKernel's single-block planner over the row in device memory.
#pragma once

#include <cstdint>

#include "launch.h"
#include "philox_uniform.cuh"
#include "sample_kernel.cuh"
#include "split_row_planner.cuh"

namespace samplecheck::kernels::detail {

template <class T, int kThreads, class FaultPolicy = NoFault>
__global__ void __launch_bounds__(kThreads, kSplitMinBlocks)
    SplitSampleKernel(const T* logits, BatchGeometry geometry, DeviceParams params, int32_t profile,
                      int32_t* tokens, int32_t* row_status, int64_t slice_len) {
  ClusterArriveRelaxed();
  extern __shared__ __align__(16) unsigned char split_smem[];
  using Shared = SplitRowShared<kThreads>;
  Shared& shared = *reinterpret_cast<Shared*>(split_smem);
  T* slice = reinterpret_cast<T*>(split_smem + SplitSharedBytes<kThreads>());
  const int64_t b = blockIdx.x / ClusterSize();
  const bool leader = ClusterRank() == 0;
  auto finish = [&](int32_t token, int32_t status) {
    if (threadIdx.x == 0) {
      tokens[b] = token;
      if (row_status) row_status[b] = status;
    }
  };
  const int64_t r = LogitsRowOf(geometry.row_indices, b, geometry.logits_rows);
  if (r < 0) {
    ClusterWait();
    if (leader) finish(kInvalidToken, kStatusBadIndex);
    return;
  }
  const T* row = logits + r * geometry.row_stride;
  const DeviceRowParams p = FaultPolicy::Params(params, b, r);
  if (params.check_on_device && !RowParamsValid(p, profile)) {  // the same for every CTA of the row
    ClusterWait();
    if (leader) finish(kInvalidToken, kStatusBadParams);
    return;
  }
  SplitRowPlanner<T, kThreads> planner(shared, slice, row, geometry.vocab, slice_len);
  const RowStats stats = planner.LoadAndExchangeStats();
  if (stats.Invalid()) {
    if (leader) finish(FaultPolicy::InvalidRowToken(), FaultPolicy::InvalidRowStatus());
    return;
  }
  if (IsGreedy(profile, p)) {
    const int32_t greedy_token = planner.Argmax(stats.max_logit);
    if (leader) finish(greedy_token, kStatusGreedy);
    return;
  }
  const Softmax softmax{stats.max_logit, 1.0 / p.temperature, stats.max_logit == kPosInf};
  const double u = FaultPolicy::Uniform(UniformForDraw(p.seed, FaultPolicy::Counter(p, b)));

  // Every branch below either finishes the row or sets single_block (uniform in the cluster); the single-block
  // planner then runs once, at the end, by rank 0 over the row in device memory.
  bool single_block = softmax.infinite_max;
  if (!single_block) {
    const ValueFloorKeys floors = ComputeValueFloorKeys(stats, softmax, p.min_p);
    if (p.top_k > 0 && p.top_k < stats.live) {  // select first: everything after the gather is rank 0's
      single_block = !planner.GatherTopK(stats, static_cast<uint32_t>(p.top_k));
      if (!single_block) {
        if (!leader) return;
        int kept_items = 0;
        planner.ResolveTopK(static_cast<uint32_t>(p.top_k), floors, softmax, p.top_p, profile, &kept_items);
        finish(planner.List().DrawOnKept(kept_items, softmax, u), kStatusSampled);
        return;
      }
    } else {
      KeptSet kept{floors.min_p_key, kNoTieCut};  // none / min-p: KeptThreshold(min_p_key, 0, 0, floor_key)
      if (p.top_p < 1.0) {
        const uint32_t candidates = profile == kProfileVllm ? floors.min_p_key : floors.floor_key;
        single_block = !planner.template GatherTopPBucket<true>(stats, candidates, softmax, p.temperature, p.top_p);
        if (!single_block) kept = planner.template ResolveTopPBucket<true>(floors, softmax, p.top_p);  // every CTA
      }
      if (!single_block) {
        const uint64_t kept_mass = planner.AccumulateKept(softmax, kept);
        const int32_t token = planner.DrawOwned(softmax, kept, DrawTarget(u, kept_mass));
        if (token >= 0) finish(token, kStatusSampled);
        return;
      }
    }
  }
  ClusterSync();  // every peer is done reading this CTA's histograms
  if (!leader) return;
  auto single = planner.Single();
  const RowPlan plan = single.Plan(row, geometry.vocab, p, profile);
  int32_t token = kInvalidToken;
  int32_t status = plan.status;
  if (plan.status == kStatusGreedy) {
    token = plan.greedy_token;
  } else if (plan.status == kStatusSampled) {
    token = single.Cdf().Draw(row, geometry.vocab, plan.softmax, plan.kept, DrawTarget(u, plan.kept_mass));
  } else if (plan.status == kStatusInvalid) {
    token = FaultPolicy::InvalidRowToken();
    status = FaultPolicy::InvalidRowStatus();
  }
  finish(token, status);
}

}  // namespace samplecheck::kernels::detail
