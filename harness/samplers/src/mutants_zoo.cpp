// The mutant zoo: one entry per fault, each setting exactly one hook of the correct pipeline (mutants_fault.h).
// Bug classes are those of docs/semantics.md §2 (../shared/docs/semantics.md); sources name the engine, issue or
// seed (../shared/seeds/) each mutant models. docs/mutants.md is the table of this file with the measured verdicts.
#include <algorithm>
#include <array>
#include <cfloat>
#include <cmath>
#include <map>
#include <numeric>

#include "mutants_fault.h"

namespace samplecheck::harness::mutants {
namespace {

void Normalize(std::vector<long double>& weights) {
  const long double sum = std::accumulate(weights.begin(), weights.end(), 0.0L);
  if (sum > 0) {
    for (long double& w : weights) w /= sum;
  }
}

size_t KeptCount(const std::vector<long double>& weights) {
  return static_cast<size_t>(std::count_if(weights.begin(), weights.end(), [](long double w) { return w > 0; }));
}

size_t AliveCount(std::span<const float> logits) {
  return static_cast<size_t>(std::count_if(logits.begin(), logits.end(), [](float x) { return std::isfinite(x); }));
}

// ---- distribution hooks ----------------------------------------------------------------------------------------

// Truncation zeroes probabilities of the full tempered softmax and never renormalizes: the kept tokens keep their
// full-softmax probability (they sum to the kept mass q < 1).
void NotRenormalized(const RowView& row, std::vector<long double>& weights) {
  const std::vector<long double> full = TemperedSoftmax(row.logits, row.params.temperature);
  if (full.empty()) return;
  for (size_t t = 0; t < weights.size(); ++t) weights[t] = weights[t] > 0 ? full[t] : 0.0L;
}

// The kept set is chosen on the logits at T = 1; the temperature is applied to the kept logits afterwards.
void TemperatureAfterFilters(const RowView& row, std::vector<long double>& weights) {
  if (row.params.temperature == 1.0) return;
  SamplingParams at_one = row.params;
  at_one.temperature = 1.0;
  auto kept_at_one = ComputeDistribution(LogitsView::Fp32(row.logits), at_one, row.profile);
  if (!kept_at_one.ok()) return;
  if (kept_at_one->greedy) {
    std::fill(weights.begin(), weights.end(), 0.0L);
    for (size_t i = 0; i < kept_at_one->kept.size(); ++i) weights[kept_at_one->kept[i]] = kept_at_one->prob[i];
    return;
  }
  const std::vector<long double> full = TemperedSoftmax(row.logits, row.params.temperature);
  if (full.empty()) return;
  std::fill(weights.begin(), weights.end(), 0.0L);
  for (int32_t t : kept_at_one->kept) weights[static_cast<size_t>(t)] = full[static_cast<size_t>(t)];
  Normalize(weights);
}

// The least probable kept token (the crossing token of the last filter) is dropped when a filter truncated.
void DropBoundaryToken(const RowView& row, std::vector<long double>& weights) {
  const size_t kept = KeptCount(weights);
  if (kept < 2 || kept >= AliveCount(row.logits)) return;
  size_t boundary = weights.size();
  for (size_t t = 0; t < weights.size(); ++t) {
    if (weights[t] > 0 && (boundary == weights.size() || weights[t] <= weights[boundary])) boundary = t;
  }
  weights[boundary] = 0;
  Normalize(weights);
}

// The top-p boundary admits one token too many: the most probable token top-p removed is kept as well.
void TopPBoundaryPlusOne(const RowView& row, std::vector<long double>& weights) {
  if (!(row.params.top_p < 1.0)) return;
  SamplingParams without_top_p = row.params;
  without_top_p.top_p = 1.0;
  auto wider = ComputeDistribution(LogitsView::Fp32(row.logits), without_top_p, row.profile);
  if (!wider.ok() || wider->greedy) return;
  int32_t extra = -1;
  long double extra_prob = 0;
  for (size_t i = 0; i < wider->kept.size(); ++i) {
    const int32_t t = wider->kept[i];
    if (weights[static_cast<size_t>(t)] == 0 && wider->prob[i] > extra_prob) {
      extra = t;
      extra_prob = wider->prob[i];
    }
  }
  if (extra < 0) return;
  std::vector<long double> mutated(weights.size(), 0.0L);
  for (size_t i = 0; i < wider->kept.size(); ++i) {
    const int32_t t = wider->kept[i];
    if (weights[static_cast<size_t>(t)] > 0 || t == extra) mutated[static_cast<size_t>(t)] = wider->prob[i];
  }
  Normalize(mutated);
  weights.swap(mutated);
}

// 1e-4 of the mass leaks, spread evenly, onto the tokens the filters masked (finite logits, weight 0).
void LeakOntoMasked(const RowView& row, std::vector<long double>& weights) {
  constexpr long double kLeak = 1e-4L;
  size_t masked = 0;
  for (size_t t = 0; t < weights.size(); ++t) masked += std::isfinite(row.logits[t]) && weights[t] == 0;
  if (masked == 0) return;
  for (size_t t = 0; t < weights.size(); ++t) {
    if (weights[t] > 0) {
      weights[t] *= 1 - kLeak;
    } else if (std::isfinite(row.logits[t])) {
      weights[t] = kLeak / static_cast<long double>(masked);
    }
  }
}

// The most probable kept token gets 1% more relative weight (then the row is renormalized).
void SkewTopToken(const RowView&, std::vector<long double>& weights) {
  if (KeptCount(weights) < 2) return;
  const size_t top = static_cast<size_t>(std::max_element(weights.begin(), weights.end()) - weights.begin());
  weights[top] *= 1.01L;
  Normalize(weights);
}

// A tie group is resolved by logit value: every kept token of a tied group hands its mass to the lowest id.
void CollapseTiesOntoLowestId(const RowView& row, std::vector<long double>& weights) {
  std::map<float, size_t> lowest;  // logit value -> lowest kept id with it
  for (size_t t = 0; t < weights.size(); ++t) {
    if (!(weights[t] > 0)) continue;
    auto [it, inserted] = lowest.emplace(row.logits[t], t);
    if (!inserted) {
      weights[it->second] += weights[t];
      weights[t] = 0;
    }
  }
}

// Gumbel-max with the noise clipped to [g_min, g_max] (FlashInfer PR #2438: g = -ln(-ln(u (1 - eps))) with fp32
// u in [FLT_MIN, 1]): a token whose tempered logit trails the maximum by more than g_max - g_min can never win.
// Modelled by its support effect: those tokens are removed and the rest renormalized.
void GumbelNoiseFloor(const RowView& row, std::vector<long double>& weights) {
  const long double g_max = -std::log(-std::log1p(-static_cast<long double>(FLT_EPSILON)));  // 15.94
  const long double g_min = -std::log(-std::log(static_cast<long double>(FLT_MIN)));        // -4.47
  const long double floor_gap = g_max - g_min;                                               // 20.41
  if (!(row.params.temperature > 0)) return;
  long double max = -INFINITY;
  for (float x : row.logits) {
    if (std::isfinite(x)) max = std::max<long double>(max, x);
  }
  bool changed = false;
  for (size_t t = 0; t < weights.size(); ++t) {
    if (weights[t] > 0 && (max - row.logits[t]) / row.params.temperature > floor_gap) {
      weights[t] = 0;
      changed = true;
    }
  }
  if (changed) Normalize(weights);
}

// ---- corner hooks (issue 31: parameter corners no hand-picked case visits) ----------------------------------------

// mlx-lm#1912: the fp32 cumulative sum never reaches a top_p <= 1e-7 before the first token, so every token is masked
// (the row comes out unsamplable: the invalid marker).
void TinyTopPMasksAll(const RowView& row, std::vector<long double>& weights) {
  if (row.params.top_p <= 1e-7) std::fill(weights.begin(), weights.end(), 0.0L);
}

// A top-k over fewer finite logits than k pads its candidates with -inf tokens, and top-p's cumulative sum counts the
// first of them as if it had the least kept probability: a masked token is drawn.
void TopKOverFiniteLeaks(const RowView& row, std::vector<long double>& weights) {
  const auto finite = static_cast<int64_t>(AliveCount(row.logits));
  if (!(row.params.top_k > finite && row.params.top_p < 1.0) || KeptCount(weights) == 0) return;
  long double least = 1.0L;
  for (long double w : weights) {
    if (w > 0) least = std::min(least, w);
  }
  for (size_t t = 0; t < weights.size(); ++t) {
    if (std::isinf(row.logits[t])) {
      weights[t] = least;
      break;
    }
  }
  Normalize(weights);
}

// A top-k of k >= V takes the "no filter" fast path, which skips the top-p stage as well.
void TopKAtVocabSkipsTopP(const RowView& row, std::vector<long double>& weights) {
  if (!(row.params.top_k >= static_cast<int64_t>(row.logits.size()) && row.params.top_p < 1.0)) return;
  SamplingParams without = row.params;
  without.top_p = 1.0;
  auto wider = ComputeDistribution(LogitsView::Fp32(row.logits), without, row.profile);
  if (!wider.ok() || wider->greedy) return;
  std::fill(weights.begin(), weights.end(), 0.0L);
  for (size_t i = 0; i < wider->kept.size(); ++i) weights[static_cast<size_t>(wider->kept[i])] = wider->prob[i];
}

// mlxcel#1391: a min-p kernel whose block covers 32768 ids filters those alone; ids beyond keep their probability.
void MinPFirst32kOnly(const RowView& row, std::vector<long double>& weights) {
  constexpr size_t kBlock = 32768;
  if (!(row.params.min_p > 0.0 && row.logits.size() > kBlock)) return;
  SamplingParams without = row.params;
  without.min_p = 0.0;
  auto unfiltered = ComputeDistribution(LogitsView::Fp32(row.logits), without, row.profile);
  if (!unfiltered.ok() || unfiltered->greedy) return;
  std::vector<long double> out(weights.size(), 0.0L);
  for (size_t i = 0; i < unfiltered->kept.size(); ++i) {
    const auto t = static_cast<size_t>(unfiltered->kept[i]);
    if (t >= kBlock || weights[t] > 0) out[t] = unfiltered->prob[i];
  }
  Normalize(out);
  weights.swap(out);
}

// ---- params hooks ----------------------------------------------------------------------------------------------

SamplingParams MinPZeroClamp(std::span<const SamplingParams> batch, size_t row) {
  SamplingParams p = batch[row];
  if (p.min_p == 0) p.min_p = 1e-20;  // log(max(min_p, 1e-20)): the disabled cutoff becomes max - 46.05
  return p;
}

SamplingParams MinPBroadcast(std::span<const SamplingParams> batch, size_t row) {
  SamplingParams p = batch[row];
  double batch_min_p = 0;
  for (const SamplingParams& q : batch) batch_min_p = std::max(batch_min_p, q.min_p);
  if (p.min_p == 0) p.min_p = batch_min_p;  // the min-p kernel runs on every row with the batch's scalar
  return p;
}

// Rows are grouped by temperature (a stable sort, descending) before the filter kernels, which then read top_k,
// top_p and min_p at the sorted position instead of through the index map.
SamplingParams ParamsFromWrongRow(std::span<const SamplingParams> batch, size_t row) {
  std::vector<size_t> order(batch.size());
  std::iota(order.begin(), order.end(), size_t{0});
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return batch[a].temperature > batch[b].temperature; });
  const size_t position = static_cast<size_t>(std::find(order.begin(), order.end(), row) - order.begin());
  SamplingParams p = batch[row];
  p.top_k = batch[position].top_k;
  p.top_p = batch[position].top_p;
  p.min_p = batch[position].min_p;
  return p;
}

SamplingParams TopKPlusOne(std::span<const SamplingParams> batch, size_t row) {
  SamplingParams p = batch[row];
  if (p.top_k > 0) p.top_k += 1;
  return p;
}

SamplingParams TopKZeroIsGreedy(std::span<const SamplingParams> batch, size_t row) {
  SamplingParams p = batch[row];
  if (p.top_k == 0) p.top_k = 1;
  return p;
}

// ---- rng hooks -------------------------------------------------------------------------------------------------

Counter SeedOfRowZero(std::span<const SamplingParams> batch, size_t) { return {batch[0].seed, batch[0].offset}; }
Counter OffsetNotAdvanced(std::span<const SamplingParams> batch, size_t row) { return {batch[row].seed, row}; }
Counter SeedIgnored(std::span<const SamplingParams> batch, size_t row) { return {0, batch[row].offset}; }
Counter CounterByBatchSize(std::span<const SamplingParams> batch, size_t row) {
  const uint64_t offset = batch[row].offset;
  return {batch[row].seed, batch.size() >= 8 ? offset * kRejectionRetries : offset};  // the graph variant's stride
}

// ---- profile hooks ---------------------------------------------------------------------------------------------

// Profile hooks flip one field, so each is a fault under every profile (the zoo's names describe the default vllm).
void JointTopP(Profile& p) {
  const TopPInput flipped = p.top_p_input == TopPInput::kFull ? TopPInput::kRenormalized : TopPInput::kFull;
  p.top_p_input = flipped;
  p.top_p_input_with_min_p = flipped;
}
// min-p moves to the other end of the order: last where the profile runs it first (vllm, TRT), first where it runs
// it last (hf, sglang).
void MinPAfterTopP(Profile& p) {
  if (p.order[0] == Filter::kMinP) {
    p.order = {p.order[1], p.order[2], Filter::kMinP};
  } else {
    std::array<Filter, 3> order{Filter::kMinP, Filter::kTopK, Filter::kTopP};
    size_t next = 1;
    for (Filter f : p.order) {
      if (f != Filter::kMinP) order[next++] = f;
    }
    p.order = order;
  }
}
void NonStrictTopP(Profile& p) {
  p.top_p_comparison = p.top_p_comparison == TopPComparison::kStrict ? TopPComparison::kNonStrict
                                                                      : TopPComparison::kStrict;
}
void ExactKTies(Profile& p) {
  p.top_k_ties = p.top_k_ties == TopKTies::kKeepTied ? TopKTies::kExactK : TopKTies::kKeepTied;
}
void TruncatedCdfTopP(Profile& p) {
  p.top_p_mass = p.top_p_mass == TopPMass::kRenormalize ? TopPMass::kTruncatedCdf : TopPMass::kRenormalize;
}

Fault WithProfile(ProfileHook hook) { Fault f; f.profile = hook; return f; }
Fault WithParams(ParamsHook hook) { Fault f; f.params = hook; return f; }
Fault WithDistribution(DistributionHook hook, bool reported_only = false) {
  Fault f;
  f.distribution = hook;
  f.distribution_reported_only = reported_only;
  return f;
}
Fault WithDraw(DrawRule rule) { Fault f; f.draw = rule; return f; }
Fault WithRng(RngHook hook) { Fault f; f.rng = hook; return f; }
Fault WithStream(StreamFault fault) { Fault f; f.stream = fault; return f; }
Fault WithUnsamplableRowToken(int32_t token) { Fault f; f.unsamplable_row_token = token; return f; }

constexpr char kNotRenormalized[] = "not renormalized after truncation";
constexpr char kFilterOrder[] = "order of filters";
constexpr char kBoundary[] = "boundary rules";
constexpr char kTies[] = "tie resolution by value";
constexpr char kRejection[] = "rejection fallback to argmax";
constexpr char kDisabled[] = "disabled values that are not no-ops";
constexpr char kRng[] = "RNG stream errors";
constexpr char kWrongRow[] = "per-row parameters from the wrong row";
constexpr char kFloors[] = "numerical floors";
constexpr char kBadRows[] = "bad rows";
constexpr char kPlanted[] = "generic planted faults";
constexpr char kCorners[] = "parameter corners";

}  // namespace

const std::vector<MutantDef>& MutantDefs() {
  static const std::vector<MutantDef> defs = {
      {{"none", "control", "samplecheck", "no fault: the mutant machinery itself, which must pass every check",
        "none", "passes everything", false},
       Fault{}},
      // --- gross ---
      {{"no-renorm-cdf", kNotRenormalized,
        "vLLM v0 model_executor/layers/sampler.py (seed 000): probs zeroed after softmax and sampled as if they "
        "summed to 1, drawn by an inverse-CDF kernel that does not scale u by the kept mass",
        "kept tokens keep their full-softmax probability (sum q < 1); u in (0, 1) over them: the shortfall 1 - q "
        "lands on the last kept token", "distribution", "campaign:topk/support+pearson", true},
       WithDistribution(NotRenormalized)},
      {{"no-renorm-logprobs", kNotRenormalized,
        "vLLM v0 (seed 000) as torch really runs it: torch.multinomial renormalizes its input, so draws are right "
        "and only the processed probabilities (processed_logprobs, seed 001) are unnormalized",
        "the reported processed distribution is the full softmax on the kept set (sums to q < 1); draws correct",
        "distribution", "property:mass-sums-to-one", false},
       WithDistribution(NotRenormalized, /*reported_only=*/true)},
      {{"topp-joint", kFilterOrder,
        "TokenSpeed PR #280 review (seed 003: top-p rejection compares with the full-vocab mass); FlashInfer "
        "filter_apply_order joint vs top_k_first",
        "top-p sees the full distribution instead of the top-k-renormalized one (joint instead of top_k_first; the "
        "reverse under a joint profile)",
        "profile", "campaign:V5-joint/support", false},
       WithProfile(JointTopP)},
      {{"minp-after-topp", kFilterOrder, "HF order (TopK, TopP, MinP) vs vLLM/TRT min-p first (semantics.md V4)",
        "min-p runs after top-k and top-p on the truncated distribution instead of first on the full one (first "
        "instead of last under hf / sglang)",
        "profile", "campaign:V4-minp-order/pearson", true},
       WithProfile(MinPAfterTopP)},
      {{"temperature-after-filters", kFilterOrder, "semantics.md §2 (filter order); seed 004 (temperature first)",
        "the kept set is computed on the logits at T = 1, the temperature applied to the kept logits afterwards",
        "distribution", "campaign:combined/support", true},
       WithDistribution(TemperatureAfterFilters)},
      {{"argmax-fallback-4-retries", kRejection,
        "TokenSpeed PR #280 (seed 003): rejection from the full distribution, argmax after 4 misses "
        "((1 - top_p)^4 greedy)",
        "candidates drawn from the unfiltered tempered softmax, accepted if kept; after 4 misses the argmax",
        "draw", "campaign:topp/max-z", true},
       WithDraw(DrawRule::kRejectionThenArgmax)},
      {{"topp-truncated-cdf", kBoundary, "TensorRT-LLM legacy topPSsampling (semantics.md 1.4, V3: TV 0.095)",
        "the crossing token gets top_p - mass_above (CDF truncated at top_p) instead of renormalized nucleus mass "
        "(the reverse under trtllm-cuda)",
        "profile", "campaign:V3-nucleus/pearson", false},
       WithProfile(TruncatedCdfTopP)},
      // --- subtle ---
      {{"drop-boundary-token", kBoundary, "statistics.md §4 (drop one token); semantics.md §2 crossing token dropped",
        "the least probable kept token is dropped whenever a filter truncated the row", "distribution",
        "campaign:topk/pearson", false},
       WithDistribution(DropBoundaryToken)},
      {{"topp-boundary-plus-one", kBoundary, "statistics.md §4 (shift the top-p boundary by one)",
        "top-p keeps one token too many: the most probable token it removed", "distribution",
        "campaign:topp/support", false},
       WithDistribution(TopPBoundaryPlusOne)},
      {{"topp-nonstrict", kBoundary, "SGLang torch backend (mass above <= top_p; semantics.md V1)",
        "top-p keeps a token when the mass above it equals top_p (non-strict comparison)", "profile",
        "property:nucleus-minimality", false},
       WithProfile(NonStrictTopP)},
      {{"topk-exact-k", kBoundary,
        "vLLM Triton / SGLang / FlashInfer radix fast path (exact k) where the profile keeps ties (V2)",
        "the tie group at the top-k boundary is trimmed to exactly k (lowest ids) instead of kept", "profile",
        "property:top-k-cardinality", false},
       WithProfile(ExactKTies)},
      {{"topk-plus-one", kBoundary, "semantics.md §2 (one token too many)", "top-k keeps k + 1 tokens", "params",
        "campaign:topk/support", false},
       WithParams(TopKPlusOne)},
      {{"leak-1e-4", kPlanted, "statistics.md §4; FlashInfer support tests (zero-probability tokens drawn)",
        "1e-4 of the mass leaks, spread evenly, onto the tokens the filters masked", "distribution",
        "campaign:topk/support", false},
       WithDistribution(LeakOntoMasked)},
      {{"skew-plus-1pct", kPlanted, "statistics.md §4, §5.3 (+1% on one token)",
        "the most probable kept token gets +1% relative weight", "distribution", "campaign:mutants/skew/max-z",
        false},
       WithDistribution(SkewTopToken)},
      {{"tie-collapse-lowest-id", kTies,
        "TokenSpeed PR #280 review (seed 003): 'Resolve top-k samples by token id, not logit value'",
        "every kept token of a tied group hands its mass to the lowest id with that logit", "distribution",
        "campaign:tied/pearson", true},
       WithDistribution(CollapseTiesOntoLowestId)},
      {{"minp-zero-clamp", kDisabled,
        "TokenSpeed PR #280 review (seed 003): log(max(min_p, 1e-20)) for rows with min_p = 0",
        "min_p = 0 runs min-p with 1e-20: tokens more than 46.05 tempered logits below the max are removed",
        "params", "property:all-filters-disabled-is-softmax", false},
       WithParams(MinPZeroClamp)},
      {{"minp-array-to-all-rows", kDisabled,
        "TokenSpeed PR #280 review (seed 003): the whole batch goes through the min-p kernels when one row sets it",
        "rows with min_p = 0 get the largest min_p of their batch", "params", "property:batch-invariance", false},
       WithParams(MinPBroadcast)},
      {{"topk-zero-greedy", kDisabled, "semantics.md 1.1 (FlashInfer k = 0) / 1.4 (TRT top_k = 1 greedy)",
        "top_k = 0 (disabled in the profile) is treated as top_k = 1", "params",
        "property:disabled-values-are-no-ops", true},
       WithParams(TopKZeroIsGreedy)},
      {{"seed-reused-across-rows", kRng, "semantics.md §2; FlashInfer reads only seed_arr[0] / offset_arr[0] [obs]",
        "every row of a batch draws with the (seed, offset) of row 0", "rng", "property:stream-independence", true},
       WithRng(SeedOfRowZero)},
      {{"offset-not-advanced", kRng, "statistics.md §3 (PyTorch #50169, rocRAND #234); semantics.md §2",
        "the step offset is never added: the Philox counter of a row is its position in the batch", "rng",
        "property:stream-independence", true},
       WithRng(OffsetNotAdvanced)},
      {{"rng-variant-by-batch-size", kRng,
        "TokenSpeed PR #280 review (seed 003): the captured graph variant derives offset * RETRIES + retry",
        "batches of 8 or more rows use counter offset * 4: same distribution, a different token for the same seed",
        "rng", "property:batch-invariance", false},
       WithRng(CounterByBatchSize)},
      {{"wrong-row-params", kWrongRow,
        "FlashInfer sampling.cuh top_k_arr[bx] vs top_p_arr[row_idx] under indices (semantics.md 1.1)",
        "rows are sorted by temperature and the filters read top_k / top_p / min_p at the sorted position",
        "params", "property:batch-invariance", false},
       WithParams(ParamsFromWrongRow)},
      {{"gumbel-noise-floor", kFloors, "FlashInfer PR #2438 (g in [-4.47, 15.9]; semantics.md 1.1 Gumbel)",
        "clipped Gumbel noise: tokens more than 20.41 tempered logits below the max can never be drawn",
        "distribution", "campaign:mutants/deep-tail/pearson", false},
       WithDistribution(GumbelNoiseFloor)},
      {{"fp32-cumsum-shortfall", kFloors, "torch7 #418 (fixed by #434), PyTorch #4858 (statistics.md §3)",
        "the CDF is accumulated in fp32 in token-id order: deep-tail tokens after the head get no width and u past "
        "the end lands on the last kept token", "draw", "campaign:mutants/deep-tail/pearson", false},
       WithDraw(DrawRule::kFp32Cumsum)},
      {{"uniform-zero-masked-token", kFloors, "PyTorch #4858 (CUDA multinomial: [0, 1) vs (0, 1] mismatch)",
        "a 24-bit fp32 uniform in [0, 1) with a non-strict CDF search: u == 0 returns token 0 even when masked",
        "draw", "campaign:mutants/u-zero/support", false},
       WithDraw(DrawRule::kZeroUniformNonStrict)},
      {{"low-discrepancy-stream", kRng,
        "statistics.md §3 (a stratified or quasi-random stream passes every one-sided fit; TestU01's two-level tests)",
        "the uniforms of a row are a Weyl sequence (offset x golden ratio): the right marginal, a fit too good to be "
        "random",
        "draw", "campaign:smoke/pearson lower tail", false},
       WithDraw(DrawRule::kLowDiscrepancy)},
      // --- issue 31: seeds, steps and corners (caught by the stream checks, the decode and corner cases) ---
      {{"seed-ignored", kRng,
        "TRT-LLM#19505 / #17599 (per-request seeds ignored on the speculative path), mlx-vlm#1844 (an omitted seed "
        "becomes 0), tt-metal#53166 (n > 1 completions byte-identical)",
        "the Philox key is 0 whatever the row's seed: the stream is keyed by the offset alone", "rng",
        "campaign:seed-dependence", true},
       WithRng(SeedIgnored)},
      {{"graph-baked-uniform", kRng, "imp#2013 (a CUDA-graph step bakes one uniform: 8 of 8 replies began with the "
        "same token)",
        "calls of 2, 4, .., 32 rows (a captured decode graph) replay the (seed, offset) of the first call of that size",
        "stream", "campaign:decode/step-repeats", true},
       WithStream(StreamFault::kGraphBakedUniform)},
      {{"step-key-reuse", kRng, "vLLM block verification #46781 (keys reused across consecutive steps)",
        "a decode step (the previous call's rows, every offset + 1) reuses the previous step's counters every other "
        "step", "stream", "campaign:decode/step-repeats", false},
       WithStream(StreamFault::kStepKeyReuse)},
      {{"topp-tiny-masks-all", kCorners, "mlx-lm#1912 (every token masked at top_p <= 1e-7 in fp32)",
        "top_p <= 1e-7 masks every token: the row comes out unsamplable (the invalid marker)", "distribution",
        "campaign:corner/support", true},
       WithDistribution(TinyTopPMasksAll)},
      {{"topk-over-finite-leak", kCorners,
        "issue 31: a top-p request on a row with fewer finite logits than its top_k",
        "top_k > #finite pads the candidates with -inf tokens; top-p counts the first as the least kept token",
        "distribution", "campaign:corner/support", false},
       WithDistribution(TopKOverFiniteLeaks)},
      {{"topk-at-vocab-skips-topp", kCorners, "issue 31: top_k >= V with top_p (a no-filter fast path)",
        "top_k >= V takes the no-filter path, which skips top-p too", "distribution", "campaign:corner/support",
        false},
       WithDistribution(TopKAtVocabSkipsTopP)},
      {{"minp-first-32k-only", kCorners, "mlxcel#1391 (min-p wrong on vocabularies above 32768)",
        "min-p filters ids below 32768 only; ids beyond keep their probability", "distribution",
        "campaign:corner/support", false},
       WithDistribution(MinPFirst32kOnly)},
      {{"nan-row-token-0", kBadRows, "vLLM v1 all -inf row: argmax of NaN returns token 0 silently (semantics.md 1.2)",
        "an unsamplable row (NaN or every logit -inf) returns token 0 instead of kInvalidToken", "bad-row",
        "property:support-containment", false},
       WithUnsamplableRowToken(0)},
  };
  return defs;
}

}  // namespace samplecheck::harness::mutants
