// ComputeProcessedDistribution and ComputeLabelLogprobs: the renormalized distribution a row is drawn from,
// under the profiles `vllm` and `hf` (reference/ profile.h; docs/kernels.md).
//
// One thread block per batch row: BlockRowPlanner (passes 0-8, detail/row_plan.cuh) gives the kept set
// {plan.kept.Contains(i, x)} (threshold value + top-p tie cut by id) and its mass S = kept_mass * 2^-42; then one more pass writes, per token,
//   prob = e / S, logprob = z - ln S (z = (x - max) / T in double: finite for every kept token), masked = x / T,
// and 0 / -inf / -inf outside the kept set. Invariant: a token has prob > 0 only if it is kept, and the kept set
// is the one SampleFromLogits draws from (same planner, same arithmetic).
// Labels: one thread per label after the plan; kept iff plan.kept.Contains; outside the kept set it is reported
// (kLabelOutsideKeptSet), and with keep_label_in_kept_set its own logit joins the kept set: z - ln(S + e).
#include <cmath>

#include "detail/launch.h"
#include "detail/row_plan.cuh"

namespace samplecheck::kernels {
namespace detail {
namespace {

constexpr float kNaN = __builtin_nanf("");

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
    float prob = kNaN, logprob = kNaN, masked = kNaN;
    if (plan.status == kStatusGreedy) {
      const bool hit = i == plan.greedy_token;
      prob = hit ? 1.0f : 0.0f;
      logprob = hit ? 0.0f : kNegInf;
      masked = hit ? x : kNegInf;
    } else {
      if (plan.kept.Contains(i, x)) {
        const float e = plan.softmax.Numerator(x);
        prob = static_cast<float>(static_cast<double>(e) * inv_mass);
        logprob = plan.softmax.infinite_max ? static_cast<float>(-log_mass)
                                            : static_cast<float>(plan.softmax.Scaled(x) - log_mass);
        // x / T (a zero logit stays 0 when 1 / T overflows: never 0 * inf = NaN).
        masked = x == 0.0f ? 0.0f : static_cast<float>(static_cast<double>(x) * plan.softmax.inv_temperature);
      } else {
        prob = 0.0f;
        logprob = kNegInf;
        masked = kNegInf;
      }
    }
    if (prob_row) prob_row[i] = prob;
    if (logprob_row) logprob_row[i] = logprob;
    if (masked_row) masked_row[i] = masked;
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
  const double mass = static_cast<double>(plan.kept_mass) / kFixedScale;
  for (int64_t j = threadIdx.x; j < labels_per_row; j += kThreads) {
    const int64_t slot = b * labels_per_row + j;
    const int32_t label = labels[slot];
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
      const float x = LoadLogit(row, label);
      const double z = plan.softmax.Scaled(x);
      if (plan.kept.Contains(label, x)) {
        logprob = z - log(mass);
      } else {
        status = kLabelOutsideKeptSet;
        logprob = keep_label ? z - log(mass + static_cast<double>(plan.softmax.Numerator(x)))
                             : -__builtin_huge_val();
      }
    }
    if (out_logprobs) out_logprobs[slot] = static_cast<float>(logprob);
    if (out_probs) out_probs[slot] = static_cast<float>(exp(logprob));
    if (label_status) label_status[slot] = status;
  }
}

}  // namespace
}  // namespace detail

Status ComputeProcessedDistribution(const LogitsBatch& logits, const SamplingParams& params, Profile profile,
                                    const ProcessedOutputs& outputs, cudaStream_t stream) {
  using namespace detail;
  Status st = ValidateBatch(logits, params, profile);
  if (!st.ok()) return st;
  const int64_t out_stride = outputs.out_stride ? outputs.out_stride : logits.vocab;
  if (out_stride < logits.vocab) {
    return {ErrorCode::kInvalidArgument, "out_stride = " + std::to_string(out_stride) + " is below vocab = " +
                                             std::to_string(logits.vocab)};
  }
  DeviceParams device_params{};
  st = UploadParams(params, logits.batch, stream, &device_params);
  if (!st.ok()) return st;
  const BatchGeometry geometry = GeometryOf(logits);
  DispatchDType(logits.dtype, [&](auto type_tag) {
    using T = std::remove_const_t<std::remove_pointer_t<decltype(type_tag)>>;
    ProcessedKernel<T, kBlockThreads><<<static_cast<unsigned>(logits.batch), kBlockThreads, 0, stream>>>(
        static_cast<const T*>(logits.data), geometry, device_params, ProfileCode(profile), outputs.probs,
        outputs.logprobs, outputs.masked_logits, out_stride, outputs.row_status);
  });
  st = CudaError(cudaGetLastError(), "ProcessedKernel launch");
  ReleaseParams(device_params, stream);
  return st;
}

Status ComputeLabelLogprobs(const LogitsBatch& logits, const SamplingParams& params, Profile profile,
                            const LabelQuery& query, const LabelOutputs& outputs, cudaStream_t stream) {
  using namespace detail;
  Status st = ValidateBatch(logits, params, profile);
  if (!st.ok()) return st;
  if (query.labels == nullptr) return {ErrorCode::kInvalidArgument, "labels is null"};
  if (query.labels_per_row < 1) {
    return {ErrorCode::kInvalidArgument,
            "labels_per_row = " + std::to_string(query.labels_per_row) + " is outside [1, inf)"};
  }
  DeviceParams device_params{};
  st = UploadParams(params, logits.batch, stream, &device_params);
  if (!st.ok()) return st;
  const BatchGeometry geometry = GeometryOf(logits);
  DispatchDType(logits.dtype, [&](auto type_tag) {
    using T = std::remove_const_t<std::remove_pointer_t<decltype(type_tag)>>;
    LabelKernel<T, kBlockThreads><<<static_cast<unsigned>(logits.batch), kBlockThreads, 0, stream>>>(
        static_cast<const T*>(logits.data), geometry, device_params, ProfileCode(profile), query.labels,
        query.labels_per_row, query.keep_label_in_kept_set, outputs.logprobs, outputs.probs, outputs.label_status,
        outputs.row_status);
  });
  st = CudaError(cudaGetLastError(), "LabelKernel launch");
  ReleaseParams(device_params, stream);
  return st;
}

}  // namespace samplecheck::kernels
