// ComputeProcessedDistribution and ComputeLabelLogprobs: the renormalized distribution a row is drawn from,
// under the profiles `vllm` and `hf` (reference/ profile.h; docs/kernels.md).
//
// Split-row kernels (a thread-block cluster per row, the row on chip: detail/split_row_planner.cuh's PlanSplitRow)
// whenever a row's slices fit in shared memory, each CTA writing the outputs of its own slice; otherwise one thread
// block per batch row: BlockRowPlanner (passes 0-8, detail/row_plan.cuh). Either plan gives the kept set
// {plan.kept.Contains(i, x)} (threshold value + top-p tie cut by id) and its mass S = kept_mass * 2^-42; then one more pass writes, per token,
//   prob = e / S, logprob = z - ln S (z = (x - max) / T in double: finite for every kept token), masked = x / T,
// and 0 / -inf / -inf outside the kept set. Invariant: a token has prob > 0 only if it is kept, and the kept set
// is the one SampleFromLogits draws from (same planner, same arithmetic).
// Labels: one thread per label after the plan; kept iff plan.kept.Contains; outside the kept set it is reported
// (kLabelOutsideKeptSet), and with keep_label_in_kept_set its own logit joins the kept set: z - ln(S + e).
#include <cmath>

#include "detail/launch.h"
#include "detail/row_plan.cuh"
#include "detail/split_row_planner.cuh"

namespace samplecheck::kernels {
namespace detail {
namespace {

constexpr float kNaN = __builtin_nanf("");

// The processed outputs of token i of value x under plan (both kernels; NaN for invalid rows and bad indices).
struct ProcessedValues {
  float prob, logprob, masked;
};

__device__ __forceinline__ ProcessedValues ProcessedAt(const RowPlan& plan, double log_mass, double inv_mass,
                                                       int64_t i, float x) {
  if (plan.status == kStatusGreedy) {
    const bool hit = i == plan.greedy_token;
    return {hit ? 1.0f : 0.0f, hit ? 0.0f : kNegInf, hit ? x : kNegInf};
  }
  if (plan.status != kStatusSampled) return {kNaN, kNaN, kNaN};
  if (!plan.kept.Contains(i, x)) return {0.0f, kNegInf, kNegInf};
  const float e = plan.softmax.Numerator(x);
  const float prob = static_cast<float>(static_cast<double>(e) * inv_mass);
  const float logprob = plan.softmax.infinite_max ? static_cast<float>(-log_mass)
                                                  : static_cast<float>(plan.softmax.Scaled(x) - log_mass);
  // x / T (a zero logit stays 0 when 1 / T overflows: never 0 * inf = NaN).
  const float masked = x == 0.0f ? 0.0f : static_cast<float>(static_cast<double>(x) * plan.softmax.inv_temperature);
  return {prob, logprob, masked};
}

// The label outputs of one label under a plan (both kernels).
template <class T>
__device__ __forceinline__ void WriteLabel(const RowPlan& plan, const T* row, int64_t vocab, int32_t label,
                                           bool keep_label, int64_t slot, float* out_logprobs, float* out_probs,
                                           int32_t* label_status) {
  double logprob = kNaN;
  int32_t status = kLabelKept;
  if (plan.status == kStatusInvalid || plan.status == kStatusBadIndex) {
    status = kLabelRowInvalid;
  } else if (label < 0 || label >= vocab) {
    status = kLabelOutOfRange;
  } else if (plan.status == kStatusGreedy) {
    const bool hit = label == plan.greedy_token;
    status = hit ? kLabelKept : kLabelOutsideKeptSet;
    logprob = hit ? 0.0 : -__builtin_huge_val();
  } else {
    const double mass = static_cast<double>(plan.kept_mass) / kFixedScale;
    const float x = LoadLogit(row, label);
    const double z = plan.softmax.Scaled(x);
    if (plan.kept.Contains(label, x)) {
      logprob = z - log(mass);
    } else {
      status = kLabelOutsideKeptSet;
      logprob = keep_label ? z - log(mass + static_cast<double>(plan.softmax.Numerator(x))) : -__builtin_huge_val();
    }
  }
  if (out_logprobs) out_logprobs[slot] = static_cast<float>(logprob);
  if (out_probs) out_probs[slot] = static_cast<float>(exp(logprob));
  if (label_status) label_status[slot] = status;
}

template <class T, int kThreads>
__global__ void __launch_bounds__(kThreads)
    ProcessedKernel(const T* logits, BatchGeometry geometry, DeviceParams params, int32_t profile, float* probs,
                    float* logprobs, float* masked_logits, int64_t out_stride, int32_t* row_status) {
  using Planner = BlockRowPlanner<kThreads>;
  __shared__ typename Planner::TempStorage storage;
  const int64_t b = blockIdx.x;
  const int64_t vocab = geometry.vocab;
  const int64_t r = LogitsRowOf(geometry.row_indices, b, geometry.logits_rows);
  float* prob_row = probs ? probs + b * out_stride : nullptr;
  float* logprob_row = logprobs ? logprobs + b * out_stride : nullptr;
  float* masked_row = masked_logits ? masked_logits + b * out_stride : nullptr;
  RowPlan plan{};
  const T* row = nullptr;
  if (r < 0) {
    plan.status = kStatusBadIndex;
  } else {
    row = logits + r * geometry.row_stride;
    plan = Planner(storage).Plan(row, vocab, params.At(b), profile);
  }
  if (threadIdx.x == 0 && row_status) row_status[b] = plan.status;
  const double log_mass = log(static_cast<double>(plan.kept_mass) / kFixedScale);
  const double inv_mass = kFixedScale / static_cast<double>(plan.kept_mass);
  const T* values = row ? row : logits;  // any readable row: invalid rows read nothing below
  const bool read = plan.status == kStatusGreedy || plan.status == kStatusSampled;
  ForEachLogit<kThreads>(values, read ? vocab : 0, [&](int64_t i, float x) {
    const ProcessedValues out = ProcessedAt(plan, log_mass, inv_mass, i, x);
    if (prob_row) prob_row[i] = out.prob;
    if (logprob_row) logprob_row[i] = out.logprob;
    if (masked_row) masked_row[i] = out.masked;
  });
  if (!read) {  // invalid rows and bad indices: NaN everywhere
    for (int64_t i = threadIdx.x; i < vocab; i += kThreads) {
      if (prob_row) prob_row[i] = kNaN;
      if (logprob_row) logprob_row[i] = kNaN;
      if (masked_row) masked_row[i] = kNaN;
    }
  }
}

template <class T, int kThreads>
__global__ void __launch_bounds__(kThreads)
    LabelKernel(const T* logits, BatchGeometry geometry, DeviceParams params, int32_t profile,
                const int32_t* labels, int64_t labels_per_row, bool keep_label, float* out_logprobs,
                float* out_probs, int32_t* label_status, int32_t* row_status) {
  using Planner = BlockRowPlanner<kThreads>;
  __shared__ typename Planner::TempStorage storage;
  const int64_t b = blockIdx.x;
  const int64_t vocab = geometry.vocab;
  const int64_t r = LogitsRowOf(geometry.row_indices, b, geometry.logits_rows);
  RowPlan plan{};
  const T* row = nullptr;
  if (r < 0) {
    plan.status = kStatusBadIndex;
  } else {
    row = logits + r * geometry.row_stride;
    plan = Planner(storage).Plan(row, vocab, params.At(b), profile);
  }
  if (threadIdx.x == 0 && row_status) row_status[b] = plan.status;
  for (int64_t j = threadIdx.x; j < labels_per_row; j += kThreads) {
    const int64_t slot = b * labels_per_row + j;
    WriteLabel(plan, row, vocab, labels[slot], keep_label, slot, out_logprobs, out_probs, label_status);
  }
}

// One cluster per batch row: PlanSplitRow, then every CTA writes the outputs of its slice (read from its shared
// memory), 16-byte stores where the output rows are aligned.
template <class T, int kThreads>
__global__ void __launch_bounds__(kThreads, kSplitMinBlocks)
    SplitProcessedKernel(const T* logits, BatchGeometry geometry, DeviceParams params, int32_t profile, float* probs,
                         float* logprobs, float* masked_logits, int64_t out_stride, int32_t* row_status,
                         int64_t slice_len) {
  ClusterArriveRelaxed();
  extern __shared__ __align__(16) unsigned char split_smem[];
  using Shared = SplitRowShared<kThreads>;
  Shared& shared = *reinterpret_cast<Shared*>(split_smem);
  T* slice = reinterpret_cast<T*>(split_smem + SplitSharedBytes<kThreads>());
  const int64_t b = blockIdx.x / ClusterSize();
  const int64_t vocab = geometry.vocab;
  const int64_t r = LogitsRowOf(geometry.row_indices, b, geometry.logits_rows);
  const T* row = r < 0 ? logits : logits + r * geometry.row_stride;
  SplitRowPlanner<T, kThreads> planner(shared, slice, row, vocab, slice_len);
  RowPlan plan{};
  if (r < 0) {
    ClusterWait();
    plan.status = kStatusBadIndex;
  } else {
    plan = PlanSplitRow(planner, row, vocab, params.At(b), profile);
  }
  if (planner.Leader() && threadIdx.x == 0 && row_status) row_status[b] = plan.status;
  float* prob_row = probs ? probs + b * out_stride : nullptr;
  float* logprob_row = logprobs ? logprobs + b * out_stride : nullptr;
  float* masked_row = masked_logits ? masked_logits + b * out_stride : nullptr;
  const double log_mass = log(static_cast<double>(plan.kept_mass) / kFixedScale);
  const double inv_mass = kFixedScale / static_cast<double>(plan.kept_mass);
  const int64_t begin = planner.SliceBegin();
  const int64_t end = begin + planner.SliceCount();
  if (plan.status != kStatusGreedy && plan.status != kStatusSampled) {  // invalid rows and bad indices: NaN
    for (int64_t i = begin + threadIdx.x; i < end; i += kThreads) {
      if (prob_row) prob_row[i] = kNaN;
      if (logprob_row) logprob_row[i] = kNaN;
      if (masked_row) masked_row[i] = kNaN;
    }
    return;
  }
  constexpr int kVec = 16 / static_cast<int>(sizeof(T));
  const bool aligned = ((reinterpret_cast<uintptr_t>(prob_row) | reinterpret_cast<uintptr_t>(logprob_row) |
                         reinterpret_cast<uintptr_t>(masked_row)) & 15u) == 0;
  const uint4* vslice = reinterpret_cast<const uint4*>(slice);
  const int64_t vectors = (end - begin + kVec - 1) / kVec;
  for (int64_t v = threadIdx.x; v < vectors; v += kThreads) {
    const uint4 raw = vslice[v];
    const T* e = reinterpret_cast<const T*>(&raw);
    const int64_t i0 = begin + v * kVec;
    float prob[kVec], logprob[kVec], masked[kVec];
#pragma unroll
    for (int q = 0; q < kVec; ++q) {
      const ProcessedValues out = ProcessedAt(plan, log_mass, inv_mass, i0 + q, Canonical(e[q]));
      prob[q] = out.prob;
      logprob[q] = out.logprob;
      masked[q] = out.masked;
    }
    if (aligned && i0 + kVec <= end) {
#pragma unroll
      for (int h = 0; h < kVec; h += 4) {
        if (prob_row) *reinterpret_cast<float4*>(prob_row + i0 + h) = make_float4(prob[h], prob[h + 1], prob[h + 2], prob[h + 3]);
        if (logprob_row) {
          *reinterpret_cast<float4*>(logprob_row + i0 + h) =
              make_float4(logprob[h], logprob[h + 1], logprob[h + 2], logprob[h + 3]);
        }
        if (masked_row) {
          *reinterpret_cast<float4*>(masked_row + i0 + h) =
              make_float4(masked[h], masked[h + 1], masked[h + 2], masked[h + 3]);
        }
      }
    } else {
#pragma unroll
      for (int q = 0; q < kVec; ++q) {
        if (i0 + q >= end) break;
        if (prob_row) prob_row[i0 + q] = prob[q];
        if (logprob_row) logprob_row[i0 + q] = logprob[q];
        if (masked_row) masked_row[i0 + q] = masked[q];
      }
    }
  }
}

// One cluster per batch row: PlanSplitRow, then rank 0 writes the row's labels.
template <class T, int kThreads>
__global__ void __launch_bounds__(kThreads, kSplitMinBlocks)
    SplitLabelKernel(const T* logits, BatchGeometry geometry, DeviceParams params, int32_t profile,
                     const int32_t* labels, int64_t labels_per_row, bool keep_label, float* out_logprobs,
                     float* out_probs, int32_t* label_status, int32_t* row_status, int64_t slice_len) {
  ClusterArriveRelaxed();
  extern __shared__ __align__(16) unsigned char split_smem[];
  using Shared = SplitRowShared<kThreads>;
  Shared& shared = *reinterpret_cast<Shared*>(split_smem);
  T* slice = reinterpret_cast<T*>(split_smem + SplitSharedBytes<kThreads>());
  const int64_t b = blockIdx.x / ClusterSize();
  const int64_t r = LogitsRowOf(geometry.row_indices, b, geometry.logits_rows);
  const T* row = r < 0 ? logits : logits + r * geometry.row_stride;
  SplitRowPlanner<T, kThreads> planner(shared, slice, row, geometry.vocab, slice_len);
  RowPlan plan{};
  if (r < 0) {
    ClusterWait();
    plan.status = kStatusBadIndex;
  } else {
    plan = PlanSplitRow(planner, row, geometry.vocab, params.At(b), profile);
  }
  if (!planner.Leader()) return;
  if (threadIdx.x == 0 && row_status) row_status[b] = plan.status;
  for (int64_t j = threadIdx.x; j < labels_per_row; j += kThreads) {
    const int64_t slot = b * labels_per_row + j;
    WriteLabel(plan, row, geometry.vocab, labels[slot], keep_label, slot, out_logprobs, out_probs, label_status);
  }
}

}  // namespace
}  // namespace detail

Status ComputeProcessedDistribution(const LogitsBatch& logits, const SamplingParams& params, Profile profile,
                                    const ProcessedOutputs& outputs, cudaStream_t stream) {
  using namespace detail;
  const int64_t out_stride = outputs.out_stride ? outputs.out_stride : logits.vocab;
  auto check = [&]() -> Status {
    if (out_stride < logits.vocab) {
      return {ErrorCode::kInvalidArgument, "out_stride = " + std::to_string(out_stride) + " is below vocab = " +
                                               std::to_string(logits.vocab)};
    }
    return Status::Ok();
  };
  auto launch = [&](auto type_tag, const DeviceParams& device_params) -> Status {
    using T = std::remove_const_t<std::remove_pointer_t<decltype(type_tag)>>;
    DeviceLimits limits;
    Status st = CurrentDeviceLimits(&limits);
    if (!st.ok()) return st;
    const BatchGeometry geometry = GeometryOf(logits);
    const T* data = static_cast<const T*>(logits.data);
    constexpr auto kSplitKernel = &SplitProcessedKernel<T, kSplitThreads>;
    RowSplit split;
    st = PlanRowSplit<kSplitKernel>(logits.vocab, logits.batch, sizeof(T), limits, &split);
    if (!st.ok()) return st;
    if (split.cluster > 0) {
      return LaunchSplitKernel(kSplitKernel, split, logits.batch, stream, "SplitProcessedKernel launch", data,
                               geometry, device_params, ProfileCode(profile), outputs.probs, outputs.logprobs,
                               outputs.masked_logits, out_stride, outputs.row_status, split.slice_len);
    }
    ProcessedKernel<T, kBlockThreads><<<static_cast<unsigned>(logits.batch), kBlockThreads, 0, stream>>>(
        data, geometry, device_params, ProfileCode(profile), outputs.probs, outputs.logprobs, outputs.masked_logits,
        out_stride, outputs.row_status);
    return Status::Ok();
  };
  return LaunchRows(logits, params, profile, stream, "ProcessedKernel launch", check, launch);
}

Status ComputeLabelLogprobs(const LogitsBatch& logits, const SamplingParams& params, Profile profile,
                            const LabelQuery& query, const LabelOutputs& outputs, cudaStream_t stream) {
  using namespace detail;
  auto check = [&]() -> Status {
    if (query.labels == nullptr) return {ErrorCode::kInvalidArgument, "labels is null"};
    if (query.labels_per_row < 1) {
      return {ErrorCode::kInvalidArgument,
              "labels_per_row = " + std::to_string(query.labels_per_row) + " is outside [1, inf)"};
    }
    return Status::Ok();
  };
  auto launch = [&](auto type_tag, const DeviceParams& device_params) -> Status {
    using T = std::remove_const_t<std::remove_pointer_t<decltype(type_tag)>>;
    DeviceLimits limits;
    Status st = CurrentDeviceLimits(&limits);
    if (!st.ok()) return st;
    const BatchGeometry geometry = GeometryOf(logits);
    const T* data = static_cast<const T*>(logits.data);
    constexpr auto kSplitKernel = &SplitLabelKernel<T, kSplitThreads>;
    RowSplit split;
    st = PlanRowSplit<kSplitKernel>(logits.vocab, logits.batch, sizeof(T), limits, &split);
    if (!st.ok()) return st;
    if (split.cluster > 0) {
      return LaunchSplitKernel(kSplitKernel, split, logits.batch, stream, "SplitLabelKernel launch", data, geometry,
                               device_params, ProfileCode(profile), query.labels, query.labels_per_row,
                               query.keep_label_in_kept_set, outputs.logprobs, outputs.probs, outputs.label_status,
                               outputs.row_status, split.slice_len);
    }
    LabelKernel<T, kBlockThreads><<<static_cast<unsigned>(logits.batch), kBlockThreads, 0, stream>>>(
        data, geometry, device_params, ProfileCode(profile), query.labels, query.labels_per_row,
        query.keep_label_in_kept_set, outputs.logprobs, outputs.probs, outputs.label_status, outputs.row_status);
    return Status::Ok();
  };
  return LaunchRows(logits, params, profile, stream, "LabelKernel launch", check, launch);
}

}  // namespace samplecheck::kernels
