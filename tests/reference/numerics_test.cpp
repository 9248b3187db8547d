// The numerics model of every profile (reference/numerics.h, docs/semantics.md "Numerics model") against fp32
// implementations of each profile's declared sums.
//
// - FlashInfer's near-flat case of issue 15: on a near-uniform row (logits ~ N(0, 1e-3^2), V = 65536 and 128256,
//   top_p = 0.5), the tokens an fp32 FlashInfer keeps past the exact boundary (measured on an H100 at 170 and 301
//   ulps) are ambiguous under flashinfer-joint, and a token far beyond the model's margin is not.
// - A simulation: each profile's fp32 pipeline (softmax normalizer, exp error, the declared summation shape of the
//   top-p mass, the declared order: logits or fp32 probabilities, pivot or position) on many near-flat rows with
//   V up to 262144 and on peaked rows; every decision it takes differently from the exact reference is one the
//   reference calls ambiguous, and the worst observed deviation is stated against the model's margin. The
//   project's own kernels (exact fixed-point sums) are simulated under vllm and hf.
// - A plain sequential fp32 cumsum on near-flat rows is measured against the probabilistic bound lambda sqrt(n) u
//   (Higham and Mary 2019): it goes far past it, which is why the model is the rigorous bound on the engine's
//   actual summation depth.
// - Small and peaked rows keep the fixed 64-ulp floor.
#include "samplecheck/reference/numerics.h"
#include "samplecheck/core/splitmix.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <limits>
#include <map>
#include <string>
#include <vector>

#include "samplecheck/reference/distribution.h"
#include "test_rows.h"

namespace samplecheck {
namespace {

using testing::Describe;

const Profile& P(std::string_view name) {
  const Profile* profile = FindProfile(name);
  EXPECT_NE(profile, nullptr) << name;
  return *profile;
}

ProcessedDistribution Compute(const std::vector<float>& logits, const SamplingParams& params, const Profile& profile) {
  Result<ProcessedDistribution> result = ComputeDistribution(LogitsView::Fp32(logits), params, profile);
  EXPECT_TRUE(result.ok()) << Describe(params, profile.name) << ": " << (result.ok() ? "" : result.error().ToString());
  return result.ok() ? *result : ProcessedDistribution{};
}

SamplingParams TopP(double top_p) {
  SamplingParams params;
  params.top_p = top_p;
  return params;
}

// --- Deterministic rows ------------------------------------------------------------------------------------------

double Uniform(uint64_t& state) { return (static_cast<double>(SplitMix64Next(state) >> 11) + 0.5) * 0x1p-53; }

// logits ~ N(0, sigma^2) (Box-Muller), the campaign's near_flat row kind with sigma = 1e-3.
std::vector<float> GaussianRow(int64_t vocab, double sigma, uint64_t seed) {
  uint64_t state = seed * 0x2545F4914F6CDD1DULL + 0x1234567ULL;
  std::vector<float> row(static_cast<size_t>(vocab));
  for (int64_t i = 0; i < vocab; i += 2) {
    const double r = std::sqrt(-2.0 * std::log(Uniform(state)));
    const double a = 2.0 * 3.14159265358979323846 * Uniform(state);
    row[i] = static_cast<float>(sigma * r * std::cos(a));
    if (i + 1 < vocab) row[i + 1] = static_cast<float>(sigma * r * std::sin(a));
  }
  return row;
}

// --- fp32 summation shapes of the engines (docs/semantics.md cites each) -----------------------------------------

enum class Shape {
  kSequential,       // one fp32 accumulator
  kTorchSoftmax,     // cunn_SoftMaxForward: 1024 threads x ILP 4 strided, per-thread sequence, warp trees
  kTorchCpuSoftmax,  // vec::reduce_all: 8 lanes (i % 8), per-lane sequence, 3-level horizontal tree
  kFlashinferBlock,  // 1024 threads x VEC 4 strided, per-thread sequence, warp shuffle tree, warp totals in sequence
  kTritonTiles,      // tl.sum pairwise tree over tiles of 8192, tiles in sequence (fp64 across tiles for the mass)
};

float WarpTree(float* lane) {  // __shfl_down: lane k += lane k + s, s = 16 .. 1
  for (int s = 16; s >= 1; s /= 2) {
    for (int k = 0; k < s; ++k) lane[k] = lane[k] + lane[k + s];
  }
  return lane[0];
}

float PairwiseTree(std::vector<float> v) {  // Triton tl.sum: a balanced tree over a power-of-two tile
  size_t n = 1;
  while (n < v.size()) n *= 2;
  v.resize(n, 0.0f);
  for (size_t s = n / 2; s >= 1; s /= 2) {
    for (size_t k = 0; k < s; ++k) v[k] = v[k] + v[k + s];
  }
  return v[0];
}

// The fp32 sum of `values` (in token-id order) in the engine's shape.
double Reduce(const std::vector<float>& values, Shape shape) {
  const size_t n = values.size();
  switch (shape) {
    case Shape::kSequential: {
      float s = 0.0f;
      for (float v : values) s += v;
      return s;
    }
    case Shape::kTorchSoftmax:
    case Shape::kFlashinferBlock: {
      constexpr int kThreads = 1024;
      constexpr int kVec = 4;
      std::vector<float> thread(kThreads, 0.0f);
      for (size_t i = 0; i < n; ++i) thread[(i / kVec) % kThreads] += values[i];
      float warp_totals[32];
      for (int w = 0; w < 32; ++w) warp_totals[w] = WarpTree(&thread[w * 32]);
      if (shape == Shape::kTorchSoftmax) return WarpTree(warp_totals);
      float total = warp_totals[0];
      for (int w = 1; w < 32; ++w) total += warp_totals[w];
      return total;
    }
    case Shape::kTorchCpuSoftmax: {
      float lane[8] = {};
      for (size_t i = 0; i < n; ++i) lane[i % 8] += values[i];
      for (int s = 4; s >= 1; s /= 2) {
        for (int k = 0; k < s; ++k) lane[k] = lane[k] + lane[k + s];
      }
      return lane[0];
    }
    case Shape::kTritonTiles: {
      constexpr size_t kTile = 8192;
      double total = 0.0;  // the mass above a pivot accumulates the fp32 tile sums in fp64
      for (size_t b = 0; b < n; b += kTile) {
        total += PairwiseTree(std::vector<float>(values.begin() + b, values.begin() + std::min(n, b + kTile)));
      }
      return total;
    }
  }
  return 0.0;
}

// Inclusive prefix sums in the order given: sequential, or torch.cumsum's CUDA tile scan (ScanUtils.cuh
// tensor_kernel_scan_innermost_dim: tiles of `tile`, Sklansky inside, the previous tiles' total added to the first
// element), or (tile 0) the CPU's double accumulator.
std::vector<float> Scan(const std::vector<float>& values, int tile) {
  std::vector<float> out(values.size());
  if (tile == 0) {  // the CPU cumsum: a double accumulator, each output rounded to fp32
    double s = 0.0;
    for (size_t i = 0; i < values.size(); ++i) out[i] = static_cast<float>(s += values[i]);
    return out;
  }
  if (tile <= 1) {
    float s = 0.0f;
    for (size_t i = 0; i < values.size(); ++i) out[i] = s += values[i];
    return out;
  }
  int levels = 0;
  while ((1 << levels) < tile) ++levels;
  float carry = 0.0f;
  std::vector<float> buf(static_cast<size_t>(tile));
  for (size_t b = 0; b < values.size(); b += static_cast<size_t>(tile)) {
    for (int i = 0; i < tile; ++i) buf[i] = b + i < values.size() ? values[b + i] : 0.0f;
    buf[0] = buf[0] + carry;
    const int half = tile / 2;
    for (int m = 0; m < levels; ++m) {
      const int s = 1 << m;
      for (int t = 0; t < half; ++t) {
        const int a = ((t >> m) << (m + 1)) | s;
        buf[a + (t % s)] = buf[a + (t % s)] + buf[a - 1];
      }
    }
    for (int i = 0; i < tile && b + i < values.size(); ++i) out[b + i] = buf[i];
    carry = buf[tile - 1];
  }
  return out;
}

// --- One profile's fp32 pipeline ---------------------------------------------------------------------------------

enum class Rule {
  kAscendingCumsum,   // vllm, hf: sort by logits ascending, cumsum, drop cumsum <= 1 - top_p (the last kept)
  kDescendingCumsum,  // trtllm-torch, trtllm-cuda, sglang-torch: sort descending, keep iff cumsum above < / <= p
  kPivot,             // FlashInfer (and Triton): keep iff the mass of probabilities > this token's < top_p
  kFixedPointKernel,  // this project's kernels: exact 2^-42 fixed-point sums in logit order, double comparison
};

struct Fp32Pipeline {
  std::string name;    // what it simulates
  std::string profile;
  Shape normalizer;
  Rule rule;
  Shape mass = Shape::kSequential;  // kPivot: the shape of the mass-above reduction
  int scan_tile = 1;                // cumsum rules: 1 = sequential, 0 = in double, else torch's tile scan
  bool orders_by_probs = false;     // sort key: fp32 probabilities (else the logits)
  double pivot_tolerance = 0.0;     // the search keeps tokens this far (relative) below the pivot value
};

// exp as an fp32 library computes it: the exact value of the fp32 argument, rounded, then moved by a deterministic
// pseudo-random -1, 0 or +1 ulp (within 1.5 ulps of the exact value; CUDA expf is within 2).
float EngineExp(float z, uint64_t& state) {
  const float e = static_cast<float>(std::exp(static_cast<double>(z)));
  switch (SplitMix64Next(state) % 3) {
    case 0:
      return std::nextafter(e, 0.0f);
    case 1:
      return std::nextafter(e, 2.0f);
    default:
      return e;
  }
}

// The tokens the pipeline keeps (a mask over the vocabulary).
std::vector<char> RunPipeline(const Fp32Pipeline& pipe, const std::vector<float>& logits, double top_p_double,
                              uint64_t seed) {
  const size_t n = logits.size();
  const float top_p = static_cast<float>(top_p_double);
  const float max_logit = *std::max_element(logits.begin(), logits.end());
  uint64_t state = seed ^ 0xE4F1ULL;
  std::vector<char> kept(n, 0);

  if (pipe.rule == Rule::kFixedPointKernel) {
    // row_values.cuh: Numerator = expf(float(z)), FixedMass = round(e * 2^42); integer sums (exact); the top-p
    // threshold compares double(mass above) < top_p * double(total) in logit order, ties cut by id.
    std::vector<uint64_t> fixed(n);
    uint64_t total = 0;
    for (size_t i = 0; i < n; ++i) {
      const float z = static_cast<float>(static_cast<double>(logits[i]) - static_cast<double>(max_logit));
      fixed[i] = static_cast<uint64_t>(std::llround(static_cast<double>(EngineExp(z, state)) * 0x1p42));
      total += fixed[i];
    }
    std::vector<int32_t> order(n);
    for (size_t i = 0; i < n; ++i) order[i] = static_cast<int32_t>(i);
    std::stable_sort(order.begin(), order.end(), [&](int32_t a, int32_t b) { return logits[a] > logits[b]; });
    const double target = top_p_double * static_cast<double>(total);
    uint64_t above = 0;
    for (size_t j = 0; j < n; ++j) {
      if (j > 0 && !(static_cast<double>(above) < target)) break;
      kept[order[j]] = 1;
      above += fixed[order[j]];
    }
    return kept;
  }

  // Softmax: e_i = exp(x_i - max) (fp32), S = the normalizer's shape, p_i = fp32(e_i / S).
  std::vector<float> e(n);
  for (size_t i = 0; i < n; ++i) e[i] = EngineExp(logits[i] - max_logit, state);
  const float sum = static_cast<float>(Reduce(e, pipe.normalizer));
  std::vector<float> p(n);
  for (size_t i = 0; i < n; ++i) p[i] = e[i] / sum;

  std::vector<int32_t> order(n);  // descending by the sort key, ties by ascending id
  for (size_t i = 0; i < n; ++i) order[i] = static_cast<int32_t>(i);
  if (pipe.orders_by_probs) {
    std::stable_sort(order.begin(), order.end(), [&](int32_t a, int32_t b) { return p[a] > p[b]; });
  } else {
    std::stable_sort(order.begin(), order.end(), [&](int32_t a, int32_t b) { return logits[a] > logits[b]; });
  }

  switch (pipe.rule) {
    case Rule::kAscendingCumsum: {
      std::vector<float> ascending(n);
      for (size_t k = 0; k < n; ++k) ascending[k] = p[order[n - 1 - k]];
      const std::vector<float> cumsum = Scan(ascending, pipe.scan_tile);
      const float threshold = 1.0f - top_p;
      for (size_t k = 0; k < n; ++k) {
        if (!(cumsum[k] <= threshold) || k == n - 1) kept[order[n - 1 - k]] = 1;
      }
      break;
    }
    case Rule::kDescendingCumsum: {
      std::vector<float> descending(n);
      for (size_t k = 0; k < n; ++k) descending[k] = p[order[k]];
      const std::vector<float> cumsum = Scan(descending, pipe.scan_tile);
      const Profile& profile = P(pipe.profile);
      const bool strict = profile.top_p_comparison == TopPComparison::kStrict;
      for (size_t k = 0; k < n; ++k) {
        const float above = k == 0 ? 0.0f : cumsum[k - 1];
        if (k == 0 || (strict ? above < top_p : above <= top_p)) kept[order[k]] = 1;
      }
      break;
    }
    case Rule::kPivot: {
      // Keep iff the engine's mass of probabilities strictly above this token's is < top_p; monotone in the
      // token's value (a superset of nonnegative terms never sums lower in fp32), so bisect over the distinct
      // values of the descending order.
      auto mass_above = [&](float value) {
        std::vector<float> terms(n);
        for (size_t i = 0; i < n; ++i) terms[i] = p[i] > value ? p[i] : 0.0f;
        return Reduce(terms, pipe.mass);
      };
      int64_t lo = 0;                            // order[lo] is kept (mass above the maximum is 0)
      int64_t hi = static_cast<int64_t>(n);      // first position known dropped
      while (hi - lo > 1) {
        const int64_t mid = lo + (hi - lo) / 2;
        if (mass_above(p[order[mid]]) < static_cast<double>(top_p)) {
          lo = mid;
        } else {
          hi = mid;
        }
      }
      float pivot = p[order[lo]];
      if (pipe.pivot_tolerance > 0) pivot = static_cast<float>(pivot * (1.0 - pipe.pivot_tolerance));
      for (size_t i = 0; i < n; ++i) kept[i] = p[i] >= pivot ? 1 : 0;
      break;
    }
    case Rule::kFixedPointKernel:
      break;
  }
  return kept;
}

// The pipelines: each profile's declared sums (profiles.cpp), plus the plain sequential and plain blocked cumsums
// the issue asked for, and this project's kernels.
std::vector<Fp32Pipeline> Pipelines() {
  return {
      {"vllm: torch softmax + torch.cumsum tile 256", "vllm", Shape::kTorchSoftmax, Rule::kAscendingCumsum,
       Shape::kSequential, 256},
      {"vllm: torch softmax + torch.cumsum tile 1024", "vllm", Shape::kTorchSoftmax, Rule::kAscendingCumsum,
       Shape::kSequential, 1024},
      {"vllm: blocked 1024-thread softmax + blocked cumsum", "vllm", Shape::kFlashinferBlock, Rule::kAscendingCumsum,
       Shape::kSequential, 1024},
      {"vllm: this project's kernels (fixed point)", "vllm", Shape::kSequential, Rule::kFixedPointKernel},
      {"hf: torch softmax + torch.cumsum tile 256 (CUDA)", "hf", Shape::kTorchSoftmax, Rule::kAscendingCumsum,
       Shape::kSequential, 256},
      {"hf: CPU softmax (8 lanes of V/8) + cumsum in double", "hf", Shape::kTorchCpuSoftmax,
       Rule::kAscendingCumsum, Shape::kSequential, 0},
      {"hf: this project's kernels (fixed point)", "hf", Shape::kSequential, Rule::kFixedPointKernel},
      {"vllm-triton: tile sums, pivot on fp32 p", "vllm-triton", Shape::kTritonTiles, Rule::kPivot,
       Shape::kTritonTiles, 1, true},
      {"vllm-triton: pivot stopped 1e-6 short", "vllm-triton", Shape::kTritonTiles, Rule::kPivot,
       Shape::kTritonTiles, 1, true, 1e-6},
      {"flashinfer-topk-first: torch softmax + FI block mass", "flashinfer-topk-first", Shape::kTorchSoftmax,
       Rule::kPivot, Shape::kFlashinferBlock, 1, true},
      {"flashinfer-joint: torch softmax + FI block mass", "flashinfer-joint", Shape::kTorchSoftmax, Rule::kPivot,
       Shape::kFlashinferBlock, 1, true},
      {"sglang-flashinfer: torch softmax + FI block mass", "sglang-flashinfer", Shape::kTorchSoftmax, Rule::kPivot,
       Shape::kFlashinferBlock, 1, true},
      {"trtllm-torch: torch softmax + cumsum tile 256", "trtllm-torch", Shape::kTorchSoftmax, Rule::kDescendingCumsum,
       Shape::kSequential, 256},
      {"trtllm-cuda: sorted fp32 p, block scan 256", "trtllm-cuda", Shape::kTorchSoftmax, Rule::kDescendingCumsum,
       Shape::kSequential, 256, true},
      {"sglang-torch: sorted fp32 p, cumsum tile 256", "sglang-torch", Shape::kTorchSoftmax, Rule::kDescendingCumsum,
       Shape::kSequential, 256, true},
  };
}

struct Coverage {
  int rows = 0;
  int flips = 0;              // decisions the pipeline took differently from the exact arithmetic
  int uncovered = 0;          // of which the reference did not call the token ambiguous
  double max_observed = 0.0;  // the largest margin (ulps) of a flipped decision
  double ratio = 0.0;         // the largest margin / allowed_ulps of a flipped decision
  double margin_at_max = 0.0; // allowed_ulps of the decision with the largest observed margin
};

// Compares the pipeline's kept set with `ref` (the reference under the pipeline's profile); a flip the reference
// does not call ambiguous fails the test.
void Judge(const Fp32Pipeline& pipe, const ProcessedDistribution& ref, const std::vector<float>& logits, double top_p,
           uint64_t seed, Coverage& coverage, const std::string& where) {
  const std::vector<char> kept = RunPipeline(pipe, logits, top_p, seed);
  ++coverage.rows;
  std::map<int32_t, const Decision*> decisions;
  for (const Decision& d : ref.boundary) {
    if (d.filter == Filter::kTopP) decisions[d.token] = &d;
  }
  for (size_t i = 0; i < kept.size(); ++i) {
    const int32_t token = static_cast<int32_t>(i);
    if ((kept[i] != 0) == ref.IsKept(token)) continue;
    ++coverage.flips;
    if (!ref.IsAmbiguous(token)) {
      ++coverage.uncovered;
      ADD_FAILURE() << pipe.name << " " << where << ": token " << token << (kept[i] ? " kept" : " dropped")
                    << " by fp32, not ambiguous in the reference";
      continue;
    }
    const auto it = decisions.find(token);
    if (it == decisions.end()) continue;
    const Decision& d = *it->second;
    if (d.margin_ulps > coverage.max_observed) {
      coverage.max_observed = d.margin_ulps;
      coverage.margin_at_max = d.allowed_ulps;
    }
    coverage.ratio = std::max(coverage.ratio, d.margin_ulps / d.allowed_ulps);
  }
}

// --- The model as data ---------------------------------------------------------------------------------------------

TEST(NumericsModel, EveryProfileStatesItsSums) {
  for (const Profile* profile : AllProfiles()) {
    const NumericsModel& m = profile->numerics;
    EXPECT_EQ(m.unit_roundoff, 0x1p-24) << profile->name << ": every engine accumulates in fp32";
    EXPECT_NE(m.normalizer.order, SumOrder::kExact) << profile->name;
    EXPECT_NE(m.top_p_mass.order, SumOrder::kExact) << profile->name;
    EXPECT_GT(m.prob_error_ulps, 0.0) << profile->name;
    EXPECT_FALSE(m.summary.empty()) << profile->name;
  }
  // Which profiles order top-p by fp32 probabilities (pivots, sorts of probabilities) and which by logits.
  for (std::string_view name : {"vllm", "hf", "trtllm-torch", "tokenspeed"}) {
    EXPECT_FALSE(P(name).numerics.orders_by_probs) << name;
  }
  for (std::string_view name : {"vllm-triton", "vllm-api-triton", "flashinfer-topk-first", "flashinfer-joint",
                                "trtllm-cuda", "sglang-torch", "sglang-flashinfer"}) {
    EXPECT_TRUE(P(name).numerics.orders_by_probs) << name;
  }
}

TEST(NumericsModel, DepthOfEachShape) {
  EXPECT_EQ(SumDepth({SumOrder::kExact, 1, 0}, 128256), 0);
  EXPECT_EQ(SumDepth({SumOrder::kSequential, 1, 0}, 128256), 128255);
  EXPECT_EQ(SumDepth({SumOrder::kSequential, 1, 0}, 1), 0);
  // FlashInfer's mass above a pivot at V = 128256: ceil(128256 / 512) + 36.
  EXPECT_EQ(SumDepth(P("flashinfer-joint").numerics.top_p_mass, 128256), 251 + 36);
  // torch.cumsum tile scan at V = 128256: ceil(128256 / 256) + 9.
  EXPECT_EQ(SumDepth(P("vllm").numerics.top_p_mass, 128256), 501 + 9);
  // gamma_d = d u / (1 - d u).
  const double u = 0x1p-24;
  EXPECT_DOUBLE_EQ(SumRelativeError({SumOrder::kSequential, 1, 0}, 101, u), 100 * u / (1 - 100 * u));
  EXPECT_TRUE(std::isinf(SumRelativeError({SumOrder::kSequential, 1, 0}, int64_t{1} << 24, u)));
  // The value window: 2 * 2.5 ulps of 2u each, plus the pivot tolerance; 0 for profiles that order by logits.
  EXPECT_DOUBLE_EQ(ValueWindow(P("flashinfer-joint").numerics), 10 * u);
  EXPECT_DOUBLE_EQ(ValueWindow(P("vllm-triton").numerics), 10 * u + 1e-6);
  EXPECT_EQ(ValueWindow(P("vllm").numerics), 0.0);
}

// --- Issue 15: FlashInfer on near-flat rows --------------------------------------------------------------------

// The decisions of the tokens just past the exact top-p boundary, in descending probability order.
std::vector<Decision> DroppedPastBoundary(const ProcessedDistribution& dist) {
  std::vector<Decision> dropped;
  for (const Decision& d : dist.boundary) {
    if (d.filter == Filter::kTopP && !d.kept) dropped.push_back(d);
  }
  std::sort(dropped.begin(), dropped.end(),
            [](const Decision& a, const Decision& b) { return a.margin_ulps < b.margin_ulps; });
  return dropped;
}

TEST(NearFlat, TokensFlashInferKeepsPastTheBoundaryAreAmbiguous) {
  const Profile& joint = P("flashinfer-joint");
  for (int64_t vocab : {65536, 128256}) {
    const std::vector<float> row = GaussianRow(vocab, 1e-3, 15);
    const ProcessedDistribution dist = Compute(row, TopP(0.5), joint);
    const std::vector<Decision> dropped = DroppedPastBoundary(dist);
    ASSERT_GE(dropped.size(), 3u) << vocab;
    // Every dropped token within 301 ulps of the boundary (the farther of the two FlashInfer kept on the H100)
    // is ambiguous: an fp32 FlashInfer that keeps it is not a failure.
    int within_301 = 0;
    for (const Decision& d : dropped) {
      if (d.margin_ulps > 301.0) continue;
      ++within_301;
      EXPECT_LT(d.margin_ulps, d.allowed_ulps) << vocab;
      EXPECT_TRUE(dist.IsAmbiguous(d.token)) << vocab << " token " << d.token << " margin " << d.margin_ulps;
    }
    EXPECT_GE(within_301, 1) << vocab;
    // The margin at the boundary, in ulps of top_p, and the number of ambiguous tokens, for the record.
    std::printf("[ near-flat V=%lld flashinfer-joint ] allowed %.0f ulps at the first dropped token (%.0f ulps "
                "past); %zu ambiguous, %zu of them numeric drift; tokens within 301 ulps past: %d\n",
                static_cast<long long>(vocab), dropped.front().allowed_ulps, dropped.front().margin_ulps,
                dist.ambiguous.size(), dist.numeric_drift.size(), within_301);
    // A token far beyond the model's margin stays a hard failure: not ambiguous, not kept.
    const Decision& last = dropped.back();
    EXPECT_GE(last.margin_ulps, last.allowed_ulps) << vocab;
    EXPECT_FALSE(dist.IsAmbiguous(last.token)) << vocab;
    // And so does any token at 4x the model's margin: find one by rank in the exact order.
    std::vector<int32_t> order(row.size());
    for (size_t i = 0; i < row.size(); ++i) order[i] = static_cast<int32_t>(i);
    std::stable_sort(order.begin(), order.end(), [&](int32_t a, int32_t b) { return row[a] > row[b]; });
    const double per_token_ulps = 1.0 / static_cast<double>(vocab) / 0x1p-24;  // ~1/V of mass per token
    const auto rank_far = static_cast<size_t>(dist.kept.size() + 4.0 * last.allowed_ulps / per_token_ulps);
    ASSERT_LT(rank_far, order.size());
    EXPECT_FALSE(dist.IsAmbiguous(order[rank_far])) << vocab;
    EXPECT_FALSE(dist.IsKept(order[rank_far])) << vocab;
    // The drift list is a subset of the ambiguous list.
    for (int32_t t : dist.numeric_drift) EXPECT_TRUE(dist.IsAmbiguous(t)) << t;
    EXPECT_FALSE(dist.numeric_drift.empty()) << vocab;
  }
}

// FlashInfer's fp32 pipeline (torch.softmax, pivots on fp32 probabilities, the block-reduced mass above) on
// near-flat rows keeps tokens past the exact boundary (the issue's symptom), and every one is ambiguous.
TEST(NearFlat, Fp32FlashInferKeepsPastTheBoundaryOnlyInsideTheModel) {
  const Profile& joint = P("flashinfer-joint");
  const std::vector<Fp32Pipeline> pipelines = Pipelines();
  const auto pipe = std::find_if(pipelines.begin(), pipelines.end(),
                                 [](const Fp32Pipeline& p) { return p.profile == "flashinfer-joint"; });
  ASSERT_NE(pipe, pipelines.end());
  for (int64_t vocab : {65536, 128256}) {
    Coverage coverage;
    int kept_past = 0;
    for (uint64_t seed = 1; seed <= 4; ++seed) {
      const std::vector<float> row = GaussianRow(vocab, 1e-3, seed);
      const ProcessedDistribution ref = Compute(row, TopP(0.5), joint);
      const std::vector<char> kept = RunPipeline(*pipe, row, 0.5, seed);
      for (size_t i = 0; i < kept.size(); ++i) kept_past += kept[i] && !ref.IsKept(static_cast<int32_t>(i));
      Judge(*pipe, ref, row, 0.5, seed, coverage, "V=" + std::to_string(vocab));
    }
    EXPECT_EQ(coverage.uncovered, 0);
    std::printf("[ near-flat V=%lld, 4 rows, fp32 FlashInfer pipeline ] %d tokens kept past the exact boundary, the "
                "farthest %.0f ulps past (allowed there %.0f)\n",
                static_cast<long long>(vocab), kept_past, coverage.max_observed, coverage.margin_at_max);
  }
}

// Under the profiles that order by logits the same tokens are ambiguous through the sums alone.
TEST(NearFlat, SumDriftAloneCoversTheIssueTokensUnderVllm) {
  for (int64_t vocab : {65536, 128256}) {
    const ProcessedDistribution dist = Compute(GaussianRow(vocab, 1e-3, 15), TopP(0.5), P("vllm"));
    const std::vector<Decision> dropped = DroppedPastBoundary(dist);
    ASSERT_FALSE(dropped.empty());
    EXPECT_GT(dropped.front().allowed_ulps, 170.0) << vocab;
    std::printf("[ near-flat V=%lld vllm ] allowed %.0f ulps; %zu ambiguous\n", static_cast<long long>(vocab),
                dropped.front().allowed_ulps, dist.ambiguous.size());
  }
}

// The margin every profile gives the issue's row kind, for the record (docs/semantics.md quotes it).
TEST(NearFlat, MarginOfEveryProfile) {
  for (int64_t vocab : {65536, 128256}) {
    const std::vector<float> row = GaussianRow(vocab, 1e-3, 15);
    for (const Profile* profile : AllProfiles()) {
      const ProcessedDistribution dist = Compute(row, TopP(0.5), *profile);
      const std::vector<Decision> dropped = DroppedPastBoundary(dist);
      const NumericsModel& m = profile->numerics;
      if (dropped.empty() && m.normalizer.order == SumOrder::kSequential) {
        // A single fp32 accumulator over the row (llama.cpp): the band is thousands of tokens wide, past the
        // decisions the reference records.
        EXPECT_GT(dist.ambiguous.size(), 100u) << profile->name;
        std::printf("[ near-flat V=%lld top_p=0.5 ] %-22s sequential sums over %lld terms  ambiguous %zu\n",
                    static_cast<long long>(vocab), std::string(profile->name).c_str(),
                    static_cast<long long>(vocab), dist.ambiguous.size());
        continue;
      }
      ASSERT_FALSE(dropped.empty()) << profile->name;
      EXPECT_GE(dropped.front().allowed_ulps, kAmbiguousMarginUlps);
      std::printf("[ near-flat V=%lld top_p=0.5 ] %-22s depth %4lld + %4lld  allowed %6.0f ulps  ambiguous %3zu  "
                  "drift %3zu\n",
                  static_cast<long long>(vocab), std::string(profile->name).c_str(),
                  static_cast<long long>(SumDepth(m.normalizer, vocab)),
                  static_cast<long long>(SumDepth(m.top_p_mass, vocab)), dropped.front().allowed_ulps,
                  dist.ambiguous.size(), dist.numeric_drift.size());
    }
  }
}

// --- The simulation -------------------------------------------------------------------------------------------

TEST(Fp32Simulation, EveryProfilesDeclaredSumsStayInsideItsModel) {
  struct RowKind {
    int64_t vocab;
    double sigma;
    int seeds;
  };
  const std::vector<RowKind> kinds = {{1000, 1e-3, 3},   {32000, 1e-3, 3}, {128256, 1e-3, 3},
                                      {262144, 1e-3, 2}, {32000, 2.0, 2},  {128256, 3.0, 1}};
  const std::vector<double> top_ps = {0.1, 0.5, 0.9};
  const std::vector<Fp32Pipeline> pipelines = Pipelines();
  std::vector<Coverage> coverage(pipelines.size());
  for (const RowKind& kind : kinds) {
    for (int s = 0; s < kind.seeds; ++s) {
      const uint64_t seed = 1000 + static_cast<uint64_t>(kind.vocab) + static_cast<uint64_t>(s);
      const std::vector<float> row = GaussianRow(kind.vocab, kind.sigma, seed);
      for (double top_p : top_ps) {
        const std::string where = "V=" + std::to_string(kind.vocab) + " sigma=" + std::to_string(kind.sigma) +
                                  " seed=" + std::to_string(seed) + " top_p=" + std::to_string(top_p);
        std::map<std::string, ProcessedDistribution> refs;  // one reference per profile
        for (size_t k = 0; k < pipelines.size(); ++k) {
          const std::string& profile = pipelines[k].profile;
          if (!refs.count(profile)) refs[profile] = Compute(row, TopP(top_p), P(profile));
          Judge(pipelines[k], refs[profile], row, top_p, seed, coverage[k], where);
        }
      }
    }
  }
  std::printf("%-58s %6s %6s %9s %11s %9s\n", "fp32 pipeline (declared sums)", "rows", "flips", "max ulps",
              "allowed@max", "max/allw");
  for (size_t k = 0; k < pipelines.size(); ++k) {
    const Coverage& c = coverage[k];
    EXPECT_EQ(c.uncovered, 0) << pipelines[k].name;
    EXPECT_LT(c.ratio, 1.0) << pipelines[k].name;
    std::printf("%-58s %6d %6d %9.1f %11.1f %9.3f\n", pipelines[k].name.c_str(), c.rows, c.flips, c.max_observed,
                c.margin_at_max, c.ratio);
  }
}

// A plain sequential fp32 cumsum (softmax normalizer and cumsum both one accumulator) on near-flat rows: its
// deviation is measured against the probabilistic bound lambda sqrt(n) u (Higham and Mary 2019, lambda = 3) and
// against gamma_n of a sequential model. The rounding errors of many nearly equal terms added to a growing
// accumulator are not independent (the same fractional part of the term rounds the same way all along a binade),
// so the deviation goes far past sqrt(n); gamma_n covers it. The blocked engines' models cover their own shapes
// (above); a sequential engine would have to declare kSequential.
TEST(Fp32Simulation, PlainSequentialCumsumOutrunsTheProbabilisticBound) {
  Profile sequential = P("vllm");
  sequential.numerics.normalizer = {SumOrder::kSequential, 1, 0};
  sequential.numerics.top_p_mass = {SumOrder::kSequential, 1, 0};
  const Fp32Pipeline pipe{"plain sequential fp32 softmax + cumsum", "vllm", Shape::kSequential,
                          Rule::kAscendingCumsum, Shape::kSequential, 1};
  double worst_vs_probabilistic = 0.0;
  double worst_vs_gamma = 0.0;
  for (int64_t vocab : {32000, 128256, 262144}) {
    for (uint64_t seed = 1; seed <= 3; ++seed) {
      const std::vector<float> row = GaussianRow(vocab, 1e-3, seed);
      for (double top_p : {0.1, 0.5, 0.9}) {
        const ProcessedDistribution ref = Compute(row, TopP(top_p), sequential);
        const std::vector<char> kept = RunPipeline(pipe, row, top_p, seed);
        for (const Decision& d : ref.boundary) {
          if (d.filter != Filter::kTopP || (kept[d.token] != 0) == d.kept) continue;
          EXPECT_TRUE(ref.IsAmbiguous(d.token)) << "V=" << vocab << " top_p=" << top_p;
          // The probabilistic bound in the same units: 3 sqrt(n) u for each of the two sums, times the compared
          // cumsum (1 - mass above ~ 1 - top_p), in ulps of max(top_p, 1 - top_p).
          const double compared = 1.0 - top_p;
          const double unit = std::max(top_p, 1.0 - top_p) >= 0.5 ? 0x1p-24 : 0x1p-25;
          const double probabilistic = 2.0 * 3.0 * std::sqrt(static_cast<double>(vocab)) * 0x1p-24 * compared / unit;
          worst_vs_probabilistic = std::max(worst_vs_probabilistic, d.margin_ulps / probabilistic);
          worst_vs_gamma = std::max(worst_vs_gamma, d.margin_ulps / d.allowed_ulps);
        }
      }
    }
  }
  std::printf("[ plain sequential fp32 cumsum, near-flat V <= 262144 ] worst deviation = %.1f x the probabilistic "
              "bound 3 sqrt(n) u, %.3f x gamma_n\n",
              worst_vs_probabilistic, worst_vs_gamma);
  EXPECT_GT(worst_vs_probabilistic, 1.0) << "the probabilistic bound would have been enough";
  EXPECT_LT(worst_vs_gamma, 1.0);
}

// --- Small and peaked rows keep the floor -------------------------------------------------------------------------

TEST(NumericsModel, SmallAndPeakedRowsKeepTheFloor) {
  struct Case {
    std::vector<float> row;
    double top_p;
  };
  std::vector<Case> cases;
  cases.push_back({testing::LogitsOf({0.5, 0.25, 0.125, 0.0625, 0.0625}), 0.8});  // dyadic, V = 5
  cases.push_back({GaussianRow(1000, 1.0, 7), 0.5});
  cases.push_back({GaussianRow(1000, 1.0, 7), 0.9});
  cases.push_back({GaussianRow(32000, 2.0, 8), 0.9});
  cases.push_back({GaussianRow(32000, 2.0, 8), 0.5});
  for (const Profile* profile : AllProfiles()) {
    for (const Case& c : cases) {
      const ProcessedDistribution dist = Compute(c.row, TopP(c.top_p), *profile);
      double largest = 0.0;
      for (const Decision& d : dist.boundary) {
        EXPECT_GE(d.allowed_ulps, kAmbiguousMarginUlps);
        largest = std::max(largest, d.allowed_ulps);
      }
      // Near the floor: within 1.5x for V <= 1000, 3x for V = 32000 (the sums' depth grows with V / width, and
      // where the engine orders by fp32 probabilities the tokens within 10 u of the boundary token count too).
      double limit = (c.row.size() <= 1000 ? 1.5 : 3.0) * kAmbiguousMarginUlps;
      if (profile->numerics.normalizer.order == SumOrder::kSequential) {
        // One fp32 accumulator (llama.cpp): the rigorous bound grows with n itself, gamma_{n-1} for the normalizer
        // and for the running sum, at most top_p of mass compared, in ulps of top_p (descending).
        const double n = static_cast<double>(c.row.size());
        const double gamma = (n - 1) * 0x1p-24 / (1 - (n - 1) * 0x1p-24);
        const double unit = std::ldexp(1.0, std::ilogb(c.top_p) - 23);
        limit = std::max(limit, 1.01 * c.top_p * (2 * gamma + 5 * 0x1p-24) / unit);
      }
      EXPECT_LE(largest, limit) << profile->name << " V=" << c.row.size() << " top_p=" << c.top_p;
    }
  }
}

// Min-p and top-k form no sum: their decisions keep the floor on any row.
TEST(NumericsModel, MinPAndTopKKeepTheFloor) {
  const std::vector<float> row = GaussianRow(128256, 1e-3, 3);
  SamplingParams params;
  params.top_k = 1000;
  params.min_p = 0.99;
  for (const Profile* profile : AllProfiles()) {
    SamplingParams p = params;
    if (profile->max_top_k > 0) p.top_k = profile->max_top_k;  // tokenspeed refuses top_k >= 128
    const ProcessedDistribution dist = Compute(row, p, *profile);
    for (const Decision& d : dist.boundary) EXPECT_EQ(d.allowed_ulps, kAmbiguousMarginUlps) << profile->name;
    EXPECT_TRUE(dist.numeric_drift.empty()) << profile->name;
  }
}

}  // namespace
}  // namespace samplecheck
