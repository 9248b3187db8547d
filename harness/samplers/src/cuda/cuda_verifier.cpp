// The `cuda` verifier: samplecheck::kernels' chain verifier behind the Verifier interface (cuda_verifier.h).
#include "samplecheck/samplers/cuda_verifier.h"

#include <cuda_runtime_api.h>

#include <algorithm>
#include <string>
#include <vector>

#include "samplecheck/kernels/sampling.h"
#include "samplecheck/kernels/verify_chain.h"
#include "samplecheck/reference/params.h"
#include "samplecheck/reference/profile.h"
#include "cuda_status.h"

namespace samplecheck::harness {
namespace {

using cuda_status::CudaFailure;
using cuda_status::FromKernels;

// A device allocation freed at scope end.
class Dev {
 public:
  Dev() = default;
  Dev(const Dev&) = delete;
  Dev& operator=(const Dev&) = delete;
  ~Dev() {
    if (ptr_) cudaFree(ptr_);
  }
  Status Alloc(size_t bytes) {
    SC_CUDA(cudaMalloc(&ptr_, std::max<size_t>(bytes, 1)));
    return Status::Ok();
  }
  template <class T>
  Status Put(const std::vector<T>& host, cudaStream_t stream) {
    if (Status st = Alloc(host.size() * sizeof(T)); !st.ok()) return st;
    SC_CUDA(cudaMemcpyAsync(ptr_, host.data(), host.size() * sizeof(T), cudaMemcpyHostToDevice, stream));
    return Status::Ok();
  }
  template <class T>
  T* As() const {
    return static_cast<T*>(ptr_);
  }

 private:
  void* ptr_ = nullptr;
};

kernels::SamplingParams KernelParams(const std::vector<double>& t, const std::vector<int64_t>& k,
                                     const std::vector<double>& tp, const std::vector<double>& mp) {
  kernels::SamplingParams p;
  p.temperature.values = t.data();
  p.top_k.values = k.data();
  p.top_p.values = tp.data();
  p.min_p.values = mp.data();
  return p;
}

kernels::ChainDraftForm FormOf(DraftForm form) {
  switch (form) {
    case DraftForm::kProbabilities: return kernels::ChainDraftForm::kProbabilities;
    case DraftForm::kLogits: return kernels::ChainDraftForm::kLogits;
    case DraftForm::kOneHot: return kernels::ChainDraftForm::kOneHot;
  }
  return kernels::ChainDraftForm::kProbabilities;
}

// The packed host inputs of requests [begin, end) of one group.
struct Packed {
  std::vector<float> target, draft;
  std::vector<int32_t> g, tokens;
  std::vector<uint64_t> seed, offset;
  std::vector<double> scripted;
  std::vector<double> t, tp, mp, dt, dtp, dmp;
  std::vector<int64_t> k, dk;
};

class CudaVerifier final : public Verifier {
 public:
  CudaVerifier(kernels::Profile kernel_profile, const Profile& profile)
      : kernel_profile_(kernel_profile), profile_(profile) {}
  ~CudaVerifier() override {
    if (stream_) {
      cudaSetDevice(device_);
      cudaStreamDestroy(stream_);
    }
  }

  Status Init(int device) {
    if (device < 0) SC_CUDA(cudaGetDevice(&device));
    device_ = device;
    SC_CUDA(cudaSetDevice(device_));
    SC_CUDA(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
    return Status::Ok();
  }

  std::string Name() const override { return "cuda:" + std::string(profile_.name); }

  VerifierCapabilities GetCapabilities() const override {
    VerifierCapabilities caps;
    caps.deterministic = true;
    caps.scripted_uniforms = true;
    caps.draft_logits = true;
    caps.parallel_instances = false;
    caps.profile = std::string(profile_.name);
    return caps;
  }

  Status Verify(std::span<const VerifyRequest> requests, std::span<VerifyResult> results) override {
    if (Status st = CheckVerifyRequests(requests, results.size()); !st.ok()) return st;
    for (size_t r = 0; r < requests.size(); ++r) {
      if (Status st = CheckParams(requests[r]); !st.ok()) return st.error().WithContext("request " + std::to_string(r));
    }
    SC_CUDA(cudaSetDevice(device_));
    size_t begin = 0;
    while (begin < requests.size()) {
      size_t end = begin + 1;
      const VerifyRequest& a = requests[begin];
      while (end < requests.size() && requests[end].vocab == a.vocab && requests[end].draft_form == a.draft_form &&
             requests[end].uniforms.empty() == a.uniforms.empty()) {
        ++end;
      }
      if (Status st = VerifyGroup(requests, begin, end, results); !st.ok()) return st;
      begin = end;
    }
    return Status::Ok();
  }

  Status VerifyRepeated(const VerifyRequest& request, std::span<const int32_t> draft_tokens,
                        std::span<VerifyResult> results) override {
    const size_t g = static_cast<size_t>(std::max(request.g, 0));
    if (draft_tokens.size() != results.size() * g) return Verifier::VerifyRepeated(request, draft_tokens, results);
    if (results.empty()) return Status::Ok();
    VerifyRequest first = request;
    first.draft_tokens = draft_tokens.data();
    if (Status st = CheckVerifyRequests({&first, 1}, 1); !st.ok()) return st;
    if (Status st = CheckParams(request); !st.ok()) return st;
    for (size_t i = 0; i < draft_tokens.size(); ++i) {
      if (draft_tokens[i] < 0 || draft_tokens[i] >= request.vocab) {
        return InvalidArgument("trial " + std::to_string(i / std::max<size_t>(g, 1)) + ": draft token " +
                               std::to_string(draft_tokens[i]) + " is outside [0, " + std::to_string(request.vocab) +
                               ")");
      }
    }
    SC_CUDA(cudaSetDevice(device_));
    Packed h;
    Pack(request, h, /*with_tokens=*/false);  // the trials' tokens travel apart (request.draft_tokens may be unset)
    Dev target, draft, seed, offset, scripted;
    if (Status st = target.Put(h.target, stream_); !st.ok()) return st;
    if (!h.draft.empty()) {
      if (Status st = draft.Put(h.draft, stream_); !st.ok()) return st;
    }
    if (Status st = seed.Put(h.seed, stream_); !st.ok()) return st;
    if (!h.scripted.empty()) {
      if (Status st = scripted.Put(h.scripted, stream_); !st.ok()) return st;
    }
    kernels::ChainBatch c = Batch(request, h, target, draft, seed, offset, scripted, 1);
    constexpr size_t kChunk = size_t{1} << 20;
    const size_t chunk = std::min(kChunk, results.size());
    Dev tokens, accepted, emitted, diag, off;
    if (Status st = tokens.Alloc(chunk * std::max<size_t>(g, 1) * sizeof(int32_t)); !st.ok()) return st;
    if (Status st = accepted.Alloc(chunk * sizeof(int32_t)); !st.ok()) return st;
    if (Status st = emitted.Alloc(chunk * (g + 1) * sizeof(int32_t)); !st.ok()) return st;
    if (Status st = diag.Alloc(chunk * sizeof(kernels::ChainDiag)); !st.ok()) return st;
    if (Status st = off.Alloc(sizeof(uint64_t)); !st.ok()) return st;
    std::vector<int32_t> acc_h(chunk), emit_h(chunk * (g + 1));
    std::vector<kernels::ChainDiag> diag_h(chunk);
    for (size_t begin = 0; begin < results.size(); begin += kChunk) {
      const size_t n = std::min(kChunk, results.size() - begin);
      const uint64_t base = request.params.offset + begin * (g + 1);
      SC_CUDA(cudaMemcpyAsync(off.As<uint64_t>(), &base, sizeof(base), cudaMemcpyHostToDevice, stream_));
      if (g > 0) {
        SC_CUDA(cudaMemcpyAsync(tokens.As<int32_t>(), draft_tokens.data() + begin * g, n * g * sizeof(int32_t),
                                cudaMemcpyHostToDevice, stream_));
      }
      c.offset = off.As<uint64_t>();
      kernels::ChainTrialOutputs o{accepted.As<int32_t>(), emitted.As<int32_t>(), diag.As<kernels::ChainDiag>()};
      if (Status st = FromKernels(kernels::VerifyChainRepeated(c, tokens.As<int32_t>(), static_cast<int64_t>(n),
                                                               kernel_profile_, o, stream_));
          !st.ok()) {
        return st;
      }
      SC_CUDA(cudaMemcpyAsync(acc_h.data(), accepted.As<int32_t>(), n * sizeof(int32_t), cudaMemcpyDeviceToHost, stream_));
      SC_CUDA(cudaMemcpyAsync(emit_h.data(), emitted.As<int32_t>(), n * (g + 1) * sizeof(int32_t),
                              cudaMemcpyDeviceToHost, stream_));
      SC_CUDA(cudaMemcpyAsync(diag_h.data(), diag.As<kernels::ChainDiag>(), n * sizeof(kernels::ChainDiag),
                              cudaMemcpyDeviceToHost, stream_));
      SC_CUDA(cudaStreamSynchronize(stream_));
      for (size_t i = 0; i < n; ++i) {
        if (Status st = Convert(diag_h[i], acc_h[i], &emit_h[i * (g + 1)], request.vocab, results[begin + i]); !st.ok()) {
          return st.error().WithContext("trial " + std::to_string(begin + i));
        }
      }
    }
    return Status::Ok();
  }

 private:
  // The reference's parameter checks (same messages as the exact verifier).
  Status CheckParams(const VerifyRequest& q) const {
    if (auto e = ValidateParams(q.params, profile_)) return e->ToError().WithContext("target row 0");
    if (q.draft_form == DraftForm::kLogits && q.g > 0) {
      if (auto e = ValidateParams(q.draft_params, profile_)) return e->ToError().WithContext("draft row 0");
    }
    return Status::Ok();
  }

  void Pack(const VerifyRequest& q, Packed& h, bool with_tokens = true) const {
    const size_t v = static_cast<size_t>(q.vocab);
    h.target.insert(h.target.end(), q.target, q.target + (q.g + 1) * v);
    if (q.draft_form != DraftForm::kOneHot) h.draft.insert(h.draft.end(), q.draft, q.draft + q.g * v);
    h.g.push_back(q.g);
    if (with_tokens) h.tokens.insert(h.tokens.end(), q.draft_tokens, q.draft_tokens + q.g);
    h.seed.push_back(q.params.seed);
    h.offset.push_back(q.params.offset);
    if (!q.uniforms.empty()) {
      const size_t at = h.scripted.size();
      h.scripted.resize(at + kernels::kChainScriptedStride, 0.0);
      std::copy(q.uniforms.begin(), q.uniforms.end(), h.scripted.begin() + static_cast<ptrdiff_t>(at));
    }
    h.t.push_back(q.params.temperature);
    h.k.push_back(q.params.top_k);
    h.tp.push_back(q.params.top_p);
    h.mp.push_back(q.params.min_p);
    h.dt.push_back(q.draft_params.temperature);
    h.dk.push_back(q.draft_params.top_k);
    h.dtp.push_back(q.draft_params.top_p);
    h.dmp.push_back(q.draft_params.min_p);
  }

  kernels::ChainBatch Batch(const VerifyRequest& a, const Packed& h, const Dev& target, const Dev& draft,
                            const Dev& seed, const Dev& offset, const Dev& scripted, int64_t batch) const {
    kernels::ChainBatch c;
    c.batch = batch;
    c.vocab = a.vocab;
    c.g = h.g.data();
    c.target_form = kernels::ChainTargetForm::kLogits;
    c.target_dtype = kernels::DType::kFloat32;
    c.target = target.As<float>();
    c.target_params = KernelParams(h.t, h.k, h.tp, h.mp);
    c.draft_form = FormOf(a.draft_form);
    c.draft_dtype = kernels::DType::kFloat32;
    c.draft = h.draft.empty() ? nullptr : draft.As<float>();
    if (a.draft_form == DraftForm::kLogits) c.draft_params = KernelParams(h.dt, h.dk, h.dtp, h.dmp);
    if (c.draft == nullptr && a.draft_form != DraftForm::kOneHot) c.draft = target.As<float>();  // g = 0: unread
    c.seed = seed.As<uint64_t>();
    c.offset = offset.As<uint64_t>();
    c.scripted = h.scripted.empty() ? nullptr : scripted.As<double>();
    return c;
  }

  // A kernel outcome as the exact verifier reports it.
  static Status Convert(const kernels::ChainDiag& d, int32_t accepted, const int32_t* emitted, int64_t vocab,
                        VerifyResult& result) {
    result.emitted.fill(kernels::kInvalidToken);
    if (d.code == kernels::kChainTargetRowInvalid && d.token < 0 && d.value == 0.0) {
      result.accepted = 0;  // a target row that cannot be sampled: no tokens (the exact verifier's answer)
      return Status::Ok();
    }
    if (d.code != kernels::kChainOk) {
      std::string message = kernels::DescribeChainDiag(d, 0, vocab);
      message = message.substr(message.find(": ") + 2);
      return InvalidArgument(message);
    }
    if (accepted < 0 || accepted > kMaxSpecDraft) {
      return Error{ErrorCode::kCuda, "the cuda verifier returned accepted = " + std::to_string(accepted)};
    }
    result.accepted = accepted;
    std::copy(emitted, emitted + accepted + 1, result.emitted.begin());
    return Status::Ok();
  }

  Status VerifyGroup(std::span<const VerifyRequest> requests, size_t begin, size_t end,
                     std::span<VerifyResult> results) {
    Packed h;
    for (size_t r = begin; r < end; ++r) Pack(requests[r], h);
    const int64_t n = static_cast<int64_t>(end - begin);
    Dev target, draft, seed, offset, scripted, tokens, accepted, emitted, diag;
    if (Status st = target.Put(h.target, stream_); !st.ok()) return st;
    if (!h.draft.empty()) {
      if (Status st = draft.Put(h.draft, stream_); !st.ok()) return st;
    }
    if (Status st = seed.Put(h.seed, stream_); !st.ok()) return st;
    if (Status st = offset.Put(h.offset, stream_); !st.ok()) return st;
    if (!h.scripted.empty()) {
      if (Status st = scripted.Put(h.scripted, stream_); !st.ok()) return st;
    }
    if (Status st = tokens.Put(h.tokens, stream_); !st.ok()) return st;
    if (Status st = accepted.Alloc(static_cast<size_t>(n) * sizeof(int32_t)); !st.ok()) return st;
    if (Status st = emitted.Alloc(static_cast<size_t>(n) * kernels::kChainEmittedStride * sizeof(int32_t)); !st.ok()) {
      return st;
    }
    if (Status st = diag.Alloc(static_cast<size_t>(n) * sizeof(kernels::ChainDiag)); !st.ok()) return st;
    kernels::ChainBatch c = Batch(requests[begin], h, target, draft, seed, offset, scripted, n);
    c.draft_tokens = tokens.As<int32_t>();
    kernels::ChainOutputs o{accepted.As<int32_t>(), emitted.As<int32_t>(), diag.As<kernels::ChainDiag>()};
    if (Status st = FromKernels(kernels::VerifyChainBatch(c, kernel_profile_, o, stream_)); !st.ok()) return st;
    std::vector<int32_t> acc_h(static_cast<size_t>(n)), emit_h(static_cast<size_t>(n) * kernels::kChainEmittedStride);
    std::vector<kernels::ChainDiag> diag_h(static_cast<size_t>(n));
    SC_CUDA(cudaMemcpyAsync(acc_h.data(), accepted.As<int32_t>(), acc_h.size() * sizeof(int32_t),
                            cudaMemcpyDeviceToHost, stream_));
    SC_CUDA(cudaMemcpyAsync(emit_h.data(), emitted.As<int32_t>(), emit_h.size() * sizeof(int32_t),
                            cudaMemcpyDeviceToHost, stream_));
    SC_CUDA(cudaMemcpyAsync(diag_h.data(), diag.As<kernels::ChainDiag>(), diag_h.size() * sizeof(kernels::ChainDiag),
                            cudaMemcpyDeviceToHost, stream_));
    SC_CUDA(cudaStreamSynchronize(stream_));
    for (int64_t i = 0; i < n; ++i) {
      const size_t r = begin + static_cast<size_t>(i);
      if (Status st = Convert(diag_h[i], acc_h[i], &emit_h[i * kernels::kChainEmittedStride], requests[r].vocab,
                              results[r]);
          !st.ok()) {
        return st.error().WithContext("request " + std::to_string(r));
      }
    }
    return Status::Ok();
  }

  kernels::Profile kernel_profile_;
  const Profile& profile_;
  cudaStream_t stream_ = nullptr;
  int device_ = 0;
};

}  // namespace

Result<std::unique_ptr<Verifier>> MakeCudaVerifier(std::string_view profile, int device) {
  kernels::Profile kernel_profile;
  if (!kernels::ParseProfile(profile, &kernel_profile)) {
    return InvalidArgument("the cuda verifier implements the profiles vllm and hf, not '" + std::string(profile) + "'");
  }
  const Profile* reference_profile = FindProfile(profile);
  if (reference_profile == nullptr) {
    return InvalidArgument("profile '" + std::string(profile) + "' is not defined by reference/");
  }
  int devices = 0;
  if (cudaError_t e = cudaGetDeviceCount(&devices); e != cudaSuccess || devices == 0) {
    return Error{ErrorCode::kCuda, std::string("the cuda verifier needs a CUDA device: ") +
                                       (e != cudaSuccess ? cudaGetErrorString(e) : "none found")};
  }
  if (device >= devices) {
    return InvalidArgument("CUDA device " + std::to_string(device) + " does not exist: this host has " +
                           std::to_string(devices));
  }
  auto verifier = std::make_unique<CudaVerifier>(kernel_profile, *reference_profile);
  if (Status st = verifier->Init(device); !st.ok()) return st.error();
  return std::unique_ptr<Verifier>(std::move(verifier));
}

}  // namespace samplecheck::harness
