// Chain speculative sampling verification (verify_chain.h; docs/kernels.md "Chain verifier").
//
// Two stages, both stream-ordered on the caller's stream:
//  1. The processed distributions: ComputeProcessedDistribution (the planner SampleFromLogits draws with, so the
//     kept sets and the greedy rule are the sampler's) over all target rows of the batch with each request's
//     parameters, and over the draft logits rows with the draft's (kLogits). Target probabilities
//     (kProbabilities) are taken as given. Result: fp32 p rows (and q rows) plus each row's RowStatus.
//  2. The chain, three launches (the section "VerifyChainBatch: three launches" below):
//     RowPassKernel, one block per row over every row of the batch at once: checks it in the reference's order of
//     values (the first bad value is reported, as ComputeChainLaws does), sums each draft row (q is normalized by
//     its sum, as DraftFromProbabilities does) and finds greedy rows' tokens;
//     ChunkKernel, blocks over (request, chunk of ids): decides the request from the row results in the
//     reference's order (target rows 0..g, then draft rows 0..g-1: the first error wins), then positions
//     j = 1..g: coin u_j (words 2, 3 of Philox block offset + j - 1, or the scripted slot), accept iff
//     u_j * q_j(x_j) < p_j(x_j); the first rejection draws with d_j (words 0, 1 of the same block, the uniform
//     SampleFromLogits uses at that counter) from max(0, p_j - q_j); all accepted: d_{g+1} from p_{g+1}; a draw's
//     blocks sum the 2^-52 fixed-point weights of their chunk of the one row drawn from (coalesced);
//     FinalizeKernel, one block per request: the exclusive scan of the chunk sums locates the chunk holding
//     DrawTarget(d, S), a tiled block scan of that chunk finds the token: the first id whose inclusive prefix
//     exceeds DrawTarget(d, S) (philox_uniform.cuh). Integer sums are associative: the same token as any order.
// VerifyChainRepeated prepares one request's rows once (PrepareKernel: the same row checks and weights, written as
// inclusive prefix arrays) and then runs one thread per trial (TrialKernel: binary searches of the same prefixes),
// so a trial's tokens equal VerifyChainBatch's for that trial alone.
#include <cub/block/block_reduce.cuh>
#include <cub/block/block_scan.cuh>

#include <cmath>
#include <mutex>
#include <sstream>
#include <string>
#include <vector>

#include "detail/launch.h"
#include "detail/philox_uniform.cuh"
#include "samplecheck/kernels/verify_chain.h"

namespace samplecheck::kernels {
namespace detail {
namespace {

constexpr int kChainThreads = 512;
constexpr double kDraftSumTol = 1e-3;  // reference/speculative.h kDraftSumTolerance

// The coin of position j (1-based): words 2, 3 of the block at counter offset + j - 1.
__device__ __forceinline__ double ChainCoin(uint64_t seed, uint64_t offset, int32_t j, const double* scripted) {
  if (scripted != nullptr) return scripted[2 * (j - 1)];
  const uint64_t counter = offset + static_cast<uint64_t>(j - 1);
  const uint4 c = make_uint4(static_cast<uint32_t>(counter), static_cast<uint32_t>(counter >> 32), 0u, 0u);
  const uint2 key = make_uint2(static_cast<uint32_t>(seed), static_cast<uint32_t>(seed >> 32));
  const uint4 block = curand_Philox4x32_10(c, key);
  const uint64_t bits = ((static_cast<uint64_t>(block.z) << 32) | block.w) >> 12;
  return (static_cast<double>(bits) + 0.5) * 0x1p-52;
}

__device__ __forceinline__ double ChainDraw(uint64_t seed, uint64_t offset, int32_t j, const double* scripted) {
  if (scripted != nullptr) return scripted[2 * (j - 1) + 1];
  return UniformForDraw(seed, offset + static_cast<uint64_t>(j - 1));
}

// 2^-52 fixed point of a weight in [0, ~1]; 0 for w <= 0.
__device__ __forceinline__ uint64_t FixedWeight(double w) {
  return w > 0.0 ? static_cast<uint64_t>(llrint(w * 0x1p52)) : 0ull;
}

// q_j(y), normalized; one-hot: the point mass on x.
__device__ __forceinline__ double DraftProb(const float* q, double qsum, int64_t y, int32_t x) {
  return q != nullptr ? static_cast<double>(q[y]) / qsum : (y == x ? 1.0 : 0.0);
}

// The residual weight max(0, p - q) at y, and p's own weight.
struct ResidualWeight {
  const float* p;
  const float* q;
  double qsum;
  int32_t x;
  __device__ __forceinline__ uint64_t operator()(int64_t y) const {
    return FixedWeight(static_cast<double>(p[y]) - DraftProb(q, qsum, y, x));
  }
};
struct TargetWeight {
  const float* p;
  __device__ __forceinline__ uint64_t operator()(int64_t y) const { return FixedWeight(static_cast<double>(p[y])); }
};

__device__ __forceinline__ bool Accepts(double u, double qx, float px) { return u * qx < static_cast<double>(px); }

using BlockScanU64 = cub::BlockScan<uint64_t, kChainThreads>;
using BlockSumD = cub::BlockReduce<double, kChainThreads>;

struct ChainShared {
  union {
    typename BlockScanU64::TempStorage scan;
    typename BlockSumD::TempStorage reduce;
  } temp;
  int32_t min_token[3];
  int32_t result;
  double qsum[kMaxChainDraft];
  int32_t greedy[kMaxChainDraft + 1];
  ChainDiag diag;
};

// The chunk of ids thread t owns.
__device__ __forceinline__ void ChunkOf(int64_t vocab, int64_t* begin, int64_t* end) {
  const int64_t chunk = (vocab + kChainThreads - 1) / kChainThreads;
  *begin = min(vocab, static_cast<int64_t>(threadIdx.x) * chunk);
  *end = min(vocab, *begin + chunk);
}

// Inverse CDF over fixed-point weights: the first id whose inclusive prefix exceeds DrawTarget(u, S); -1 when
// S == 0. Every thread returns the token.
template <class Weight>
__device__ int32_t BlockDraw(ChainShared& sh, int64_t vocab, double u, const Weight& weight) {
  int64_t begin, end;
  ChunkOf(vocab, &begin, &end);
  uint64_t sum = 0;
  for (int64_t y = begin; y < end; ++y) sum += weight(y);
  uint64_t excl = 0, total = 0;
  __syncthreads();  // temp storage reuse
  BlockScanU64(sh.temp.scan).ExclusiveSum(sum, excl, total);
  if (threadIdx.x == 0) sh.result = -1;
  __syncthreads();
  if (total == 0) return -1;
  const uint64_t target = DrawTarget(u, total);
  if (sum > 0 && excl <= target && target < excl + sum) {
    uint64_t running = excl;
    for (int64_t y = begin; y < end; ++y) {
      running += weight(y);
      if (running > target) {
        sh.result = static_cast<int32_t>(y);
        break;
      }
    }
  }
  __syncthreads();
  return sh.result;
}

// Inclusive prefix sums of the weights into out (vocab entries).
template <class Weight>
__device__ void BlockPrefix(ChainShared& sh, int64_t vocab, const Weight& weight, uint64_t* out) {
  int64_t begin, end;
  ChunkOf(vocab, &begin, &end);
  uint64_t sum = 0;
  for (int64_t y = begin; y < end; ++y) sum += weight(y);
  uint64_t excl = 0, total = 0;
  __syncthreads();
  BlockScanU64(sh.temp.scan).ExclusiveSum(sum, excl, total);
  uint64_t running = excl;
  for (int64_t y = begin; y < end; ++y) {
    running += weight(y);
    out[y] = running;
  }
}

// The first id whose inclusive prefix exceeds DrawTarget(u, S) (minus `skip` from ids >= x: the one-hot residual);
// -1 when S == 0.
__device__ int32_t SearchPrefix(const uint64_t* prefix, int64_t vocab, double u, int32_t x, bool skip_x) {
  uint64_t wx = 0;
  if (skip_x) wx = prefix[x] - (x > 0 ? prefix[x - 1] : 0ull);
  const uint64_t total = prefix[vocab - 1] - wx;
  if (total == 0) return -1;
  const uint64_t target = DrawTarget(u, total);
  int64_t lo = 0, hi = vocab - 1;  // the answer is in [lo, hi]
  while (lo < hi) {
    const int64_t mid = lo + (hi - lo) / 2;
    const uint64_t v = prefix[mid] - (skip_x && mid >= x ? wx : 0ull);
    if (v > target) hi = mid; else lo = mid + 1;
  }
  return static_cast<int32_t>(lo);
}

// What one block learns of row pair j: target row j (p, its RowStatus or -1 for probabilities given) and, for
// j < g, draft row j (q with its RowStatus, or raw probabilities when q_status is -1; null for one-hot).
struct RowCheck {
  const float* p;
  int32_t p_status;  // RowStatus, or -1: p given as probabilities (checked here)
  const float* q;    // null: one-hot or no draft row (j == g)
  int32_t q_status;  // RowStatus of draft logits, or -1: q given as probabilities (checked here)
};

// Checks the target row and finds its greedy token; writes sh.diag on the first error (target first). Returns
// false on an error. Collective.
__device__ bool CheckTargetRow(ChainShared& sh, int64_t vocab, const RowCheck& r, int32_t j) {
  if (r.p_status >= 0 && r.p_status != kRowSampled && r.p_status != kRowGreedy) {
    __syncthreads();  // every thread has read sh.diag of the previous row
    if (threadIdx.x == 0) sh.diag = ChainDiag{kChainTargetRowInvalid, j + 1, -1, 0, 0.0};
    __syncthreads();
    return false;
  }
  const bool greedy = r.p_status == kRowGreedy;
  if (!greedy && r.p_status >= 0) {
    if (threadIdx.x == 0) sh.greedy[j] = -1;
    __syncthreads();
    return true;
  }
  if (threadIdx.x == 0) sh.min_token[0] = INT32_MAX;
  __syncthreads();
  double psum = 0;  // strided (coalesced) loop: a fixed order per thread, so the block sum is deterministic
  for (int64_t y = threadIdx.x; y < vocab; y += kChainThreads) {
    const float v = r.p[y];
    if (greedy) {
      if (v > 0.0f) { atomicMin(&sh.min_token[0], static_cast<int32_t>(y)); break; }
    } else if (!(v >= 0.0f && v <= 1.0f)) {
      atomicMin(&sh.min_token[0], static_cast<int32_t>(y));
      break;
    } else {
      psum += v;
    }
  }
  __syncthreads();
  if (greedy) {
    if (threadIdx.x == 0) sh.greedy[j] = sh.min_token[0] == INT32_MAX ? -1 : sh.min_token[0];
    __syncthreads();
    return true;
  }
  const double total = BlockSumD(sh.temp.reduce).Sum(psum);
  const int32_t bad = sh.min_token[0];
  if (threadIdx.x == 0) {
    sh.greedy[j] = -1;
    if (bad != INT32_MAX) {
      sh.diag = ChainDiag{kChainTargetRowInvalid, j + 1, bad, 0, static_cast<double>(r.p[bad])};
    } else if (!(fabs(total - 1.0) <= kDraftSumTol)) {
      sh.diag = ChainDiag{kChainTargetRowInvalid, j + 1, -1, 0, total};
    }
  }
  __syncthreads();
  return sh.diag.code == kChainOk;
}

// Checks draft row j and sums it into sh.qsum[j]. Collective.
__device__ bool CheckDraftRow(ChainShared& sh, int64_t vocab, const RowCheck& r, int32_t j) {
  if (r.q == nullptr) return true;
  if (r.q_status >= 0 && r.q_status != kRowSampled && r.q_status != kRowGreedy) {
    __syncthreads();  // every thread has read sh.diag of the previous row
    if (threadIdx.x == 0) sh.diag = ChainDiag{kChainDraftRowInvalid, j + 1, -1, 0, 0.0};
    __syncthreads();
    return false;
  }
  if (threadIdx.x == 0) sh.min_token[1] = INT32_MAX;
  __syncthreads();
  double qsum = 0;  // strided (coalesced) loop, as CheckTargetRow's
  for (int64_t y = threadIdx.x; y < vocab; y += kChainThreads) {
    const float v = r.q[y];
    if (!(v >= 0.0f && v <= 3.4028234663852886e38f)) {
      atomicMin(&sh.min_token[1], static_cast<int32_t>(y));
      break;
    }
    qsum += v;
  }
  __syncthreads();
  const double total = BlockSumD(sh.temp.reduce).Sum(qsum);
  const int32_t bad = sh.min_token[1];
  if (threadIdx.x == 0) {
    sh.qsum[j] = total;
    if (bad != INT32_MAX) {
      sh.diag = ChainDiag{kChainDraftValueInvalid, j + 1, bad, 0, static_cast<double>(r.q[bad])};
    } else if (!(fabs(total - 1.0) <= kDraftSumTol)) {
      sh.diag = ChainDiag{kChainDraftSumInvalid, j + 1, -1, 0, total};
    }
  }
  __syncthreads();
  return sh.diag.code == kChainOk;
}

struct ChainArgs {
  int64_t vocab;
  int64_t batch;
  int32_t g_scalar;            // every request's g when layout is null
  const int64_t* layout;       // null (uniform g), or 3 batch values: first target row, first draft row, g
  const float* p;              // target probabilities (packed rows)
  const int32_t* p_status;     // per target row, or null (probabilities given)
  const float* q;              // draft probabilities (packed rows), or null (one-hot)
  const int32_t* q_status;     // per draft row (logits), or null (probabilities given)
  const int32_t* tokens;
  const uint64_t* seed;
  const uint64_t* offset;
  const double* scripted;
};

// Request b's g, its first target row and its first draft row / token.
__device__ __forceinline__ int32_t ChainG(const ChainArgs& a, int64_t b) {
  return a.layout ? static_cast<int32_t>(a.layout[2 * a.batch + b]) : a.g_scalar;
}
__device__ __forceinline__ int64_t TargetRow0(const ChainArgs& a, int64_t b) {
  return a.layout ? a.layout[b] : b * (a.g_scalar + 1);
}
__device__ __forceinline__ int64_t DraftRow0(const ChainArgs& a, int64_t b) {
  return a.layout ? a.layout[a.batch + b] : b * a.g_scalar;
}

// Checks request b's rows in the reference's order (all target rows, then the draft rows). Collective.
__device__ bool CheckRequest(ChainShared& sh, const ChainArgs& a, int64_t t0, int64_t d0, int32_t g) {
  for (int32_t j = 0; j <= g; ++j) {
    const RowCheck r{a.p + (t0 + j) * a.vocab, a.p_status ? a.p_status[t0 + j] : -1, nullptr, -1};
    if (!CheckTargetRow(sh, a.vocab, r, j)) return false;
  }
  for (int32_t j = 0; j < g && a.q != nullptr; ++j) {
    const RowCheck r{nullptr, 0, a.q + (d0 + j) * a.vocab, a.q_status ? a.q_status[d0 + j] : -1};
    if (!CheckDraftRow(sh, a.vocab, r, j)) return false;
  }
  return true;
}

__device__ bool ScriptedValid(const double* s, int32_t g) {
  for (int32_t i = 0; i < 2 * (g + 1); ++i) {
    if (!(s[i] >= 0.0 && s[i] < 1.0)) return false;
  }
  return true;
}

// ---- VerifyChainBatch: three launches ----------------------------------------------------------------------------
//  RowPassKernel  one 512-thread block per row (every target row, every draft row): the row's check and sum, in
//                 exactly the order (and with the same block reduction) CheckTargetRow / CheckDraftRow use, so q's
//                 sum, and with it every decision, is bit-identical to the single-block path (VerifyChainRepeated).
//  ChunkKernel    (request, chunk of kDrawChunk ids): warp 0 decides the request from the row results, the draft
//                 tokens' p_j(x_j), q_j(x_j) and the coins (one lane per position); if a draw is needed the block
//                 sums the fixed-point weights (residual and target) of its chunk of the draw row, coalesced.
//  FinalizeKernel one block per request: the chunk sums' exclusive scan locates the chunk holding DrawTarget(d, S),
//                 a tiled block scan of that chunk alone finds the token; writes accepted, emitted and diag.
// Integer sums are associative, so the token (the first id whose inclusive prefix exceeds DrawTarget(d, S)) is the
// one BlockDraw / SearchPrefix find.

// What RowPassKernel learns of one row. Target rows: code kChainOk or kChainTargetRowInvalid; token = the greedy
// token (kRowGreedy rows: the first id with p > 0, or -1) when ok, else the bad id or -1; value = the bad value or
// sum. Draft rows: code kChainOk / kChainDraftRowInvalid / kChainDraftValueInvalid / kChainDraftSumInvalid; value =
// the row's sum when ok (q is normalized by it), else the bad value or sum; token = the bad id or -1.
struct RowResult {
  double value;
  int32_t code;
  int32_t token;
};

// Loads in flight per thread in the row pass: 32 when every row has an SM of its own (one block per SM, 128
// registers), 16 otherwise (three blocks per SM, which the bandwidth needs more). The per-thread order of the sums
// is the same for both.
constexpr int kRowUnrollFew = 32;
constexpr int kRowUnrollMany = 16;

// Thread-strided pass over a row (thread t: ids t, t + 512, ... in order, as CheckTargetRow's loop): the first id
// (per thread) for which bad(v) holds goes to *first_bad; the values before it are summed in order, in double.
template <int kRowUnroll, class Bad>
__device__ __forceinline__ double StridedRowPass(const float* row, int64_t vocab, const Bad& bad, int32_t* first_bad) {
  double sum = 0;
  int32_t fb = INT32_MAX;
  for (int64_t base = threadIdx.x; base < vocab; base += static_cast<int64_t>(kChainThreads) * kRowUnroll) {
    const float* ptr = row + base;
    const int64_t left = vocab - base;  // ids base + u * 512 with u * 512 < left are in the row
    float v[kRowUnroll];
    if (left > static_cast<int64_t>(kChainThreads) * (kRowUnroll - 1)) {
#pragma unroll
      for (int u = 0; u < kRowUnroll; ++u) v[u] = __ldg(ptr + u * kChainThreads);
    } else {
#pragma unroll
      for (int u = 0; u < kRowUnroll; ++u) v[u] = u * kChainThreads < left ? __ldg(ptr + u * kChainThreads) : 0.0f;
    }
#pragma unroll
    for (int u = 0; u < kRowUnroll; ++u) {
      if (u * kChainThreads < left && fb == INT32_MAX) {
        if (bad(v[u])) {
          fb = static_cast<int32_t>(base + u * kChainThreads);
        } else {
          sum += v[u];
        }
      }
    }
    if (fb != INT32_MAX) break;
  }
  *first_bad = fb;
  return sum;
}

struct BadTargetProb {
  __device__ bool operator()(float v) const { return !(v >= 0.0f && v <= 1.0f); }
};
struct PositiveProb {
  __device__ bool operator()(float v) const { return v > 0.0f; }
};
struct BadDraftProb {
  __device__ bool operator()(float v) const { return !(v >= 0.0f && v <= 3.4028234663852886e38f); }
};

// Block r < target_rows: target row r; else draft row r - target_rows.
template <int kRowUnroll, int kMinBlocks>
__global__ void __launch_bounds__(kChainThreads, kMinBlocks) RowPassKernel(ChainArgs a, int64_t target_rows,
                                                                            RowResult* target_out,
                                                                            RowResult* draft_out) {
  __shared__ typename BlockSumD::TempStorage temp;
  __shared__ int32_t min_token;
  const int64_t r = blockIdx.x;
  const bool target = r < target_rows;
  const int64_t row = target ? r : r - target_rows;
  RowResult* out = target ? target_out + row : draft_out + row;
  const int32_t status = target ? (a.p_status ? a.p_status[row] : -1) : (a.q_status ? a.q_status[row] : -1);
  if (status >= 0 && status != kRowSampled && status != kRowGreedy) {
    if (threadIdx.x == 0) {
      *out = RowResult{0.0, target ? int32_t{kChainTargetRowInvalid} : int32_t{kChainDraftRowInvalid}, -1};
    }
    return;
  }
  if (target && status == kRowSampled) {
    if (threadIdx.x == 0) *out = RowResult{0.0, kChainOk, -1};
    return;
  }
  if (threadIdx.x == 0) min_token = INT32_MAX;
  __syncthreads();
  const float* values = (target ? a.p : a.q) + row * a.vocab;
  int32_t fb = INT32_MAX;
  double sum = 0;
  if (target && status == kRowGreedy) {
    StridedRowPass<kRowUnroll>(values, a.vocab, PositiveProb{}, &fb);
  } else if (target) {
    sum = StridedRowPass<kRowUnroll>(values, a.vocab, BadTargetProb{}, &fb);
  } else {
    sum = StridedRowPass<kRowUnroll>(values, a.vocab, BadDraftProb{}, &fb);
  }
  if (fb != INT32_MAX) atomicMin(&min_token, fb);
  __syncthreads();
  const int32_t found = min_token;
  if (target && status == kRowGreedy) {
    if (threadIdx.x == 0) *out = RowResult{0.0, kChainOk, found == INT32_MAX ? -1 : found};
    return;
  }
  const double total = BlockSumD(temp).Sum(sum);  // valid in thread 0
  if (threadIdx.x != 0) return;
  if (found != INT32_MAX) {
    *out = RowResult{static_cast<double>(values[found]),
                     target ? int32_t{kChainTargetRowInvalid} : int32_t{kChainDraftValueInvalid}, found};
  } else if (!(fabs(total - 1.0) <= kDraftSumTol)) {
    *out = RowResult{total, target ? int32_t{kChainTargetRowInvalid} : int32_t{kChainDraftSumInvalid}, -1};
  } else {
    *out = RowResult{target ? 0.0 : total, kChainOk, -1};
  }
}

// A request's outcome before its draw.
struct Decision {
  ChainDiag diag;   // code != kChainOk: the error (nothing is emitted)
  int64_t t0, d0;   // first target row, first draft row
  int32_t n;        // tokens accepted; the emitted token comes from position row n (target row t0 + n)
  int32_t token;    // the emitted token when known without a draw (greedy), else -1
  int32_t mode;     // 0: no draw; 1: residual draw (falling back to p when the residual is 0); 2: draw from p
  int32_t x;        // the rejected draft token (one-hot residual)
  double qsum;      // q's sum at row n (1 for one-hot)
  double d;         // the draw uniform
};

struct ChunkSums {
  uint64_t residual;
  uint64_t target;
};

constexpr int kChunkThreads = 256;
constexpr int64_t kDrawChunk = 2048;  // ids per chunk: ceil(kMaxVocab / 2048) = 512 chunks at most
static_assert((kMaxVocab + kDrawChunk - 1) / kDrawChunk <= kChainThreads, "FinalizeKernel scans the chunks in one pass");
constexpr unsigned kFullMask = 0xffffffffu;

// Warp 0 of a block (all 32 lanes) decides request b as ChainKernel's walk did: scripted uniforms, then the rows in
// the reference's order (target rows 0..g, draft rows 0..g-1: the first error), then positions j = 1..g (lane
// j - 1): the first position whose token is impossible (an error) or rejected ends the chain. Lane 0 or the
// deciding lane writes *dec.
__device__ void Decide(const ChainArgs& a, const RowResult* trows, const RowResult* drows, int64_t b, Decision* dec) {
  const int lane = static_cast<int>(threadIdx.x);
  const int32_t g = ChainG(a, b);
  const int64_t t0 = TargetRow0(a, b), d0 = DraftRow0(a, b);
  const double* scripted = a.scripted ? a.scripted + b * kChainScriptedStride : nullptr;
  Decision r;
  r.diag = ChainDiag{};
  r.t0 = t0;
  r.d0 = d0;
  r.n = 0;
  r.token = -1;
  r.mode = 0;
  r.x = -1;
  r.qsum = 1.0;
  r.d = 0.0;
  if (scripted != nullptr) {
    bool bad = false;
    for (int i = lane; i < 2 * (g + 1); i += 32) bad |= !(scripted[i] >= 0.0 && scripted[i] < 1.0);
    if (__any_sync(kFullMask, bad)) {
      if (lane == 0) {
        r.diag = ChainDiag{kChainBadParams, 0, -1, 0, 0.0};
        *dec = r;
      }
      return;
    }
  }
  unsigned m = __ballot_sync(kFullMask, lane <= g && trows[t0 + lane].code != kChainOk);
  if (m == 0 && a.q != nullptr) {
    const unsigned md = __ballot_sync(kFullMask, lane < g && drows[d0 + lane].code != kChainOk);
    if (md != 0) {
      if (lane == 0) {
        const int32_t j = __ffs(static_cast<int>(md)) - 1;
        const RowResult rr = drows[d0 + j];
        r.diag = ChainDiag{rr.code, j + 1, rr.token, 0, rr.value};
        *dec = r;
      }
      return;
    }
  } else if (m != 0) {
    if (lane == 0) {
      const int32_t j = __ffs(static_cast<int>(m)) - 1;
      const RowResult rr = trows[t0 + j];
      r.diag = ChainDiag{rr.code, j + 1, rr.token, 0, rr.value};
      *dec = r;
    }
    return;
  }
  bool stop = false, impossible = false;
  int32_t x = -1, greedy = -1;
  double qsum = 1.0;
  if (lane < g) {
    const int32_t j = lane + 1;
    const float* p = a.p + (t0 + lane) * a.vocab;
    const float* q = a.q ? a.q + (d0 + lane) * a.vocab : nullptr;
    x = a.tokens[d0 + lane];
    qsum = q ? drows[d0 + lane].value : 1.0;
    impossible = x < 0 || x >= a.vocab || (q != nullptr && !(q[x] > 0.0f));
    if (impossible) {
      stop = true;
    } else {
      greedy = trows[t0 + lane].token;
      const bool accept = greedy >= 0 ? x == greedy
                                      : Accepts(ChainCoin(a.seed[b], a.offset[b], j, scripted),
                                                DraftProb(q, qsum, x, x), p[x]);
      stop = !accept;
    }
  }
  m = __ballot_sync(kFullMask, stop);
  if (m == 0) {
    if (lane == 0) {
      r.n = g;
      r.token = trows[t0 + g].token;
      if (r.token < 0) {
        r.mode = 2;
        r.d = ChainDraw(a.seed[b], a.offset[b], g + 1, scripted);
      }
      *dec = r;
    }
    return;
  }
  if (lane == __ffs(static_cast<int>(m)) - 1) {
    if (impossible) {
      r.diag = ChainDiag{kChainDraftTokenImpossible, lane + 1, x, 0, 0.0};
    } else {
      r.n = lane;
      r.token = greedy;
      if (greedy < 0) {
        r.mode = 1;
        r.x = x;
        r.qsum = qsum;
        r.d = ChainDraw(a.seed[b], a.offset[b], lane + 1, scripted);
      }
    }
    *dec = r;
  }
}

// The draw row of a decision: p at row n; q (null for one-hot) for the residual.
__device__ __forceinline__ const float* DrawP(const ChainArgs& a, const Decision& d) {
  return a.p + (d.t0 + d.n) * a.vocab;
}
__device__ __forceinline__ const float* DrawQ(const ChainArgs& a, const Decision& d) {
  return a.q ? a.q + (d.d0 + d.n) * a.vocab : nullptr;
}

constexpr int kChunkUnroll = kDrawChunk / kChunkThreads;  // 8 ids per thread and chunk
constexpr int kChunksPerBlock = 4;                         // one decision per 4 chunks

// The sum of v over the block (thread 0's result; integer, so any order). Collective.
__device__ __forceinline__ uint64_t BlockSumU64(uint64_t v, uint64_t* warp_sums) {
  for (int d = 16; d > 0; d >>= 1) v += __shfl_down_sync(kFullMask, v, d);
  __syncthreads();  // warp_sums reuse
  if ((threadIdx.x & 31) == 0) warp_sums[threadIdx.x >> 5] = v;
  __syncthreads();
  uint64_t total = 0;
  if (threadIdx.x == 0) {
    for (int w = 0; w < kChunkThreads / 32; ++w) total += warp_sums[w];
  }
  return total;
}

// Grid (batch, ceil(chunks / kChunksPerBlock)): block (b, y) decides request b and, for a draw, sums chunks
// y * kChunksPerBlock ... of the draw row.
__global__ void __launch_bounds__(kChunkThreads) ChunkKernel(ChainArgs a, const RowResult* trows,
                                                              const RowResult* drows, int32_t chunks,
                                                              Decision* decisions, ChunkSums* sums) {
  __shared__ uint64_t warp_sums[kChunkThreads / 32];
  __shared__ Decision dec;
  const int64_t b = blockIdx.x;
  if (threadIdx.x < 32) Decide(a, trows, drows, b, &dec);
  __syncthreads();
  if (blockIdx.y == 0 && threadIdx.x == 0) decisions[b] = dec;
  if (dec.diag.code != kChainOk || dec.mode == 0) return;
  const float* p = DrawP(a, dec);
  const ResidualWeight rw{p, DrawQ(a, dec), dec.qsum, dec.x};
  const TargetWeight tw{p};
  for (int k = 0; k < kChunksPerBlock; ++k) {
    const int32_t c = static_cast<int32_t>(blockIdx.y) * kChunksPerBlock + k;
    if (c >= chunks) break;  // block-uniform
    const int64_t begin = static_cast<int64_t>(c) * kDrawChunk;
    const int64_t end = min(a.vocab, begin + kDrawChunk);
    uint64_t rs = 0, ts = 0;
    if (dec.mode == 1) {
#pragma unroll
      for (int u = 0; u < kChunkUnroll; ++u) {
        const int64_t y = begin + threadIdx.x + static_cast<int64_t>(u) * kChunkThreads;
        if (y < end) {
          rs += rw(y);
          ts += tw(y);
        }
      }
    } else {
#pragma unroll
      for (int u = 0; u < kChunkUnroll; ++u) {
        const int64_t y = begin + threadIdx.x + static_cast<int64_t>(u) * kChunkThreads;
        if (y < end) ts += tw(y);
      }
    }
    const uint64_t rsum = BlockSumU64(rs, warp_sums);
    const uint64_t tsum = BlockSumU64(ts, warp_sums);
    if (threadIdx.x == 0) sums[b * chunks + c] = ChunkSums{rsum, tsum};
  }
}

// The first id in [begin, end) whose inclusive prefix (from begin) exceeds local; -1 if none. Collective.
template <class Weight>
__device__ int32_t ScanChunk(typename BlockScanU64::TempStorage& temp, int32_t* result, int64_t begin, int64_t end,
                             uint64_t local, const Weight& weight) {
  if (threadIdx.x == 0) *result = -1;
  uint64_t base = 0;
  for (int64_t t = begin; t < end; t += kChainThreads) {
    const int64_t y = t + threadIdx.x;
    const uint64_t w = y < end ? weight(y) : 0ull;
    uint64_t incl = 0, tile = 0;
    __syncthreads();  // temp storage reuse; *result initialized
    BlockScanU64(temp).InclusiveSum(w, incl, tile);
    if (w > 0 && base + incl - w <= local && local < base + incl) *result = static_cast<int32_t>(y);
    base += tile;
    if (base > local) break;  // block-uniform
  }
  __syncthreads();
  return *result;
}

__global__ void __launch_bounds__(kChainThreads) FinalizeKernel(ChainArgs a, const Decision* decisions,
                                                                 const ChunkSums* sums, int32_t chunks,
                                                                 int32_t* accepted, int32_t* emitted,
                                                                 ChainDiag* diag) {
  __shared__ typename BlockScanU64::TempStorage temp;
  __shared__ int32_t chunk, result;
  __shared__ uint64_t local;
  const int64_t b = blockIdx.x;
  const Decision dec = decisions[b];
  int32_t* out = emitted + b * kChainEmittedStride;
  if (dec.diag.code != kChainOk) {
    if (threadIdx.x < kChainEmittedStride) out[threadIdx.x] = kInvalidToken;
    if (threadIdx.x == 0) {
      accepted[b] = -1;
      if (diag) diag[b] = dec.diag;
    }
    return;
  }
  int32_t token = dec.token;
  if (dec.mode != 0) {
    const ChunkSums s = static_cast<int32_t>(threadIdx.x) < chunks ? sums[b * chunks + threadIdx.x] : ChunkSums{0, 0};
    bool use_target = dec.mode == 2;
    uint64_t mine = use_target ? s.target : s.residual;
    uint64_t excl = 0, total = 0;
    BlockScanU64(temp).ExclusiveSum(mine, excl, total);
    if (!use_target && total == 0) {  // p == q: the residual is p itself
      use_target = true;
      mine = s.target;
      __syncthreads();
      BlockScanU64(temp).ExclusiveSum(mine, excl, total);
    }
    if (total == 0) {
      token = -1;
    } else {
      const uint64_t target = DrawTarget(dec.d, total);
      if (mine > 0 && excl <= target && target - excl < mine) {
        chunk = static_cast<int32_t>(threadIdx.x);
        local = target - excl;
      }
      __syncthreads();
      const int64_t begin = static_cast<int64_t>(chunk) * kDrawChunk;
      const int64_t end = min(a.vocab, begin + kDrawChunk);
      const float* p = DrawP(a, dec);
      token = use_target ? ScanChunk(temp, &result, begin, end, local, TargetWeight{p})
                         : ScanChunk(temp, &result, begin, end, local, ResidualWeight{p, DrawQ(a, dec), dec.qsum, dec.x});
    }
  }
  if (threadIdx.x < kChainEmittedStride) {
    const int32_t k = static_cast<int32_t>(threadIdx.x);
    out[k] = k < dec.n ? a.tokens[dec.d0 + k] : k == dec.n ? token : kInvalidToken;
  }
  if (threadIdx.x == 0) {
    accepted[b] = dec.n;
    if (diag) diag[b] = ChainDiag{};
  }
}

// One request prepared for trials: per row j the inclusive prefix of its draw weights (j < g: the residual, or
// for one-hot p itself; j == g: p), greedy tokens, draft sums, the first error.
struct Prepared {
  ChainDiag diag;
  int32_t greedy[kMaxChainDraft + 1];
  double qsum[kMaxChainDraft];
};

// Block 0 checks the rows (writes prepared->diag, greedy, qsum); then every block j builds row j's prefix.
__global__ void __launch_bounds__(kChainThreads) PrepareCheckKernel(ChainArgs a, Prepared* prepared) {
  __shared__ ChainShared sh;
  const int32_t g = ChainG(a, 0);
  if (threadIdx.x == 0) sh.diag = ChainDiag{};
  __syncthreads();
  CheckRequest(sh, a, 0, 0, g);
  if (threadIdx.x == 0) {
    prepared->diag = sh.diag;
    for (int32_t j = 0; j <= g; ++j) prepared->greedy[j] = sh.diag.code == kChainOk ? sh.greedy[j] : -1;
    for (int32_t j = 0; j < g; ++j) prepared->qsum[j] = a.q && sh.diag.code == kChainOk ? sh.qsum[j] : 1.0;
  }
}

__global__ void __launch_bounds__(kChainThreads) PreparePrefixKernel(ChainArgs a, const Prepared* prepared,
                                                                      uint64_t* prefix) {
  __shared__ ChainShared sh;
  const int32_t j = blockIdx.x;
  const int32_t g = ChainG(a, 0);
  if (prepared->diag.code != kChainOk || prepared->greedy[j] >= 0) return;
  const float* p = a.p + j * a.vocab;
  uint64_t* out = prefix + j * a.vocab;
  if (j < g && a.q != nullptr) {
    BlockPrefix(sh, a.vocab, ResidualWeight{p, a.q + j * a.vocab, prepared->qsum[j], -1}, out);
  } else {
    BlockPrefix(sh, a.vocab, TargetWeight{p}, out);  // the bonus row, or one-hot rows (x skipped at the search)
  }
}

// A second prefix for rows j < g of non-one-hot drafts: p itself, for the residual's p == q fallback.
__global__ void __launch_bounds__(kChainThreads) PrepareTargetPrefixKernel(ChainArgs a, const Prepared* prepared,
                                                                            uint64_t* prefix) {
  __shared__ ChainShared sh;
  const int32_t j = blockIdx.x;
  if (prepared->diag.code != kChainOk || prepared->greedy[j] >= 0) return;
  BlockPrefix(sh, a.vocab, TargetWeight{a.p + j * a.vocab}, prefix + j * a.vocab);
}

__global__ void TrialKernel(ChainArgs a, const Prepared* prepared, const uint64_t* prefix,
                            const uint64_t* target_prefix, const int32_t* trial_tokens, int64_t trials,
                            int32_t* accepted, int32_t* emitted, ChainDiag* diag) {
  const int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= trials) return;
  const int32_t g = ChainG(a, 0);
  int32_t* out = emitted + i * (g + 1);
  for (int32_t k = 0; k <= g; ++k) out[k] = kInvalidToken;
  if (prepared->diag.code != kChainOk) {
    accepted[i] = -1;
    if (diag) diag[i] = prepared->diag;
    return;
  }
  const double* scripted = a.scripted;
  if (scripted != nullptr && !ScriptedValid(scripted, g)) {
    accepted[i] = -1;
    if (diag) diag[i] = ChainDiag{kChainBadParams, 0, -1, 0, 0.0};
    return;
  }
  const uint64_t seed = a.seed[0];
  const uint64_t offset = a.offset[0] + static_cast<uint64_t>(i) * static_cast<uint64_t>(g + 1);
  const int32_t* tokens = trial_tokens + i * g;
  for (int32_t j = 1; j <= g; ++j) {
    const float* p = a.p + (j - 1) * a.vocab;
    const float* q = a.q ? a.q + (j - 1) * a.vocab : nullptr;
    const double qsum = prepared->qsum[j - 1];
    const int32_t x = tokens[j - 1];
    if (x < 0 || x >= a.vocab || (q != nullptr && !(q[x] > 0.0f))) {
      for (int32_t k = 0; k < j - 1; ++k) out[k] = kInvalidToken;  // an error emits nothing
      accepted[i] = -1;
      if (diag) diag[i] = ChainDiag{kChainDraftTokenImpossible, j, x, 0, 0.0};
      return;
    }
    const int32_t greedy = prepared->greedy[j - 1];
    const bool accept = greedy >= 0 ? x == greedy : Accepts(ChainCoin(seed, offset, j, scripted),
                                                             DraftProb(q, qsum, x, x), p[x]);
    if (accept) {
      out[j - 1] = x;
      continue;
    }
    int32_t token = greedy;
    if (greedy < 0) {
      const double d = ChainDraw(seed, offset, j, scripted);
      const uint64_t* row = prefix + (j - 1) * a.vocab;
      token = SearchPrefix(row, a.vocab, d, x, q == nullptr);
      if (token < 0) token = SearchPrefix(q == nullptr ? row : target_prefix + (j - 1) * a.vocab, a.vocab, d, x, false);
    }
    out[j - 1] = token;
    accepted[i] = j - 1;
    if (diag) diag[i] = ChainDiag{};
    return;
  }
  int32_t token = prepared->greedy[g];
  if (token < 0) token = SearchPrefix(prefix + g * a.vocab, a.vocab, ChainDraw(seed, offset, g + 1, scripted), -1, false);
  out[g] = token;
  accepted[i] = g;
  if (diag) diag[i] = ChainDiag{};
}

// ---- Host side -------------------------------------------------------------------------------------------------

std::string Num(double v) {
  std::ostringstream os;
  os.precision(17);
  os << v;
  return os.str();
}

Status Invalid(const std::string& message) { return {ErrorCode::kInvalidArgument, message}; }

// Stream-ordered device allocations released together (in stream order) when the scope ends.
// The chain's scratch comes from a stream-ordered pool of its own per device (created once, never destroyed) that
// keeps up to kPoolKeepBytes reserved across synchronizations: the default pool releases its memory at every
// synchronization (release threshold 0), so every call would map its scratch anew (tens of microseconds). Null
// (the default pool is used) when the pool cannot be created.
constexpr uint64_t kPoolKeepBytes = uint64_t{256} << 20;

cudaMemPool_t ChainPool() {
  static std::mutex mu;
  static std::vector<cudaMemPool_t> pools;  // by device
  int device = 0;
  if (cudaGetDevice(&device) != cudaSuccess || device < 0) return nullptr;
  std::lock_guard<std::mutex> lock(mu);
  if (pools.size() <= static_cast<size_t>(device)) pools.resize(static_cast<size_t>(device) + 1, nullptr);
  if (pools[device] == nullptr) {
    cudaMemPoolProps props{};
    props.allocType = cudaMemAllocationTypePinned;
    props.handleTypes = cudaMemHandleTypeNone;
    props.location.type = cudaMemLocationTypeDevice;
    props.location.id = device;
    cudaMemPool_t pool = nullptr;
    if (cudaMemPoolCreate(&pool, &props) != cudaSuccess) return nullptr;
    uint64_t keep = kPoolKeepBytes;
    cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &keep);
    pools[device] = pool;
  }
  return pools[device];
}

class StreamScratch {
 public:
  explicit StreamScratch(cudaStream_t stream) : stream_(stream), pool_(ChainPool()) {}
  ~StreamScratch() {
    for (void* p : ptrs_) cudaFreeAsync(p, stream_);
  }
  template <class T>
  Status Alloc(size_t n, T** out) {
    void* p = nullptr;
    const size_t bytes = std::max<size_t>(n, 1) * sizeof(T);
    Status st = CudaError(pool_ ? cudaMallocFromPoolAsync(&p, bytes, pool_, stream_) : cudaMallocAsync(&p, bytes, stream_),
                          "cudaMallocAsync(chain)");
    if (!st.ok()) return st;
    ptrs_.push_back(p);
    *out = static_cast<T*>(p);
    return Status::Ok();
  }
  template <class T>
  Status Upload(const std::vector<T>& host, T** out) {
    Status st = Alloc(host.size(), out);
    if (!st.ok()) return st;
    return CudaError(cudaMemcpyAsync(*out, host.data(), host.size() * sizeof(T), cudaMemcpyHostToDevice, stream_),
                     "cudaMemcpyAsync(chain)");
  }

 private:
  cudaStream_t stream_;
  cudaMemPool_t pool_;
  std::vector<void*> ptrs_;
};

// Per-row copies of per-request parameters (request b's value for each of its `rows_of(b)` rows).
template <class RowsOf>
SamplingParams ExpandParams(const SamplingParams& p, int64_t batch, RowsOf rows_of, int64_t total,
                            std::vector<double>* t, std::vector<int64_t>* k, std::vector<double>* tp,
                            std::vector<double>* mp) {
  SamplingParams out;
  if (!AnyPerRow(p)) {
    out = p;
    out.seed = {};
    out.offset = {};
    return out;
  }
  t->reserve(static_cast<size_t>(total));
  for (int64_t b = 0; b < batch; ++b) {
    for (int64_t r = 0; r < rows_of(b); ++r) {
      t->push_back(p.temperature.At(b));
      k->push_back(p.top_k.At(b));
      tp->push_back(p.top_p.At(b));
      mp->push_back(p.min_p.At(b));
    }
  }
  out.temperature.values = t->data();
  out.top_k.values = k->data();
  out.top_p.values = tp->data();
  out.min_p.values = mp->data();
  return out;
}

struct StagedChain {
  ChainArgs args{};
  std::vector<int64_t> layout;  // host copy of args.layout (kept alive until the upload is done)
  int64_t target_rows = 0, draft_rows = 0;
};

// tokens_in_batch: VerifyChainBatch reads batch.draft_tokens (VerifyChainRepeated takes its trials' tokens apart).
Status ValidateChain(const ChainBatch& c, Profile profile, bool tokens_in_batch) {
  if (c.batch < 1 || c.batch > kMaxBatch) {
    return Invalid("batch = " + std::to_string(c.batch) + " is outside [1, " + std::to_string(kMaxBatch) + "]");
  }
  if (c.vocab < 1 || c.vocab > kMaxVocab) {
    return Invalid("vocab = " + std::to_string(c.vocab) + " is outside [1, " + std::to_string(kMaxVocab) + "]");
  }
  for (int64_t b = 0; b < c.batch; ++b) {
    const int32_t g = c.g ? c.g[b] : c.g_scalar;
    if (g < 0 || g > kMaxChainDraft) {
      return Invalid("request " + std::to_string(b) + ": g = " + std::to_string(g) + " is outside [0, " +
                     std::to_string(kMaxChainDraft) + "]");
    }
  }
  if (c.target == nullptr) return Invalid("target is null (device rows of target logits or probabilities)");
  if (c.target_form == ChainTargetForm::kProbabilities && c.target_dtype != DType::kFloat32) {
    return Invalid("target probabilities must be fp32");
  }
  if (c.draft_form != ChainDraftForm::kOneHot && c.draft == nullptr) {
    return Invalid("draft is null; allowed: device rows for probability or logit drafts (only one-hot has none)");
  }
  if (c.draft_form == ChainDraftForm::kProbabilities && c.draft_dtype != DType::kFloat32) {
    return Invalid("draft probabilities must be fp32");
  }
  if (c.seed == nullptr || c.offset == nullptr) return Invalid("seed and offset must be device arrays of batch values");
  for (int64_t b = 0; b < c.batch; ++b) {
    const int32_t g = c.g ? c.g[b] : c.g_scalar;
    if (tokens_in_batch && g > 0 && c.draft_tokens == nullptr) return Invalid("draft_tokens is null with g > 0");
    if (c.target_form == ChainTargetForm::kLogits) {
      Status st = ValidateRowParams(RowParamsAt(c.target_params, b), profile);
      if (!st.ok()) return Invalid("request " + std::to_string(b) + ": target " + st.message);
    }
    if (c.draft_form == ChainDraftForm::kLogits) {
      Status st = ValidateRowParams(RowParamsAt(c.draft_params, b), profile);
      if (!st.ok()) return Invalid("request " + std::to_string(b) + ": draft " + st.message);
    }
  }
  return Status::Ok();
}

// Stage 1 (the processed distributions) and the argument block of stage 2.
Status Stage(const ChainBatch& c, Profile profile, cudaStream_t stream, StreamScratch& scratch, StagedChain* s) {
  const auto g_of = [&](int64_t b) { return static_cast<int64_t>(c.g ? c.g[b] : c.g_scalar); };
  // One g for every request: the kernels derive the row layout (no upload). Otherwise one upload of the layout:
  // first target rows, first draft rows, g (batch values each).
  bool uniform = true;
  for (int64_t b = 0; b < c.batch; ++b) {
    uniform &= g_of(b) == g_of(0);
    s->target_rows += g_of(b) + 1;
    s->draft_rows += g_of(b);
  }
  ChainArgs& a = s->args;
  a.vocab = c.vocab;
  a.batch = c.batch;
  a.g_scalar = static_cast<int32_t>(g_of(0));
  a.layout = nullptr;
  Status st;
  if (!uniform) {
    s->layout.resize(static_cast<size_t>(3 * c.batch));
    int64_t t0 = 0, d0 = 0;
    for (int64_t b = 0; b < c.batch; ++b) {
      s->layout[b] = t0;
      s->layout[c.batch + b] = d0;
      s->layout[2 * c.batch + b] = g_of(b);
      t0 += g_of(b) + 1;
      d0 += g_of(b);
    }
    int64_t* dev_layout = nullptr;
    if (!(st = scratch.Upload(s->layout, &dev_layout)).ok()) return st;
    a.layout = dev_layout;
  }
  a.tokens = c.draft_tokens;
  a.seed = c.seed;
  a.offset = c.offset;
  a.scripted = c.scripted;
  std::vector<double> t, tp, mp;
  std::vector<int64_t> k;
  if (c.target_form == ChainTargetForm::kProbabilities) {
    a.p = static_cast<const float*>(c.target);
    a.p_status = nullptr;
  } else {
    float* p = nullptr;
    int32_t* status = nullptr;
    if (!(st = scratch.Alloc(static_cast<size_t>(s->target_rows * c.vocab), &p)).ok()) return st;
    if (!(st = scratch.Alloc(static_cast<size_t>(s->target_rows), &status)).ok()) return st;
    LogitsBatch lb;
    lb.dtype = c.target_dtype;
    lb.data = c.target;
    lb.vocab = c.vocab;
    lb.row_stride = c.vocab;
    lb.batch = s->target_rows;
    const SamplingParams rows = ExpandParams(c.target_params, c.batch, [&](int64_t b) { return g_of(b) + 1; },
                                             s->target_rows, &t, &k, &tp, &mp);
    ProcessedOutputs po;
    po.probs = p;
    po.row_status = status;
    if (!(st = ComputeProcessedDistribution(lb, rows, profile, po, stream)).ok()) return st;
    a.p = p;
    a.p_status = status;
  }
  if (c.draft_form == ChainDraftForm::kOneHot) {
    a.q = nullptr;
    a.q_status = nullptr;
  } else if (c.draft_form == ChainDraftForm::kProbabilities) {
    a.q = static_cast<const float*>(c.draft);
    a.q_status = nullptr;
  } else if (s->draft_rows > 0) {
    float* q = nullptr;
    int32_t* status = nullptr;
    if (!(st = scratch.Alloc(static_cast<size_t>(s->draft_rows * c.vocab), &q)).ok()) return st;
    if (!(st = scratch.Alloc(static_cast<size_t>(s->draft_rows), &status)).ok()) return st;
    LogitsBatch lb;
    lb.dtype = c.draft_dtype;
    lb.data = c.draft;
    lb.vocab = c.vocab;
    lb.row_stride = c.vocab;
    lb.batch = s->draft_rows;
    std::vector<double> t2, tp2, mp2;
    std::vector<int64_t> k2;
    const SamplingParams rows = ExpandParams(c.draft_params, c.batch, g_of, s->draft_rows, &t2, &k2, &tp2, &mp2);
    ProcessedOutputs po;
    po.probs = q;
    po.row_status = status;
    if (!(st = ComputeProcessedDistribution(lb, rows, profile, po, stream)).ok()) return st;
    a.q = q;
    a.q_status = status;
  } else {
    a.q = static_cast<const float*>(c.draft);  // no draft rows: never read
    a.q_status = nullptr;
  }
  return Status::Ok();
}

}  // namespace
}  // namespace detail

std::string DescribeChainDiag(const ChainDiag& d, int64_t request, int64_t vocab) {
  const std::string prefix = "request " + std::to_string(request) + ": ";
  switch (d.code) {
    case kChainOk: return prefix + "ok";
    case kChainTargetRowInvalid:
      if (d.token >= 0) {
        return prefix + "target row " + std::to_string(d.position - 1) + ": probability of token " +
               std::to_string(d.token) + " is " + detail::Num(d.value) + "; allowed: finite, in [0, 1]";
      }
      if (d.value != 0.0) {
        return prefix + "target row " + std::to_string(d.position - 1) + ": probabilities sum to " +
               detail::Num(d.value) + "; allowed: within 0.001 of 1";
      }
      return prefix + "target row " + std::to_string(d.position - 1) +
             " cannot be sampled (a NaN logit, or every logit -inf)";
    case kChainDraftRowInvalid:
      return prefix + "draft row " + std::to_string(d.position - 1) +
             ": draft logits cannot be processed (a NaN logit, or every logit -inf)";
    case kChainDraftValueInvalid:
      return prefix + "draft row " + std::to_string(d.position - 1) + ": draft probability of token " +
             std::to_string(d.token) + " is " + detail::Num(d.value) + "; allowed: finite and >= 0";
    case kChainDraftSumInvalid:
      return prefix + "draft row " + std::to_string(d.position - 1) + ": draft probabilities sum to " +
             detail::Num(d.value) + "; allowed: within 0.001 of 1";
    case kChainDraftTokenImpossible:
      return prefix + "draft token " + std::to_string(d.token) + " at position " + std::to_string(d.position) +
             " has draft probability 0 (or is outside [0, " + std::to_string(vocab) +
             ")): the draft cannot have proposed it";
    case kChainBadParams:
      return prefix + "a scripted uniform is outside [0, 1)";
  }
  return prefix + "unknown chain code " + std::to_string(d.code);
}

Status VerifyChainBatch(const ChainBatch& c, Profile profile, const ChainOutputs& o, cudaStream_t stream) {
  if (Status st = detail::ValidateChain(c, profile, true); !st.ok()) return st;
  if (o.accepted == nullptr || o.emitted == nullptr) return detail::Invalid("outputs accepted and emitted are required");
  detail::StreamScratch scratch(stream);
  detail::StagedChain s;
  if (Status st = detail::Stage(c, profile, stream, scratch, &s); !st.ok()) return st;
  const int64_t target_rows = s.target_rows;
  const int64_t draft_rows = s.args.q != nullptr ? s.draft_rows : 0;
  const int32_t chunks = static_cast<int32_t>((c.vocab + detail::kDrawChunk - 1) / detail::kDrawChunk);
  // One scratch block: row results (target, draft), decisions, chunk sums.
  const size_t row_bytes = static_cast<size_t>(target_rows + draft_rows) * sizeof(detail::RowResult);
  const size_t dec_bytes = static_cast<size_t>(c.batch) * sizeof(detail::Decision);
  const size_t sum_bytes = static_cast<size_t>(c.batch) * static_cast<size_t>(chunks) * sizeof(detail::ChunkSums);
  const auto align = [](size_t n) { return (n + 255) & ~size_t{255}; };
  char* base = nullptr;
  if (Status st = scratch.Alloc(align(row_bytes) + align(dec_bytes) + sum_bytes, &base); !st.ok()) return st;
  auto* rows = reinterpret_cast<detail::RowResult*>(base);
  auto* decisions = reinterpret_cast<detail::Decision*>(base + align(row_bytes));
  auto* sums = reinterpret_cast<detail::ChunkSums*>(base + align(row_bytes) + align(dec_bytes));
  int device = 0, sms = 0;
  if (Status st = detail::CudaError(cudaGetDevice(&device), "cudaGetDevice"); !st.ok()) return st;
  if (Status st = detail::CudaError(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device),
                                    "cudaDeviceGetAttribute(SMs)");
      !st.ok()) {
    return st;
  }
  const unsigned row_blocks = static_cast<unsigned>(target_rows + draft_rows);
  if (target_rows + draft_rows <= sms) {
    detail::RowPassKernel<detail::kRowUnrollFew, 1><<<row_blocks, detail::kChainThreads, 0, stream>>>(
        s.args, target_rows, rows, rows + target_rows);
  } else {
    detail::RowPassKernel<detail::kRowUnrollMany, 3><<<row_blocks, detail::kChainThreads, 0, stream>>>(
        s.args, target_rows, rows, rows + target_rows);
  }
  const int32_t chunk_blocks = (chunks + detail::kChunksPerBlock - 1) / detail::kChunksPerBlock;
  detail::ChunkKernel<<<dim3(static_cast<unsigned>(c.batch), static_cast<unsigned>(chunk_blocks)),
                        detail::kChunkThreads, 0, stream>>>(s.args, rows, rows + target_rows, chunks, decisions, sums);
  detail::FinalizeKernel<<<static_cast<unsigned>(c.batch), detail::kChainThreads, 0, stream>>>(
      s.args, decisions, sums, chunks, o.accepted, o.emitted, o.diag);
  return detail::CudaError(cudaGetLastError(), "chain kernels launch");
}

Status VerifyChainRepeated(const ChainBatch& c, const int32_t* trial_tokens, int64_t trials, Profile profile,
                           const ChainTrialOutputs& o, cudaStream_t stream) {
  if (c.batch != 1) return detail::Invalid("VerifyChainRepeated takes one request (batch = 1), got " + std::to_string(c.batch));
  if (Status st = detail::ValidateChain(c, profile, false); !st.ok()) return st;
  const int32_t g = c.g ? c.g[0] : c.g_scalar;
  if (trials < 0) return detail::Invalid("trials = " + std::to_string(trials) + " is negative");
  if (trials == 0) return Status::Ok();
  if (g > 0 && trial_tokens == nullptr) return detail::Invalid("trial_tokens is null with g > 0");
  if (o.accepted == nullptr || o.emitted == nullptr) return detail::Invalid("outputs accepted and emitted are required");
  detail::StreamScratch scratch(stream);
  detail::StagedChain s;
  if (Status st = detail::Stage(c, profile, stream, scratch, &s); !st.ok()) return st;
  detail::Prepared* prepared = nullptr;
  uint64_t* prefix = nullptr;
  uint64_t* target_prefix = nullptr;
  const size_t cells = static_cast<size_t>(g + 1) * static_cast<size_t>(c.vocab);
  Status st;
  if (!(st = scratch.Alloc(1, &prepared)).ok()) return st;
  if (!(st = scratch.Alloc(cells, &prefix)).ok()) return st;
  const bool residual_rows = c.draft_form != ChainDraftForm::kOneHot && g > 0;
  if (residual_rows && !(st = scratch.Alloc(static_cast<size_t>(g) * static_cast<size_t>(c.vocab), &target_prefix)).ok()) {
    return st;
  }
  detail::PrepareCheckKernel<<<1, detail::kChainThreads, 0, stream>>>(s.args, prepared);
  detail::PreparePrefixKernel<<<static_cast<unsigned>(g + 1), detail::kChainThreads, 0, stream>>>(s.args, prepared, prefix);
  if (residual_rows) {
    detail::PrepareTargetPrefixKernel<<<static_cast<unsigned>(g), detail::kChainThreads, 0, stream>>>(s.args, prepared,
                                                                                                     target_prefix);
  }
  if (!(st = detail::CudaError(cudaGetLastError(), "chain prepare launch")).ok()) return st;
  constexpr int kTrialThreads = 256;
  const int64_t blocks = (trials + kTrialThreads - 1) / kTrialThreads;
  if (blocks > 0x7fffffff) return detail::Invalid("trials = " + std::to_string(trials) + " is too many for one launch");
  detail::TrialKernel<<<static_cast<unsigned>(blocks), kTrialThreads, 0, stream>>>(
      s.args, prepared, prefix, target_prefix, trial_tokens, trials, o.accepted, o.emitted, o.diag);
  return detail::CudaError(cudaGetLastError(), "TrialKernel launch");
}

}  // namespace samplecheck::kernels
