// Corner coverage (corners.h): the pairwise covering design and the corner cases built from it.
#include "samplecheck/suites/corners.h"
#include "samplecheck/core/splitmix.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <set>
#include <tuple>

#include "samplecheck/suites/case_seed.h"
#include "samplecheck/suites/generated.h"
#include "samplecheck/suites/row_source.h"
#include "splitmix_stream.h"

namespace samplecheck::harness {
namespace {

enum Factor : size_t { kTemperature, kTopK, kTopP, kMinP, kRow, kVocab, kFactors };

constexpr double kTemperatures[] = {0.0, 1e-6, 1.0, 4.0};
constexpr double kMinPs[] = {0.0, 1e-6, 1.0};
constexpr int64_t kVocabs[] = {1, 2, 1001, 65537};
constexpr int kCandidates = 32;
constexpr int64_t kNoOpTopK = int64_t{1} << 20;  // >= V: a no-op under every profile (where -1 may be invalid)

using Stream = SplitMixStream;  // the same on every platform

// The requirements still uncovered: partial rows (factor, level) a design row covers when it matches every entry.
class TupleSet {
 public:
  TupleSet(const std::vector<size_t>& levels, std::vector<CornerTuple> tuples)
      : tuples_(std::move(tuples)), open_(tuples_.size(), 1), open_count_(tuples_.size()) {
    containing_.resize(levels.size());
    for (size_t f = 0; f < levels.size(); ++f) containing_[f].resize(levels[f]);
    for (size_t i = 0; i < tuples_.size(); ++i) {
      for (const auto& [f, level] : tuples_[i]) containing_[f][level].push_back(i);
    }
  }
  bool empty() const { return open_count_ == 0; }
  // The n-th open requirement (n taken modulo the open ones).
  const CornerTuple& NthOpen(uint64_t n) const {
    n %= open_count_;
    for (size_t i = 0;; ++i) {
      if (open_[i] && n-- == 0) return tuples_[i];
    }
  }
  // Open requirements that factor h at `level` completes in a partial row (every other entry set and equal).
  size_t Gain(const std::vector<uint32_t>& row, size_t h, uint32_t level) const {
    size_t gain = 0;
    for (size_t i : containing_[h][level]) {
      if (!open_[i]) continue;
      bool matches = true;
      for (const auto& [f, l] : tuples_[i]) matches = matches && (f == h || row[f] == l);
      gain += matches;
    }
    return gain;
  }
  // Open requirements a full row covers; with cover, they are closed.
  size_t Covered(const std::vector<uint32_t>& row, bool cover) {
    size_t n = 0;
    for (size_t i = 0; i < tuples_.size(); ++i) {
      if (!open_[i]) continue;
      bool matches = true;
      for (const auto& [f, l] : tuples_[i]) matches = matches && row[f] == l;
      if (!matches) continue;
      ++n;
      if (cover) {
        open_[i] = 0;
        --open_count_;
      }
    }
    return n;
  }

 private:
  std::vector<CornerTuple> tuples_;
  std::vector<uint8_t> open_;
  size_t open_count_;
  std::vector<std::vector<std::vector<size_t>>> containing_;  // [factor][level] -> requirements naming it
};

// One candidate row: an open requirement, then every other factor (in a random order) at the level completing most
// open requirements (ties: the first of a random rotation).
std::vector<uint32_t> Candidate(const std::vector<size_t>& levels, const TupleSet& open, Stream& s) {
  constexpr uint32_t kUnset = std::numeric_limits<uint32_t>::max();
  std::vector<uint32_t> row(levels.size(), kUnset);
  for (const auto& [f, level] : open.NthOpen(s.Next())) row[f] = level;
  std::vector<size_t> order;
  for (size_t h = 0; h < levels.size(); ++h) {
    if (row[h] == kUnset) order.push_back(h);
  }
  for (size_t i = order.size(); i > 1; --i) std::swap(order[i - 1], order[s.Below(i)]);
  for (size_t h : order) {
    const uint64_t rotate = s.Below(levels[h]);
    size_t best_gain = 0;
    uint32_t best = static_cast<uint32_t>(rotate);
    for (size_t k = 0; k < levels[h]; ++k) {
      const auto level = static_cast<uint32_t>((rotate + k) % levels[h]);
      const size_t gain = open.Gain(row, h, level);
      if (gain > best_gain) {
        best_gain = gain;
        best = level;
      }
    }
    row[h] = best;
  }
  return row;
}

// Every pair of levels of two factors.
std::vector<CornerTuple> AllPairs(const std::vector<size_t>& levels) {
  std::vector<CornerTuple> tuples;
  for (size_t f = 0; f < levels.size(); ++f) {
    for (size_t g = f + 1; g < levels.size(); ++g) {
      for (uint32_t a = 0; a < levels[f]; ++a) {
        for (uint32_t b = 0; b < levels[g]; ++b) tuples.push_back({{f, a}, {g, b}});
      }
    }
  }
  return tuples;
}

// Every combination of levels of `factors`, with the fixed entries of `with` added to each.
void AddCombinations(const std::vector<size_t>& levels, const std::vector<size_t>& factors, const CornerTuple& with,
                     std::vector<CornerTuple>& out) {
  std::vector<uint32_t> at(factors.size(), 0);
  while (true) {
    CornerTuple t = with;
    for (size_t i = 0; i < factors.size(); ++i) t.push_back({factors[i], at[i]});
    out.push_back(std::move(t));
    size_t i = 0;
    while (i < factors.size() && ++at[i] == levels[factors[i]]) at[i++] = 0;
    if (i == factors.size()) return;
  }
}

RowSpec CornerRow(uint32_t kind, int64_t vocab) {
  RowSpec row;
  row.vocab = vocab;
  if (kind == 2) {
    row.kind = "tied";
    row.levels = std::min<int64_t>(4, vocab);
    row.spacing = 1.0;
    return row;
  }
  row.kind = "gaussian";
  row.sigma = 2.0;
  if (kind == 1) row.mask_fraction = 0.5;
  return row;
}

// The tempered cumulative mass of the top half of the row's finite tokens (at T = 1 where the case is greedy or
// near it): a top_p exactly at a boundary of the unfiltered nucleus.
double BoundaryTopP(const std::vector<float>& logits, double temperature) {
  const double t = temperature >= 0.5 ? temperature : 1.0;
  std::vector<float> finite;
  for (float x : logits) {
    if (std::isfinite(x)) finite.push_back(x);
  }
  if (finite.size() < 2) return 1.0;
  std::sort(finite.begin(), finite.end(), std::greater<float>());
  long double total = 0, top = 0;
  for (size_t i = 0; i < finite.size(); ++i) {
    const long double w = std::exp((static_cast<long double>(finite[i]) - finite[0]) / t);
    total += w;
    if (i < finite.size() / 2) top += w;
  }
  return std::clamp(static_cast<double>(top / total), 1e-9, 1.0);
}

// A case's name, row and parameters from a design row, resolved on the row the campaign builds for it.
Result<CaseSpec> CornerCase(const std::vector<uint32_t>& levels, size_t index, uint64_t campaign_seed) {
  CaseSpec cs;
  cs.name = CaseName(CaseOrigin::kCorner, std::to_string(index));
  const int64_t vocab = kVocabs[levels[kVocab]];
  cs.row = CornerRow(levels[kRow], vocab);
  auto logits = MakeRow(cs.row, CaseRowSeed(CaseSeed(campaign_seed, cs.name)));
  if (!logits.ok()) return logits.error().WithContext("corner case " + cs.name);
  const auto finite = static_cast<int64_t>(
      std::count_if(logits->begin(), logits->end(), [](float x) { return std::isfinite(x); }));
  SamplingParams& p = cs.params;
  p.temperature = kTemperatures[levels[kTemperature]];
  const int64_t top_k[] = {-1, 0, 1, finite, finite + 1, vocab + 3};
  p.top_k = top_k[levels[kTopK]];
  p.top_p = levels[kTopP] == 0 ? 1e-7 : levels[kTopP] == 1 ? BoundaryTopP(*logits, p.temperature) : 1.0;
  p.min_p = kMinPs[levels[kMinP]];
  return cs;
}

}  // namespace

const std::vector<CornerFactor>& CornerFactors() {
  static const std::vector<CornerFactor> factors = {
      {"temperature", {"0", "1e-6", "1", "4"}},
      {"top_k", {"-1", "0", "1", "#finite", "#finite+1", "V+3"}},
      {"top_p", {"1e-7", "boundary", "1"}},
      {"min_p", {"0", "1e-6", "1"}},
      {"row", {"plain", "masked", "tied"}},
      {"V", {"1", "2", "1001", "65537"}},
  };
  return factors;
}

std::vector<std::vector<uint32_t>> CoveringDesign(const std::vector<size_t>& levels,
                                                  std::vector<CornerTuple> requirements, uint64_t seed) {
  std::vector<std::vector<uint32_t>> rows;
  if (levels.empty() || std::any_of(levels.begin(), levels.end(), [](size_t n) { return n == 0; })) return rows;
  TupleSet open(levels, std::move(requirements));
  Stream s(SplitMix64(seed ^ 0xC0A7E25ULL));
  while (!open.empty()) {
    std::vector<uint32_t> best;
    size_t best_gain = 0;
    for (int c = 0; c < kCandidates; ++c) {
      std::vector<uint32_t> row = Candidate(levels, open, s);
      const size_t gain = open.Covered(row, false);
      if (gain > best_gain) {
        best_gain = gain;
        best = std::move(row);
      }
    }
    open.Covered(best, true);
    rows.push_back(std::move(best));
  }
  return rows;
}

std::vector<std::vector<uint32_t>> PairwiseDesign(const std::vector<size_t>& levels, uint64_t seed) {
  return CoveringDesign(levels, AllPairs(levels), seed);
}

std::vector<CornerTuple> CornerRequirements() {
  std::vector<size_t> levels;
  for (const CornerFactor& f : CornerFactors()) levels.push_back(f.levels.size());
  std::vector<CornerTuple> requirements = AllPairs(levels);
  // The interactions the field found, each at the live temperature 1 (greedy and refused temperatures mask them):
  // a top-p request on a row with fewer finite logits than its top_k (row x top_k x top_p), a tiny top_p and top_k
  // >= V with top_p (inside the same triples), min-p on a vocabulary above 32768 (V x min_p).
  const CornerTuple live{{kTemperature, 2}};
  AddCombinations(levels, {kRow, kTopK, kTopP}, live, requirements);
  AddCombinations(levels, {kVocab, kMinP}, live, requirements);
  return requirements;
}

Result<std::vector<CaseSpec>> CornerCases(uint64_t design_seed, uint64_t campaign_seed, uint64_t max_draws, double tv) {
  std::vector<size_t> levels;
  for (const CornerFactor& f : CornerFactors()) levels.push_back(f.levels.size());
  std::vector<CaseSpec> cases;
  const std::vector<std::vector<uint32_t>> design = CoveringDesign(levels, CornerRequirements(), design_seed);
  for (size_t i = 0; i < design.size(); ++i) {
    auto cs = CornerCase(design[i], i, campaign_seed);
    if (!cs.ok()) return cs.error();
    cases.push_back(std::move(*cs));
  }
  // One value invalid under every profile per field: every sampler must refuse it.
  const std::pair<const char*, SamplingParams> probes[] = {
      {"temperature", {-1.0, kNoOpTopK, 1.0, 0.0, 0, 0}},
      {"top_k", {1.0, -2, 1.0, 0.0, 0, 0}},
      {"top_p", {1.0, kNoOpTopK, 1.5, 0.0, 0, 0}},
      {"min_p", {1.0, kNoOpTopK, 1.0, -0.5, 0, 0}},
  };
  for (const auto& [field, params] : probes) {
    CaseSpec cs;
    cs.name = CaseName(CaseOrigin::kCorner, std::string("refuse-") + field);
    cs.row = CornerRow(0, 1001);
    cs.params = params;
    cases.push_back(std::move(cs));
  }
  for (CaseSpec& cs : cases) {
    cs.refuse_invalid = true;
    cs.max_draws = max_draws;
    cs.tv = tv;
  }
  return cases;
}

}  // namespace samplecheck::harness
