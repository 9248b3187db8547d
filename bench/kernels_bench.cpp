// Benchmarks of samplecheck::kernels::SampleFromLogits (profile vllm; hf costs the same passes) on the shapes of
// docs/performance.md: V in {128256, 151936}, B in {1, 16, 64, 256}, fp32 and bf16, params none / top-k 50 /
// top-p 0.9 / min-p 0.05 / top-k 50 + top-p 0.9. Logits ~ N(0, 3^2) (approximate, Irwin-Hall), distinct rows,
// hot L2 (the same input every iteration), CUDA events around each launch (UseManualTime), median reported with
// --benchmark_repetitions. Counters: GB/s of the one-read floor (B * V * sizeof(dtype)) and ratio_to_floor =
// time / (bytes / device-to-device copy bandwidth measured in this run).
#include <benchmark/benchmark.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "copy_bandwidth.h"
#include "samplecheck/kernels/sampling.h"

namespace {

namespace k = samplecheck::kernels;

constexpr int64_t kMaxRows = 256;
constexpr int64_t kMaxVocabBench = 151936;

struct Inputs {
  float* fp32 = nullptr;
  uint16_t* bf16 = nullptr;
  int32_t* tokens = nullptr;
  double copy_bytes_per_second = 0;  // read + write counted
  bool ok = false;
};

uint16_t ToBf16(float f) {
  uint32_t bits;
  std::memcpy(&bits, &f, 4);
  bits += 0x7fffu + ((bits >> 16) & 1u);
  return static_cast<uint16_t>(bits >> 16);
}

Inputs& GetInputs() {
  static Inputs in = [] {
    Inputs r;
    const size_t n = kMaxRows * kMaxVocabBench;
    std::vector<float> host(n);
    std::vector<uint16_t> host16(n);
    uint64_t s = 0x9E3779B97F4A7C15ull;
    auto next = [&s] {
      s ^= s << 13;
      s ^= s >> 7;
      s ^= s << 17;
      return static_cast<double>(s >> 11) * 0x1p-53;
    };
    for (size_t i = 0; i < n; ++i) {
      const double z = (next() + next() + next() + next() - 2.0) * std::sqrt(3.0);  // ~N(0, 1)
      host[i] = static_cast<float>(3.0 * z);
      host16[i] = ToBf16(host[i]);
    }
    if (cudaMalloc(&r.fp32, n * sizeof(float)) != cudaSuccess) return r;
    if (cudaMalloc(&r.bf16, n * sizeof(uint16_t)) != cudaSuccess) return r;
    if (cudaMalloc(&r.tokens, kMaxRows * sizeof(int32_t)) != cudaSuccess) return r;
    cudaMemcpy(r.fp32, host.data(), n * sizeof(float), cudaMemcpyHostToDevice);
    cudaMemcpy(r.bf16, host16.data(), n * sizeof(uint16_t), cudaMemcpyHostToDevice);
    r.copy_bytes_per_second = samplecheck::bench::CopyBytesPerSecond();  // the read + write floor
    cudaDeviceProp prop{};
    cudaGetDeviceProperties(&prop, 0);
    std::printf("device: %s, %d SMs; device-to-device copy %.2f TB/s (read+write)\n", prop.name,
                prop.multiProcessorCount, r.copy_bytes_per_second / 1e12);
    r.ok = true;
    return r;
  }();
  return in;
}

struct ParamSet {
  const char* name;
  int64_t top_k;
  double top_p;
  double min_p;
};
constexpr ParamSet kParamSets[] = {
    {"none", -1, 1.0, 0.0},
    {"top_k_50", 50, 1.0, 0.0},
    {"top_p_0.9", -1, 0.9, 0.0},
    {"min_p_0.05", -1, 1.0, 0.05},
    {"top_k_50+top_p_0.9", 50, 0.9, 0.0},
};

// Args: vocab, rows, dtype (0 fp32, 1 bf16), param set index.
void BM_SampleFromLogits(benchmark::State& state) {
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess || count == 0) {
    state.SkipWithError("no CUDA device");
    return;
  }
  Inputs& in = GetInputs();
  if (!in.ok) {
    state.SkipWithError("allocation failed");
    return;
  }
  const int64_t vocab = state.range(0), rows = state.range(1);
  const bool bf16 = state.range(2) == 1;
  const ParamSet& ps = kParamSets[state.range(3)];
  k::LogitsBatch lb;
  lb.dtype = bf16 ? k::DType::kBFloat16 : k::DType::kFloat32;
  lb.data = bf16 ? static_cast<const void*>(in.bf16) : static_cast<const void*>(in.fp32);
  lb.vocab = vocab;
  lb.row_stride = vocab;
  lb.batch = rows;
  k::SamplingParams p;
  p.top_k.scalar = ps.top_k;
  p.top_p.scalar = ps.top_p;
  p.min_p.scalar = ps.min_p;
  p.seed.scalar = 1234;
  cudaEvent_t e0, e1;
  cudaEventCreate(&e0);
  cudaEventCreate(&e1);
  for (int i = 0; i < 5; ++i) k::SampleFromLogits(lb, p, k::Profile::kVllm, in.tokens, nullptr, nullptr);
  uint64_t offset = 0;
  std::vector<double> times;
  for (auto _ : state) {
    p.offset.scalar = offset++;
    cudaEventRecord(e0);
    const k::Status st = k::SampleFromLogits(lb, p, k::Profile::kVllm, in.tokens, nullptr, nullptr);
    cudaEventRecord(e1);
    cudaEventSynchronize(e1);
    if (!st.ok()) {
      state.SkipWithError(st.message.c_str());
      break;
    }
    float ms = 0;
    cudaEventElapsedTime(&ms, e0, e1);
    state.SetIterationTime(ms * 1e-3);
    times.push_back(ms * 1e-3);
  }
  cudaEventDestroy(e0);
  cudaEventDestroy(e1);
  const double bytes = static_cast<double>(rows) * vocab * (bf16 ? 2 : 4);
  state.SetBytesProcessed(static_cast<int64_t>(bytes) * state.iterations());
  // ratio_to_floor = median seconds per call / (bytes / device-to-device copy bandwidth of this run), the
  // convention of docs/performance.md's floor table.
  const double floor_s = bytes / in.copy_bytes_per_second;
  std::sort(times.begin(), times.end());
  const double median_s = times.empty() ? 0.0 : times[times.size() / 2];
  state.counters["median_us"] = median_s * 1e6;
  state.counters["floor_us"] = floor_s * 1e6;
  state.counters["ratio_to_floor"] = floor_s > 0 ? median_s / floor_s : 0.0;
  state.SetLabel(std::string(bf16 ? "bf16 " : "fp32 ") + ps.name);
}

void Grid(benchmark::internal::Benchmark* b) {
  for (int64_t vocab : {128256, 151936}) {
    for (int64_t dtype : {0, 1}) {
      for (int64_t rows : {1, 16, 64, 256}) {
        for (int64_t p = 0; p < 5; ++p) b->Args({vocab, rows, dtype, p});
      }
    }
  }
}

BENCHMARK(BM_SampleFromLogits)->Apply(Grid)->UseManualTime()->Iterations(30)->Unit(benchmark::kMicrosecond);

}  // namespace

BENCHMARK_MAIN();
