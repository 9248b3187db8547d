// The FlashInfer adapter: FlashInfer's OWN sampling kernels (include/flashinfer/sampling.cuh, topk.cuh of a
// user-supplied FlashInfer source tree, -DSAMPLECHECK_FLASHINFER_DIR) behind the samplecheck plugin ABI
// (docs/plugin-abi.md). Nothing of FlashInfer is copied here: this file includes its headers and calls its host
// launchers; README.md beside it says what is real, what the adapter decides, and how the seeds map.
//
// Per launch (one batch of rows, every row with its own temperature / top_k / top_p / min_p), the kernels are
// composed as flashinfer/sampling.py composes them for the filters a row sets (read at commit fb28d72, 2026-08):
//   no filter            OnlineSoftmax(T) -> SamplingFromProb                     (softmax, sampling_from_probs)
//   top-k only           OnlineSoftmax(T) -> TopKSamplingFromProb                 (top_k_sampling_from_probs)
//   top-p only           OnlineSoftmax(T) -> TopPSamplingFromProb                 (top_p_sampling_from_probs)
//   min-p only           OnlineSoftmax(T) -> MinPSamplingFromProb                 (min_p_sampling_from_probs)
//   top-k and top-p, order=joint:
//                        OnlineSoftmax(T) -> TopKTopPSamplingFromProb             (top_k_top_p_sampling_from_logits,
//                                                                                  filter_apply_order="joint")
//   top-k and top-p, order=top_k_first:
//                        RadixTopKMaskLogitsMultiCTA -> OnlineSoftmax(T) -> TopPSamplingFromProb
//                                                                                 (top_k_mask_logits, softmax,
//                                                                                  top_p_sampling_from_probs)
//   min-p with top-k or top-p: FlashInfer has no composition; engines apply min-p first themselves (vLLM's min-p
//                        logits processor, TRT-LLM's min_p_renorm), so the adapter masks the logits whose
//                        probability is below min_p * max p (its own small kernel, MinPMaskLogits below: a
//                        re-implementation of that engine step, not FlashInfer) and runs the row above on them.
// Substitutions, each documented in README.md: FlashInfer's Python calls torch.softmax(logits / T) where this
// adapter calls FlashInfer's own fused softmax with temperature (OnlineSoftmax, flashinfer.sampling.softmax);
// top_k_first masks the raw logits (masking is invariant under division by T > 0) before the softmax at T. The
// radix fast path of top_k_first (a Python int 0 < k <= 256 and vocab >= 65536) is not taken: vLLM passes top_k as
// a per-row tensor, which never takes it, and the profiles do not model it (docs/semantics.md).
// deterministic = true everywhere (vLLM's and SGLang's call sites).
//
// Seeds and draws. FlashInfer's sampling kernels take one Philox (seed, offset) per launch, use the output index as
// the Philox subsequence (curand_init(seed, blockIdx.x, offset)) and map each output to a row of probabilities
// through `indices` (several outputs may share one row: how sampling.py documents drawing n samples of a prompt).
// The adapter processes each distinct row once (its logits, the masks its filters need, FlashInfer's OnlineSoftmax
// on that row alone, batch size 1, so its probabilities do not depend on the rows beside it; kept in a device cache
// of processed rows) and draws through indices. The draw of a request (seed s, offset g) is
//   window w = g / 2^13, output l = g % 2^13:  output l of a sampling launch with Philox key
//                                              SplitMix64(SplitMix64(s) + w), FlashInfer offset 0, indices[l] = the
//                                              request's processed row.
// An output's token depends on its index, the key and its row only (not on the batch size), so draw i of
// count_draws (offset g + i) and sample at offset g + i are the same token, and a row's token does not depend on
// which other rows share its call. Distinct (s, w) give unrelated Philox keys; each output reads at most a few dozen
// uniforms of its subsequence from offset 0.
//
// Config (comma-separated): order=joint|top_k_first (default top_k_first, FlashInfer's default
// filter_apply_order), device=<n> (CUDA device, default 0). The claimed profile is flashinfer-joint or
// flashinfer-topk-first accordingly.
//
// Parameters: temperature must be finite and > 0 (FlashInfer has no greedy path: T = 0 makes its softmax uniform or
// NaN); top_k -1 disables, 0 and < -1 are invalid (k = 0 never accepts a pivot), k >= V is passed to FlashInfer as
// V (a no-op in both); top_p in (0, 1] (1 disables; 0 never accepts a pivot); min_p in [0, 1] (0 disables). A
// violation is SAMPLECHECK_PLUGIN_INVALID_ARGUMENT naming the row, the value and what is allowed. A row with a NaN
// logit or no logit above -inf is not sent to FlashInfer (token -1, the ABI's unsamplable row); FlashInfer's
// valid = false (its fp32 fallback found nothing admissible) is reported as token -1 too.
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <limits>
#include <map>
#include <new>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include <flashinfer/sampling.cuh>
#include <flashinfer/topk.cuh>

#include "samplecheck/samplers/plugin_abi.h"

namespace {

// Outputs (draws) per Philox key, one window: enough blocks to fill the GPU in one launch, few enough that a
// sample() launch for one row at output g mod kLanes wastes little (a launch draws outputs 0 .. its largest).
constexpr uint64_t kLanes = uint64_t{1} << 13;
constexpr uint64_t kCacheElements = uint64_t{1} << 26;   // processed rows kept on the device: 256 MiB of fp32
constexpr uint64_t kMaxCachedRows = 4096;
static_assert(kMaxCachedRows <= kLanes, "the per-output arrays are also read at the cache slot");
constexpr size_t kSoftmaxWorkspaceBytes = size_t{64} << 20;
constexpr size_t kRowStateBytes = size_t{4} << 20;

void Write(char* err, size_t err_len, const std::string& message) {
  if (err == nullptr || err_len == 0) return;
  const size_t n = std::min(message.size(), err_len - 1);
  std::memcpy(err, message.data(), n);
  err[n] = '\0';
}

uint64_t SplitMix64(uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

uint64_t PhiloxKey(uint64_t seed, uint64_t window) { return SplitMix64(SplitMix64(seed) + window); }

enum class Order { kJoint, kTopKFirst };

// Which kernels a row runs (a function of its own parameters only).
struct Kind {
  bool min_p_mask = false;  // min-p combined with top-k or top-p: the adapter's mask, then the rest
  bool top_k = false;
  bool top_p = false;
  bool min_p_only = false;  // FlashInfer's MinPSamplingFromProb
  int Code() const { return (min_p_mask ? 1 : 0) | (top_k ? 2 : 0) | (top_p ? 4 : 0) | (min_p_only ? 8 : 0); }
};

// One row's validated parameters in FlashInfer's types.
struct RowParams {
  Kind kind;
  float temperature = 1.0f;
  int32_t top_k = 0;  // the k FlashInfer gets (V when disabled or >= V)
  float top_p = 1.0f;
  float min_p = 0.0f;
};

// ---- the adapter's own kernels (no FlashInfer code): min-p mask, fills, counting ----

// One row: x_i stays iff exp((x_i - max) / T) >= min_p (p_i >= min_p * p_max), else -inf. Re-implements the
// engines' min-p step that runs before FlashInfer's top-k / top-p (vLLM's min-p logits processor); not FlashInfer
// code.
__global__ void MinPMaskLogits(const float* row, float* out, uint32_t vocab, float t, float mp) {
  __shared__ float partial[32];
  float m = -INFINITY;
  for (uint32_t i = threadIdx.x; i < vocab; i += blockDim.x) m = fmaxf(m, row[i]);
  for (int o = 16; o > 0; o >>= 1) m = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, o));
  if ((threadIdx.x & 31) == 0) partial[threadIdx.x >> 5] = m;
  __syncthreads();
  if (threadIdx.x < 32) {
    float v = threadIdx.x < (blockDim.x + 31) / 32 ? partial[threadIdx.x] : -INFINITY;
    for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
    if (threadIdx.x == 0) partial[0] = v;
  }
  __syncthreads();
  m = partial[0];
  for (uint32_t i = threadIdx.x; i < vocab; i += blockDim.x) {
    const float x = row[i];
    out[i] = expf((x - m) / t) >= mp ? x : -INFINITY;
  }
}

template <typename T>
__global__ void Fill(T* a, uint32_t n, T value) {
  for (uint32_t i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) a[i] = value;
}

// Counts the tokens of outputs [lo, hi) into histogram; invalid ones (valid = false, out of range) into *invalid.
__global__ void CountLanes(const int32_t* tokens, const bool* valid, uint32_t lo, uint32_t hi, uint32_t vocab,
                           unsigned long long* histogram, unsigned long long* invalid) {
  const uint32_t l = lo + blockIdx.x * blockDim.x + threadIdx.x;
  if (l >= hi) return;
  const int32_t t = tokens[l];
  if (valid[l] && t >= 0 && static_cast<uint32_t>(t) < vocab) {
    atomicAdd(histogram + t, 1ull);
  } else {
    atomicAdd(invalid, 1ull);
  }
}

#define ADAPTER_CUDA(call)                                                                                         \
  do {                                                                                                             \
    const cudaError_t e_ = (call);                                                                                 \
    if (e_ != cudaSuccess) {                                                                                       \
      error = std::string("FlashInfer adapter: ") + #call + " failed: " + cudaGetErrorString(e_);                 \
      return false;                                                                                                \
    }                                                                                                              \
  } while (0)

// A 64-bit hash of a row's bits (one multiply-mix per value): the key of the processed-row cache (a hit is confirmed
// byte for byte, so a collision costs a recomputation, never a wrong row).
uint64_t HashRow(const float* row, uint32_t vocab) {
  uint64_t h = 0xcbf29ce484222325ull ^ vocab;
  for (uint32_t i = 0; i < vocab; ++i) {
    uint32_t bits;
    std::memcpy(&bits, row + i, 4);
    h = (h ^ bits) * 0x9E3779B97F4A7C15ull;
    h ^= h >> 29;
  }
  return h;
}

class Adapter {
 public:
  Adapter(Order order, int device) : order_(order), device_(device) {}
  ~Adapter() { Free(); }

  const char* Name() const { return order_ == Order::kJoint ? "flashinfer-joint" : "flashinfer-topk-first"; }

  // Validates one row's parameters; false with a message naming the value and what is allowed.
  bool Validate(const samplecheck_plugin_params& p, int64_t row, int64_t vocab, RowParams* out,
                std::string& error) const {
    const std::string where = "FlashInfer adapter: row " + std::to_string(row) + ": ";
    if (!std::isfinite(p.temperature) || !(p.temperature > 0.0)) {
      error = where + "temperature " + std::to_string(p.temperature) +
              " is not allowed: FlashInfer needs a finite temperature > 0 (it has no greedy path; its softmax at "
              "T = 0 is uniform or NaN)";
      return false;
    }
    if (p.top_k == 0 || p.top_k < -1) {
      error = where + "top_k " + std::to_string(p.top_k) +
              " is not allowed: -1 (disabled) or k >= 1 (FlashInfer's k = 0 never accepts a pivot)";
      return false;
    }
    if (!(p.top_p > 0.0 && p.top_p <= 1.0)) {
      error = where + "top_p " + std::to_string(p.top_p) +
              " is not allowed: (0, 1], 1 disables (FlashInfer's top_p = 0 never accepts a pivot)";
      return false;
    }
    if (!(p.min_p >= 0.0 && p.min_p <= 1.0)) {
      error = where + "min_p " + std::to_string(p.min_p) + " is not allowed: [0, 1], 0 disables";
      return false;
    }
    RowParams r;
    r.temperature = static_cast<float>(p.temperature);
    if (!(r.temperature > 0.0f) || !std::isfinite(r.temperature)) {
      error = where + "temperature " + std::to_string(p.temperature) +
              " is not allowed: it must be a positive finite fp32 value (FlashInfer's temperature is fp32)";
      return false;
    }
    const bool top_k = p.top_k >= 1;
    r.top_k = static_cast<int32_t>(top_k ? std::min<int64_t>(p.top_k, vocab) : vocab);
    const bool top_p = p.top_p < 1.0;
    r.top_p = static_cast<float>(p.top_p);
    const bool min_p = p.min_p > 0.0;
    r.min_p = static_cast<float>(p.min_p);
    r.kind.top_k = top_k;
    r.kind.top_p = top_p;
    r.kind.min_p_mask = min_p && (top_k || top_p);
    r.kind.min_p_only = min_p && !top_k && !top_p;
    *out = r;
    return true;
  }

  // sample: every row's draw as defined above (window and lane of its own offset).
  int Sample(const samplecheck_plugin_batch& batch, const samplecheck_plugin_params* params, int32_t* tokens,
             std::string& error) {
    if (batch.logits == nullptr || params == nullptr || tokens == nullptr || batch.rows < 1 || batch.vocab < 1 ||
        batch.row_stride < batch.vocab) {
      error = "FlashInfer adapter: a malformed batch (rows " + std::to_string(batch.rows) + ", vocab " +
              std::to_string(batch.vocab) + ", row_stride " + std::to_string(batch.row_stride) + ")";
      return SAMPLECHECK_PLUGIN_INVALID_ARGUMENT;
    }
    if (batch.vocab > (int64_t{1} << 30)) {
      error = "FlashInfer adapter: vocab " + std::to_string(batch.vocab) + " is above 2^30, which it does not drive";
      return SAMPLECHECK_PLUGIN_UNSUPPORTED;
    }
    const uint32_t vocab = static_cast<uint32_t>(batch.vocab);
    std::vector<RowParams> rows(static_cast<size_t>(batch.rows));
    for (int64_t r = 0; r < batch.rows; ++r) {  // validate every row before drawing any
      if (!Validate(params[r], r, batch.vocab, &rows[static_cast<size_t>(r)], error)) {
        return SAMPLECHECK_PLUGIN_INVALID_ARGUMENT;
      }
    }
    // Group the drawable rows by (filters and their values, Philox key): one sampling launch per group holds at
    // most one row per output index (lane); the temperature may differ within a group (it is the softmax's).
    std::map<std::tuple<int, int32_t, float, float, uint64_t>, std::vector<int64_t>> groups;
    std::vector<uint64_t> row_keys(static_cast<size_t>(batch.rows));
    for (int64_t r = 0; r < batch.rows; ++r) {
      tokens[r] = SAMPLECHECK_PLUGIN_INVALID_TOKEN;
      if (!Samplable(batch.logits + r * batch.row_stride, vocab)) continue;
      const RowParams& rp = rows[static_cast<size_t>(r)];
      row_keys[static_cast<size_t>(r)] = RowKey(batch.logits + r * batch.row_stride, vocab, rp);
      groups[{rp.kind.Code(), rp.top_k, rp.top_p, rp.min_p, PhiloxKey(params[r].seed, params[r].offset / kLanes)}]
          .push_back(r);
    }
    if (groups.empty()) return SAMPLECHECK_PLUGIN_OK;
    if (!Ensure(vocab, error)) return SAMPLECHECK_PLUGIN_ERROR;
    for (auto& [group_key, members] : groups) {
      std::vector<int64_t> pending = members;
      while (!pending.empty()) {
        // One launch: each member at its lane, at most slots_ distinct processed rows (the cache may be flushed
        // before the launch, never during it); members left over go to a later launch with the same key.
        std::map<uint32_t, int64_t> at;
        std::vector<int64_t> later;
        std::set<uint64_t> distinct;  // the processed rows of this launch, by cache key
        for (int64_t r : pending) {
          const uint32_t l = static_cast<uint32_t>(params[r].offset % kLanes);
          const uint64_t key = row_keys[static_cast<size_t>(r)];
          if (at.count(l) != 0 || (distinct.count(key) == 0 && distinct.size() >= slots_)) {
            later.push_back(r);  // the same lane twice, or more distinct rows than the cache holds: a later launch
            continue;
          }
          distinct.insert(key);
          at[l] = r;
        }
        if (used_slots_ + distinct.size() > slots_) Flush();
        const uint32_t outputs = at.rbegin()->first + 1;
        std::vector<int32_t> indices(outputs, 0);
        for (const auto& [lane, r] : at) {
          int32_t slot = -1;
          if (!Prepare(batch.logits + r * batch.row_stride, vocab, rows[static_cast<size_t>(r)],
                       row_keys[static_cast<size_t>(r)], &slot, error)) {
            return SAMPLECHECK_PLUGIN_ERROR;
          }
          indices[lane] = slot;
        }
        const RowParams& first = rows[static_cast<size_t>(at.begin()->second)];
        if (!UploadOutputs(indices, first, error) ||
            !Draw(first.kind, vocab, outputs, std::get<4>(group_key), error)) {
          return SAMPLECHECK_PLUGIN_ERROR;
        }
        std::vector<int32_t> out(outputs);
        std::vector<uint8_t> ok(outputs);
        if (!Fetch(out, ok, outputs, error)) return SAMPLECHECK_PLUGIN_ERROR;
        for (const auto& [lane, r] : at) {
          tokens[r] = ok[lane] && out[lane] >= 0 && static_cast<uint32_t>(out[lane]) < vocab
                          ? out[lane]
                          : SAMPLECHECK_PLUGIN_INVALID_TOKEN;
        }
        pending.swap(later);
      }
    }
    return SAMPLECHECK_PLUGIN_OK;
  }

  int Count(const float* row, int64_t vocab64, const samplecheck_plugin_params& p, uint64_t draws,
            uint64_t* histogram, uint64_t* invalid, std::string& error) {
    if (row == nullptr || histogram == nullptr || invalid == nullptr || vocab64 < 1) {
      error = "FlashInfer adapter: count_draws got a null pointer or vocab " + std::to_string(vocab64);
      return SAMPLECHECK_PLUGIN_INVALID_ARGUMENT;
    }
    if (vocab64 > (int64_t{1} << 30)) {
      error = "FlashInfer adapter: vocab " + std::to_string(vocab64) + " is above 2^30, which it does not drive";
      return SAMPLECHECK_PLUGIN_UNSUPPORTED;
    }
    RowParams rp;
    if (!Validate(p, 0, vocab64, &rp, error)) return SAMPLECHECK_PLUGIN_INVALID_ARGUMENT;
    const uint32_t vocab = static_cast<uint32_t>(vocab64);
    if (draws == 0) return SAMPLECHECK_PLUGIN_OK;
    if (!Samplable(row, vocab)) {
      *invalid += draws;
      return SAMPLECHECK_PLUGIN_OK;
    }
    if (!Ensure(vocab, error)) return SAMPLECHECK_PLUGIN_ERROR;
    // The row is processed once (FlashInfer's softmax, and the masks its filters need); every output of every
    // launch maps to it through FlashInfer's `indices`, each output its own Philox subsequence.
    if (used_slots_ + 1 > slots_) Flush();
    int32_t slot = -1;
    if (!Prepare(row, vocab, rp, RowKey(row, vocab, rp), &slot, error)) return SAMPLECHECK_PLUGIN_ERROR;
    if (!FillOutputs(kLanes, slot, rp, error)) return SAMPLECHECK_PLUGIN_ERROR;
    if (!Zero(vocab, error)) return SAMPLECHECK_PLUGIN_ERROR;
    uint64_t g = p.offset;  // draw i is the draw at offset + i (wrapping like the ABI's uint64 offsets)
    uint64_t remaining = draws;
    while (remaining > 0) {
      const uint64_t window = g / kLanes;
      const uint32_t lo = static_cast<uint32_t>(g % kLanes);
      const uint64_t take = std::min<uint64_t>(remaining, kLanes - lo);
      const uint32_t hi = lo + static_cast<uint32_t>(take);
      // Outputs 0 .. hi - 1 (a block's draw depends on its own index, the key and the row, not on the batch size).
      if (!Draw(rp.kind, vocab, hi, PhiloxKey(p.seed, window), error)) return SAMPLECHECK_PLUGIN_ERROR;
      CountLanes<<<(hi - lo + 255) / 256, 256, 0, stream_>>>(tokens_, valid_, lo, hi, vocab, histogram_,
                                                             histogram_ + vocab);
      if (cudaGetLastError() != cudaSuccess) {
        error = "FlashInfer adapter: counting the draws failed";
        return SAMPLECHECK_PLUGIN_ERROR;
      }
      g += take;
      remaining -= take;
    }
    std::vector<unsigned long long> counts(static_cast<size_t>(vocab) + 1);
    if (cudaMemcpyAsync(counts.data(), histogram_, counts.size() * 8, cudaMemcpyDeviceToHost, stream_) !=
            cudaSuccess ||
        cudaStreamSynchronize(stream_) != cudaSuccess) {
      error = std::string("FlashInfer adapter: a kernel or the copy of the histogram failed: ") +
              cudaGetErrorString(cudaGetLastError());
      return SAMPLECHECK_PLUGIN_ERROR;
    }
    for (uint32_t t = 0; t < vocab; ++t) histogram[t] += counts[t];
    *invalid += counts[vocab];
    return SAMPLECHECK_PLUGIN_OK;
  }

 private:
  // A processed row is identified by its logits and everything that shapes FlashInfer's probabilities of it:
  // the temperature, the min-p mask (min_p when it runs) and the top-k mask of top_k_first (k when it runs).
  struct CachedRow {
    std::vector<float> logits;
    float temperature;
    int32_t mask_k;
    float mask_min_p;
    int32_t slot;
  };

  bool MaskFirst(const Kind& kind) const { return kind.top_k && kind.top_p && order_ == Order::kTopKFirst; }

  uint64_t RowKey(const float* row, uint32_t vocab, const RowParams& rp) const {
    uint64_t h = HashRow(row, vocab);
    uint32_t t;
    std::memcpy(&t, &rp.temperature, 4);
    h = SplitMix64(h ^ t);
    if (rp.kind.min_p_mask) {
      uint32_t m;
      std::memcpy(&m, &rp.min_p, 4);
      h = SplitMix64(h ^ (uint64_t{m} << 1) ^ 1);
    }
    if (MaskFirst(rp.kind)) h = SplitMix64(h ^ (static_cast<uint64_t>(rp.top_k) << 2) ^ 2);
    return h;
  }

  // The slot of `row` processed under `rp` in the cache, computing it when absent: the logits uploaded, the
  // adapter's min-p mask (when min-p runs with top-k or top-p), FlashInfer's RadixTopKMaskLogitsMultiCTA (top-k and
  // top-p under top_k_first), FlashInfer's OnlineSoftmax(T). Every step on this one row alone (batch size 1), so a
  // row's probabilities do not depend on the rows drawn beside it (OnlineSoftmax picks its kernel by batch size).
  bool Prepare(const float* row, uint32_t vocab, const RowParams& rp, uint64_t key, int32_t* slot,
               std::string& error) {
    using namespace flashinfer::sampling;
    const bool mask_first = MaskFirst(rp.kind);
    const int32_t mask_k = mask_first ? rp.top_k : 0;
    const float mask_min_p = rp.kind.min_p_mask ? rp.min_p : 0.0f;
    auto range = cache_.equal_range(key);
    for (auto it = range.first; it != range.second; ++it) {
      const CachedRow& c = it->second;
      if (c.temperature == rp.temperature && c.mask_k == mask_k && c.mask_min_p == mask_min_p &&
          std::memcmp(c.logits.data(), row, static_cast<size_t>(vocab) * 4) == 0) {
        *slot = c.slot;
        return true;
      }
    }
    if (used_slots_ >= slots_) {
      error = "FlashInfer adapter: the processed-row cache is full within one launch (an internal error)";
      return false;
    }
    const int32_t s = static_cast<int32_t>(used_slots_++);
    float* out = probs_ + static_cast<uint64_t>(s) * vocab;
    ADAPTER_CUDA(cudaMemcpyAsync(logits_, row, static_cast<size_t>(vocab) * 4, cudaMemcpyHostToDevice, stream_));
    float* input = logits_;
    if (rp.kind.min_p_mask) {
      MinPMaskLogits<<<1, 1024, 0, stream_>>>(logits_, min_p_masked_, vocab, rp.temperature, rp.min_p);
      ADAPTER_CUDA(cudaGetLastError());
      input = min_p_masked_;
    }
    if (mask_first) {
      ADAPTER_CUDA((RadixTopKMaskLogitsMultiCTA<float, int32_t>(input, masked_, nullptr, 1,
                                                                 static_cast<uint32_t>(rp.top_k), vocab, row_states_,
                                                                 stream_)));
      input = masked_;
    }
    ADAPTER_CUDA(OnlineSoftmax<float>(input, out, 1, vocab, nullptr, rp.temperature, workspace_,
                                      kSoftmaxWorkspaceBytes, false, stream_));
    ADAPTER_CUDA(cudaGetLastError());
    cache_.emplace(key, CachedRow{std::vector<float>(row, row + vocab), rp.temperature, mask_k, mask_min_p, s});
    *slot = s;
    return true;
  }

  void Flush() {
    cache_.clear();
    used_slots_ = 0;
  }

  // Per-output arrays of one launch: indices (the processed row of each output) and the filter values, per output
  // as vLLM passes them (per-request tensors; every output of a launch has the same values, so FlashInfer's kernels
  // that read them by output index and those that read them by row index see the same value).
  bool UploadOutputs(const std::vector<int32_t>& indices, const RowParams& rp, std::string& error) {
    const uint32_t n = static_cast<uint32_t>(indices.size());
    ADAPTER_CUDA(cudaMemcpyAsync(d_indices_, indices.data(), n * 4, cudaMemcpyHostToDevice, stream_));
    return FillParams(n, rp, error);
  }
  bool FillOutputs(uint32_t n, int32_t slot, const RowParams& rp, std::string& error) {
    Fill<int32_t><<<256, 256, 0, stream_>>>(d_indices_, n, slot);
    ADAPTER_CUDA(cudaGetLastError());
    return FillParams(n, rp, error);
  }
  bool FillParams(uint32_t outputs, const RowParams& rp, std::string& error) {
    // TopKTopPSamplingFromProb and TopPSamplingFromProb read the values at the row index (a cache slot, which can
    // exceed the outputs), TopKSamplingFromProb and MinPSamplingFromProb at the output index: fill both ranges.
    const uint32_t n = std::max(outputs, slots_);
    Fill<int32_t><<<256, 256, 0, stream_>>>(d_top_k_, n, rp.top_k);
    Fill<float><<<256, 256, 0, stream_>>>(d_top_p_, n, rp.top_p);
    Fill<float><<<256, 256, 0, stream_>>>(d_min_p_, n, rp.min_p);
    ADAPTER_CUDA(cudaGetLastError());
    return true;
  }

  // One FlashInfer sampling launch of `outputs` outputs with Philox key `key` and offset 0: output l is drawn from
  // processed row d_indices_[l] with Philox subsequence l. tokens_ and valid_ receive the draws.
  bool Draw(Kind kind, uint32_t vocab, uint32_t outputs, uint64_t key, std::string& error) {
    using namespace flashinfer::sampling;
    const uint64_t offset = 0;
    if (kind.top_k && kind.top_p) {
      if (MaskFirst(kind)) {
        ADAPTER_CUDA((TopPSamplingFromProb<float, int32_t>(probs_, tokens_, valid_, d_indices_, d_top_p_, outputs,
                                                           1.0f, vocab, true, nullptr, key, nullptr, offset,
                                                           stream_)));
      } else {
        ADAPTER_CUDA((TopKTopPSamplingFromProb<float, int32_t>(probs_, d_top_k_, d_top_p_, tokens_, valid_,
                                                               d_indices_, outputs, 0, 1.0f, vocab, true, nullptr,
                                                               key, nullptr, offset, stream_)));
      }
    } else if (kind.top_k) {
      // The launcher declares top_k_arr as float*, but TopKSamplingFromProbKernel reads it as IdType* (int32):
      // FlashInfer's own binding (csrc/sampling.cu top_k_sampling_from_probs) passes the int32 tensor of
      // sampling.py (maybe_top_k_arr.int()) cast to float*. So does this adapter (a float array here was our bug:
      // the first device run drew outside the top-k set on every top-k-only case, docs/conformance.md).
      ADAPTER_CUDA((TopKSamplingFromProb<float, int32_t>(probs_, tokens_, valid_, d_indices_,
                                                         reinterpret_cast<float*>(d_top_k_), outputs, 0, vocab, true,
                                                         nullptr, key, nullptr, offset, stream_)));
    } else if (kind.top_p) {
      ADAPTER_CUDA((TopPSamplingFromProb<float, int32_t>(probs_, tokens_, valid_, d_indices_, d_top_p_, outputs,
                                                         1.0f, vocab, true, nullptr, key, nullptr, offset,
                                                         stream_)));
    } else if (kind.min_p_only) {
      ADAPTER_CUDA((MinPSamplingFromProb<float, int32_t>(probs_, d_min_p_, tokens_, valid_, d_indices_, outputs,
                                                         0.0f, vocab, true, nullptr, key, nullptr, offset,
                                                         stream_)));
    } else {
      ADAPTER_CUDA((SamplingFromProb<float, int32_t>(probs_, tokens_, valid_, d_indices_, outputs, vocab, true,
                                                     nullptr, key, nullptr, offset, stream_)));
    }
    ADAPTER_CUDA(cudaGetLastError());
    return true;
  }

  bool Ensure(uint32_t vocab, std::string& error) {
    ADAPTER_CUDA(cudaSetDevice(device_));
    if (stream_ == nullptr) ADAPTER_CUDA(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
    if (vocab != vocab_) {  // the cache holds rows of one vocabulary: a new one starts it afresh
      FreeRows();
      Flush();
      slots_ = static_cast<uint32_t>(std::clamp<uint64_t>(kCacheElements / vocab, 1, kMaxCachedRows));
      ADAPTER_CUDA(cudaMalloc(&logits_, static_cast<size_t>(vocab) * 4));
      ADAPTER_CUDA(cudaMalloc(&masked_, static_cast<size_t>(vocab) * 4));
      ADAPTER_CUDA(cudaMalloc(&min_p_masked_, static_cast<size_t>(vocab) * 4));
      ADAPTER_CUDA(cudaMalloc(&probs_, static_cast<size_t>(vocab) * slots_ * 4));
      ADAPTER_CUDA(cudaMalloc(&histogram_, (static_cast<size_t>(vocab) + 1) * 8));
      vocab_ = vocab;
    }
    if (tokens_ == nullptr) {
      ADAPTER_CUDA(cudaMalloc(&tokens_, kLanes * 4));
      ADAPTER_CUDA(cudaMalloc(&valid_, kLanes));
      ADAPTER_CUDA(cudaMalloc(&d_indices_, kLanes * 4));
      ADAPTER_CUDA(cudaMalloc(&d_top_k_, kLanes * 4));
      ADAPTER_CUDA(cudaMalloc(&d_top_p_, kLanes * 4));
      ADAPTER_CUDA(cudaMalloc(&d_min_p_, kLanes * 4));
    }
    if (workspace_ == nullptr) ADAPTER_CUDA(cudaMalloc(&workspace_, kSoftmaxWorkspaceBytes));
    if (row_states_ == nullptr) {
      ADAPTER_CUDA(cudaMalloc(&row_states_, kRowStateBytes));
      ADAPTER_CUDA(cudaMemset(row_states_, 0, kRowStateBytes));  // FlashInfer's caller zeroes it once
    }
    return true;
  }

  static bool Samplable(const float* row, uint32_t vocab) {
    bool above = false;
    for (uint32_t i = 0; i < vocab; ++i) {
      if (std::isnan(row[i])) return false;
      above = above || row[i] > -std::numeric_limits<float>::infinity();
    }
    return above;
  }

  bool Zero(uint32_t vocab, std::string& error) {
    ADAPTER_CUDA(cudaMemsetAsync(histogram_, 0, (static_cast<size_t>(vocab) + 1) * 8, stream_));
    return true;
  }

  bool Fetch(std::vector<int32_t>& out, std::vector<uint8_t>& ok, uint32_t outputs, std::string& error) {
    static_assert(sizeof(bool) == 1, "bool is one byte");
    ADAPTER_CUDA(cudaMemcpyAsync(out.data(), tokens_, outputs * 4, cudaMemcpyDeviceToHost, stream_));
    ADAPTER_CUDA(cudaMemcpyAsync(ok.data(), valid_, outputs, cudaMemcpyDeviceToHost, stream_));
    ADAPTER_CUDA(cudaStreamSynchronize(stream_));
    return true;
  }

  void FreeRows() {
    for (float** p : {&logits_, &masked_, &probs_, &min_p_masked_}) {
      if (*p != nullptr) cudaFree(*p);
      *p = nullptr;
    }
    if (histogram_ != nullptr) cudaFree(histogram_);
    histogram_ = nullptr;
    vocab_ = 0;
  }
  void Free() {
    FreeRows();
    for (void* p : {static_cast<void*>(tokens_), static_cast<void*>(valid_), static_cast<void*>(d_indices_),
                    static_cast<void*>(d_top_k_), static_cast<void*>(d_top_p_), static_cast<void*>(d_min_p_),
                    workspace_, static_cast<void*>(row_states_)}) {
      if (p != nullptr) cudaFree(p);
    }
    if (stream_ != nullptr) cudaStreamDestroy(stream_);
  }

  Order order_;
  int device_;
  cudaStream_t stream_ = nullptr;
  uint32_t vocab_ = 0;
  uint32_t slots_ = 0;       // processed rows the cache holds (probs_ is slots_ rows of vocab_)
  uint32_t used_slots_ = 0;
  std::multimap<uint64_t, CachedRow> cache_;
  float* logits_ = nullptr;
  float* masked_ = nullptr;
  float* probs_ = nullptr;
  float* min_p_masked_ = nullptr;
  int32_t* tokens_ = nullptr;
  bool* valid_ = nullptr;
  int32_t* d_indices_ = nullptr;
  int32_t* d_top_k_ = nullptr;
  float* d_top_p_ = nullptr;
  float* d_min_p_ = nullptr;
  unsigned long long* histogram_ = nullptr;
  void* workspace_ = nullptr;
  flashinfer::sampling::RadixRowState* row_states_ = nullptr;
};

}  // namespace

#define EXPORT extern "C" __attribute__((visibility("default")))

EXPORT int samplecheck_plugin_abi_version(void) { return SAMPLECHECK_PLUGIN_ABI_VERSION; }

EXPORT void* samplecheck_plugin_create(const char* config, char* err, size_t err_len) {
  try {
    Order order = Order::kTopKFirst;
    int device = 0;
    std::string text = config != nullptr ? config : "";
    size_t start = 0;
    while (start <= text.size() && !text.empty()) {
      const size_t comma = text.find(',', start);
      const std::string item = text.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
      if (item == "order=joint" || item == "joint") {
        order = Order::kJoint;
      } else if (item == "order=top_k_first" || item == "top_k_first") {
        order = Order::kTopKFirst;
      } else if (item.rfind("device=", 0) == 0 && item.size() > 7 &&
                 item.find_first_not_of("0123456789", 7) == std::string::npos && item.size() <= 10) {
        device = std::stoi(item.substr(7));
      } else {
        Write(err, err_len,
              "FlashInfer adapter: unknown config item '" + item +
                  "'; allowed: order=joint, order=top_k_first (FlashInfer's filter_apply_order), device=<n>");
        return nullptr;
      }
      if (comma == std::string::npos) break;
      start = comma + 1;
    }
    int count = 0;
    const cudaError_t e = cudaGetDeviceCount(&count);
    if (e != cudaSuccess || count == 0) {
      Write(err, err_len, std::string("FlashInfer adapter: no CUDA device (") +
                              (e != cudaSuccess ? cudaGetErrorString(e) : "0 devices") + ")");
      return nullptr;
    }
    if (device >= count) {
      Write(err, err_len, "FlashInfer adapter: device=" + std::to_string(device) + " but this machine has " +
                              std::to_string(count) + " CUDA device(s)");
      return nullptr;
    }
    return new Adapter(order, device);
  } catch (const std::exception& ex) {
    Write(err, err_len, std::string("FlashInfer adapter: ") + ex.what());
    return nullptr;
  }
}

EXPORT void samplecheck_plugin_destroy(void* handle) { delete static_cast<Adapter*>(handle); }

EXPORT const char* samplecheck_plugin_name(void* handle) { return static_cast<Adapter*>(handle)->Name(); }

EXPORT const char* samplecheck_plugin_profile(void* handle) { return static_cast<Adapter*>(handle)->Name(); }

EXPORT uint32_t samplecheck_plugin_flags(void*) { return 0; }

EXPORT int samplecheck_plugin_sample(void* handle, const samplecheck_plugin_batch* batch,
                                     const samplecheck_plugin_params* params, int32_t* tokens_out, char* err,
                                     size_t err_len) {
  try {
    if (batch == nullptr) {
      Write(err, err_len, "FlashInfer adapter: batch is NULL");
      return SAMPLECHECK_PLUGIN_INVALID_ARGUMENT;
    }
    std::string error;
    const int rc = static_cast<Adapter*>(handle)->Sample(*batch, params, tokens_out, error);
    if (rc != SAMPLECHECK_PLUGIN_OK) Write(err, err_len, error);
    return rc;
  } catch (const std::exception& ex) {
    Write(err, err_len, std::string("FlashInfer adapter: ") + ex.what());
    return SAMPLECHECK_PLUGIN_ERROR;
  }
}

EXPORT int samplecheck_plugin_count_draws(void* handle, const float* row, int64_t vocab,
                                          const samplecheck_plugin_params* params, uint64_t draws,
                                          uint64_t* histogram, uint64_t* invalid_draws, char* err, size_t err_len) {
  try {
    if (params == nullptr) {
      Write(err, err_len, "FlashInfer adapter: params is NULL");
      return SAMPLECHECK_PLUGIN_INVALID_ARGUMENT;
    }
    std::string error;
    const int rc = static_cast<Adapter*>(handle)->Count(row, vocab, *params, draws, histogram, invalid_draws, error);
    if (rc != SAMPLECHECK_PLUGIN_OK) Write(err, err_len, error);
    return rc;
  } catch (const std::exception& ex) {
    Write(err, err_len, std::string("FlashInfer adapter: ") + ex.what());
    return SAMPLECHECK_PLUGIN_ERROR;
  }
}
