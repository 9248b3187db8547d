#include "samplecheck/stats/binning.h"
#include "samplecheck/core/splitmix.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <sstream>

namespace samplecheck::stats {
namespace {

using Mass = long double;

Status ValidateInput(std::span<const double> p0, double planned_draws, const BinningOptions& options,
                     Mass& total) {
  std::ostringstream out;
  if (p0.empty()) return InvalidArgument("p0 is empty: the vocabulary needs at least one token");
  if (p0.size() > static_cast<std::size_t>(std::numeric_limits<std::int32_t>::max())) {
    out << "p0.size() = " << p0.size() << " is outside the allowed range [1, 2^31 - 1]";
    return InvalidArgument(out.str());
  }
  if (!(std::isfinite(planned_draws) && planned_draws > 0.0)) {
    out << "planned_draws = " << planned_draws << " is outside the allowed range (0, inf)";
    return InvalidArgument(out.str());
  }
  if (!(std::isfinite(options.min_expected) && options.min_expected > 0.0)) {
    out << "min_expected = " << options.min_expected << " is outside the allowed range (0, inf)";
    return InvalidArgument(out.str());
  }
  if (options.hash_buckets == 0) return InvalidArgument("hash_buckets = 0 is outside the allowed range [1, 2^32)");
  total = 0;
  for (std::size_t t = 0; t < p0.size(); ++t) {
    if (!(std::isfinite(p0[t]) && p0[t] >= 0.0)) {
      out << "p0[" << t << "] = " << p0[t] << " is outside the allowed range [0, inf)";
      return InvalidArgument(out.str());
    }
    total += p0[t];
  }
  if (!(total > 0)) return InvalidArgument("p0 sums to 0: at least one token needs positive probability");
  return Status::Ok();
}

// Closes [begin, end) of items with expected masses `mass` into cells of expected count >= min_mass, cutting at
// equal-mass targets. Returns the cut points (end indices of cells). A short last cell is merged into the one
// before it; if not even one cell reaches min_mass, the result is empty.
std::vector<std::size_t> EqualMassCuts(const std::vector<Mass>& mass, Mass min_mass, std::size_t max_cells) {
  const Mass total = std::accumulate(mass.begin(), mass.end(), Mass{0});
  std::size_t cells = 0;
  if (total >= min_mass) {
    const Mass by_size = std::floor(total / min_mass);
    cells = static_cast<std::size_t>(std::min<Mass>(by_size, static_cast<Mass>(max_cells)));
  }
  std::vector<std::size_t> cuts;
  if (cells == 0) return cuts;
  Mass remaining = total;
  std::size_t remaining_cells = cells;
  Mass current = 0;
  for (std::size_t i = 0; i < mass.size(); ++i) {
    current += mass[i];
    const Mass target = std::max(remaining / static_cast<Mass>(remaining_cells), min_mass);
    if (remaining_cells > 1 && current >= target) {
      cuts.push_back(i + 1);
      remaining -= current;
      current = 0;
      --remaining_cells;
    }
  }
  // Everything after the last cut forms the last cell; merge it back when it is short.
  if (cuts.empty() || cuts.back() != mass.size()) {
    if (current >= min_mass || cuts.empty()) {
      cuts.push_back(mass.size());
    } else {
      cuts.back() = mass.size();
    }
  }
  return cuts;
}

Binning MakeBinning(const char* name, std::size_t vocabulary) {
  Binning b;
  b.name = name;
  b.cell_of_token.assign(vocabulary, kForbiddenCell);
  return b;
}

}  // namespace

const char* CellKindName(CellKind kind) {
  switch (kind) {
    case CellKind::kToken: return "token";
    case CellKind::kRest: return "rest";
    case CellKind::kHeadAggregate: return "head-aggregate";
    case CellKind::kRankRange: return "rank-range";
    case CellKind::kHashBuckets: return "hash-buckets";
  }
  return "?";
}

std::uint32_t HashBucketOfToken(std::uint32_t token, std::uint64_t seed, std::uint32_t buckets) {
  const std::uint64_t h = SplitMix64(static_cast<std::uint64_t>(token) ^ seed);
  return static_cast<std::uint32_t>(((h >> 32) * static_cast<std::uint64_t>(buckets)) >> 32);
}

std::vector<const Binning*> BinningPlan::UsableBinnings() const {
  std::vector<const Binning*> out;
  for (const Binning* b : {&head, &tail, &hash}) {
    if (b->usable()) out.push_back(b);
  }
  return out;
}

Result<BinningPlan> PlanBinnings(std::span<const double> p0, double planned_draws, const BinningOptions& options) {
  BinningPlan plan;
  plan.planned_draws = planned_draws;
  Mass total = 0;
  if (Status st = ValidateInput(p0, planned_draws, options, total); !st.ok()) return st.error();
  const std::size_t V = p0.size();
  plan.vocabulary = static_cast<std::uint32_t>(V);
  const Mass N = planned_draws;
  const Mass min_mass = static_cast<Mass>(options.min_expected) / N;  // least probability of a cell
  auto prob = [&](std::uint32_t t) { return static_cast<Mass>(p0[t]) / total; };

  for (std::uint32_t t = 0; t < V; ++t) {
    if (p0[t] > 0.0) {
      plan.tokens_by_rank.push_back(t);
    } else {
      plan.forbidden_tokens.push_back(t);
    }
  }
  std::sort(plan.tokens_by_rank.begin(), plan.tokens_by_rank.end(), [&](std::uint32_t a, std::uint32_t b) {
    return p0[a] != p0[b] ? p0[a] > p0[b] : a < b;
  });
  const std::size_t S = plan.tokens_by_rank.size();
  if (S > 0) {
    plan.top_probability = static_cast<double>(prob(plan.tokens_by_rank[0]));
    Mass rest = 0;
    for (std::size_t r = 1; r < S; ++r) rest += prob(plan.tokens_by_rank[r]);
    plan.rest_probability = static_cast<double>(rest);
  }

  // Head tokens: rank order, expected count >= min_expected, capped.
  std::size_t h = 0;
  while (h < S && h < options.max_head_cells && prob(plan.tokens_by_rank[h]) >= min_mass) ++h;
  plan.head_tokens = static_cast<std::uint32_t>(h);
  Mass head_mass = 0;
  for (std::size_t r = 0; r < h; ++r) head_mass += prob(plan.tokens_by_rank[r]);
  Mass tail_mass = 0;
  for (std::size_t r = h; r < S; ++r) tail_mass += prob(plan.tokens_by_rank[r]);

  // --- head binning: singletons + rest ---
  plan.head = MakeBinning("head", V);
  {
    Binning& b = plan.head;
    for (std::size_t r = 0; r < h; ++r) {
      Cell c;
      c.kind = CellKind::kToken;
      c.probability = static_cast<double>(prob(plan.tokens_by_rank[r]));
      c.token_count = 1;
      c.rank_begin = static_cast<std::uint32_t>(r);
      c.rank_end = static_cast<std::uint32_t>(r + 1);
      b.cell_of_token[plan.tokens_by_rank[r]] = static_cast<std::int32_t>(b.cells.size());
      b.cells.push_back(c);
    }
    if (S > h) {
      std::int32_t rest_index;
      if (tail_mass >= min_mass || b.cells.empty()) {
        Cell c;
        c.kind = CellKind::kRest;
        c.rank_begin = static_cast<std::uint32_t>(h);
        c.rank_end = static_cast<std::uint32_t>(S);
        rest_index = static_cast<std::int32_t>(b.cells.size());
        b.cells.push_back(c);
      } else {  // the rest is too light to stand alone: merge it into the last head cell
        rest_index = static_cast<std::int32_t>(b.cells.size() - 1);
        b.cells.back().kind = CellKind::kRest;
        b.cells.back().rank_end = static_cast<std::uint32_t>(S);
      }
      Cell& rest = b.cells[static_cast<std::size_t>(rest_index)];
      Mass rest_mass = rest.kind == CellKind::kRest && rest.rank_begin < h
                           ? prob(plan.tokens_by_rank[rest.rank_begin]) : Mass{0};
      rest_mass += tail_mass;
      rest.probability = static_cast<double>(rest_mass);
      rest.token_count = rest.rank_end - rest.rank_begin;
      for (std::size_t r = h; r < S; ++r) b.cell_of_token[plan.tokens_by_rank[r]] = rest_index;
    }
  }

  // Tail and hash binnings share the head aggregate as cell 0 (when there are head tokens).
  auto start_with_head_aggregate = [&](Binning& b) {
    if (h == 0) return;
    Cell c;
    c.kind = CellKind::kHeadAggregate;
    c.probability = static_cast<double>(head_mass);
    c.token_count = static_cast<std::uint32_t>(h);
    c.rank_begin = 0;
    c.rank_end = static_cast<std::uint32_t>(h);
    for (std::size_t r = 0; r < h; ++r) b.cell_of_token[plan.tokens_by_rank[r]] = 0;
    b.cells.push_back(c);
  };
  // Folds all tail tokens into the head aggregate (the tail is too light for a cell of its own).
  auto fold_tail_into_head = [&](Binning& b) {
    if (S == h) return;
    if (b.cells.empty()) {  // no head either: one cell with everything
      Cell c;
      c.kind = CellKind::kRankRange;
      c.rank_begin = 0;
      b.cells.push_back(c);
    }
    Cell& c = b.cells.front();
    c.probability = 1.0;
    c.rank_end = static_cast<std::uint32_t>(S);
    c.token_count = static_cast<std::uint32_t>(S);
    for (std::size_t r = h; r < S; ++r) b.cell_of_token[plan.tokens_by_rank[r]] = 0;
  };

  // --- tail binning: head aggregate + equal-mass rank ranges ---
  plan.tail = MakeBinning("tail", V);
  {
    Binning& b = plan.tail;
    start_with_head_aggregate(b);
    std::vector<Mass> mass(S - h);
    for (std::size_t r = h; r < S; ++r) mass[r - h] = prob(plan.tokens_by_rank[r]);
    const auto cuts = EqualMassCuts(mass, min_mass, options.max_tail_cells);
    if (cuts.empty()) {
      fold_tail_into_head(b);
    } else {
      std::size_t begin = 0;
      for (std::size_t end : cuts) {
        Cell c;
        c.kind = CellKind::kRankRange;
        c.rank_begin = static_cast<std::uint32_t>(h + begin);
        c.rank_end = static_cast<std::uint32_t>(h + end);
        c.token_count = static_cast<std::uint32_t>(end - begin);
        Mass m = 0;
        const auto index = static_cast<std::int32_t>(b.cells.size());
        for (std::size_t i = begin; i < end; ++i) {
          m += mass[i];
          b.cell_of_token[plan.tokens_by_rank[h + i]] = index;
        }
        c.probability = static_cast<double>(m);
        b.cells.push_back(c);
        begin = end;
      }
    }
  }

  // --- hash binning: head aggregate + hashed tail buckets, adjacent buckets merged to >= min_expected ---
  plan.hash = MakeBinning("hash", V);
  {
    Binning& b = plan.hash;
    start_with_head_aggregate(b);
    const std::uint32_t B = options.hash_buckets;
    std::vector<Mass> bucket_mass(B, 0);
    std::vector<std::uint32_t> bucket_of(S - h);
    for (std::size_t r = h; r < S; ++r) {
      const std::uint32_t t = plan.tokens_by_rank[r];
      bucket_of[r - h] = HashBucketOfToken(t, options.hash_seed, B);
      bucket_mass[bucket_of[r - h]] += prob(t);
    }
    // Merge adjacent buckets: a cell closes once it reaches min_mass; a short remainder joins the last cell.
    std::vector<std::int32_t> cell_of_bucket(B, kForbiddenCell);
    std::vector<Cell> cells;
    Mass current = 0;
    std::uint32_t begin = 0;
    for (std::uint32_t k = 0; k < B; ++k) {
      current += bucket_mass[k];
      if (current >= min_mass) {
        Cell c;
        c.kind = CellKind::kHashBuckets;
        c.bucket_begin = begin;
        c.bucket_end = k + 1;
        c.probability = static_cast<double>(current);
        cells.push_back(c);
        begin = k + 1;
        current = 0;
      }
    }
    if (cells.empty()) {
      fold_tail_into_head(b);
    } else {
      if (begin < B) {
        cells.back().bucket_end = B;
        cells.back().probability = static_cast<double>(static_cast<Mass>(cells.back().probability) + current);
      }
      const auto offset = static_cast<std::int32_t>(b.cells.size());
      for (std::size_t i = 0; i < cells.size(); ++i) {
        for (std::uint32_t k = cells[i].bucket_begin; k < cells[i].bucket_end; ++k) {
          cell_of_bucket[k] = offset + static_cast<std::int32_t>(i);
        }
      }
      for (auto& c : cells) b.cells.push_back(c);
      for (std::size_t r = h; r < S; ++r) {
        const std::int32_t cell = cell_of_bucket[bucket_of[r - h]];
        b.cell_of_token[plan.tokens_by_rank[r]] = cell;
        ++b.cells[static_cast<std::size_t>(cell)].token_count;
      }
    }
  }
  return plan;
}

std::vector<std::uint32_t> TokensInCell(const Binning& binning, std::size_t cell) {
  std::vector<std::uint32_t> out;
  for (std::size_t t = 0; t < binning.cell_of_token.size(); ++t) {
    if (binning.cell_of_token[t] == static_cast<std::int32_t>(cell)) out.push_back(static_cast<std::uint32_t>(t));
  }
  return out;
}

std::vector<double> CellProbabilities(const Binning& binning) {
  std::vector<double> out;
  out.reserve(binning.cells.size());
  for (const Cell& c : binning.cells) out.push_back(c.probability);
  return out;
}

std::vector<std::size_t> TokenCells(const Binning& binning) {
  std::vector<std::size_t> out;
  for (std::size_t i = 0; i < binning.cells.size(); ++i) {
    if (binning.cells[i].kind == CellKind::kToken) out.push_back(i);
  }
  return out;
}

Result<BinnedCounts> BinCounts(const Binning& binning, std::span<const std::uint64_t> token_counts) {
  BinnedCounts out;
  if (token_counts.size() != binning.cell_of_token.size()) {
    std::ostringstream msg;
    msg << "token_counts.size() = " << token_counts.size() << " differs from the vocabulary size "
        << binning.cell_of_token.size() << " the binning was planned for";
    return InvalidArgument(msg.str());
  }
  out.observed.assign(binning.cells.size(), 0);
  for (std::size_t t = 0; t < token_counts.size(); ++t) {
    const std::uint64_t c = token_counts[t];
    if (c == 0) continue;
    const std::int32_t cell = binning.cell_of_token[t];
    if (cell == kForbiddenCell) {
      out.forbidden += c;
    } else {
      out.observed[static_cast<std::size_t>(cell)] += c;
      out.in_support += c;
    }
  }
  return out;
}

}  // namespace samplecheck::stats
