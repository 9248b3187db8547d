// The SampleFromLogits launcher, templated on the kernels' FaultPolicy (sample_kernel.cuh) so the test-only
// mutants (tests/kernel_mutants/) launch exactly what SampleFromLogits launches, with one fault injected.
// Path (launch.h's ChooseRowSplit): the split-row kernel (a thread-block cluster per row, split_sample_kernel.cuh)
// when a row's slices fit in shared memory and the batch is at most the SM count or top-k or top-p is on, else the
// single-block kernel
// (sample_kernel.cuh); both draw the same token.
#pragma once

#include <cstdint>

#include "launch.h"
#include "sample_kernel.cuh"
#include "split_sample_kernel.cuh"

namespace samplecheck::kernels::detail {

template <class FaultPolicy, class Params>
Status LaunchSample(const LogitsBatch& logits, const Params& params, Profile profile, int32_t* tokens,
                    int32_t* row_status, cudaStream_t stream) {
  auto check = [&]() -> Status {
    if (tokens == nullptr) return {ErrorCode::kInvalidArgument, "tokens output is null"};
    return Status::Ok();
  };
  auto launch = [&](auto type_tag, const DeviceParams& device_params) -> Status {
    using T = std::remove_const_t<std::remove_pointer_t<decltype(type_tag)>>;
    DeviceLimits limits;
    Status st = CurrentDeviceLimits(&limits);
    if (!st.ok()) return st;
    const BatchGeometry geometry = GeometryOf(logits);
    const T* data = static_cast<const T*>(logits.data);
    constexpr auto kSplitKernel = &SplitSampleKernel<T, kSplitThreads, FaultPolicy>;
    RowSplit split;
    st = PlanRowSplit<kSplitKernel>(logits.vocab, logits.batch, sizeof(T), limits, &split,
                                    AnyRankOrMassCut(params, logits.batch));
    if (!st.ok()) return st;
    if (split.cluster > 0) {
      return LaunchSplitKernel(kSplitKernel, split, logits.batch, stream, "SplitSampleKernel launch", data, geometry,
                               device_params, ProfileCode(profile), tokens, row_status, split.slice_len);
    }
    DispatchBlockThreads(logits.batch, limits, [&](auto threads) {
      SampleKernel<T, threads(), FaultPolicy><<<static_cast<unsigned>(logits.batch), threads(), 0, stream>>>(
          data, geometry, device_params, ProfileCode(profile), tokens, row_status);
    });
    return Status::Ok();
  };
  return LaunchRows(logits, params, profile, stream, "SampleKernel launch", check, launch);
}

}  // namespace samplecheck::kernels::detail
