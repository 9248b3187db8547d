// Binning of a token distribution into cells for chi-square tests.
//
// Cells are decided from the expected probabilities p0 and the planned draw count N only, never from observed
// counts: choosing cells from the data makes the null distribution of the statistic unknown (the PyTorch
// "count > 5" mask). Assumption stated and enforced: every cell has expected count N * p0(cell) >= 10
// (Abseil's rule; BinningOptions::min_expected), so Pearson's X^2 is close to its chi-square(K - 1) limit.
//
// Three binnings (statistics.md 5.6), each a partition of the support {t : p0[t] > 0}, so dof = cells - 1:
//   head  single tokens with N * p0 >= 10, at most max_head_cells of them in p0-rank order, plus one rest cell
//         (merged into the last head cell when its expected count is below 10). Catches per-token bias.
//   tail  the head tokens as one aggregate cell, then the remaining tokens in p0-rank order cut into cells of
//         equal expected mass (each >= 10 expected, at most max_tail_cells). Catches tail truncation and
//         scaling (the torch7 #418 class).
//   hash  the head aggregate, then the tail tokens hashed by id into hash_buckets buckets, adjacent buckets
//         merged until each has >= 10 expected. Catches permutations inside the tail that keep rank masses.
// Tokens with p0 == 0 are forbidden: they belong to no cell (kForbiddenCell); draws of them are support
// violations, counted apart and never folded into a p-value (the Pyro bug: an infinite p-value that passed).
//
// Sizes: V up to 2^20 tokens and N up to ~1e12 draws; masses are accumulated in long double.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "samplecheck/core/error.h"

namespace samplecheck::stats {

inline constexpr std::int32_t kForbiddenCell = -1;

enum class CellKind : std::uint8_t {
  kToken,          // one head token
  kRest,           // every support token not in another cell (head binning); may include the last head token
  kHeadAggregate,  // all head tokens together (tail and hash binnings)
  kRankRange,      // tokens of consecutive p0 rank [rank_begin, rank_end) (tail binning)
  kHashBuckets,    // tail tokens whose hashed id lies in buckets [bucket_begin, bucket_end) (hash binning)
};

const char* CellKindName(CellKind kind);

struct Cell {
  CellKind kind = CellKind::kRest;
  double probability = 0.0;       // p0 mass of the cell (p0 normalized to sum 1)
  std::uint32_t token_count = 0;  // number of tokens in the cell
  std::uint32_t rank_begin = 0;   // kToken, kRankRange: ranks in BinningPlan::tokens_by_rank
  std::uint32_t rank_end = 0;
  std::uint32_t bucket_begin = 0;  // kHashBuckets
  std::uint32_t bucket_end = 0;
};

struct Binning {
  std::string name;                          // "head", "tail" or "hash"
  std::vector<Cell> cells;                   // a partition of the support
  std::vector<std::int32_t> cell_of_token;   // size V; kForbiddenCell for tokens with p0 == 0

  // Usable for a chi-square test: at least two cells. A binning of one cell carries no information (dof 0).
  bool usable() const noexcept { return cells.size() >= 2; }
  std::uint64_t dof() const noexcept { return cells.size() >= 2 ? cells.size() - 1 : 0; }
};

struct BinningOptions {
  double min_expected = 10.0;           // least expected count N * p0(cell) of any cell
  std::uint32_t max_head_cells = 4096;  // single-token cells, in p0-rank order
  std::uint32_t max_tail_cells = 256;   // equal-mass rank cells
  std::uint32_t hash_buckets = 64;      // hash binning buckets before merging
  std::uint64_t hash_seed = 0x9E3779B97F4A7C15ULL;
};

struct BinningPlan {
  double planned_draws = 0.0;
  std::uint32_t vocabulary = 0;                 // V = p0.size()
  std::vector<std::uint32_t> tokens_by_rank;    // support tokens by p0 descending, ties by id ascending
  std::uint32_t head_tokens = 0;                // tokens_by_rank[0, head_tokens) are head tokens
  std::vector<std::uint32_t> forbidden_tokens;  // p0 == 0, ascending id
  double top_probability = 0.0;   // p0 of tokens_by_rank[0] (normalized; 0 without support)
  double rest_probability = 0.0;  // p0 of the other support tokens, summed directly (exact where it is tiny)
  Binning head;
  Binning tail;
  Binning hash;
  // The usable binnings (head, tail, hash in that order). Test them together with Bonferroni or Holm over
  // this count (statistics.md 5.6: m = 3).
  std::vector<const Binning*> UsableBinnings() const;
};

// Builds the three binnings from p0 (any non-negative finite weights with a positive sum; normalized here) and
// the planned draw count N (> 0). Invalid input is kInvalidArgument naming the value and allowed range.
Result<BinningPlan> PlanBinnings(std::span<const double> p0, double planned_draws, const BinningOptions& options = {});

// The hash bucket of a token id (bits of splitmix64(id ^ seed)), in [0, buckets).
std::uint32_t HashBucketOfToken(std::uint32_t token, std::uint64_t seed, std::uint32_t buckets);

// The tokens of one cell, ascending id. O(V).
std::vector<std::uint32_t> TokensInCell(const Binning& binning, std::size_t cell);

// Cell probabilities, in cell order.
std::vector<double> CellProbabilities(const Binning& binning);

// Indices of the single-token cells (kToken), for the max-|z| test.
std::vector<std::size_t> TokenCells(const Binning& binning);

// Observed counts per cell from a histogram over token ids (size V).
struct BinnedCounts {
  std::vector<std::uint64_t> observed;  // per cell
  std::uint64_t in_support = 0;         // sum of observed
  std::uint64_t forbidden = 0;          // draws of p0 == 0 tokens: support violations, never in `observed`
};
Result<BinnedCounts> BinCounts(const Binning& binning, std::span<const std::uint64_t> token_counts);

}  // namespace samplecheck::stats
