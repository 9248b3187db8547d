// The `cuda` sampler: samplecheck::kernels behind the Sampler interface (see cuda_sampler.h).
#include "samplecheck/harness/cuda_sampler.h"

#include <cuda_runtime_api.h>

#include <string>
#include <vector>

#include "samplecheck/kernels/param_columns.h"
#include "samplecheck/kernels/sampling.h"
#include "samplecheck/reference/params.h"
#include "samplecheck/reference/profile.h"

namespace samplecheck::harness {
namespace {

Error CudaFailure(cudaError_t err, const char* what) {
  return {ErrorCode::kCuda, std::string(what) + ": " + cudaGetErrorName(err) + " (" + cudaGetErrorString(err) + ")"};
}

Status FromKernels(const kernels::Status& st) {
  if (st.ok()) return Status::Ok();
  return Error{st.code == kernels::ErrorCode::kInvalidArgument ? ErrorCode::kInvalidArgument : ErrorCode::kCuda,
               st.message};
}

#define SC_CUDA(call)                                        \
  do {                                                       \
    const cudaError_t sc_err = (call);                       \
    if (sc_err != cudaSuccess) return CudaFailure(sc_err, #call); \
  } while (0)

// A device buffer that only grows.
class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  ~DeviceBuffer() {
    if (ptr_) cudaFree(ptr_);
  }
  Status Reserve(size_t bytes) {
    if (bytes <= size_) return Status::Ok();
    if (ptr_) cudaFree(ptr_);
    ptr_ = nullptr;
    size_ = 0;
    SC_CUDA(cudaMalloc(&ptr_, bytes));
    size_ = bytes;
    return Status::Ok();
  }
  template <class T>
  T* As() const {
    return static_cast<T*>(ptr_);
  }

 private:
  void* ptr_ = nullptr;
  size_t size_ = 0;
};

class CudaSampler final : public Sampler {
 public:
  CudaSampler(kernels::Profile kernel_profile, const Profile& profile)
      : kernel_profile_(kernel_profile), profile_(profile) {}
  ~CudaSampler() override {
    if (stream_) cudaStreamDestroy(stream_);
  }

  Status Init() {
    SC_CUDA(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
    return Status::Ok();
  }

  std::string Name() const override { return "cuda:" + std::string(profile_.name); }

  Capabilities GetCapabilities() const override {
    Capabilities caps;
    caps.processed_distribution = true;
    caps.count_draws = true;
    caps.deterministic = true;
    caps.profile = std::string(profile_.name);
    return caps;
  }

  Status Sample(const RowBatch& batch, std::span<const SamplingParams> params, std::span<int32_t> tokens) override {
    if (Status st = CheckSampleArgs(batch, params, tokens.size(), profile_); !st.ok()) return st;
    if (batch.rows == 0) return Status::Ok();
    if (batch.vocab == 0) {  // like the exact sampler: an empty row cannot be sampled
      for (int32_t& t : tokens) t = kInvalidToken;
      return Status::Ok();
    }
    const int64_t rows = batch.rows;
    const size_t elements = static_cast<size_t>((rows - 1) * batch.row_stride + batch.vocab);
    if (Status st = logits_.Reserve(elements * sizeof(float)); !st.ok()) return st;
    if (Status st = tokens_.Reserve(rows * sizeof(int32_t)); !st.ok()) return st;
    SC_CUDA(cudaMemcpyAsync(logits_.As<float>(), batch.logits, elements * sizeof(float), cudaMemcpyHostToDevice,
                            stream_));
    const kernels::ParamColumns columns = kernels::ParamColumns::FromRows(params.first(rows));
    const kernels::SamplingParams kp = columns.View();
    kernels::LogitsBatch lb;
    lb.dtype = kernels::DType::kFloat32;
    lb.data = logits_.As<float>();
    lb.vocab = batch.vocab;
    lb.row_stride = batch.row_stride;
    lb.batch = rows;
    if (Status st = FromKernels(kernels::SampleFromLogits(lb, kp, kernel_profile_, tokens_.As<int32_t>(), nullptr,
                                                          stream_));
        !st.ok()) {
      return st;
    }
    SC_CUDA(cudaMemcpyAsync(tokens.data(), tokens_.As<int32_t>(), rows * sizeof(int32_t), cudaMemcpyDeviceToHost,
                            stream_));
    SC_CUDA(cudaStreamSynchronize(stream_));
    return Status::Ok();
  }

  Result<std::vector<double>> ProcessedDistribution(std::span<const float> row,
                                                    const SamplingParams& params) override {
    if (auto bad = ValidateParams(params, profile_)) return bad->ToError();
    const int64_t vocab = static_cast<int64_t>(row.size());
    if (vocab == 0) return Error{ErrorCode::kInvalidRow, "empty row (vocab = 0)"};
    if (Status st = UploadRow(row); !st.ok()) return st.error();
    if (Status st = probs_.Reserve(row.size() * sizeof(float) + sizeof(int32_t)); !st.ok()) return st.error();
    kernels::LogitsBatch lb;
    lb.data = logits_.As<float>();
    lb.vocab = vocab;
    lb.batch = 1;
    kernels::ProcessedOutputs out;
    out.probs = probs_.As<float>();
    int32_t* status_dev = reinterpret_cast<int32_t*>(probs_.As<float>() + row.size());
    out.row_status = status_dev;
    if (Status st = FromKernels(
            kernels::ComputeProcessedDistribution(lb, kernels::ScalarParams(params), kernel_profile_, out, stream_));
        !st.ok()) {
      return st.error();
    }
    std::vector<float> probs(row.size());
    int32_t row_status = 0;
    if (cudaError_t e = cudaMemcpyAsync(probs.data(), out.probs, row.size() * sizeof(float), cudaMemcpyDeviceToHost,
                                        stream_);
        e != cudaSuccess) {
      return CudaFailure(e, "cudaMemcpyAsync(probs)");
    }
    if (cudaError_t e = cudaMemcpyAsync(&row_status, status_dev, sizeof(int32_t), cudaMemcpyDeviceToHost, stream_);
        e != cudaSuccess) {
      return CudaFailure(e, "cudaMemcpyAsync(row_status)");
    }
    if (cudaError_t e = cudaStreamSynchronize(stream_); e != cudaSuccess) return CudaFailure(e, "ProcessedDistribution");
    if (row_status == kernels::kRowInvalid) {
      return Error{ErrorCode::kInvalidRow, "the row has a NaN logit or every logit is -inf"};
    }
    return std::vector<double>(probs.begin(), probs.end());
  }

  Status CountDraws(std::span<const float> row, const SamplingParams& params, uint64_t draws,
                    std::span<uint64_t> histogram, uint64_t* invalid_draws) override {
    if (Status st = CheckCountDrawsArgs(row, params, histogram.size(), profile_); !st.ok()) return st;
    if (row.empty()) {
      if (invalid_draws) *invalid_draws += draws;
      return Status::Ok();
    }
    if (Status st = UploadRow(row); !st.ok()) return st;
    if (Status st = histogram_.Reserve(row.size() * sizeof(uint64_t) + sizeof(int32_t)); !st.ok()) return st;
    uint64_t* hist_dev = histogram_.As<uint64_t>();
    int32_t* status_dev = reinterpret_cast<int32_t*>(hist_dev + row.size());
    SC_CUDA(cudaMemsetAsync(hist_dev, 0, row.size() * sizeof(uint64_t), stream_));
    kernels::DeviceRow dr{kernels::DType::kFloat32, logits_.As<float>(), static_cast<int64_t>(row.size())};
    const kernels::SamplingParams kp = kernels::ScalarParams(params);
    if (Status st = FromKernels(
            kernels::CountDraws(dr, kernels::RowParamsAt(kp, 0), kernel_profile_, draws, hist_dev, status_dev, stream_));
        !st.ok()) {
      return st;
    }
    std::vector<uint64_t> counts(row.size());
    int32_t row_status = 0;
    SC_CUDA(cudaMemcpyAsync(counts.data(), hist_dev, row.size() * sizeof(uint64_t), cudaMemcpyDeviceToHost, stream_));
    SC_CUDA(cudaMemcpyAsync(&row_status, status_dev, sizeof(int32_t), cudaMemcpyDeviceToHost, stream_));
    SC_CUDA(cudaStreamSynchronize(stream_));
    if (row_status == kernels::kRowInvalid) {
      if (invalid_draws) *invalid_draws += draws;
      return Status::Ok();
    }
    for (size_t i = 0; i < counts.size(); ++i) histogram[i] += counts[i];
    return Status::Ok();
  }

 private:
  Status UploadRow(std::span<const float> row) {
    if (Status st = logits_.Reserve(row.size() * sizeof(float)); !st.ok()) return st;
    SC_CUDA(cudaMemcpyAsync(logits_.As<float>(), row.data(), row.size() * sizeof(float), cudaMemcpyHostToDevice,
                            stream_));
    return Status::Ok();
  }

  kernels::Profile kernel_profile_;
  const Profile& profile_;
  cudaStream_t stream_ = nullptr;
  DeviceBuffer logits_, tokens_, probs_, histogram_;
};

}  // namespace

Result<std::unique_ptr<Sampler>> MakeCudaSampler(std::string_view profile) {
  kernels::Profile kernel_profile;
  if (!kernels::ParseProfile(profile, &kernel_profile)) {
    return InvalidArgument("the cuda sampler implements the profiles vllm and hf, not '" + std::string(profile) + "'");
  }
  const Profile* reference_profile = FindProfile(profile);
  if (reference_profile == nullptr) {
    return InvalidArgument("profile '" + std::string(profile) + "' is not defined by reference/");
  }
  int devices = 0;
  if (cudaError_t e = cudaGetDeviceCount(&devices); e != cudaSuccess || devices == 0) {
    return Error{ErrorCode::kCuda, std::string("the cuda sampler needs a CUDA device: ") +
                                       (e != cudaSuccess ? cudaGetErrorString(e) : "none found")};
  }
  auto sampler = std::make_unique<CudaSampler>(kernel_profile, *reference_profile);
  if (Status st = sampler->Init(); !st.ok()) return st.error();
  return std::unique_ptr<Sampler>(std::move(sampler));
}

}  // namespace samplecheck::harness
