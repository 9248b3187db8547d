// sampler_compare_bench: samplecheck::kernels against FlashInfer's sampling kernels in one process, on the same
// logits, the same GPU, the same run (docs/performance.md's method). Built only when the user points
// -DSAMPLECHECK_FLASHINFER_DIR at a FlashInfer source tree (its include/ is header-only CUDA); nothing in this
// repository fetches or vendors FlashInfer, and CI does not build this target.
//
// Timed (V = 128256 by default, logits ~ N(0, 3^2) fp32 and their bf16 rounding, hot L2: the same input every
// call, CUDA events around each call, median / p10 / p90 of --iters calls after --warmup):
//   ours        SampleFromLogits, profile vllm, scalar params (a plain call per step)
//   ours-graph  SampleFromLogits with DeviceSamplingParams (per-row arrays in device memory) captured once in a
//               CUDA graph, replayed
//   flashinfer  its OnlineSoftmax + the matching sampling-from-probs kernel (SamplingFromProb, TopKSamplingFromProb,
//               TopPSamplingFromProb, MinPSamplingFromProb, TopKTopPSamplingFromProb), deterministic mode. Its
//               softmax is fp32 only (OnlineSoftmax<bf16> does not compile; its Python API calls logits.float()), so
//               bf16 logits are first widened to fp32 by a plain vectorized kernel, timed as part of its pipeline
//   flashinfer-logits  its logits entry points: SamplingFromLogits (Gumbel, no filter); top-k and top-k + top-p
//               through RadixTopKMaskLogitsMultiCTA + OnlineSoftmax + SamplingFromProb / TopPSamplingFromProb
//   ours-processed / ours-labels  ComputeProcessedDistribution (probs + logprobs) and ComputeLabelLogprobs (one
//               label per row) at large batch, against the read + write floor
// Output: CSV on stdout (kind,impl,dtype,batch,filter,median_us,p10_us,p90_us,floor_us), '#' lines for the
// device and the copy bandwidth measured in this run (1 GiB device-to-device, read + write counted).
//
//   sampler_compare_bench [--vocab 128256] [--iters 100] [--warmup 10] [--batches 1,16,64,256]
//                         [--large-batches 256,512] [--filter i] [--dtypes fp32,bf16] [--ours-only 1]
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <iterator>
#include <random>
#include <string>
#include <type_traits>
#include <vector>

#include <flashinfer/sampling.cuh>
#include <flashinfer/topk.cuh>

#include "copy_bandwidth.h"
#include "event_timing.h"
#include "samplecheck/kernels/sampling.h"

namespace {

namespace k = samplecheck::kernels;
using samplecheck::bench::Stats;

#define CHECK_CUDA(call)                                                                                     \
  do {                                                                                                       \
    const cudaError_t e_ = (call);                                                                           \
    if (e_ != cudaSuccess) {                                                                                 \
      std::fprintf(stderr, "%s:%d %s: %s\n", __FILE__, __LINE__, #call, cudaGetErrorString(e_));             \
      std::exit(1);                                                                                          \
    }                                                                                                        \
  } while (0)

struct Options {
  int64_t vocab = 128256;
  int iters = 100;
  int warmup = 10;
  std::vector<int64_t> batches = {1, 16, 64, 256};
  std::vector<int64_t> large_batches = {256, 512};
  int filter = -1;            // --filter i: only kFilters[i]
  bool flashinfer = true;     // --ours-only: no FlashInfer, no graph (profiling runs)
  std::string dtypes = "fp32,bf16";
};

Stats TimeCalls(cudaStream_t stream, const Options& o, const std::function<void()>& fn) {
  return samplecheck::bench::TimeCalls(stream, o.warmup, o.iters, fn);
}

// fn captured once into a graph, replays timed.
Stats TimeGraph(cudaStream_t stream, const Options& o, const std::function<void()>& fn) {
  fn();  // warm (caches, attributes) outside the capture
  CHECK_CUDA(cudaStreamSynchronize(stream));
  cudaGraph_t graph;
  cudaGraphExec_t exec;
  CHECK_CUDA(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal));
  fn();
  CHECK_CUDA(cudaStreamEndCapture(stream, &graph));
  CHECK_CUDA(cudaGraphInstantiate(&exec, graph, 0));
  const Stats s = TimeCalls(stream, o, [&] { CHECK_CUDA(cudaGraphLaunch(exec, stream)); });
  cudaGraphExecDestroy(exec);
  cudaGraphDestroy(graph);
  return s;
}

struct Filter {
  const char* name;
  int64_t top_k;
  double top_p;
  double min_p;
};
constexpr Filter kFilters[] = {
    {"none", -1, 1.0, 0.0},
    {"top-k 50", 50, 1.0, 0.0},
    {"top-p 0.9", -1, 0.9, 0.0},
    {"min-p 0.05", -1, 1.0, 0.05},
    {"top-k 50 + top-p 0.9", 50, 0.9, 0.0},
};

void Row(const char* kind, const char* impl, const char* dtype, int64_t batch, const char* filter, const Stats& s,
         double floor_us) {
  std::printf("%s,%s,%s,%lld,%s,%.2f,%.2f,%.2f,%.2f\n", kind, impl, dtype, static_cast<long long>(batch), filter,
              s.median, s.p10, s.p90, floor_us);
  std::fflush(stdout);
}

// bf16 -> fp32, 8 elements per thread (what logits.float() costs FlashInfer's Python API).
__global__ void WidenBf16(const __nv_bfloat16* in, float* out, int64_t n) {
  const int64_t i = (static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x) * 8;
  if (i + 8 <= n) {
    const uint4 raw = *reinterpret_cast<const uint4*>(in + i);
    const __nv_bfloat16* e = reinterpret_cast<const __nv_bfloat16*>(&raw);
    float4 lo = make_float4(__bfloat162float(e[0]), __bfloat162float(e[1]), __bfloat162float(e[2]), __bfloat162float(e[3]));
    float4 hi = make_float4(__bfloat162float(e[4]), __bfloat162float(e[5]), __bfloat162float(e[6]), __bfloat162float(e[7]));
    *reinterpret_cast<float4*>(out + i) = lo;
    *reinterpret_cast<float4*>(out + i + 4) = hi;
  } else {
    for (int64_t j = i; j < n; ++j) out[j] = __bfloat162float(in[j]);
  }
}

// FlashInfer's pipelines for one filter (fp32 logits: the source itself, or the widened bf16 source).
template <class T>
struct FlashInferRun {
  const T* source;
  float* logits;  // == source for fp32; the widened copy for bf16
  float* probs;
  float* masked;
  int32_t* out;
  bool* valid;
  void* workspace;
  size_t workspace_bytes;
  flashinfer::sampling::RadixRowState* row_states;
  uint32_t batch;
  uint32_t vocab;
  cudaStream_t stream;
  uint64_t offset = 0;

  void Widen() {
    if constexpr (std::is_same_v<T, __nv_bfloat16>) {
      const int64_t n = static_cast<int64_t>(batch) * vocab;
      const int64_t threads = (n + 7) / 8;
      WidenBf16<<<static_cast<unsigned>((threads + 255) / 256), 256, 0, stream>>>(source, logits, n);
    }
  }
  void Softmax(float* in) {
    CHECK_CUDA(flashinfer::sampling::OnlineSoftmax<float>(in, probs, batch, vocab, nullptr, 1.0f, workspace,
                                                           workspace_bytes, false, stream));
  }
  void ProbsPath(const Filter& f) {
    using namespace flashinfer::sampling;
    Widen();
    Softmax(logits);
    ++offset;
    if (f.top_k > 0 && f.top_p < 1.0) {
      CHECK_CUDA((TopKTopPSamplingFromProb<float, int32_t>(probs, nullptr, nullptr, out, valid, nullptr, batch,
                                                           static_cast<int32_t>(f.top_k), static_cast<float>(f.top_p),
                                                           vocab, true, nullptr, 1234, nullptr, offset, stream)));
    } else if (f.top_k > 0) {
      CHECK_CUDA((TopKSamplingFromProb<float, int32_t>(probs, out, valid, nullptr, nullptr, batch,
                                                       static_cast<uint32_t>(f.top_k), vocab, true, nullptr, 1234,
                                                       nullptr, offset, stream)));
    } else if (f.top_p < 1.0) {
      CHECK_CUDA((TopPSamplingFromProb<float, int32_t>(probs, out, valid, nullptr, nullptr, batch,
                                                       static_cast<float>(f.top_p), vocab, true, nullptr, 1234,
                                                       nullptr, offset, stream)));
    } else if (f.min_p > 0.0) {
      CHECK_CUDA((MinPSamplingFromProb<float, int32_t>(probs, nullptr, out, valid, nullptr, batch,
                                                       static_cast<float>(f.min_p), vocab, true, nullptr, 1234,
                                                       nullptr, offset, stream)));
    } else {
      CHECK_CUDA((SamplingFromProb<float, int32_t>(probs, out, valid, nullptr, batch, vocab, true, nullptr, 1234,
                                                   nullptr, offset, stream)));
    }
  }
  // The logits entry points; false when FlashInfer has none for the filter (the probs path is its logits path).
  bool LogitsPath(const Filter& f) {
    using namespace flashinfer::sampling;
    ++offset;
    if (f.top_k <= 0 && f.top_p >= 1.0 && f.min_p <= 0.0) {
      Widen();
      CHECK_CUDA((SamplingFromLogits<float, int32_t>(logits, out, nullptr, batch, vocab, true, nullptr, 1234, nullptr,
                                                     offset, stream)));
      return true;
    }
    if (f.top_k > 0 && f.min_p <= 0.0) {
      Widen();
      CHECK_CUDA((RadixTopKMaskLogitsMultiCTA<float, int32_t>(logits, masked, nullptr, batch,
                                                              static_cast<uint32_t>(f.top_k), vocab, row_states,
                                                              stream)));
      Softmax(masked);
      if (f.top_p < 1.0) {
        CHECK_CUDA((TopPSamplingFromProb<float, int32_t>(probs, out, valid, nullptr, nullptr, batch,
                                                         static_cast<float>(f.top_p), vocab, true, nullptr, 1234,
                                                         nullptr, offset, stream)));
      } else {
        CHECK_CUDA((SamplingFromProb<float, int32_t>(probs, out, valid, nullptr, batch, vocab, true, nullptr, 1234,
                                                     nullptr, offset, stream)));
      }
      return true;
    }
    return false;
  }
};

template <class T>
k::DType DTypeOf();
template <>
k::DType DTypeOf<float>() {
  return k::DType::kFloat32;
}
template <>
k::DType DTypeOf<__nv_bfloat16>() {
  return k::DType::kBFloat16;
}

template <class T>
void RunDType(const char* dtype, const T* host_logits, const Options& o, double copy_rate, cudaStream_t stream) {
  const int64_t max_batch = std::max(*std::max_element(o.batches.begin(), o.batches.end()),
                                     *std::max_element(o.large_batches.begin(), o.large_batches.end()));
  const size_t n = static_cast<size_t>(max_batch * o.vocab);
  T* logits = nullptr;
  float *widened = nullptr, *probs = nullptr, *masked = nullptr;
  CHECK_CUDA(cudaMalloc(&logits, n * sizeof(T)));
  CHECK_CUDA(cudaMalloc(&probs, n * sizeof(float)));
  CHECK_CUDA(cudaMalloc(&masked, n * sizeof(float)));
  if constexpr (std::is_same_v<T, float>) {
    widened = logits;
  } else {
    CHECK_CUDA(cudaMalloc(&widened, n * sizeof(float)));
  }
  CHECK_CUDA(cudaMemcpy(logits, host_logits, n * sizeof(T), cudaMemcpyHostToDevice));
  int32_t *tokens = nullptr, *labels = nullptr;
  bool* valid = nullptr;
  CHECK_CUDA(cudaMalloc(&tokens, max_batch * sizeof(int32_t)));
  CHECK_CUDA(cudaMalloc(&labels, max_batch * sizeof(int32_t)));
  CHECK_CUDA(cudaMemset(labels, 0, max_batch * sizeof(int32_t)));
  CHECK_CUDA(cudaMalloc(&valid, max_batch * sizeof(bool)));
  const size_t workspace_bytes = size_t{64} << 20;
  void* workspace = nullptr;
  CHECK_CUDA(cudaMalloc(&workspace, workspace_bytes));
  flashinfer::sampling::RadixRowState* row_states = nullptr;
  const size_t row_state_bytes = size_t{4} << 20;
  CHECK_CUDA(cudaMalloc(&row_states, row_state_bytes));
  CHECK_CUDA(cudaMemset(row_states, 0, row_state_bytes));
  // Device-resident per-row parameters for the graph path.
  std::vector<double> temperature(max_batch, 1.0), top_p(max_batch), min_p(max_batch);
  std::vector<int64_t> top_k(max_batch);
  std::vector<uint64_t> seed(max_batch, 1234), offset(max_batch);
  double *d_temperature, *d_top_p, *d_min_p;
  int64_t* d_top_k;
  uint64_t *d_seed, *d_offset;
  CHECK_CUDA(cudaMalloc(&d_temperature, max_batch * sizeof(double)));
  CHECK_CUDA(cudaMalloc(&d_top_p, max_batch * sizeof(double)));
  CHECK_CUDA(cudaMalloc(&d_min_p, max_batch * sizeof(double)));
  CHECK_CUDA(cudaMalloc(&d_top_k, max_batch * sizeof(int64_t)));
  CHECK_CUDA(cudaMalloc(&d_seed, max_batch * sizeof(uint64_t)));
  CHECK_CUDA(cudaMalloc(&d_offset, max_batch * sizeof(uint64_t)));
  CHECK_CUDA(cudaMemcpy(d_temperature, temperature.data(), max_batch * sizeof(double), cudaMemcpyHostToDevice));
  CHECK_CUDA(cudaMemcpy(d_seed, seed.data(), max_batch * sizeof(uint64_t), cudaMemcpyHostToDevice));
  for (int64_t i = 0; i < max_batch; ++i) offset[i] = 7 * i;
  CHECK_CUDA(cudaMemcpy(d_offset, offset.data(), max_batch * sizeof(uint64_t), cudaMemcpyHostToDevice));

  for (int64_t batch : o.batches) {
    const double floor_us = 1e6 * static_cast<double>(batch * o.vocab * sizeof(T)) / copy_rate;
    for (int fi_index = 0; fi_index < static_cast<int>(std::size(kFilters)); ++fi_index) {
      if (o.filter >= 0 && fi_index != o.filter) continue;
      const Filter& f = kFilters[fi_index];
      k::LogitsBatch lb;
      lb.dtype = DTypeOf<T>();
      lb.data = logits;
      lb.vocab = o.vocab;
      lb.batch = batch;
      k::SamplingParams p;
      p.top_k.scalar = f.top_k;
      p.top_p.scalar = f.top_p;
      p.min_p.scalar = f.min_p;
      p.seed.scalar = 1234;
      uint64_t step = 0;
      const Stats ours = TimeCalls(stream, o, [&] {
        p.offset.scalar = step++;
        const k::Status st = k::SampleFromLogits(lb, p, k::Profile::kVllm, tokens, nullptr, stream);
        if (!st.ok()) {
          std::fprintf(stderr, "SampleFromLogits: %s\n", st.message.c_str());
          std::exit(1);
        }
      });
      Row("sample", "ours", dtype, batch, f.name, ours, floor_us);
      if (!o.flashinfer) continue;
      std::fill(top_p.begin(), top_p.end(), f.top_p);
      std::fill(min_p.begin(), min_p.end(), f.min_p);
      std::fill(top_k.begin(), top_k.end(), f.top_k);
      CHECK_CUDA(cudaMemcpy(d_top_p, top_p.data(), max_batch * sizeof(double), cudaMemcpyHostToDevice));
      CHECK_CUDA(cudaMemcpy(d_min_p, min_p.data(), max_batch * sizeof(double), cudaMemcpyHostToDevice));
      CHECK_CUDA(cudaMemcpy(d_top_k, top_k.data(), max_batch * sizeof(int64_t), cudaMemcpyHostToDevice));
      k::DeviceSamplingParams dp;
      dp.temperature = d_temperature;
      dp.top_k = d_top_k;
      dp.top_p = d_top_p;
      dp.min_p = d_min_p;
      dp.seed = d_seed;
      dp.offset = d_offset;
      const Stats graph = TimeGraph(stream, o, [&] {
        const k::Status st = k::SampleFromLogits(lb, dp, k::Profile::kVllm, tokens, nullptr, stream);
        if (!st.ok()) {
          std::fprintf(stderr, "SampleFromLogits(device params): %s\n", st.message.c_str());
          std::exit(1);
        }
      });
      Row("sample", "ours-graph", dtype, batch, f.name, graph, floor_us);
      FlashInferRun<T> fi{logits, widened, probs, masked, tokens, valid, workspace, workspace_bytes, row_states,
                          static_cast<uint32_t>(batch), static_cast<uint32_t>(o.vocab), stream};
      Row("sample", "flashinfer", dtype, batch, f.name, TimeCalls(stream, o, [&] { fi.ProbsPath(f); }), floor_us);
      if (fi.LogitsPath(f)) {
        Row("sample", "flashinfer-logits", dtype, batch, f.name, TimeCalls(stream, o, [&] { fi.LogitsPath(f); }),
            floor_us);
      }
    }
  }
  // RL replay at large batch: processed probs + logprobs (read + 2 writes), one label per row (read).
  for (int64_t batch : o.large_batches) {
    float *out_probs = nullptr, *out_logprobs = nullptr, *label_lp = nullptr;
    CHECK_CUDA(cudaMalloc(&out_probs, batch * o.vocab * sizeof(float)));
    CHECK_CUDA(cudaMalloc(&out_logprobs, batch * o.vocab * sizeof(float)));
    CHECK_CUDA(cudaMalloc(&label_lp, batch * sizeof(float)));
    const double read = static_cast<double>(batch * o.vocab * sizeof(T));
    const double write = 2.0 * static_cast<double>(batch * o.vocab * sizeof(float));
    for (int fi_index = 0; fi_index < static_cast<int>(std::size(kFilters)); ++fi_index) {
      const Filter& f = kFilters[fi_index];
      if (o.filter >= 0 && fi_index != o.filter) continue;
      if (std::strcmp(f.name, "none") != 0 && std::strcmp(f.name, "top-k 50 + top-p 0.9") != 0) continue;
      k::LogitsBatch lb;
      lb.dtype = DTypeOf<T>();
      lb.data = logits;
      lb.vocab = o.vocab;
      lb.batch = batch;
      k::SamplingParams p;
      p.top_k.scalar = f.top_k;
      p.top_p.scalar = f.top_p;
      p.min_p.scalar = f.min_p;
      k::ProcessedOutputs out;
      out.probs = out_probs;
      out.logprobs = out_logprobs;
      const Stats processed = TimeCalls(stream, o, [&] {
        const k::Status st = k::ComputeProcessedDistribution(lb, p, k::Profile::kVllm, out, stream);
        if (!st.ok()) std::exit(1);
      });
      Row("processed", "ours", dtype, batch, f.name, processed, 1e6 * (read + write) / copy_rate);
      k::LabelQuery q;
      q.labels = labels;
      k::LabelOutputs lo;
      lo.logprobs = label_lp;
      const Stats label = TimeCalls(stream, o, [&] {
        const k::Status st = k::ComputeLabelLogprobs(lb, p, k::Profile::kVllm, q, lo, stream);
        if (!st.ok()) std::exit(1);
      });
      Row("labels", "ours", dtype, batch, f.name, label, 1e6 * read / copy_rate);
    }
    cudaFree(out_probs);
    cudaFree(out_logprobs);
    cudaFree(label_lp);
  }
  if (static_cast<void*>(widened) != static_cast<void*>(logits)) cudaFree(widened);
  cudaFree(logits);
  cudaFree(probs);
  cudaFree(masked);
  cudaFree(tokens);
  cudaFree(labels);
  cudaFree(valid);
  cudaFree(workspace);
  cudaFree(row_states);
  cudaFree(d_temperature);
  cudaFree(d_top_p);
  cudaFree(d_min_p);
  cudaFree(d_top_k);
  cudaFree(d_seed);
  cudaFree(d_offset);
}

std::vector<int64_t> ParseList(const char* s) {
  std::vector<int64_t> out;
  for (const char* p = s; *p;) {
    out.push_back(std::strtoll(p, nullptr, 10));
    const char* comma = std::strchr(p, ',');
    if (!comma) break;
    p = comma + 1;
  }
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string a = argv[i];
    if (a == "--vocab") o.vocab = std::strtoll(argv[i + 1], nullptr, 10);
    if (a == "--iters") o.iters = std::atoi(argv[i + 1]);
    if (a == "--warmup") o.warmup = std::atoi(argv[i + 1]);
    if (a == "--batches") o.batches = ParseList(argv[i + 1]);
    if (a == "--large-batches") o.large_batches = ParseList(argv[i + 1]);
    if (a == "--filter") o.filter = std::atoi(argv[i + 1]);
    if (a == "--dtypes") o.dtypes = argv[i + 1];
    if (a == "--ours-only") o.flashinfer = std::string(argv[i + 1]) != "1";
  }
  cudaDeviceProp prop{};
  CHECK_CUDA(cudaGetDeviceProperties(&prop, 0));
  const double copy_rate = samplecheck::bench::CopyBytesPerSecond();
  if (copy_rate <= 0) {
    std::fprintf(stderr, "sampler_compare_bench: could not measure the copy bandwidth (two 1 GiB buffers)\n");
    return 1;
  }
  std::printf("# device: %s, %d SMs\n# copy_tbps: %.3f\n# vocab: %lld\n", prop.name, prop.multiProcessorCount,
              copy_rate / 1e12, static_cast<long long>(o.vocab));
  std::printf("kind,impl,dtype,batch,filter,median_us,p10_us,p90_us,floor_us\n");
  const int64_t max_batch = std::max(*std::max_element(o.batches.begin(), o.batches.end()),
                                     *std::max_element(o.large_batches.begin(), o.large_batches.end()));
  const size_t n = static_cast<size_t>(max_batch * o.vocab);
  std::vector<float> host(n);
  std::mt19937_64 rng(2026);
  std::normal_distribution<float> normal(0.0f, 3.0f);
  for (auto& x : host) x = normal(rng);
  std::vector<__nv_bfloat16> host16(n);
  for (size_t i = 0; i < n; ++i) host16[i] = __float2bfloat16(host[i]);
  cudaStream_t stream;
  CHECK_CUDA(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  if (o.dtypes.find("fp32") != std::string::npos) RunDType<float>("fp32", host.data(), o, copy_rate, stream);
  if (o.dtypes.find("bf16") != std::string::npos) RunDType<__nv_bfloat16>("bf16", host16.data(), o, copy_rate, stream);
  cudaStreamDestroy(stream);
  return 0;
}
