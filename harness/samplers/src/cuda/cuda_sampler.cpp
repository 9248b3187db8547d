// The `cuda` sampler: samplecheck::kernels behind the Sampler interface (see cuda_sampler.h).
#include "samplecheck/samplers/cuda_sampler.h"
#include "samplecheck/samplers/cuda_sampler_launch.h"

#include <cuda_runtime_api.h>

#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "samplecheck/kernels/param_columns.h"
#include "samplecheck/kernels/sampling.h"
#include "samplecheck/reference/params.h"
#include "samplecheck/reference/profile.h"
#include "cuda_status.h"

namespace samplecheck::harness {
namespace {

using cuda_status::CudaFailure;
using cuda_status::FromKernels;

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
  CudaSampler(kernels::Profile kernel_profile, const Profile& profile, std::string name = "",
              CudaSampleLaunch launch = nullptr, CudaCountPath count = CudaCountPath::kLauncher)
      : kernel_profile_(kernel_profile),
        profile_(profile),
        name_(std::move(name)),
        launch_(std::move(launch)),
        count_through_launcher_(launch_ && count == CudaCountPath::kLauncher) {}
  ~CudaSampler() override {
    if (stream_) {
      (void)UseDevice();
      cudaStreamDestroy(stream_);
    }
  }

  // Every call runs on the sampler's device (a worker thread of --devices, or one thread driving several).
  Status UseDevice() const {
    if (device_ >= 0) SC_CUDA(cudaSetDevice(device_));
    return Status::Ok();
  }

  Status Init(int device) {
    device_ = device;
    if (Status st = UseDevice(); !st.ok()) return st;
    SC_CUDA(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
    return Status::Ok();
  }

  std::string Name() const override { return name_.empty() ? "cuda:" + std::string(profile_.name) : name_; }

  Capabilities GetCapabilities() const override {
    Capabilities caps;
    caps.processed_distribution = !launch_;
    caps.count_draws = true;
    caps.deterministic = true;
    caps.gpu = true;
    caps.profile = std::string(profile_.name);
    return caps;
  }

  Status Sample(const RowBatch& batch, std::span<const SamplingParams> params, std::span<int32_t> tokens) override {
    if (Status st = UseDevice(); !st.ok()) return st;
    if (Status st = CheckSampleArgs(batch, params, tokens.size(), profile_); !st.ok()) return st;
    return LaunchRows(batch, params, tokens);
  }

  // The copies of a batch through the kernels' row indirection: each row crosses to the device once per call, not
  // once per copy (a batch of 64 rows of V = 4096 in copies of 4096 rows: 1 MiB instead of 64 MiB per call).
  Status SampleReplicated(const RowBatch& rows, uint64_t replicas, std::span<const SamplingParams> params,
                          std::span<int32_t> tokens) override {
    if (Status st = UseDevice(); !st.ok()) return st;
    const size_t logits_rows = static_cast<size_t>(std::max<int64_t>(rows.rows, 0));
    if (Status st = CheckBatchShape(rows, logits_rows, logits_rows); !st.ok()) return st;
    const uint64_t calls = replicas * static_cast<uint64_t>(rows.rows);
    if (params.size() != calls || tokens.size() != calls) {
      return InvalidArgument(std::to_string(replicas) + " copies of " + std::to_string(rows.rows) + " rows need " +
                             std::to_string(calls) + " params and token slots, not " + std::to_string(params.size()) +
                             " and " + std::to_string(tokens.size()));
    }
    for (size_t r = 0; r < params.size(); ++r) {
      if (auto bad = ValidateParams(params[r], profile_)) {
        return InvalidArgument("row " + std::to_string(r) + ": " + bad->message);
      }
    }
    return LaunchRows(rows, params, tokens);
  }

 private:
  // One kernel call: call row L (of params.size()) samples logits row L mod logits.rows with params[L]. Through the
  // kernels' row indirection, in reverse: kernel batch row j is call row n - 1 - j, and the tokens are put back in
  // order. A correct kernel draws the same tokens as with the identity (batch invariance); one that reads a row's
  // parameters at its logits row instead of its batch row (cuda:params-by-logits-row, FlashInfer's
  // top_p_arr[row_idx]) gets another row's parameters, which every property that mixes parameters in a batch sees.
  Status LaunchRows(const RowBatch& logits, std::span<const SamplingParams> params, std::span<int32_t> tokens) {
    const int64_t n = static_cast<int64_t>(params.size());
    if (n == 0) return Status::Ok();
    if (logits.vocab == 0) {  // like the exact sampler: an empty row cannot be sampled
      for (int32_t& t : tokens) t = kInvalidToken;
      return Status::Ok();
    }
    const int64_t rows = logits.rows;
    const size_t elements = static_cast<size_t>((rows - 1) * logits.row_stride + logits.vocab);
    if (Status st = logits_.Reserve(elements * sizeof(float)); !st.ok()) return st;
    if (Status st = tokens_.Reserve(n * sizeof(int32_t)); !st.ok()) return st;
    if (Status st = indices_.Reserve(n * sizeof(int32_t)); !st.ok()) return st;
    SC_CUDA(cudaMemcpyAsync(logits_.As<float>(), logits.logits, elements * sizeof(float), cudaMemcpyHostToDevice,
                            stream_));
    std::vector<int32_t> reversed(static_cast<size_t>(n));
    std::vector<SamplingParams> reversed_params(static_cast<size_t>(n));
    for (int64_t j = 0; j < n; ++j) {
      reversed[static_cast<size_t>(j)] = static_cast<int32_t>((n - 1 - j) % rows);
      reversed_params[static_cast<size_t>(j)] = params[static_cast<size_t>(n - 1 - j)];
    }
    SC_CUDA(cudaMemcpyAsync(indices_.As<int32_t>(), reversed.data(), n * sizeof(int32_t), cudaMemcpyHostToDevice,
                            stream_));
    const kernels::ParamColumns columns = kernels::ParamColumns::FromRows(reversed_params);
    kernels::LogitsBatch lb;
    lb.dtype = kernels::DType::kFloat32;
    lb.data = logits_.As<float>();
    lb.vocab = logits.vocab;
    lb.row_stride = logits.row_stride;
    lb.logits_rows = rows;
    lb.batch = n;
    lb.row_indices = indices_.As<int32_t>();
    if (Status st = FromKernels(Launch(lb, columns.View(), tokens_.As<int32_t>())); !st.ok()) return st;
    std::vector<int32_t> drawn(static_cast<size_t>(n));
    SC_CUDA(cudaMemcpyAsync(drawn.data(), tokens_.As<int32_t>(), n * sizeof(int32_t), cudaMemcpyDeviceToHost,
                            stream_));
    SC_CUDA(cudaStreamSynchronize(stream_));
    for (int64_t j = 0; j < n; ++j) tokens[static_cast<size_t>(n - 1 - j)] = drawn[static_cast<size_t>(j)];
    return Status::Ok();
  }

 public:
  Result<std::vector<double>> ProcessedDistribution(std::span<const float> row,
                                                    const SamplingParams& params) override {
    if (Status st = UseDevice(); !st.ok()) return st;
    if (launch_) return Unsupported(Name() + " only samples: it exposes no processed distribution");
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
    if (Status st = UseDevice(); !st.ok()) return st;
    if (Status st = CheckCountDrawsArgs(row, params, histogram.size(), profile_); !st.ok()) return st;
    if (row.empty()) {
      if (invalid_draws) *invalid_draws += draws;
      return Status::Ok();
    }
    if (count_through_launcher_) return CountDrawsThroughLauncher(row, params, draws, histogram, invalid_draws);
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
  kernels::Status Launch(const kernels::LogitsBatch& lb, const kernels::SamplingParams& kp, int32_t* tokens) {
    return launch_ ? launch_(lb, kp, kernel_profile_, tokens, nullptr, stream_)
                   : kernels::SampleFromLogits(lb, kp, kernel_profile_, tokens, nullptr, stream_);
  }

  // What Sampler::CountDraws does (draw i of the row with offset params.offset + i, through Sample's kernel): the
  // draws of SampleRepeated, counted on the host.
  Status CountDrawsThroughLauncher(std::span<const float> row, const SamplingParams& params, uint64_t draws,
                                   std::span<uint64_t> histogram, uint64_t* invalid_draws) {
    constexpr uint64_t kChunk = uint64_t{1} << 20;
    std::vector<int32_t> tokens(std::min(kChunk, std::max<uint64_t>(draws, 1)));
    uint64_t invalid = 0;
    for (uint64_t done = 0; done < draws;) {
      const uint64_t n = std::min<uint64_t>(tokens.size(), draws - done);
      SamplingParams at = params;
      at.offset = params.offset + done;
      if (Status st = SampleRepeated(row, at, std::span(tokens).first(n)); !st.ok()) return st;
      AddToHistogram(std::span(tokens).first(n), histogram, &invalid);
      done += n;
    }
    if (invalid_draws) *invalid_draws += invalid;
    return Status::Ok();
  }

 public:
  // The sampling call on one row repeated through the kernel's row indirection (every batch row reads logits row
  // 0), so the row crosses to the device once: batches of 2^16 rows with offsets offset + i.
  Status SampleRepeated(std::span<const float> row, const SamplingParams& params, std::span<int32_t> tokens) override {
    if (Status st = UseDevice(); !st.ok()) return st;
    if (Status st = CheckCountDrawsArgs(row, params, row.size(), profile_); !st.ok()) return st;
    const uint64_t draws = tokens.size();
    if (row.empty()) {
      for (int32_t& t : tokens) t = kInvalidToken;
      return Status::Ok();
    }
    constexpr uint64_t kBatch = 65536;
    const uint64_t rows = std::min<uint64_t>(kBatch, std::max<uint64_t>(draws, 1));
    if (Status st = UploadRow(row); !st.ok()) return st;
    if (Status st = tokens_.Reserve(rows * sizeof(int32_t)); !st.ok()) return st;
    if (Status st = indices_.Reserve(rows * sizeof(int32_t)); !st.ok()) return st;
    SC_CUDA(cudaMemsetAsync(indices_.As<int32_t>(), 0, rows * sizeof(int32_t), stream_));
    std::vector<SamplingParams> batch_params(rows, params);
    const int64_t vocab = static_cast<int64_t>(row.size());
    for (uint64_t done = 0; done < draws;) {
      const uint64_t n = std::min(rows, draws - done);
      for (uint64_t i = 0; i < n; ++i) batch_params[i].offset = params.offset + done + i;
      const kernels::ParamColumns columns = kernels::ParamColumns::FromRows(std::span(batch_params).first(n));
      kernels::LogitsBatch lb;
      lb.dtype = kernels::DType::kFloat32;
      lb.data = logits_.As<float>();
      lb.vocab = vocab;
      lb.logits_rows = 1;
      lb.batch = static_cast<int64_t>(n);
      lb.row_indices = indices_.As<int32_t>();
      if (Status st = FromKernels(Launch(lb, columns.View(), tokens_.As<int32_t>())); !st.ok()) return st;
      SC_CUDA(cudaMemcpyAsync(tokens.data() + done, tokens_.As<int32_t>(), n * sizeof(int32_t),
                              cudaMemcpyDeviceToHost, stream_));
      SC_CUDA(cudaStreamSynchronize(stream_));
      done += n;
    }
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
  std::string name_;         // "" = cuda:<profile>
  CudaSampleLaunch launch_;  // null = kernels::SampleFromLogits (and the CountDraws fast path)
  bool count_through_launcher_;
  cudaStream_t stream_ = nullptr;
  int device_ = -1;
  DeviceBuffer logits_, tokens_, probs_, histogram_, indices_;
};

}  // namespace

namespace {

Result<std::unique_ptr<Sampler>> MakeCudaSamplerOn(int device, std::string_view profile, std::string name,
                                                   CudaSampleLaunch launch, CudaCountPath count) {
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
  if (device >= devices) {
    return InvalidArgument("CUDA device " + std::to_string(device) + " does not exist: this host has " +
                           std::to_string(devices) + " (0 to " + std::to_string(devices - 1) + ")");
  }
  auto sampler = std::make_unique<CudaSampler>(kernel_profile, *reference_profile, std::move(name), std::move(launch), count);
  if (Status st = sampler->Init(device); !st.ok()) return st.error();
  return std::unique_ptr<Sampler>(std::move(sampler));
}

}  // namespace

Result<std::unique_ptr<Sampler>> MakeCudaSampler(std::string_view profile, int device) {
  return MakeCudaSamplerOn(device, profile, "", nullptr, CudaCountPath::kFastPath);
}

Result<std::unique_ptr<Sampler>> MakeCudaSampler(std::string_view profile, std::string name, CudaSampleLaunch launch,
                                                 CudaCountPath count) {
  return MakeCudaSamplerOn(-1, profile, std::move(name), std::move(launch), count);
}

}  // namespace samplecheck::harness
