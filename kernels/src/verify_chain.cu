// Chain speculative sampling verification (verify_chain.h; docs/kernels.md "Chain verifier").
//
// Two stages, both stream-ordered on the caller's stream:
//  1. The processed distributions: ComputeProcessedDistribution (the planner SampleFromLogits draws with, so the
//     kept sets and the greedy rule are the sampler's) over all target rows of the batch with each request's
//     parameters, and over the draft logits rows with the draft's (kLogits). Target probabilities
//     (kProbabilities) are taken as given. Result: fp32 p rows (and q rows) plus each row's RowStatus.
//  2. The chain, three launches (the section "VerifyChainBatch: three launches" below), reading only what the
//     decisions need:
//     DecideKernel, one block per request: the row statuses, then positions j = 1..g (one lane each): x_j,
//     p_j(x_j), q_j(x_j), coin u_j (words 2, 3 of Philox block offset + j - 1, or the scripted slot), accept iff
//     u_j * q_j(x_j) < p_j(x_j) with q normalized by its row's sum; a whole row is read only when a decision needs
//     it (the sum of the rejected position's draft row, a draft row whose coin lies within q's normalization band,
//     a greedy row's token); the first rejection draws with d_j (words 0, 1 of the same block, the uniform
//     SampleFromLogits uses at that counter) from max(0, p_j - q_j); all accepted: d_{g+1} from p_{g+1};
//     ChunkKernel, blocks over (request, chunk of ids): the 2^-52 fixed-point weights of their chunk of the one row
//     drawn from (coalesced), and the check of that row when it is target probabilities given directly;
//     FinalizeKernel, one block per request: the exclusive scan of the chunk sums locates the chunk holding
//     DrawTarget(d, S), a tiled block scan of that chunk finds the token: the first id whose inclusive prefix
//     exceeds DrawTarget(d, S) (philox_uniform.cuh). Integer sums are associative: the same token as any order.
//     Every value read is checked; a row that is not read is not (docs/kernels.md "What the verifier reads").
// VerifyChainRepeated prepares one request's rows once (PrepareKernel: the same row checks and weights, written as
// inclusive prefix arrays) and then runs one thread per trial (TrialKernel: binary searches of the same prefixes),
// so a trial's tokens equal VerifyChainBatch's for that trial alone (valid inputs: the trial path checks every row).
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

// ---- VerifyChainBatch: three launches, reading only what the decisions need -------------------------------------
//  DecideKernel   one 512-thread block per request: warp 0 walks the positions (one lane each) from the row
//                 statuses, p_j(x_j), q_j(x_j) and the coins; the block reads a whole row only where a decision needs
//                 it: a draft row's sum when a coin lies so close to p/q that q's normalization could move it (the
//                 band of DecideLane), the draft row of the rejected position (q is normalized by its sum), a greedy
//                 target row's token. Those sums are computed exactly as CheckDraftRow does (the same per-thread order
//                 and block reduction), so every decision equals the trial path's (VerifyChainRepeated).
//  ChunkKernel    (request, chunk of kDrawChunk ids): sums the fixed-point weights (residual and target) of its chunk
//                 of the one row drawn from, coalesced; target probabilities given directly are checked there (values
//                 and the row's sum).
//  FinalizeKernel one block per request: the chunk sums' exclusive scan locates the chunk holding DrawTarget(d, S),
//                 a tiled block scan of that chunk alone finds the token; writes accepted, emitted and diag.
// Integer sums are associative, so the token (the first id whose inclusive prefix exceeds DrawTarget(d, S)) is the
// one BlockDraw / SearchPrefix find. What is not read is not checked (docs/kernels.md "What the verifier reads").

// Loads in flight per thread in a row pass: 32 when every request has an SM of its own (one block per SM, 128
// registers), 16 otherwise (three blocks per SM, which the bandwidth needs more). The per-thread order of the sums
// is the same for both.
constexpr int kRowUnrollFew = 32;
constexpr int kRowUnrollMany = 16;
constexpr unsigned kFullMask = 0xffffffffu;

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

struct PositiveProb {
  __device__ bool operator()(float v) const { return v > 0.0f; }
};
struct BadDraftProb {
  __device__ bool operator()(float v) const { return !(v >= 0.0f && v <= 3.4028234663852886e38f); }
};

// A request's outcome before its draw.
struct Decision {
  ChainDiag diag;   // code != kChainOk: the error (nothing is emitted)
  int64_t t0, d0;   // first target row, first draft row
  int32_t n;        // tokens accepted; the emitted token comes from position row n (target row t0 + n)
  int32_t token;    // the emitted token when known without a draw (greedy), else -1
  int32_t mode;     // 0: no draw; 1: residual draw (falling back to p when the residual is 0); 2: draw from p
  int32_t x;        // the rejected draft token (one-hot residual)
  int32_t check_p;  // 1: the draw row is target probabilities given directly: the chunk pass checks it
  int32_t pad;
  double qsum;      // q's sum at row n (1 for one-hot)
  double d;         // the draw uniform
};

// What a lane concludes about its position.
enum LaneState : int32_t {
  kLaneAccept = 0,      // accepted (or no position: lane >= g)
  kLaneReject = 1,      // rejected: the chain stops here and draws (or emits the greedy token)
  kLaneError = 2,       // a value read at this position is invalid, or the draft token is impossible
  kLaneNeedGreedy = 3,  // the target row is greedy and its token is not known yet
  kLaneNeedSum = 4,     // the coin lies in q's normalization band and the draft row's sum is not known yet
};

// Block work the walk asks for.
enum DecideAction : int32_t { kActDone = 0, kActGreedy = 1, kActDraftSum = 2 };

struct DecideShared {
  typename BlockSumD::TempStorage reduce;
  int32_t min_token;
  int32_t action;
  int32_t action_row;
  int32_t greedy[kMaxChainDraft + 1];  // -2: not known yet; else the greedy token (first id with p > 0) or -1
  double qsum[kMaxChainDraft];         // 0: not known yet (a valid row sums to within 1e-3 of 1)
  ChainDiag row_error;                 // an error found by a row pass of the block
  Decision dec;
};

// The first id with p > 0 of a processed greedy target row (-1 when none), as CheckTargetRow finds it. Collective.
template <int kRowUnroll>
__device__ int32_t BlockGreedyToken(DecideShared& sh, const float* p, int64_t vocab) {
  if (threadIdx.x == 0) sh.min_token = INT32_MAX;
  __syncthreads();
  int32_t fb = INT32_MAX;
  StridedRowPass<kRowUnroll>(p, vocab, PositiveProb{}, &fb);
  if (fb != INT32_MAX) atomicMin(&sh.min_token, fb);
  __syncthreads();
  const int32_t token = sh.min_token;
  __syncthreads();  // min_token is reused by the next pass
  return token == INT32_MAX ? -1 : token;
}

// Draft row j's check and sum, exactly as CheckDraftRow (and the trial path) computes them: the sum into
// sh.qsum[j], or the error into sh.row_error. Collective; returns whether the row is valid.
template <int kRowUnroll>
__device__ bool BlockDraftSum(DecideShared& sh, const float* q, int64_t vocab, int32_t j) {
  if (threadIdx.x == 0) sh.min_token = INT32_MAX;
  __syncthreads();
  int32_t fb = INT32_MAX;
  const double sum = StridedRowPass<kRowUnroll>(q, vocab, BadDraftProb{}, &fb);
  if (fb != INT32_MAX) atomicMin(&sh.min_token, fb);
  __syncthreads();
  const int32_t bad = sh.min_token;
  const double total = BlockSumD(sh.reduce).Sum(sum);  // valid in thread 0
  if (threadIdx.x == 0) {
    sh.row_error = ChainDiag{};
    if (bad != INT32_MAX) {
      sh.row_error = ChainDiag{kChainDraftValueInvalid, j + 1, bad, 0, static_cast<double>(q[bad])};
    } else if (!(fabs(total - 1.0) <= kDraftSumTol)) {
      sh.row_error = ChainDiag{kChainDraftSumInvalid, j + 1, -1, 0, total};
    } else {
      sh.qsum[j] = total;
    }
  }
  __syncthreads();
  return sh.row_error.code == kChainOk;
}

// Lane `lane`'s position j = lane + 1 with what the block has learnt so far (greedy tokens, draft sums). *diag: the
// error of kLaneError; *token: x_j, or the greedy token of a greedy row; *qsum: q's sum when known (1 for one-hot).
// Reads x_j, p_j(x_j), q_j(x_j) and the row statuses only.
//
// q's normalization band: the reference accepts iff u * (q(x) / qsum) < p(x) with qsum the draft row's sum, which a
// valid row holds within kDraftSumTol of 1. With a = u q(x), the decision is known without the sum when
// a / (1 - tol) < p(x) (accept for every valid sum) or a / (1 + tol) >= p(x) (reject for every valid sum); the
// margins of 1e-9 dwarf the rounding of the double divisions. Between the two the row is read (kLaneNeedSum).
__device__ LaneState DecideLane(const ChainArgs& a, const DecideShared& sh, int64_t b, int32_t g, int64_t t0,
                                int64_t d0, const double* scripted, int lane, ChainDiag* diag, int32_t* token,
                                double* qsum) {
  if (lane >= g) return kLaneAccept;
  const int32_t j = lane + 1;
  const int32_t x = a.tokens[d0 + lane];
  *token = x;
  *qsum = 1.0;
  if (x < 0 || x >= a.vocab) {
    *diag = ChainDiag{kChainDraftTokenImpossible, j, x, 0, 0.0};
    return kLaneError;
  }
  const float px = a.p[(t0 + lane) * a.vocab + x];
  if (a.p_status == nullptr && !(px >= 0.0f && px <= 1.0f)) {
    *diag = ChainDiag{kChainTargetRowInvalid, j, x, 0, static_cast<double>(px)};
    return kLaneError;
  }
  float qx = 1.0f;
  if (a.q != nullptr) {
    qx = a.q[(d0 + lane) * a.vocab + x];
    if (a.q_status == nullptr && !(qx >= 0.0f && qx <= 3.4028234663852886e38f)) {
      *diag = ChainDiag{kChainDraftValueInvalid, j, x, 0, static_cast<double>(qx)};
      return kLaneError;
    }
    if (!(qx > 0.0f)) {
      *diag = ChainDiag{kChainDraftTokenImpossible, j, x, 0, 0.0};
      return kLaneError;
    }
  }
  if (a.p_status != nullptr && a.p_status[t0 + lane] == kRowGreedy) {
    const int32_t greedy = sh.greedy[lane];
    if (greedy == -2) return kLaneNeedGreedy;
    if (greedy >= 0) {
      *token = greedy;
      return x == greedy ? kLaneAccept : kLaneReject;
    }
  }
  const double u = ChainCoin(a.seed[b], a.offset[b], j, scripted);
  if (a.q == nullptr) return Accepts(u, 1.0, px) ? kLaneAccept : kLaneReject;
  if (sh.qsum[lane] > 0.0) {
    *qsum = sh.qsum[lane];
    return Accepts(u, DraftProb(a.q + (d0 + lane) * a.vocab, *qsum, x, x), px) ? kLaneAccept : kLaneReject;
  }
  const double scaled = u * static_cast<double>(qx);
  if (scaled / (1.0 - kDraftSumTol) * (1.0 + 1e-9) < static_cast<double>(px)) return kLaneAccept;
  if (scaled / (1.0 + kDraftSumTol) * (1.0 - 1e-9) >= static_cast<double>(px)) return kLaneReject;
  return kLaneNeedSum;
}

// One block per request: the decision (Decision, in decisions[b]). Whole block.
template <int kRowUnroll, int kMinBlocks>
__global__ void __launch_bounds__(kChainThreads, kMinBlocks) DecideKernel(ChainArgs a, Decision* decisions) {
  __shared__ DecideShared sh;
  const int64_t b = blockIdx.x;
  const int lane = static_cast<int>(threadIdx.x);  // warp 0 walks the positions
  const int32_t g = ChainG(a, b);
  const int64_t t0 = TargetRow0(a, b), d0 = DraftRow0(a, b);
  const double* scripted = a.scripted ? a.scripted + b * kChainScriptedStride : nullptr;
  if (lane <= kMaxChainDraft) {
    sh.greedy[lane] = -2;
    if (lane < kMaxChainDraft) sh.qsum[lane] = 0.0;
  }
  if (threadIdx.x == 0) {
    Decision& r = sh.dec;
    r.diag = ChainDiag{};
    r.t0 = t0;
    r.d0 = d0;
    r.n = 0;
    r.token = -1;
    r.mode = 0;
    r.x = -1;
    r.check_p = a.p_status == nullptr ? 1 : 0;
    r.pad = 0;
    r.qsum = 1.0;
    r.d = 0.0;
    sh.action = kActDone;
  }
  __syncthreads();
  // Scripted uniforms, then the row statuses in the reference's order (target rows 0..g, then draft rows 0..g-1):
  // a processed row that cannot be sampled is known from its status alone.
  if (threadIdx.x < 32) {
    bool bad = false;
    if (scripted != nullptr) {
      for (int i = lane; i < 2 * (g + 1); i += 32) bad |= !(scripted[i] >= 0.0 && scripted[i] < 1.0);
    }
    if (__any_sync(kFullMask, bad)) {
      if (lane == 0) sh.dec.diag = ChainDiag{kChainBadParams, 0, -1, 0, 0.0};
    } else {
      auto invalid = [](const int32_t* status, int64_t row) {
        return status != nullptr && status[row] != kRowSampled && status[row] != kRowGreedy;
      };
      const unsigned mt = __ballot_sync(kFullMask, lane <= g && invalid(a.p_status, t0 + lane));
      const unsigned md = a.q != nullptr ? __ballot_sync(kFullMask, lane < g && invalid(a.q_status, d0 + lane)) : 0u;
      if (lane == 0 && mt != 0) {
        sh.dec.diag = ChainDiag{kChainTargetRowInvalid, __ffs(static_cast<int>(mt)), -1, 0, 0.0};
      } else if (lane == 0 && md != 0) {
        sh.dec.diag = ChainDiag{kChainDraftRowInvalid, __ffs(static_cast<int>(md)), -1, 0, 0.0};
      }
    }
  }
  __syncthreads();
  // The walk: warp 0 evaluates every position; the first that is not accepted ends it, unless it needs a row the
  // block has not read yet, which the whole block then reads before the walk is evaluated again (at most g + 1
  // rounds: each round learns one row).
  for (;;) {
    const bool failed = sh.dec.diag.code != kChainOk;
    __syncthreads();  // every thread has read diag before warp 0 or the block work may write it
    if (failed) break;
    if (threadIdx.x < 32) {
      ChainDiag diag{};
      int32_t token = -1;
      double qsum = 1.0;
      const LaneState state = DecideLane(a, sh, b, g, t0, d0, scripted, lane, &diag, &token, &qsum);
      const unsigned stop = __ballot_sync(kFullMask, state != kLaneAccept);
      const int first = stop != 0 ? __ffs(static_cast<int>(stop)) - 1 : -1;
      if (first < 0) {  // every position accepted: the bonus row
        if (lane == 0) {
          Decision& r = sh.dec;
          r.n = g;
          const bool greedy = a.p_status != nullptr && a.p_status[t0 + g] == kRowGreedy;
          if (greedy && sh.greedy[g] == -2) {
            sh.action = kActGreedy;
            sh.action_row = g;
          } else {
            r.token = greedy ? sh.greedy[g] : -1;
            if (r.token < 0) {
              r.mode = 2;
              r.d = ChainDraw(a.seed[b], a.offset[b], g + 1, scripted);
            }
            sh.action = kActDone;
          }
        }
      } else if (lane == first) {
        Decision& r = sh.dec;
        sh.action = kActDone;
        if (state == kLaneError) {
          r.diag = diag;
        } else if (state == kLaneNeedGreedy) {
          sh.action = kActGreedy;
          sh.action_row = lane;
        } else if (state == kLaneNeedSum) {
          sh.action = kActDraftSum;
          sh.action_row = lane;
        } else {  // rejected
          r.n = lane;
          const bool greedy = a.p_status != nullptr && a.p_status[t0 + lane] == kRowGreedy && sh.greedy[lane] >= 0;
          r.token = greedy ? token : -1;
          if (!greedy) {
            r.mode = 1;
            r.x = token;
            r.d = ChainDraw(a.seed[b], a.offset[b], lane + 1, scripted);
            if (a.q != nullptr && !(sh.qsum[lane] > 0.0)) {  // the residual needs q's sum: read the row
              sh.action = kActDraftSum;
              sh.action_row = lane;
            } else {
              r.qsum = a.q != nullptr ? sh.qsum[lane] : 1.0;
            }
          }
        }
      }
    }
    __syncthreads();
    const int32_t action = sh.action;
    const int32_t row = sh.action_row;
    if (action == kActDone) break;
    if (action == kActGreedy) {
      const int32_t token = BlockGreedyToken<kRowUnroll>(sh, a.p + (t0 + row) * a.vocab, a.vocab);
      if (threadIdx.x == 0) sh.greedy[row] = token;
    } else if (!BlockDraftSum<kRowUnroll>(sh, a.q + (d0 + row) * a.vocab, a.vocab, row)) {
      if (threadIdx.x == 0) sh.dec.diag = sh.row_error;
    } else if (threadIdx.x == 0 && sh.dec.mode == 1) {
      sh.dec.qsum = sh.qsum[row];  // the rejected position's sum: the decision is complete
      sh.action = kActDone;
    }
    __syncthreads();
    const bool complete = sh.dec.mode == 1 && sh.action == kActDone;
    __syncthreads();  // every thread has read action before thread 0 resets it
    if (complete) break;
    if (threadIdx.x == 0) sh.action = kActDone;
    __syncthreads();
  }
  if (threadIdx.x == 0) decisions[b] = sh.dec;
}

// The draw row of a decision: p at row n; q (null for one-hot) for the residual.
__device__ __forceinline__ const float* DrawP(const ChainArgs& a, const Decision& d) {
  return a.p + (d.t0 + d.n) * a.vocab;
}
__device__ __forceinline__ const float* DrawQ(const ChainArgs& a, const Decision& d) {
  return a.q ? a.q + (d.d0 + d.n) * a.vocab : nullptr;
}

struct ChunkSums {
  uint64_t residual;
  uint64_t target;
  double psum;      // check_p: the sum of the chunk's target probabilities (a fixed-order block sum)
  int32_t bad;      // check_p: the lowest id of the chunk whose target probability is not in [0, 1], or INT32_MAX
  int32_t pad;
};

constexpr int kChunkThreads = 256;
constexpr int64_t kDrawChunk = 2048;  // ids per chunk: ceil(kMaxVocab / 2048) = 512 chunks at most
static_assert((kMaxVocab + kDrawChunk - 1) / kDrawChunk <= kChainThreads, "FinalizeKernel scans the chunks in one pass");
constexpr int kChunkUnroll = kDrawChunk / kChunkThreads;  // 8 ids per thread and chunk
constexpr int kChunksPerBlock = 4;

using ChunkSumD = cub::BlockReduce<double, kChunkThreads>;

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

// Grid (batch, ceil(chunks / kChunksPerBlock)): block (b, y) sums chunks y * kChunksPerBlock ... of request b's
// draw row (nothing when the decision draws nothing).
__global__ void __launch_bounds__(kChunkThreads) ChunkKernel(ChainArgs a, const Decision* decisions, int32_t chunks,
                                                              ChunkSums* sums) {
  __shared__ uint64_t warp_sums[kChunkThreads / 32];
  __shared__ typename ChunkSumD::TempStorage dsum;
  __shared__ int32_t bad_id;
  const int64_t b = blockIdx.x;
  const Decision& dec = decisions[b];
  const int32_t code = dec.diag.code;
  const int32_t mode = dec.mode;
  if (code != kChainOk || mode == 0) return;
  const bool check_p = dec.check_p != 0;
  const float* p = DrawP(a, dec);
  const ResidualWeight rw{p, DrawQ(a, dec), dec.qsum, dec.x};
  for (int k = 0; k < kChunksPerBlock; ++k) {
    const int32_t c = static_cast<int32_t>(blockIdx.y) * kChunksPerBlock + k;
    if (c >= chunks) break;  // block-uniform
    const int64_t begin = static_cast<int64_t>(c) * kDrawChunk;
    const int64_t end = min(a.vocab, begin + kDrawChunk);
    uint64_t rs = 0, ts = 0;
    double ps = 0.0;
    int32_t bad = INT32_MAX;
#pragma unroll
    for (int u = 0; u < kChunkUnroll; ++u) {
      const int64_t y = begin + threadIdx.x + static_cast<int64_t>(u) * kChunkThreads;
      if (y < end) {
        const float v = p[y];
        if (check_p && !(v >= 0.0f && v <= 1.0f)) {
          bad = min(bad, static_cast<int32_t>(y));
        } else {
          ps += v;
          ts += FixedWeight(static_cast<double>(v));
          if (mode == 1) rs += rw(y);
        }
      }
    }
    if (threadIdx.x == 0) bad_id = INT32_MAX;
    const uint64_t rsum = BlockSumU64(rs, warp_sums);  // its barriers order bad_id's reset before the atomics
    if (bad != INT32_MAX) atomicMin(&bad_id, bad);
    const uint64_t tsum = BlockSumU64(ts, warp_sums);
    double psum = 0.0;
    if (check_p) psum = ChunkSumD(dsum).Sum(ps);
    __syncthreads();
    if (threadIdx.x == 0) sums[b * chunks + c] = ChunkSums{rsum, tsum, psum, bad_id, 0};
    __syncthreads();  // dsum and bad_id reuse
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

using FinalSumD = cub::BlockReduce<double, kChainThreads>;

__global__ void __launch_bounds__(kChainThreads) FinalizeKernel(ChainArgs a, const Decision* decisions,
                                                                 const ChunkSums* sums, int32_t chunks,
                                                                 int32_t* accepted, int32_t* emitted,
                                                                 ChainDiag* diag) {
  __shared__ typename BlockScanU64::TempStorage temp;
  __shared__ typename FinalSumD::TempStorage dsum;
  __shared__ int32_t chunk, result, bad_id;
  __shared__ uint64_t local;
  __shared__ ChainDiag row_error;
  const int64_t b = blockIdx.x;
  const Decision dec = decisions[b];
  int32_t* out = emitted + b * kChainEmittedStride;
  ChainDiag error = dec.diag;
  if (error.code == kChainOk && dec.mode != 0 && dec.check_p != 0) {
    // Target probabilities given directly: the draw row is read whole, so it is checked (the first bad value in
    // id order, else the sum within 1e-3 of 1) before anything is drawn from it.
    const ChunkSums s = static_cast<int32_t>(threadIdx.x) < chunks ? sums[b * chunks + threadIdx.x]
                                                                     : ChunkSums{0, 0, 0.0, INT32_MAX, 0};
    if (threadIdx.x == 0) bad_id = INT32_MAX;
    __syncthreads();
    if (s.bad != INT32_MAX) atomicMin(&bad_id, s.bad);
    const double total = FinalSumD(dsum).Sum(s.psum);  // chunk order: one fixed reduction
    __syncthreads();
    if (threadIdx.x == 0) {
      row_error = ChainDiag{};
      const float* p = DrawP(a, dec);
      if (bad_id != INT32_MAX) {
        row_error = ChainDiag{kChainTargetRowInvalid, dec.n + 1, bad_id, 0, static_cast<double>(p[bad_id])};
      } else if (!(fabs(total - 1.0) <= kDraftSumTol)) {
        row_error = ChainDiag{kChainTargetRowInvalid, dec.n + 1, -1, 0, total};
      }
    }
    __syncthreads();
    error = row_error;
  }
  if (error.code != kChainOk) {
    if (threadIdx.x < kChainEmittedStride) out[threadIdx.x] = kInvalidToken;
    if (threadIdx.x == 0) {
      accepted[b] = -1;
      if (diag) diag[b] = error;
    }
    return;
  }
  int32_t token = dec.token;
  if (dec.mode != 0) {
    const ChunkSums s = static_cast<int32_t>(threadIdx.x) < chunks ? sums[b * chunks + threadIdx.x]
                                                                     : ChunkSums{0, 0, 0.0, INT32_MAX, 0};
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
  const int32_t chunks = static_cast<int32_t>((c.vocab + detail::kDrawChunk - 1) / detail::kDrawChunk);
  // One scratch block: decisions, chunk sums.
  const size_t dec_bytes = static_cast<size_t>(c.batch) * sizeof(detail::Decision);
  const size_t sum_bytes = static_cast<size_t>(c.batch) * static_cast<size_t>(chunks) * sizeof(detail::ChunkSums);
  const auto align = [](size_t n) { return (n + 255) & ~size_t{255}; };
  char* base = nullptr;
  if (Status st = scratch.Alloc(align(dec_bytes) + sum_bytes, &base); !st.ok()) return st;
  auto* decisions = reinterpret_cast<detail::Decision*>(base);
  auto* sums = reinterpret_cast<detail::ChunkSums*>(base + align(dec_bytes));
  int device = 0, sms = 0;
  if (Status st = detail::CudaError(cudaGetDevice(&device), "cudaGetDevice"); !st.ok()) return st;
  if (Status st = detail::CudaError(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device),
                                    "cudaDeviceGetAttribute(SMs)");
      !st.ok()) {
    return st;
  }
  const unsigned requests = static_cast<unsigned>(c.batch);
  if (c.batch <= sms) {
    detail::DecideKernel<detail::kRowUnrollFew, 1><<<requests, detail::kChainThreads, 0, stream>>>(s.args, decisions);
  } else {
    detail::DecideKernel<detail::kRowUnrollMany, 3><<<requests, detail::kChainThreads, 0, stream>>>(s.args, decisions);
  }
  const int32_t chunk_blocks = (chunks + detail::kChunksPerBlock - 1) / detail::kChunksPerBlock;
  detail::ChunkKernel<<<dim3(requests, static_cast<unsigned>(chunk_blocks)), detail::kChunkThreads, 0, stream>>>(
      s.args, decisions, chunks, sums);
  detail::FinalizeKernel<<<requests, detail::kChainThreads, 0, stream>>>(s.args, decisions, sums, chunks, o.accepted,
                                                                        o.emitted, o.diag);
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
