// The exact processed distribution of one row under a semantics profile.
//
// Method (docs/semantics.md, "How the reference computes"):
//   1. Validate the parameters and the row; the greedy triggers of the profile short-cut to one token.
//   2. Widen every logit exactly to long double; weights w_i = exp((x_i - x_max) / T) in long double (the
//      difference x_i - x_max of two fp32 values is exact whenever it matters, so every weight carries a relative
//      error below ~1e-15 even for |logit| ~ 1e38 or T near 0). +inf logits: weight 1 each, every other token 0.
//      A profile that applies the temperature last (llama-cpp) filters on the weights at T = 1 and draws the kept
//      tokens with the weights at T.
//   3. Sort the tokens of positive weight by logit, descending, ties by ascending token id (stable LSD radix).
//      Every filter keeps a prefix of that order, so the pipeline is a sequence of prefix lengths.
//   4. Run the profile's filters in its order; each finds its cut by exact comparisons and the band of positions
//      around the cut whose decision is within its allowed margin of flipping (kAmbiguousMarginUlps fp32 ulps, and
//      for top-p the profile's numerics model: reference/numerics.h), or is a tie group cut by position. The pipeline runs three times: as computed, with every band kept (kAllIn) and with every band
//      dropped (kAllOut); the ambiguous tokens are exactly the positions between the last two cuts.
//   5. Probabilities: each kept weight over the Neumaier-compensated sum of the kept weights, summed in token-id
//      order, so two runs with the same kept set give bit-identical probabilities (disabled values are exact no-ops).
#include "samplecheck/reference/distribution.h"
#include "samplecheck/reference/numerics.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <functional>
#include <limits>
#include <sstream>
#include <string>

namespace samplecheck {
namespace {

using Real = long double;

// At most this many decisions per filter are recorded in ProcessedDistribution::boundary (the ambiguous list is
// never truncated).
constexpr size_t kMaxDecisionsPerFilter = 256;

// Neumaier's improved Kahan summation in long double.
class CompensatedSum {
 public:
  void Add(Real value) {
    const Real total = sum_ + value;
    if (std::fabs(sum_) >= std::fabs(value)) {
      compensation_ += (sum_ - total) + value;
    } else {
      compensation_ += (value - total) + sum_;
    }
    sum_ = total;
  }
  Real Value() const { return sum_ + compensation_; }

 private:
  Real sum_ = 0;
  Real compensation_ = 0;
};

// The spacing of fp32 numbers at |x| (the ulp of fp32(x)); 2^-149 below the normal range.
Real UlpFp32(Real x) {
  x = std::fabs(x);
  if (!(x >= 0x1p-126L)) return 0x1p-149L;
  if (std::isinf(x)) return std::numeric_limits<Real>::infinity();
  int exponent = 0;
  std::frexp(x, &exponent);  // x = m * 2^exponent, m in [0.5, 1)
  return std::ldexp(Real{1}, exponent - 24);
}

// Margin in ulps of `reference`: |value - reference| / ulp_fp32(reference).
double MarginUlps(Real value, Real reference) {
  if (value == reference) return 0.0;
  const Real ulp = UlpFp32(reference);
  const Real margin = std::fabs(value - reference) / ulp;
  return std::isfinite(margin) ? static_cast<double>(margin) : std::numeric_limits<double>::max();
}

// Whether m * v is exact in fp32 for every m in [1, n]: v's odd integer significand times n fits 24 bits and n * |v|
// does not overflow (a multiple of a representable value keeps its lowest bit, so underflow cannot round it).
bool MultiplesExactFp32(float v, int64_t n) {
  if (v == 0.0f) return true;
  const double magnitude = std::fabs(static_cast<double>(v));
  if (n >= (int64_t{1} << 24) || static_cast<double>(n) * magnitude > std::numeric_limits<float>::max()) return false;
  int exponent = 0;
  auto significand = static_cast<uint64_t>(std::ldexp(std::frexp(magnitude, &exponent), 24));
  while ((significand & 1u) == 0) significand >>= 1;
  return significand * static_cast<uint64_t>(n) < (uint64_t{1} << 24);
}

// exp(z) for z <= 0 in long double, fast: z = hi + lo with hi = double(z), exp(z) = exp(hi) * (1 + lo) since
// |lo| <= 2^-54 |z| (lo^2 is far below the long double epsilon). glibc's exp(double) is within 1 ulp, so every
// weight carries a relative error below ~2.3e-16: well inside the 1e-15 budget of a probability.
Real ExpExtended(Real z) {
  if (z < -11000.0L) return 0;  // treated as 0: p < e^-11000 ~ 1e-4777 (long double normals end near e^-11355)
  const double hi = static_cast<double>(z);
  const Real lo = z - static_cast<Real>(hi);
  const double e = std::exp(hi);
  if (e == 0.0 || e < 0x1p-1000) return std::exp(z);  // below the double range: the slow long double path
  return static_cast<Real>(e) * (Real{1} + lo);
}

struct Prepared {
  std::vector<float> logits;   // fp32 (exact widening of the stored dtype), -0 canonicalized to +0
  std::vector<Real> weight;    // exp((x - x_max) / T); 0 for -inf and for weights below the long double range
  std::vector<int32_t> order;  // tokens of positive weight, logit descending, ties by ascending id
  Real total = 0;             // sum of every weight (compensated, in token-id order)
  int64_t finite = 0;          // tokens whose logit is not -inf (the engine sees them even where their weight is 0)
  Real temperature = 1;
  bool scaled = false;         // T != 1: engines round x / T to fp32, which can create ties

  // Cum(j) = sum of weight[order[i]] for i < j (compensated), extended lazily: the filters only look at the head
  // of the order, so a 262,144-token row with top-k 50 never sums its tail. Cum(order.size()) is `total`.
  Real Cum(int64_t j) const {
    if (j >= static_cast<int64_t>(order.size())) return total;
    while (static_cast<int64_t>(cum_.size()) <= j) {
      running_.Add(weight[order[cum_.size() - 1]]);
      cum_.push_back(running_.Value());
    }
    return cum_[j];
  }

 private:
  mutable std::vector<Real> cum_{Real{0}};
  mutable CompensatedSum running_;
};

// Stable LSD radix sort of the alive tokens by descending fp32 logit (3 passes of 11 bits).
// `alive`: the tokens to order (those of positive weight; with the temperature applied last, also those of positive
// weight at T only: the filters see them at T = 1).
std::vector<int32_t> SortByLogitDescending(const std::vector<float>& logits, const std::vector<Real>& weight,
                                           const std::vector<Real>* also_alive = nullptr) {
  std::vector<uint32_t> keys;
  std::vector<int32_t> ids;
  keys.reserve(logits.size());
  ids.reserve(logits.size());
  for (size_t i = 0; i < logits.size(); ++i) {
    if (!(weight[i] > 0) && !(also_alive != nullptr && (*also_alive)[i] > 0)) continue;
    const uint32_t bits = std::bit_cast<uint32_t>(logits[i]);
    const uint32_t ascending = (bits & 0x80000000u) ? ~bits : (bits | 0x80000000u);
    keys.push_back(~ascending);  // ascending key order = descending logit order
    ids.push_back(static_cast<int32_t>(i));
  }
  const size_t n = keys.size();
  std::vector<uint32_t> keys_tmp(n);
  std::vector<int32_t> ids_tmp(n);
  for (int shift = 0; shift < 32; shift += 11) {
    size_t counts[2049] = {};
    for (size_t i = 0; i < n; ++i) ++counts[((keys[i] >> shift) & 0x7ffu) + 1];
    for (int b = 0; b < 2048; ++b) counts[b + 1] += counts[b];
    for (size_t i = 0; i < n; ++i) {
      const size_t slot = counts[(keys[i] >> shift) & 0x7ffu]++;
      keys_tmp[slot] = keys[i];
      ids_tmp[slot] = ids[i];
    }
    keys.swap(keys_tmp);
    ids.swap(ids_tmp);
  }
  return ids;
}

struct Band {
  int64_t lo = 0;  // positions [lo, hi) of the sorted order
  int64_t hi = 0;
  bool empty() const { return hi <= lo; }
};

struct FilterOutcome {
  int64_t cut = 0;  // positions [0, cut) kept by exact arithmetic
  Band band;        // positions whose decision could flip
};

int64_t ApplyPolicy(const FilterOutcome& outcome, AmbiguousPolicy policy) {
  if (outcome.band.empty() || policy == AmbiguousPolicy::kAsComputed) return outcome.cut;
  if (policy == AmbiguousPolicy::kAllIn) return std::max(outcome.cut, outcome.band.hi);
  return std::max<int64_t>(1, std::min(outcome.cut, outcome.band.lo));
}

class Pipeline {
 public:
  Pipeline(const Prepared& row, const SamplingParams& params, const Profile& profile)
      : row_(row), params_(params), profile_(profile) {}

  struct Result {
    int64_t kept = 0;          // final prefix length
    bool truncated_cdf = false;  // the TensorRT-LLM truncated CDF shapes the final masses
    int64_t top_p_input = 0;   // the prefix top-p saw
    int64_t top_p_cut = 0;     // its cut (after the policy)
  };

  // One filter of a run as it ran (the trace ExplainTokenDrop reads): the prefix it saw and the prefix every
  // filter so far keeps after it.
  struct Stage {
    Filter filter;
    int64_t input = 0;      // positions [0, input) the filter saw
    int64_t kept = 0;       // positions [0, kept) every filter so far keeps after it
    bool tied_row = false;  // the kernel's row was one tie group (Profile::tied_row_unmasked): it masked nothing
  };

  Result Run(AmbiguousPolicy policy, std::vector<Decision>* decisions, std::vector<Stage>* trace = nullptr) const {
    const int64_t n = static_cast<int64_t>(row_.order.size());
    int64_t kept_all = n;         // after every filter so far
    int64_t kept_but_top_k = n;   // after every filter so far except top-k (joint top-p input)
    const TopPInput top_p_input = params_.min_p > 0 ? profile_.top_p_input_with_min_p : profile_.top_p_input;
    Result result;
    // Profile::tied_row_unmasked: the row the top-k/top-p kernel receives (what the filters before it left), when
    // all of it is one finite tie group; -1 otherwise.
    int64_t tied_row = -1;
    bool kernel_reached = false;
    auto enter_kernel = [&] {
      if (kernel_reached || !profile_.tied_row_unmasked) return;
      kernel_reached = true;
      if (TiedRow(kept_all)) tied_row = kept_all;
    };
    for (Filter filter : profile_.order) {
      switch (filter) {
        case Filter::kMinP: {
          if (!(params_.min_p > 0)) break;
          const int64_t input = top_p_input == TopPInput::kFull ? kept_but_top_k : kept_all;
          const int64_t cut = ApplyPolicy(MinP(input, decisions), policy);
          kept_all = std::min(kept_all, cut);
          kept_but_top_k = std::min(kept_but_top_k, cut);
          if (trace != nullptr) trace->push_back({filter, input, kept_all});
          break;
        }
        case Filter::kTopK: {
          enter_kernel();
          if (!TopKActive(kept_all)) break;
          const int64_t input = kept_all;
          const FilterOutcome outcome =
              kept_all == tied_row ? TiedRowTopK(kept_all, decisions) : TopK(kept_all, decisions);
          kept_all = std::min(kept_all, ApplyPolicy(outcome, policy));
          if (trace != nullptr) trace->push_back({filter, input, kept_all, input == tied_row});
          break;
        }
        case Filter::kTopP: {
          enter_kernel();
          if (!(params_.top_p < 1.0)) break;
          if (kept_all == tied_row) {  // the kernel's row is whole: top-p masks nothing on it
            if (trace != nullptr) trace->push_back({filter, kept_all, kept_all, true});
            break;
          }
          const int64_t input = top_p_input == TopPInput::kFull ? kept_but_top_k : kept_all;
          const int64_t cut = ApplyPolicy(TopP(input, decisions), policy);
          kept_all = std::min(kept_all, cut);
          kept_but_top_k = std::min(kept_but_top_k, cut);
          result.top_p_input = input;
          result.top_p_cut = cut;
          result.truncated_cdf = profile_.top_p_mass == TopPMass::kTruncatedCdf;
          if (trace != nullptr) trace->push_back({filter, input, kept_all});
          break;
        }
      }
    }
    result.kept = kept_all;
    if (result.truncated_cdf && result.kept != result.top_p_cut) result.truncated_cdf = false;
    return result;
  }

  bool TopKActive(int64_t input) const { return params_.top_k >= 1 && params_.top_k < input; }

  // What `stage` compared for the token at `position`, into `drop` (ExplainTokenDrop): min-p its weight over the
  // maximum's, top-k its rank and the end of the k-th token's tie group, top-p the mass ahead of it (of its tie
  // group, where the profile keeps ties) in the distribution top-p saw.
  void Describe(const Stage& stage, int64_t position, TokenDrop& drop) const {
    drop.stage_input = stage.input;
    switch (stage.filter) {
      case Filter::kMinP:
        drop.stage = DropStage::kMinP;
        drop.ratio_to_max = static_cast<double>(Weight(position) / Weight(0));
        break;
      case Filter::kTopK:
        drop.stage = DropStage::kTopK;
        drop.top_k_tied = Logit(position) == Logit(params_.top_k - 1);
        break;
      case Filter::kTopP: {
        drop.stage = DropStage::kTopP;
        const int64_t decided_at = profile_.top_p_ties == TopPTies::kKeepTied ? TieGroupStart(position) : position;
        drop.mass_ahead = static_cast<double>(row_.Cum(decided_at) / row_.Cum(stage.input));
        drop.top_p_strict = profile_.top_p_comparison == TopPComparison::kStrict;
        drop.top_p_tie_cut = profile_.top_p_ties == TopPTies::kByPosition && position > 0 &&
                             Logit(position) == Logit(position - 1) &&
                             (drop.top_p_strict ? drop.mass_ahead < params_.top_p : drop.mass_ahead <= params_.top_p);
        break;
      }
    }
  }

 private:
  float Logit(int64_t position) const { return row_.logits[row_.order[position]]; }
  Real Weight(int64_t position) const { return row_.weight[row_.order[position]]; }

  int64_t TieGroupStart(int64_t position) const {
    const float value = Logit(position);
    while (position > 0 && Logit(position - 1) == value) --position;
    return position;
  }
  int64_t TieGroupEnd(int64_t position, int64_t limit) const {
    const float value = Logit(position);
    while (position < limit && Logit(position) == value) ++position;
    return position;
  }

  // Profile::tied_row_unmasked: the kernel's row, positions [0, input), is one tie group of a finite logit and holds
  // every finite token the engine sees (min-p masks the others with -inf; without min-p, a finite token whose
  // weight underflows in the reference is still a finite logit to the engine, so the row is not tied).
  bool TiedRow(int64_t input) const {
    if (input < 1 || !std::isfinite(Logit(0)) || Logit(input - 1) != Logit(0)) return false;
    return params_.min_p > 0 || (input == static_cast<int64_t>(row_.order.size()) && input == row_.finite);
  }

  // Top-k on a tied kernel row (Profile::tied_row_unmasked): the whole row is kept. Certain where the kernel's
  // zeroth-pass statistics (topk_topp_triton.py:129-157) are exact in fp32 whatever its reduction order and FMA
  // contraction: then mean = c, deviation = 0 and the outlier pivot is c, nothing is gathered and the whole-row search
  // runs. That holds for c = 0 (every sum is 0, also over an empty first tile), and for any c when one of the first
  // 256 tokens (the smallest tile, BLOCK_SIZE on CPU; 8192 on CUDA) is in the row and c, c * c and every multiple
  // n * c, n * c * c (n up to the row's size) are exact in fp32. Elsewhere rounding may put the pivot below c: the
  // buffer search keeps exactly k (the profile's tie rule), so the tied group is reported ambiguous.
  FilterOutcome TiedRowTopK(int64_t input, std::vector<Decision>* decisions) const {
    FilterOutcome outcome{input, {input, input}};
    const float c = row_.scaled ? Logit(0) / static_cast<float>(params_.temperature) : Logit(0);  // logits.div_(temp)
    bool certain = c == 0.0f;
    if (!certain) {
      bool first_tile = false;
      for (int64_t j = 0; j < input && !first_tile; ++j) first_tile = row_.order[j] < 256;
      const double square = static_cast<double>(c) * c;  // exact in double
      certain = first_tile && static_cast<double>(static_cast<float>(square)) == square &&
                MultiplesExactFp32(c, input) && MultiplesExactFp32(static_cast<float>(square), input);
    }
    if (certain) return outcome;
    outcome.band.lo = params_.top_k;
    size_t recorded = 0;
    for (int64_t j = params_.top_k - 1; j < input; ++j) Record(decisions, Filter::kTopK, j, true, 0.0, recorded);
    return outcome;
  }

  void Record(std::vector<Decision>* decisions, Filter filter, int64_t position, bool kept, double margin,
              size_t& recorded, double allowed = kAmbiguousMarginUlps) const {
    if (decisions == nullptr || recorded >= kMaxDecisionsPerFilter) return;
    decisions->push_back({row_.order[position], kept, filter, margin, allowed});
    ++recorded;
  }

  // min-p: keep w >= min_p * w_max (non-strict keep: drop p < min_p * p_max). Compared in the engines: p (fp32)
  // against min_p * p_max (fp32) of the distribution min-p sees; the margin is in ulps of that threshold.
  FilterOutcome MinP(int64_t input, std::vector<Decision>* decisions) const {
    const Real w_max = Weight(0);
    const Real threshold = static_cast<Real>(params_.min_p) * w_max;
    const Real seen_mass = row_.Cum(input);
    const auto* begin = row_.order.data();
    const int64_t cut =
        std::partition_point(begin, begin + input, [&](int32_t token) { return row_.weight[token] >= threshold; }) -
        begin;
    std::function<double(int64_t)> margin = [&](int64_t position) {
      return MarginUlps(Weight(position) / seen_mass, threshold / seen_mass);
    };
    if (profile_.min_p_input == MinPInput::kLogits) {
      // The engine compares the logit with fp32(x_max + fp32(log min_p)) (llama.cpp): the margin is the distance to
      // that threshold in ulps of the largest of the threshold and the two terms it is formed from (each rounding
      // moves it by half an ulp of its result; cancellation makes the terms' ulps the larger ones).
      const Real z_max = static_cast<Real>(Logit(0)) / row_.temperature;
      const Real log_min_p = std::log(static_cast<Real>(params_.min_p));
      const Real threshold_logit = z_max + log_min_p;
      const Real unit = std::max({UlpFp32(z_max), UlpFp32(log_min_p), UlpFp32(threshold_logit)});
      margin = [&, threshold_logit, unit](int64_t position) {
        const Real m = std::fabs(static_cast<Real>(Logit(position)) / row_.temperature - threshold_logit) / unit;
        return std::isfinite(m) ? static_cast<double>(m) : std::numeric_limits<double>::max();
      };
    }
    FilterOutcome outcome{cut, {cut, cut}};
    // Tokens tied with the maximum are never ambiguous: fp32(min_p * p_max) <= p_max for min_p <= 1.
    while (outcome.band.lo > 0 && Weight(outcome.band.lo - 1) != w_max &&
           margin(outcome.band.lo - 1) < kAmbiguousMarginUlps) {
      --outcome.band.lo;
    }
    while (outcome.band.hi < input && margin(outcome.band.hi) < kAmbiguousMarginUlps) ++outcome.band.hi;
    size_t recorded = 0;
    const int64_t from = std::max<int64_t>(0, std::min(outcome.band.lo, cut - 1));
    const int64_t to = std::min(input, std::max(outcome.band.hi, cut + 1));
    for (int64_t j = from; j < to; ++j) Record(decisions, Filter::kMinP, j, j < cut, margin(j), recorded);
    return outcome;
  }

  // top-k: rank by logit. kKeepTied keeps every token tied with the k-th; kExactK keeps exactly k (the tie group
  // of the k-th trimmed by ascending id, and reported ambiguous).
  FilterOutcome TopK(int64_t input, std::vector<Decision>* decisions) const {
    const int64_t k = params_.top_k;
    const bool keep_tied = profile_.top_k_ties == TopKTies::kKeepTied;
    const int64_t cut = keep_tied ? TieGroupEnd(k - 1, input) : k;
    FilterOutcome outcome{cut, {cut, cut}};
    if (cut >= input) return outcome;
    const Real seen_mass = row_.Cum(input);
    const TopKInput top_k_input = params_.top_p < 1.0 ? profile_.top_k_input
                                                      : profile_.top_k_input_without_top_p.value_or(profile_.top_k_input);
    const bool on_probs = top_k_input == TopKInput::kProbs;
    auto value = [&](int64_t position) -> Real {
      return on_probs ? Weight(position) / seen_mass : static_cast<Real>(Logit(position)) / row_.temperature;
    };
    // Exact ties are decided by the tie rule; distinct values are close when fp32 arithmetic could make them tie
    // or swap: never for unscaled logits (compared exactly), else within kAmbiguousMarginUlps.
    auto close = [&](int64_t a, int64_t b) {
      if (Logit(a) == Logit(b)) return true;
      if (!on_probs && !row_.scaled) return false;
      return MarginUlps(value(a), value(b)) < kAmbiguousMarginUlps;
    };
    const int64_t last_kept = cut - 1;
    const int64_t first_dropped = cut;
    if (close(last_kept, first_dropped)) {
      outcome.band.hi = first_dropped + 1;
      while (outcome.band.hi < input && close(outcome.band.hi, last_kept)) ++outcome.band.hi;
      // Rounding of x / T is monotone: with logits compared and ties kept, a kept token can never be dropped.
      if (!(keep_tied && !on_probs)) {
        outcome.band.lo = last_kept;
        while (outcome.band.lo > 0 && close(outcome.band.lo - 1, first_dropped)) --outcome.band.lo;
      }
    }
    size_t recorded = 0;
    const int64_t from = std::min(outcome.band.lo, last_kept);
    const int64_t to = std::min(input, std::max(outcome.band.hi, first_dropped + 1));
    for (int64_t j = from; j < to; ++j) {
      const bool kept = j < cut;
      Record(decisions, Filter::kTopK, j, kept, MarginUlps(value(j), value(kept ? first_dropped : last_kept)),
             recorded);
    }
    return outcome;
  }

  // top-p on the prefix [0, input) renormalized: keep a token iff the mass above it is < top_p (kStrict) or
  // <= top_p (kNonStrict). kKeepTied (pivot) uses the mass strictly above the token's tie group; kByPosition cuts
  // a tie group by position (ascending id first) and reports the group ambiguous.
  // A decision is ambiguous when its margin is below its allowed margin (AllowedTopPUlps): the fixed floor, or the
  // drift the profile's fp32 sums can have on this row plus, where the engine orders by fp32 probabilities, the
  // mass of the tokens whose probability can compare equal to or past this one's.
  FilterOutcome TopP(int64_t input, std::vector<Decision>* decisions) const {
    const Real seen_mass = row_.Cum(input);
    const Real top_p = static_cast<Real>(params_.top_p);
    const bool strict = profile_.top_p_comparison == TopPComparison::kStrict;
    const bool keep_tied = profile_.top_p_ties == TopPTies::kKeepTied;
    const bool ascending = profile_.top_p_cumsum == TopPCumsum::kAscending;
    auto mass_above = [&](int64_t position) { return row_.Cum(position) / seen_mass; };
    auto keep = [&](Real above) { return strict ? above < top_p : above <= top_p; };
    const Real unit = ascending ? UlpFp32(std::max(top_p, Real{1} - top_p)) : UlpFp32(top_p);
    const NumericsModel& numerics = profile_.numerics;
    const int64_t terms = numerics.sums_survivors_only ? input : static_cast<int64_t>(row_.order.size());
    const Real relative = TopPRelativeError(numerics, terms);
    const Real window = ValueWindow(numerics);
    auto to_ulps = [&](Real m) {
      m /= unit;
      return std::isfinite(m) ? static_cast<double>(m) : std::numeric_limits<double>::max();
    };
    auto margin = [&](int64_t position) {
      const int64_t decided_at = keep_tied ? TieGroupStart(position) : position;
      return to_ulps(std::fabs(mass_above(decided_at) - top_p));
    };
    // The mass an fp32 implementation can move the decision at `position` by: the compared sum's drift (the
    // ascending cumsum through the token is 1 - mass above), and the tokens whose fp32 probability can tie with or
    // pass this token's: after its tie group for a kept token (they would join the mass above it), before it for
    // a dropped one (they would leave it).
    auto allowed = [&](int64_t position, bool kept) {
      const int64_t decided_at = keep_tied ? TieGroupStart(position) : position;
      const Real above = mass_above(decided_at);
      Real drift = (ascending ? Real{1} - above : above) * relative;
      if (window > 0) {
        const Real w = Weight(position);
        const auto* begin = row_.order.data();
        if (kept) {
          const int64_t from = TieGroupEnd(position, input);
          const Real floor = w * (Real{1} - window);
          const int64_t to =
              std::partition_point(begin + from, begin + input, [&](int32_t t) { return row_.weight[t] >= floor; }) -
              begin;
          drift += (row_.Cum(to) - row_.Cum(from)) / seen_mass;
        } else {
          const Real ceiling = w * (Real{1} + window);
          const int64_t from =
              std::partition_point(begin, begin + decided_at, [&](int32_t t) { return row_.weight[t] > ceiling; }) -
              begin;
          drift += (row_.Cum(decided_at) - row_.Cum(from)) / seen_mass;
        }
      }
      return std::max(kAmbiguousMarginUlps, to_ulps(drift));
    };
    // mass_above increases along the order (every weight is positive); position 0 (mass above 0) is always kept.
    // A forward scan touches only the nucleus and the positions right after it.
    int64_t cut = 1;
    while (cut < input && keep(mass_above(cut))) ++cut;
    if (keep_tied && cut < input) cut = TieGroupEnd(cut - 1, input);
    FilterOutcome outcome{cut, {cut, cut}};
    while (outcome.band.lo > 0 && margin(outcome.band.lo - 1) < allowed(outcome.band.lo - 1, true)) --outcome.band.lo;
    while (outcome.band.hi < input && margin(outcome.band.hi) < allowed(outcome.band.hi, false)) ++outcome.band.hi;
    if (!keep_tied && cut < input && Logit(cut) == Logit(cut - 1)) {  // a tie group cut by position
      outcome.band.lo = std::min(outcome.band.lo, TieGroupStart(cut - 1));
      outcome.band.hi = std::max(outcome.band.hi, TieGroupEnd(cut, input));
    }
    // The band and the first firm decision on either side of it (the nearest decision the margin does not cover).
    size_t recorded = 0;
    const int64_t from = std::max<int64_t>(0, std::min(outcome.band.lo, cut) - 1);
    const int64_t to = std::min(input, std::max(outcome.band.hi, cut) + 1);
    for (int64_t j = from; j < to; ++j) {
      Record(decisions, Filter::kTopP, j, j < cut, margin(j), recorded, allowed(j, j < cut));
    }
    return outcome;
  }

  const Prepared& row_;
  const SamplingParams& params_;
  const Profile& profile_;
};

Error InvalidRow(std::string message) { return {ErrorCode::kInvalidRow, std::move(message)}; }

SamplingParams WithTemperatureFloor(SamplingParams params, const Profile& profile) {
  if (params.temperature > 0.0 && params.temperature < profile.min_temperature) {
    params.temperature = profile.min_temperature;
  }
  return params;
}

bool IsGreedy(const SamplingParams& params, const Profile& profile) {
  const double t = params.temperature;
  if (t == 0.0) return true;  // ValidateParams rejected it where the profile has no greedy path
  if (t < profile.greedy_temperature_below) return true;
  if (profile.greedy_temperature_inclusive && t <= profile.greedy_temperature_below) return true;
  if (params.top_p == 0.0 && profile.top_p_zero_is_greedy) return true;
  if (params.top_k == 1 && profile.top_k_one_is_greedy) return true;
  return false;
}

}  // namespace

long double ProcessedDistribution::Prob(int32_t token) const {
  const auto it = std::lower_bound(kept.begin(), kept.end(), token);
  if (it == kept.end() || *it != token) return 0;
  return prob[it - kept.begin()];
}

std::vector<double> ProcessedDistribution::Dense() const {
  std::vector<double> dense(static_cast<size_t>(vocab), 0.0);
  for (size_t i = 0; i < kept.size(); ++i) dense[kept[i]] = static_cast<double>(prob[i]);
  return dense;
}

bool ProcessedDistribution::IsKept(int32_t token) const { return std::binary_search(kept.begin(), kept.end(), token); }

bool ProcessedDistribution::IsAmbiguous(int32_t token) const {
  return std::binary_search(ambiguous.begin(), ambiguous.end(), token);
}

namespace {

// A row ready for the filters (steps 1-3 of the method): the parameters with the profile's temperature floor, the
// fp32 logits, the weights the filters see and those the kept tokens are drawn with, and (when a filter is on) the
// sorted order and the total weight.
struct PreparedRow {
  SamplingParams params;
  Prepared prepared;
  std::vector<Real> final_weight;  // temperature last and T != 1: the weights at T (empty: prepared.weight)
  bool greedy = false;             // the profile's greedy path: argmax alone
  int32_t argmax = 0;              // the lowest token id among the maximal logits
  float max_logit = 0.0f;
  bool filtered = false;  // a filter is on (min-p, top-p, or top-k below the vocab): order and total are set

  const std::vector<Real>& DrawWeight() const { return final_weight.empty() ? prepared.weight : final_weight; }
};

Result<PreparedRow> PrepareRow(const LogitsView& row, const SamplingParams& requested, const Profile& profile) {
  if (auto error = ValidateParams(requested, profile)) return error->ToError();
  PreparedRow out;
  out.params = WithTemperatureFloor(requested, profile);
  const SamplingParams& params = out.params;
  if (row.vocab <= 0 || row.data == nullptr) return InvalidRow("empty row (vocab = " + std::to_string(row.vocab) + ")");
  if (row.vocab > std::numeric_limits<int32_t>::max()) {
    return InvalidRow("vocab = " + std::to_string(row.vocab) + " exceeds the int32 token id range");
  }

  Prepared& prepared = out.prepared;
  const int64_t vocab = row.vocab;
  prepared.logits.resize(static_cast<size_t>(vocab));
  float max_logit = -std::numeric_limits<float>::infinity();
  int64_t argmax = -1;
  for (int64_t i = 0; i < vocab; ++i) {
    float x = row.At(i);
    if (std::isnan(x)) {
      return InvalidRow("logit[" + std::to_string(i) + "] is NaN (" + std::string(DTypeName(row.dtype)) + " row)");
    }
    if (x == 0.0f) x = 0.0f;  // -0 and +0 are the same logit (ties)
    prepared.logits[i] = x;
    if (x != -std::numeric_limits<float>::infinity()) ++prepared.finite;
    if (x > max_logit) {
      max_logit = x;
      argmax = i;
    }
  }
  if (argmax < 0) return InvalidRow("every logit is -inf (vocab = " + std::to_string(vocab) + ")");
  out.argmax = static_cast<int32_t>(argmax);
  out.max_logit = max_logit;
  out.greedy = IsGreedy(params, profile);
  if (out.greedy) return out;

  // With the temperature applied last (llama.cpp), the filters see the T = 1 weights and the kept tokens are drawn
  // with the weights at T (final_weight); else both are the weights at T.
  const bool temperature_last = profile.temperature_placement == TemperaturePlacement::kLast;
  prepared.temperature = temperature_last ? Real{1} : static_cast<Real>(params.temperature);
  prepared.scaled = !temperature_last && params.temperature != 1.0;
  prepared.weight.resize(static_cast<size_t>(vocab));
  const bool has_pos_inf = std::isinf(max_logit);
  const Real max_ld = max_logit;
  const Real inverse_temperature = Real{1} / prepared.temperature;  // x * (1/T): one more 2^-64 rounding, no x87 divide
  for (int64_t i = 0; i < vocab; ++i) {
    const float x = prepared.logits[i];
    if (has_pos_inf) {
      prepared.weight[i] = std::isinf(x) && x > 0 ? 1.0L : 0.0L;
    } else if (std::isinf(x)) {
      prepared.weight[i] = 0.0L;
    } else {
      const Real shifted = static_cast<Real>(x) - max_ld;
      prepared.weight[i] = ExpExtended(prepared.scaled ? shifted * inverse_temperature : shifted);
    }
  }
  std::vector<Real>& final_weight = out.final_weight;
  if (temperature_last && params.temperature != 1.0) {
    final_weight.resize(static_cast<size_t>(vocab));
    const Real inverse_t = Real{1} / static_cast<Real>(params.temperature);
    for (int64_t i = 0; i < vocab; ++i) {
      const float x = prepared.logits[i];
      if (has_pos_inf || std::isinf(x)) {
        final_weight[i] = prepared.weight[i];
      } else {
        final_weight[i] = ExpExtended((static_cast<Real>(x) - max_ld) * inverse_t);
      }
    }
  }
  const bool top_k_on = params.top_k >= 1 && params.top_k < vocab;
  out.filtered = params.min_p > 0 || params.top_p < 1.0 || top_k_on;
  if (out.filtered) {
    prepared.order =
        SortByLogitDescending(prepared.logits, prepared.weight, final_weight.empty() ? nullptr : &final_weight);
    CompensatedSum total;
    for (int64_t i = 0; i < vocab; ++i) total.Add(prepared.weight[i]);
    prepared.total = total.Value();
  }
  return out;
}

}  // namespace

Result<ProcessedDistribution> ComputeDistribution(const LogitsView& row, const SamplingParams& requested,
                                                  const Profile& profile, const ReferenceOptions& options) {
  Result<PreparedRow> ready = PrepareRow(row, requested, profile);
  if (!ready.ok()) return ready.error();
  const SamplingParams& params = ready->params;
  const Prepared& prepared = ready->prepared;
  const int64_t vocab = row.vocab;
  ProcessedDistribution result;
  result.vocab = vocab;
  if (ready->greedy) {  // lowest token id among the maximal logits (torch.argmax)
    result.greedy = true;
    result.kept = {ready->argmax};
    result.prob = {1.0L};
    if (profile.greedy_ties_by_position) {
      for (int64_t i = ready->argmax + 1; i < vocab; ++i) {
        if (prepared.logits[i] == ready->max_logit) result.ambiguous.push_back(static_cast<int32_t>(i));
      }
      if (!result.ambiguous.empty()) result.ambiguous.insert(result.ambiguous.begin(), ready->argmax);
    }
    return result;
  }
  const std::vector<Real>& draw_weight = ready->DrawWeight();

  std::vector<int32_t> kept_tokens;
  if (ready->filtered) {
    const Pipeline pipeline(prepared, params, profile);
    const Pipeline::Result computed = pipeline.Run(AmbiguousPolicy::kAsComputed, &result.boundary);
    const Pipeline::Result all_in = pipeline.Run(AmbiguousPolicy::kAllIn, nullptr);
    const Pipeline::Result all_out = pipeline.Run(AmbiguousPolicy::kAllOut, nullptr);
    const Pipeline::Result& chosen = options.ambiguous == AmbiguousPolicy::kAllIn    ? all_in
                                     : options.ambiguous == AmbiguousPolicy::kAllOut ? all_out
                                                                                       : computed;
    // kAllOut never empties the kept set (the first position stays), so when a band starts at position 0 the
    // first position is not counted by the cut difference. A tie group cut by position is ambiguous as a whole:
    // extend the range down over exact ties with its first member (value-based decisions treat tied tokens
    // alike, so this only adds the members a positional cut split off).
    int64_t ambiguous_lo = all_out.kept;
    while (ambiguous_lo > 0 && ambiguous_lo < all_in.kept &&
           prepared.weight[prepared.order[ambiguous_lo - 1]] == prepared.weight[prepared.order[ambiguous_lo]]) {
      --ambiguous_lo;
    }
    result.ambiguous.assign(prepared.order.begin() + ambiguous_lo, prepared.order.begin() + all_in.kept);
    std::sort(result.ambiguous.begin(), result.ambiguous.end());
    std::sort(result.boundary.begin(), result.boundary.end(), [](const Decision& a, const Decision& b) {
      return a.token != b.token ? a.token < b.token : static_cast<int>(a.filter) < static_cast<int>(b.filter);
    });
    // Numeric drift: ambiguous through a top-p decision past the fixed floor but inside the numerics model, and
    // through no other decision (a decision near another filter's boundary, or a tie cut, keeps it ambiguous
    // for the usual reasons).
    for (int32_t token : result.ambiguous) {
      bool drift = false;
      bool floor = false;
      for (auto it = std::lower_bound(result.boundary.begin(), result.boundary.end(), token,
                                      [](const Decision& d, int32_t t) { return d.token < t; });
           it != result.boundary.end() && it->token == token; ++it) {
        if (it->margin_ulps < kAmbiguousMarginUlps) floor = true;
        if (it->filter == Filter::kTopP && it->margin_ulps >= kAmbiguousMarginUlps &&
            it->margin_ulps < it->allowed_ulps) {
          drift = true;
        }
      }
      if (drift && !floor) result.numeric_drift.push_back(token);
    }

    if (chosen.truncated_cdf) {
      // TensorRT-LLM legacy top-p: the CDF truncated at top_p. Kept tokens before the crossing token keep
      // p / top_p; the crossing token gets (top_p - mass above it) / top_p.
      const Real seen = prepared.Cum(chosen.top_p_input);
      const Real top_p = static_cast<Real>(params.top_p);
      const int64_t crossing = chosen.kept - 1;
      const Real above = prepared.Cum(crossing) / seen;
      const Real crossing_mass = std::max(Real{0}, std::min(top_p - above, prepared.weight[prepared.order[crossing]] / seen));
      std::vector<std::pair<int32_t, Real>> masses;
      for (int64_t j = 0; j < chosen.kept; ++j) {
        const Real mass = j == crossing ? crossing_mass : prepared.weight[prepared.order[j]] / seen;
        if (mass > 0) masses.emplace_back(prepared.order[j], mass);
      }
      std::sort(masses.begin(), masses.end());
      CompensatedSum truncated_total;
      for (const auto& [token, mass] : masses) truncated_total.Add(mass);
      for (const auto& [token, mass] : masses) {
        result.kept.push_back(token);
        result.prob.push_back(mass / truncated_total.Value());
      }
      return result;
    }
    for (int64_t j = 0; j < chosen.kept; ++j) {
      // A kept token whose weight at T underflows (temperature last, T < 1) has no mass: not kept.
      if (draw_weight[prepared.order[j]] > 0) kept_tokens.push_back(prepared.order[j]);
    }
    std::sort(kept_tokens.begin(), kept_tokens.end());
  } else {
    for (int64_t i = 0; i < vocab; ++i) {
      if (draw_weight[i] > 0) kept_tokens.push_back(static_cast<int32_t>(i));
    }
  }

  CompensatedSum total;
  for (int32_t token : kept_tokens) total.Add(draw_weight[token]);
  const Real mass = total.Value();
  result.kept = std::move(kept_tokens);
  result.prob.resize(result.kept.size());
  const Real inverse_mass = Real{1} / mass;
  for (size_t i = 0; i < result.kept.size(); ++i) result.prob[i] = draw_weight[result.kept[i]] * inverse_mass;
  return result;
}

const char* DropStageName(DropStage stage) {
  switch (stage) {
    case DropStage::kKept: return "kept";
    case DropStage::kNoWeight: return "no weight";
    case DropStage::kGreedy: return "greedy";
    case DropStage::kMinP: return "min-p";
    case DropStage::kTopK: return "top-k";
    case DropStage::kTopP: return "top-p";
    case DropStage::kNoMass: return "no mass";
  }
  return "?";
}

Result<TokenDrop> ExplainTokenDrop(const LogitsView& row, const SamplingParams& requested, const Profile& profile,
                                   int32_t token) {
  Result<PreparedRow> ready = PrepareRow(row, requested, profile);
  if (!ready.ok()) return ready.error();
  if (token < 0 || token >= row.vocab) {
    return InvalidArgument("token " + std::to_string(token) + " is outside the row's vocabulary [0, " +
                           std::to_string(row.vocab) + ")");
  }
  TokenDrop drop;
  drop.token = token;
  if (ready->greedy) {
    drop.stage = token == ready->argmax ? DropStage::kKept : DropStage::kGreedy;
    drop.greedy_token = ready->argmax;
    drop.reference_prob = token == ready->argmax ? 1.0 : 0.0;
    return drop;
  }
  const Prepared& prepared = ready->prepared;
  const std::vector<Real>& draw_weight = ready->DrawWeight();
  CompensatedSum total;
  for (Real w : draw_weight) total.Add(w);
  drop.reference_prob = static_cast<double>(draw_weight[token] / total.Value());
  if (!ready->filtered) {
    drop.stage = draw_weight[token] > 0 ? DropStage::kKept : DropStage::kNoWeight;
    return drop;
  }
  const auto at = std::find(prepared.order.begin(), prepared.order.end(), token);
  if (at == prepared.order.end()) {
    drop.stage = DropStage::kNoWeight;
    return drop;
  }
  const int64_t position = at - prepared.order.begin();
  drop.rank = position + 1;
  const Pipeline pipeline(prepared, ready->params, profile);
  std::vector<Pipeline::Stage> trace;
  (void)pipeline.Run(AmbiguousPolicy::kAsComputed, nullptr, &trace);
  for (const Pipeline::Stage& stage : trace) {
    if (position < stage.kept) continue;
    pipeline.Describe(stage, position, drop);
    return drop;
  }
  // Every filter keeps it: drawn with its weight at T, or with none (ComputeDistribution's kept set is the truth).
  Result<ProcessedDistribution> dist = ComputeDistribution(row, requested, profile);
  if (!dist.ok()) return dist.error();
  drop.stage = dist->IsKept(token) ? DropStage::kKept : DropStage::kNoMass;
  return drop;
}

}  // namespace samplecheck
