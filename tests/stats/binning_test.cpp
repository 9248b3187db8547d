// binning.h: cells decided from p0 and N only; each binning a partition of the support with E >= 10 per cell;
// forbidden tokens outside every cell. Deterministic.

#include "samplecheck/stats/binning.h"

#include <chrono>
#include <cmath>
#include <numeric>
#include <set>
#include <string>
#include <vector>

#include <gtest/gtest.h>

namespace samplecheck::stats {
namespace {

// Zipf-like weights 1 / (t + 1)^s with every `hole`-th token forbidden (p0 = 0).
std::vector<double> Zipf(std::size_t V, double s, std::size_t hole = 0) {
  std::vector<double> p(V);
  for (std::size_t t = 0; t < V; ++t) p[t] = (hole != 0 && t % hole == hole - 1) ? 0.0 : std::pow(t + 1.0, -s);
  return p;
}

// Checks the invariants every binning keeps: cells partition the support, probabilities sum to 1 and match the
// tokens, each cell has E >= min_expected, forbidden tokens map to kForbiddenCell.
void ExpectValidBinning(const Binning& b, const std::vector<double>& p0, double N, double min_expected) {
  SCOPED_TRACE(b.name);
  const long double total = std::accumulate(p0.begin(), p0.end(), 0.0L);
  std::vector<long double> mass(b.cells.size(), 0);
  std::vector<std::uint32_t> count(b.cells.size(), 0);
  ASSERT_EQ(b.cell_of_token.size(), p0.size());
  for (std::size_t t = 0; t < p0.size(); ++t) {
    const auto cell = b.cell_of_token[t];
    if (p0[t] == 0.0) {
      ASSERT_EQ(cell, kForbiddenCell) << "forbidden token " << t << " was put in a cell";
      continue;
    }
    ASSERT_GE(cell, 0) << "support token " << t << " is in no cell";
    ASSERT_LT(static_cast<std::size_t>(cell), b.cells.size());
    mass[static_cast<std::size_t>(cell)] += p0[t] / total;
    ++count[static_cast<std::size_t>(cell)];
  }
  long double sum = 0;
  for (std::size_t c = 0; c < b.cells.size(); ++c) {
    EXPECT_NEAR(b.cells[c].probability, static_cast<double>(mass[c]), 1e-12) << "cell " << c;
    EXPECT_EQ(b.cells[c].token_count, count[c]) << "cell " << c;
    if (b.usable()) {
      EXPECT_GE(N * b.cells[c].probability, min_expected * (1 - 1e-9)) << "cell " << c;
    }
    sum += b.cells[c].probability;
  }
  EXPECT_NEAR(static_cast<double>(sum), 1.0, 1e-12);
}

TEST(BinningTest, ZipfVocabularyGivesHeadTailAndHashBinningsWithExpectedAtLeast10) {
  const auto p0 = Zipf(5000, 1.1, 7);
  const double N = 1e5;
  const Result<BinningPlan> planned = PlanBinnings(p0, N);
  ASSERT_TRUE(planned.ok()) << planned.error().message;
  const BinningPlan& plan = *planned;
  EXPECT_EQ(plan.forbidden_tokens.size(), 5000u / 7);
  EXPECT_EQ(plan.tokens_by_rank.size() + plan.forbidden_tokens.size(), 5000u);
  EXPECT_GT(plan.head_tokens, 100u);
  EXPECT_LT(plan.head_tokens, 4096u);
  ExpectValidBinning(plan.head, p0, N, 10.0);
  ExpectValidBinning(plan.tail, p0, N, 10.0);
  ExpectValidBinning(plan.hash, p0, N, 10.0);
  EXPECT_EQ(plan.UsableBinnings().size(), 3u);
  // Head cells are the single tokens with N p >= 10 in rank order, then one rest cell.
  const auto token_cells = TokenCells(plan.head);
  EXPECT_EQ(token_cells.size(), plan.head_tokens);
  EXPECT_EQ(plan.head.cells.back().kind, CellKind::kRest);
  const long double total = std::accumulate(p0.begin(), p0.end(), 0.0L);
  for (std::uint32_t r = 0; r < plan.head_tokens; ++r) {
    EXPECT_GE(N * p0[plan.tokens_by_rank[r]] / total, 10.0 * (1 - 1e-12));
  }
  EXPECT_LT(N * p0[plan.tokens_by_rank[plan.head_tokens]] / total, 10.0);
  // Tail: a head aggregate, then rank ranges of about equal mass.
  EXPECT_EQ(plan.tail.cells.front().kind, CellKind::kHeadAggregate);
  double lo = 1, hi = 0;
  for (std::size_t c = 1; c < plan.tail.cells.size(); ++c) {
    EXPECT_EQ(plan.tail.cells[c].kind, CellKind::kRankRange);
    lo = std::min(lo, plan.tail.cells[c].probability);
    hi = std::max(hi, plan.tail.cells[c].probability);
  }
  EXPECT_GT(plan.tail.cells.size(), 10u);
  EXPECT_LT(hi / lo, 1.5) << "tail cells should carry about equal mass";
  // Rank ranges are contiguous in rank order.
  for (std::size_t c = 2; c < plan.tail.cells.size(); ++c) {
    EXPECT_EQ(plan.tail.cells[c].rank_begin, plan.tail.cells[c - 1].rank_end);
  }
  // Hash: a head aggregate, then merged buckets covering [0, 64).
  EXPECT_EQ(plan.hash.cells.front().kind, CellKind::kHeadAggregate);
  EXPECT_EQ(plan.hash.cells[1].bucket_begin, 0u);
  EXPECT_EQ(plan.hash.cells.back().bucket_end, 64u);
}

TEST(BinningTest, CellsDependOnP0AndNOnlyAndAreDeterministic) {
  const auto p0 = Zipf(3000, 1.0, 11);
  const Result<BinningPlan> a = PlanBinnings(p0, 2e5);
  const Result<BinningPlan> b = PlanBinnings(p0, 2e5);
  ASSERT_TRUE(a.ok()) << a.error().message;
  ASSERT_TRUE(b.ok()) << b.error().message;
  EXPECT_EQ(a->head.cell_of_token, b->head.cell_of_token);
  EXPECT_EQ(a->tail.cell_of_token, b->tail.cell_of_token);
  EXPECT_EQ(a->hash.cell_of_token, b->hash.cell_of_token);
  // Unnormalized weights give the same cells.
  std::vector<double> scaled = p0;
  for (double& x : scaled) x *= 37.5;
  const Result<BinningPlan> c = PlanBinnings(scaled, 2e5);
  ASSERT_TRUE(c.ok()) << c.error().message;
  EXPECT_EQ(a->tail.cell_of_token, c->tail.cell_of_token);
  EXPECT_EQ(a->hash.cell_of_token, c->hash.cell_of_token);
}

TEST(BinningTest, HeadIsCappedAndTailCellsAreCapped) {
  const std::vector<double> uniform(20000, 1.0);
  BinningOptions options;
  options.max_head_cells = 4096;
  options.max_tail_cells = 256;
  const Result<BinningPlan> planned = PlanBinnings(uniform, 1e9, options);  // every token has E = 5e4
  ASSERT_TRUE(planned.ok()) << planned.error().message;
  const BinningPlan& plan = *planned;
  EXPECT_EQ(plan.head_tokens, 4096u);
  EXPECT_EQ(plan.head.cells.size(), 4097u);  // 4096 tokens + rest
  EXPECT_EQ(plan.tail.cells.size(), 257u);   // head aggregate + 256
  ExpectValidBinning(plan.tail, uniform, 1e9, 10.0);
}

TEST(BinningTest, LightTailIsMergedNotLeftBelow10) {
  // Two heavy tokens and a tail with E = 5 in total: the rest merges into the last head cell; tail and hash
  // binnings collapse to a single cell and are reported unusable (dof 0) instead of testing E < 10 cells.
  std::vector<double> p0 = {0.6, 0.3995};
  for (int i = 0; i < 100; ++i) p0.push_back(0.0005 / 100);
  const Result<BinningPlan> planned = PlanBinnings(p0, 1e4);
  ASSERT_TRUE(planned.ok()) << planned.error().message;
  const BinningPlan& plan = *planned;
  EXPECT_EQ(plan.head_tokens, 2u);
  ASSERT_EQ(plan.head.cells.size(), 2u);
  EXPECT_EQ(plan.head.cells[1].kind, CellKind::kRest);
  EXPECT_EQ(plan.head.cells[1].token_count, 101u);
  EXPECT_FALSE(plan.tail.usable());
  EXPECT_FALSE(plan.hash.usable());
  EXPECT_EQ(plan.UsableBinnings().size(), 1u);
  ExpectValidBinning(plan.head, p0, 1e4, 10.0);
}

TEST(BinningTest, FlatVocabularyWithSmallNHasNoHeadButATailAndHash) {
  const std::vector<double> uniform(150000, 1.0);
  const Result<BinningPlan> planned = PlanBinnings(uniform, 1e5);  // E = 0.67 per token
  ASSERT_TRUE(planned.ok()) << planned.error().message;
  const BinningPlan& plan = *planned;
  EXPECT_EQ(plan.head_tokens, 0u);
  EXPECT_FALSE(plan.head.usable());
  EXPECT_EQ(plan.tail.cells.size(), 256u);
  EXPECT_EQ(plan.hash.cells.size(), 64u);
  ExpectValidBinning(plan.tail, uniform, 1e5, 10.0);
  ExpectValidBinning(plan.hash, uniform, 1e5, 10.0);
}

TEST(BinningTest, BinCountsSeparatesForbiddenDrawsFromCells) {
  const std::vector<double> p0 = {0.5, 0.0, 0.3, 0.2, 0.0};
  const Result<BinningPlan> planned = PlanBinnings(p0, 1000);
  ASSERT_TRUE(planned.ok()) << planned.error().message;
  const BinningPlan& plan = *planned;
  EXPECT_EQ(plan.forbidden_tokens, (std::vector<std::uint32_t>{1, 4}));
  const std::vector<std::uint64_t> counts = {480, 3, 310, 210, 1};
  const Result<BinnedCounts> binned = BinCounts(plan.head, counts);
  ASSERT_TRUE(binned.ok()) << binned.error().message;
  EXPECT_EQ(binned->forbidden, 4u);
  EXPECT_EQ(binned->in_support, 1000u);
  EXPECT_EQ(binned->observed, (std::vector<std::uint64_t>{480, 310, 210}));
  EXPECT_EQ(TokensInCell(plan.head, 1), (std::vector<std::uint32_t>{2}));
  // Wrong histogram size is an error value.
  EXPECT_FALSE(BinCounts(plan.head, std::vector<std::uint64_t>{1, 2}).ok());
}

TEST(BinningTest, InvalidP0IsAnErrorValue) {
  // The error message of an invalid plan ("" when the plan is unexpectedly valid, which fails the search below).
  auto error_of = [](const Result<BinningPlan>& plan) { return plan.ok() ? std::string() : plan.error().message; };
  EXPECT_NE(error_of(PlanBinnings(std::vector<double>{0.5, -0.1}, 100)).find("p0[1] = -0.1"), std::string::npos);
  EXPECT_NE(error_of(PlanBinnings(std::vector<double>{0.0, 0.0}, 100)).find("sums to 0"), std::string::npos);
  EXPECT_NE(error_of(PlanBinnings(std::vector<double>{0.5, NAN}, 100)).find("p0[1]"), std::string::npos);
  EXPECT_NE(error_of(PlanBinnings(std::vector<double>{0.5, 0.5}, 0)).find("planned_draws = 0"), std::string::npos);
  EXPECT_FALSE(PlanBinnings(std::vector<double>{}, 100).ok());
}

TEST(BinningTest, MillionTokenVocabularyAtBillionDrawsIsFast) {
  const std::size_t V = 1u << 20;
  const auto p0 = Zipf(V, 1.05, 13);
  const auto start = std::chrono::steady_clock::now();
  const Result<BinningPlan> planned = PlanBinnings(p0, 1e9);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  ASSERT_TRUE(planned.ok()) << planned.error().message;
  const BinningPlan& plan = *planned;
  EXPECT_EQ(plan.head_tokens, 4096u);
  ExpectValidBinning(plan.head, p0, 1e9, 10.0);
  ExpectValidBinning(plan.tail, p0, 1e9, 10.0);
  ExpectValidBinning(plan.hash, p0, 1e9, 10.0);
  EXPECT_LT(seconds, 5.0);
  // Counts summing past 2^32 are carried in uint64.
  std::vector<std::uint64_t> counts(V, 0);
  counts[plan.tokens_by_rank[0]] = 5'000'000'000ULL;
  counts[plan.tokens_by_rank[V / 2]] = 7;
  const Result<BinnedCounts> binned = BinCounts(plan.tail, counts);
  ASSERT_TRUE(binned.ok()) << binned.error().message;
  EXPECT_EQ(binned->in_support, 5'000'000'007ULL);
}

TEST(BinningTest, HashBucketIsStableAndSpreads) {
  std::vector<int> hits(64, 0);
  for (std::uint32_t t = 0; t < 64000; ++t) ++hits[HashBucketOfToken(t, 0x9E3779B97F4A7C15ULL, 64)];
  for (int h : hits) {
    EXPECT_GT(h, 800);
    EXPECT_LT(h, 1200);
  }
  EXPECT_EQ(HashBucketOfToken(12345, 1, 64), HashBucketOfToken(12345, 1, 64));
}

}  // namespace
}  // namespace samplecheck::stats
