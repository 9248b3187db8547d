// The SampleFromLogits kernel: one thread block per batch row (BlockRowPlanner: passes 0-8, row_plan.cuh), then
// one draw:
//   u = UniformForDraw(seed, counter); target = floor(u * S); token = the first kept token in ascending id order
//   whose inclusive cumulative fixed-point mass exceeds target (BlockInverseCdf::Draw).
// Invariant (FaultPolicy = NoFault, the shipped kernel): the token depends only on the row's logits, its
// parameters, seed and offset: each row is planned by its own block with integer (order-independent) sums, so
// neither the batch size, the row's position nor the other rows change it. Invalid rows get kInvalidToken, never
// token 0 and never an id >= vocab.
//
// FaultPolicy: a compile-time hook for test-only mutants (tests/kernel_mutants/), so they reuse this kernel
// instead of a copy. Customization points (static __device__ members; NoFault is the identity):
//   Params(params, b, r)  the DeviceRowParams batch row b plans and draws with (r: its logits row)
//   Counter(p, b)         the Philox counter (offset) of batch row b's draw
//   Uniform(u)            the uniform the draw step walks the kept set's CDF with
//   InvalidRowToken()     the token of an invalid row (NaN, all -inf), with InvalidRowStatus() its row status
// A policy derives from NoFault and hides the points it changes. NoFault compiles to exactly the shipped kernel.
#pragma once

#include <cstdint>

#include "launch.h"
#include "philox_uniform.cuh"
#include "row_plan.cuh"

namespace samplecheck::kernels::detail {

struct NoFault {
  __device__ __forceinline__ static DeviceRowParams Params(const DeviceParams& params, int64_t b, int64_t /*r*/) {
    return params.At(b);
  }
  __device__ __forceinline__ static uint64_t Counter(const DeviceRowParams& p, int64_t /*b*/) { return p.offset; }
  __device__ __forceinline__ static double Uniform(double u) { return u; }
  __device__ __forceinline__ static int32_t InvalidRowToken() { return kInvalidToken; }
  __device__ __forceinline__ static int32_t InvalidRowStatus() { return kStatusInvalid; }
};

template <class T, int kThreads, class FaultPolicy = NoFault>
__global__ void __launch_bounds__(kThreads)
    SampleKernel(const T* logits, BatchGeometry geometry, DeviceParams params, int32_t profile, int32_t* tokens,
                 int32_t* row_status) {
  using Planner = BlockRowPlanner<kThreads>;
  __shared__ typename Planner::TempStorage storage;
  const int64_t b = blockIdx.x;
  const int64_t r = LogitsRowOf(geometry.row_indices, b, geometry.logits_rows);
  if (r < 0) {
    if (threadIdx.x == 0) {
      tokens[b] = kInvalidToken;
      if (row_status) row_status[b] = kStatusBadIndex;
    }
    return;
  }
  const T* row = logits + r * geometry.row_stride;
  const DeviceRowParams p = FaultPolicy::Params(params, b, r);
  if (params.check_on_device && !RowParamsValid(p, profile)) {
    if (threadIdx.x == 0) {
      tokens[b] = kInvalidToken;
      if (row_status) row_status[b] = kStatusBadParams;
    }
    return;
  }
  Planner planner(storage);
  const RowPlan plan = planner.Plan(row, geometry.vocab, p, profile);
  int32_t token = kInvalidToken;
  int32_t status = plan.status;
  if (plan.status == kStatusGreedy) {
    token = plan.greedy_token;
  } else if (plan.status == kStatusSampled) {
    const uint64_t target = DrawTarget(FaultPolicy::Uniform(UniformForDraw(p.seed, FaultPolicy::Counter(p, b))), plan.kept_mass);
    token = planner.Cdf().Draw(row, geometry.vocab, plan.softmax, plan.kept, target);
  } else if (plan.status == kStatusInvalid) {
    token = FaultPolicy::InvalidRowToken();
    status = FaultPolicy::InvalidRowStatus();
  }
  if (threadIdx.x == 0) {
    tokens[b] = token;
    if (row_status) row_status[b] = status;
  }
}

}  // namespace samplecheck::kernels::detail
