// `cuda[:profile]` as a replay source (replay_source.h): samplecheck's processed-logprobs kernel
// (kernels::ComputeProcessedDistribution, its logprobs output: finite for every kept token however small) on a
// whole batch, bf16 rows sent to the kernels as bf16, and the label kernel (kernels::ComputeLabelLogprobs with
// keep_label_in_kept_set) for the trainers' label guard: a label outside the kept set gets its logprob over
// kept + {label} from the kernel, and the row's other kept tokens are renormalized over the same set on the host
// (lp_i + log(1 - p_label), the kernel's own p_label).
#include <cuda_runtime_api.h>

#include <cmath>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "../replay_internal.h"
#include "cuda_status.h"
#include "samplecheck/kernels/param_columns.h"
#include "samplecheck/kernels/sampling.h"
#include "samplecheck/reference/logits.h"

namespace samplecheck::harness {
namespace {

using cuda_status::CudaFailure;
using cuda_status::FromKernels;

struct CudaFree {
  void operator()(void* p) const { cudaFree(p); }
};
using DevicePtr = std::unique_ptr<void, CudaFree>;

Result<DevicePtr> DeviceAlloc(size_t bytes) {
  void* p = nullptr;
  if (cudaError_t e = cudaMalloc(&p, bytes == 0 ? 1 : bytes); e != cudaSuccess) return CudaFailure(e, "cudaMalloc");
  return DevicePtr(p);
}

Status Upload(void* device, const void* host, size_t bytes, cudaStream_t stream) {
  SC_CUDA(cudaMemcpyAsync(device, host, bytes, cudaMemcpyHostToDevice, stream));
  return Status::Ok();
}

Status Download(void* host, const void* device, size_t bytes, cudaStream_t stream) {
  SC_CUDA(cudaMemcpyAsync(host, device, bytes, cudaMemcpyDeviceToHost, stream));
  return Status::Ok();
}

class CudaReplaySource final : public ReplaySource {
 public:
  CudaReplaySource(kernels::Profile kernel_profile, const Profile& profile)
      : kernel_profile_(kernel_profile), profile_(profile) {}
  ~CudaReplaySource() override {
    if (stream_) cudaStreamDestroy(stream_);
  }

  Status Init() {
    SC_CUDA(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
    return Status::Ok();
  }

  std::string Name() const override { return "cuda:" + std::string(profile_.name); }

  ReplayCapabilities GetCapabilities() const override {
    return {.labels = true, .parallel_instances = false, .profile = std::string(profile_.name)};
  }

  Result<ReplayRows> Logprobs(const ReplayBatch& batch) override {
    if (Status st = CheckReplayBatch(batch, profile_); !st.ok()) return st.error();
    const size_t rows = static_cast<size_t>(batch.rows.rows), vocab = static_cast<size_t>(batch.rows.vocab);
    const bool bf16 = batch.dtype == ReplayDType::kBFloat16;
    const bool labelled = !batch.labels.empty();
    auto logits = UploadLogits(batch, bf16);
    if (!logits.ok()) return logits.error();
    auto logprobs = DeviceAlloc(rows * vocab * sizeof(float));
    auto row_status = DeviceAlloc(rows * sizeof(int32_t));
    auto labels = DeviceAlloc(rows * sizeof(int32_t));
    auto label_lp = DeviceAlloc(rows * sizeof(float));
    auto label_status = DeviceAlloc(rows * sizeof(int32_t));
    for (auto* r : {&logprobs, &row_status, &labels, &label_lp, &label_status}) {
      if (!r->ok()) return r->error();
    }
    kernels::LogitsBatch lb;
    lb.dtype = bf16 ? kernels::DType::kBFloat16 : kernels::DType::kFloat32;
    lb.data = logits->get();
    lb.vocab = batch.rows.vocab;
    lb.batch = batch.rows.rows;
    const kernels::ParamColumns columns = kernels::ParamColumns::FromRows(batch.params);
    const kernels::SamplingParams params = columns.View();
    kernels::ProcessedOutputs out;
    out.logprobs = static_cast<float*>(logprobs->get());
    out.row_status = static_cast<int32_t*>(row_status->get());
    if (Status st = FromKernels(kernels::ComputeProcessedDistribution(lb, params, kernel_profile_, out, stream_));
        !st.ok()) {
      return st.error();
    }
    if (labelled) {
      if (Status st = Upload(labels->get(), batch.labels.data(), rows * sizeof(int32_t), stream_); !st.ok()) {
        return st.error();
      }
      kernels::LabelQuery query{static_cast<const int32_t*>(labels->get()), 1, true};
      kernels::LabelOutputs label_out;
      label_out.logprobs = static_cast<float*>(label_lp->get());
      label_out.label_status = static_cast<int32_t*>(label_status->get());
      if (Status st = FromKernels(kernels::ComputeLabelLogprobs(lb, params, kernel_profile_, query, label_out, stream_));
          !st.ok()) {
        return st.error();
      }
    }
    ReplayRows result;
    result.logprobs.resize(rows * vocab);
    result.guarded.assign(rows, 0);
    std::vector<int32_t> status(rows), lstatus(rows, kernels::kLabelKept);
    std::vector<float> lp_label(rows, 0.0f);
    for (Status st : {Download(result.logprobs.data(), logprobs->get(), rows * vocab * sizeof(float), stream_),
                      Download(status.data(), row_status->get(), rows * sizeof(int32_t), stream_),
                      labelled ? Download(lstatus.data(), label_status->get(), rows * sizeof(int32_t), stream_)
                               : Status::Ok(),
                      labelled ? Download(lp_label.data(), label_lp->get(), rows * sizeof(float), stream_)
                               : Status::Ok()}) {
      if (!st.ok()) return st.error();
    }
    if (cudaError_t e = cudaStreamSynchronize(stream_); e != cudaSuccess) return CudaFailure(e, "replay logprobs");
    for (size_t r = 0; r < rows; ++r) {
      if (status[r] == kernels::kRowInvalid) {
        return Error{ErrorCode::kInvalidRow, "row " + std::to_string(r) + ": a NaN logit or every logit -inf"};
      }
      if (labelled && lstatus[r] == kernels::kLabelOutsideKeptSet) Guard(result, r, vocab, batch.labels[r], lp_label[r]);
    }
    return result;
  }

 private:
  // The row as the label kernel guarded it: the label at its logprob over kept + {label}, every kept token
  // renormalized over the same set.
  static void Guard(ReplayRows& result, size_t r, size_t vocab, int32_t label, float label_logprob) {
    const double shift = std::log1p(-std::exp(static_cast<double>(label_logprob)));
    float* lp = result.logprobs.data() + r * vocab;
    for (size_t t = 0; t < vocab; ++t) {
      if (std::isfinite(lp[t])) lp[t] = static_cast<float>(lp[t] + shift);
    }
    lp[static_cast<size_t>(label)] = label_logprob;
    result.guarded[r] = 1;
  }

  // The rows contiguous on the device, as fp32 or as bf16 (whose values they hold exactly).
  Result<DevicePtr> UploadLogits(const ReplayBatch& batch, bool bf16) {
    const size_t rows = static_cast<size_t>(batch.rows.rows), vocab = static_cast<size_t>(batch.rows.vocab);
    std::vector<float> f32;
    std::vector<uint16_t> b16;
    for (size_t r = 0; r < rows; ++r) {
      for (float x : batch.rows.Row(static_cast<int64_t>(r))) {
        if (bf16) {
          b16.push_back(FloatToBFloat16(x));
        } else {
          f32.push_back(x);
        }
      }
    }
    const size_t bytes = rows * vocab * (bf16 ? sizeof(uint16_t) : sizeof(float));
    auto device = DeviceAlloc(bytes);
    if (!device.ok()) return device.error();
    const void* host = bf16 ? static_cast<const void*>(b16.data()) : static_cast<const void*>(f32.data());
    if (Status st = Upload(device->get(), host, bytes, stream_); !st.ok()) return st.error();
    // The host vectors must outlive the copy: wait for it here.
    if (cudaError_t e = cudaStreamSynchronize(stream_); e != cudaSuccess) return CudaFailure(e, "upload logits");
    return device;
  }

  kernels::Profile kernel_profile_;
  const Profile& profile_;
  cudaStream_t stream_ = nullptr;
};

}  // namespace

Result<std::unique_ptr<ReplaySource>> MakeCudaReplaySource(std::string_view profile) {
  kernels::Profile kernel_profile;
  if (!kernels::ParseProfile(profile, &kernel_profile)) {
    return InvalidArgument("replay source cuda implements the profiles vllm and hf, not '" + std::string(profile) + "'");
  }
  const Profile* reference_profile = FindProfile(profile);
  if (reference_profile == nullptr) return InvalidArgument("profile '" + std::string(profile) + "' is not defined");
  int devices = 0;
  if (cudaError_t e = cudaGetDeviceCount(&devices); e != cudaSuccess || devices == 0) {
    return Unsupported(std::string("replay source cuda needs a CUDA device: ") +
                       (e != cudaSuccess ? cudaGetErrorString(e) : "none found"));
  }
  auto source = std::make_unique<CudaReplaySource>(kernel_profile, *reference_profile);
  if (Status st = source->Init(); !st.ok()) return st.error();
  return std::unique_ptr<ReplaySource>(std::move(source));
}

}  // namespace samplecheck::harness
