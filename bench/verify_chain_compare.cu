// verify_chain_compare_bench: samplecheck's CUDA chain verifier (kernels/include/samplecheck/kernels/
// verify_chain.h) against FlashInfer's ChainSpeculativeSampling (include/flashinfer/sampling.cuh) in one process,
// on the same inputs, the same GPU, the same run. Built only when the user points -DSAMPLECHECK_FLASHINFER_DIR at
// a FlashInfer source tree (header-only CUDA); nothing here fetches or vendors FlashInfer.
//
// Inputs (generated on the device, untimed): target logits ~ N(0, 3^2)-like hashes, B x (g + 1) rows of V; draft
// probabilities = softmax of the target logits plus noise (FlashInfer's OnlineSoftmax, once), B x g rows; draft
// tokens uniform (every token has q > 0). Timed with CUDA events around each call, median / p10 / p90 of --iters:
//   probs    ours from target probabilities (ChainTargetForm::kProbabilities) vs FlashInfer's chain kernel, both
//            given the same target and draft probabilities (fp32)
//   logits   ours fused from target logits (fp32, and bf16 for ours: the processed distribution of profile vllm,
//            no filter, then the chain kernel) vs FlashInfer's OnlineSoftmax over the B (g + 1) target rows + its
//            chain kernel (FlashInfer's softmax is fp32 only)
// FlashInfer runs in deterministic mode with scalar seed/offset; ours reads seeds and offsets from device arrays.
// Ours does more than FlashInfer's kernel: q normalized by its row's sum, every value and every whole row it reads
// checked, exact integer CDFs (docs/kernels.md "What the verifier reads"); FlashInfer does none of that.
// Output: CSV (kind,impl,dtype,vocab,batch,g,median_us,p10_us,p90_us) and '#' lines for the device.
//
//   verify_chain_compare_bench [--iters 50] [--warmup 5] [--vocabs 128256,32000] [--batches 1,16,64,256] [--gs 1,4,8]
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include <flashinfer/sampling.cuh>

#include "event_timing.h"
#include "samplecheck/kernels/verify_chain.h"

namespace {

namespace k = samplecheck::kernels;
using samplecheck::bench::Stats;

#define CHECK_CUDA(call)                                                                         \
  do {                                                                                           \
    const cudaError_t e_ = (call);                                                               \
    if (e_ != cudaSuccess) {                                                                     \
      std::fprintf(stderr, "%s:%d %s: %s\n", __FILE__, __LINE__, #call, cudaGetErrorString(e_)); \
      std::exit(1);                                                                              \
    }                                                                                            \
  } while (0)

struct Options {
  int iters = 50;
  int warmup = 5;
  std::vector<int64_t> vocabs = {128256, 32000};
  std::vector<int64_t> batches = {1, 16, 64, 256};
  std::vector<int64_t> gs = {1, 4, 8};
};

std::vector<int64_t> ParseList(const char* s) {
  std::vector<int64_t> out;
  for (const char* p = s; *p;) {
    out.push_back(std::strtoll(p, const_cast<char**>(&p), 10));
    if (*p == ',') ++p;
  }
  return out;
}

Stats TimeCalls(cudaStream_t stream, const Options& o, const std::function<void()>& fn) {
  return samplecheck::bench::TimeCalls(stream, o.warmup, o.iters, fn);
}

void Row(const char* kind, const char* impl, const char* dtype, int64_t vocab, int64_t batch, int64_t g,
         const Stats& s) {
  std::printf("%s,%s,%s,%lld,%lld,%lld,%.2f,%.2f,%.2f\n", kind, impl, dtype, static_cast<long long>(vocab),
              static_cast<long long>(batch), static_cast<long long>(g), s.median, s.p10, s.p90);
  std::fflush(stdout);
}

__device__ uint32_t Hash(uint64_t x) {
  x ^= x >> 33;
  x *= 0xff51afd7ed558ccdull;
  x ^= x >> 33;
  x *= 0xc4ceb9fe1a85ec53ull;
  x ^= x >> 33;
  return static_cast<uint32_t>(x);
}

// Roughly N(0, sigma^2): a sum of four uniforms, centred and scaled.
__global__ void FillLogits(float* out, __nv_bfloat16* out16, int64_t n, uint64_t salt, float sigma) {
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    float s = 0;
    for (int r = 0; r < 4; ++r) s += Hash(salt * 0x9e3779b97f4a7c15ull + i * 4 + r) * 0x1p-32f;
    const float v = (s - 2.0f) * 1.732f * sigma;
    out[i] = v;
    if (out16) out16[i] = __float2bfloat16(v);
  }
}

// Draft logits: the target's rows 0..g-1 of each request plus noise.
__global__ void DraftLogits(const float* target, float* draft, int64_t batch, int64_t g, int64_t vocab) {
  const int64_t n = batch * g * vocab;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int64_t row = i / vocab, t = i % vocab;
    const int64_t b = row / g, j = row % g;
    const float noise = (Hash(0xd1a7ull * n + i) * 0x1p-32f - 0.5f) * 1.0f;
    draft[i] = target[(b * (g + 1) + j) * vocab + t] + noise;
  }
}

__global__ void FillTokens(int32_t* tokens, int64_t n, int64_t vocab) {
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    tokens[i] = static_cast<int32_t>(Hash(0x70cull + i) % vocab);
  }
}

template <class T>
T* Alloc(size_t n) {
  T* p = nullptr;
  CHECK_CUDA(cudaMalloc(&p, std::max<size_t>(n, 1) * sizeof(T)));
  return p;
}

void Run(const Options& o, int64_t vocab, int64_t batch, int64_t g, cudaStream_t stream, void* workspace,
         size_t workspace_bytes) {
  const int64_t trows = batch * (g + 1), drows = batch * g;
  float* target_logits = Alloc<float>(trows * vocab);
  __nv_bfloat16* target_logits16 = Alloc<__nv_bfloat16>(trows * vocab);
  float* target_probs = Alloc<float>(trows * vocab);
  float* fi_probs = Alloc<float>(trows * vocab);
  float* draft_logits = Alloc<float>(drows * vocab);
  float* draft_probs = Alloc<float>(drows * vocab);
  int32_t* tokens = Alloc<int32_t>(drows);
  int32_t* fi_out = Alloc<int32_t>(trows);
  int32_t* fi_accepted = Alloc<int32_t>(batch);
  int32_t* fi_emitted = Alloc<int32_t>(batch);
  int32_t* accepted = Alloc<int32_t>(batch);
  int32_t* emitted = Alloc<int32_t>(batch * k::kChainEmittedStride);
  k::ChainDiag* diag = Alloc<k::ChainDiag>(batch);
  std::vector<uint64_t> seeds(batch), offsets(batch);
  for (int64_t b = 0; b < batch; ++b) {
    seeds[b] = 1234 + b;
    offsets[b] = 0;
  }
  uint64_t* d_seed = Alloc<uint64_t>(batch);
  uint64_t* d_offset = Alloc<uint64_t>(batch);
  CHECK_CUDA(cudaMemcpy(d_seed, seeds.data(), batch * 8, cudaMemcpyHostToDevice));
  CHECK_CUDA(cudaMemcpy(d_offset, offsets.data(), batch * 8, cudaMemcpyHostToDevice));
  FillLogits<<<1024, 256, 0, stream>>>(target_logits, target_logits16, trows * vocab, 17 + batch + g, 3.0f);
  DraftLogits<<<1024, 256, 0, stream>>>(target_logits, draft_logits, batch, g, vocab);
  FillTokens<<<64, 256, 0, stream>>>(tokens, drows, vocab);
  using flashinfer::sampling::OnlineSoftmax;
  CHECK_CUDA(OnlineSoftmax<float>(draft_logits, draft_probs, static_cast<uint32_t>(drows), static_cast<uint32_t>(vocab),
                                  nullptr, 1.0f, workspace, workspace_bytes, false, stream));
  CHECK_CUDA(OnlineSoftmax<float>(target_logits, target_probs, static_cast<uint32_t>(trows),
                                  static_cast<uint32_t>(vocab), nullptr, 1.0f, workspace, workspace_bytes, false,
                                  stream));
  CHECK_CUDA(cudaStreamSynchronize(stream));

  k::ChainBatch c;
  c.batch = batch;
  c.vocab = vocab;
  c.g_scalar = static_cast<int32_t>(g);
  c.draft_form = k::ChainDraftForm::kProbabilities;
  c.draft = draft_probs;
  c.draft_tokens = tokens;
  c.seed = d_seed;
  c.offset = d_offset;
  const k::ChainOutputs out{accepted, emitted, diag};
  auto ours = [&](k::ChainTargetForm form, k::DType dtype, const void* target) {
    c.target_form = form;
    c.target_dtype = dtype;
    c.target = target;
    const k::Status st = k::VerifyChainBatch(c, k::Profile::kVllm, out, stream);
    if (!st.ok()) {
      std::fprintf(stderr, "VerifyChainBatch: %s\n", st.message.c_str());
      std::exit(1);
    }
  };
  auto fi_chain = [&](float* tprobs) {
    CHECK_CUDA((flashinfer::sampling::ChainSpeculativeSampling<float, int32_t>(
        draft_probs, tokens, tprobs, fi_out, fi_accepted, fi_emitted, static_cast<uint32_t>(batch),
        static_cast<uint32_t>(g), static_cast<uint32_t>(vocab), true, nullptr, 1234, nullptr, 0, stream)));
  };
  Row("probs", "ours", "fp32", vocab, batch, g,
      TimeCalls(stream, o, [&] { ours(k::ChainTargetForm::kProbabilities, k::DType::kFloat32, target_probs); }));
  Row("probs", "flashinfer", "fp32", vocab, batch, g, TimeCalls(stream, o, [&] { fi_chain(target_probs); }));
  Row("logits", "ours", "fp32", vocab, batch, g,
      TimeCalls(stream, o, [&] { ours(k::ChainTargetForm::kLogits, k::DType::kFloat32, target_logits); }));
  Row("logits", "ours", "bf16", vocab, batch, g,
      TimeCalls(stream, o, [&] { ours(k::ChainTargetForm::kLogits, k::DType::kBFloat16, target_logits16); }));
  Row("logits", "flashinfer", "fp32", vocab, batch, g, TimeCalls(stream, o, [&] {
        CHECK_CUDA(OnlineSoftmax<float>(target_logits, fi_probs, static_cast<uint32_t>(trows),
                                        static_cast<uint32_t>(vocab), nullptr, 1.0f, workspace, workspace_bytes,
                                        false, stream));
        fi_chain(fi_probs);
      }));
  // Sanity (not timed): our accepted lengths are in range and no request reported an error.
  std::vector<int32_t> acc(batch);
  std::vector<k::ChainDiag> dg(batch);
  CHECK_CUDA(cudaMemcpy(acc.data(), accepted, batch * 4, cudaMemcpyDeviceToHost));
  CHECK_CUDA(cudaMemcpy(dg.data(), diag, batch * sizeof(k::ChainDiag), cudaMemcpyDeviceToHost));
  for (int64_t b = 0; b < batch; ++b) {
    if (dg[b].code != k::kChainOk || acc[b] < 0 || acc[b] > g) {
      std::fprintf(stderr, "request %lld: accepted %d, %s\n", static_cast<long long>(b), acc[b],
                   k::DescribeChainDiag(dg[b], b, vocab).c_str());
      std::exit(1);
    }
  }
  for (void* p : std::initializer_list<void*>{target_logits, target_logits16, target_probs, fi_probs, draft_logits,
                                             draft_probs, tokens, fi_out, fi_accepted, fi_emitted, accepted, emitted,
                                             diag, d_seed, d_offset}) {
    cudaFree(p);
  }
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; i += 2) {
    const std::string a = argv[i];
    if (a.rfind("--benchmark", 0) == 0) {  // scripts/gpu-test --bench passes Google Benchmark's flags: not ours
      --i;
      continue;
    }
    if (i + 1 >= argc) {
      std::fprintf(stderr, "option %s needs a value\n", a.c_str());
      return 2;
    }
    if (a == "--iters") o.iters = std::atoi(argv[i + 1]);
    else if (a == "--warmup") o.warmup = std::atoi(argv[i + 1]);
    else if (a == "--vocabs") o.vocabs = ParseList(argv[i + 1]);
    else if (a == "--batches") o.batches = ParseList(argv[i + 1]);
    else if (a == "--gs") o.gs = ParseList(argv[i + 1]);
    else {
      std::fprintf(stderr, "unknown option %s (allowed: --iters, --warmup, --vocabs, --batches, --gs)\n", a.c_str());
      return 2;
    }
  }
  cudaDeviceProp prop{};
  CHECK_CUDA(cudaGetDeviceProperties(&prop, 0));
  std::printf("# device: %s, %d SMs\n", prop.name, prop.multiProcessorCount);
  std::printf("kind,impl,dtype,vocab,batch,g,median_us,p10_us,p90_us\n");
  cudaStream_t stream;
  CHECK_CUDA(cudaStreamCreate(&stream));
  const size_t workspace_bytes = size_t{128} << 20;
  void* workspace = Alloc<char>(workspace_bytes);
  for (int64_t vocab : o.vocabs) {
    for (int64_t batch : o.batches) {
      for (int64_t g : o.gs) Run(o, vocab, batch, g, stream, workspace, workspace_bytes);
    }
  }
  cudaFree(workspace);
  return 0;
}
