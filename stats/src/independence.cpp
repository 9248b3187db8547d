#include "samplecheck/stats/independence.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <string>

#include "samplecheck/stats/chi_square.h"

namespace samplecheck::stats {

std::vector<int32_t> CoarseCells(std::span<const double> p0, uint32_t max_cells, uint64_t draws, double min_expected) {
  std::vector<int32_t> cell(p0.size(), kNoCell);
  std::vector<uint32_t> support;
  long double total = 0;
  for (size_t t = 0; t < p0.size(); ++t) {
    if (p0[t] > 0) {
      support.push_back(static_cast<uint32_t>(t));
      total += p0[t];
    }
  }
  if (support.empty() || max_cells == 0 || draws == 0 || !(total > 0)) return cell;
  std::stable_sort(support.begin(), support.end(), [&](uint32_t a, uint32_t b) { return p0[a] > p0[b]; });
  // Equal-mass quantile cells, then merge forward until each reaches the least mass.
  const long double least = std::sqrt(static_cast<long double>(min_expected) / static_cast<long double>(draws));
  std::vector<long double> mass;
  std::vector<int32_t> raw(support.size());
  long double before = 0;
  for (size_t i = 0; i < support.size(); ++i) {
    const long double p = p0[support[i]] / total;
    const auto q = static_cast<int32_t>(std::min<long double>(max_cells - 1, std::floor(before * max_cells)));
    raw[i] = q;
    if (static_cast<size_t>(q) >= mass.size()) mass.resize(q + 1, 0);
    mass[q] += p;
    before += p;
  }
  std::vector<int32_t> merged(mass.size(), 0);
  int32_t next = 0;
  long double run = 0;
  for (size_t q = 0; q < mass.size(); ++q) {
    merged[q] = next;
    run += mass[q];
    if (run >= least) {
      ++next;
      run = 0;
    }
  }
  // A short last cell joins the one before it.
  if (run > 0 && next > 0) {
    for (int32_t& m : merged) {
      if (m == next) m = next - 1;
    }
  }
  for (size_t i = 0; i < support.size(); ++i) cell[support[i]] = merged[static_cast<size_t>(raw[i])];
  return cell;
}

Result<Independence> IndependenceChiSquareTest(std::span<const int32_t> a, std::span<const int32_t> b) {
  if (a.size() != b.size()) {
    return InvalidArgument("the two draw sequences differ in length (" + std::to_string(a.size()) + " and " +
                           std::to_string(b.size()) + "): pairs need equal lengths");
  }
  int32_t rows = 0, cols = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    if (a[i] < 0 || b[i] < 0) continue;
    rows = std::max(rows, a[i] + 1);
    cols = std::max(cols, b[i] + 1);
  }
  std::vector<uint64_t> table(static_cast<size_t>(rows) * static_cast<size_t>(cols), 0);
  std::vector<uint64_t> row_total(static_cast<size_t>(rows), 0), col_total(static_cast<size_t>(cols), 0);
  Independence out;
  for (size_t i = 0; i < a.size(); ++i) {
    if (a[i] < 0 || b[i] < 0) continue;
    ++table[static_cast<size_t>(a[i]) * cols + b[i]];
    ++row_total[static_cast<size_t>(a[i])];
    ++col_total[static_cast<size_t>(b[i])];
    ++out.pairs;
  }
  const auto occurring = [](const std::vector<uint64_t>& t) {
    return static_cast<uint64_t>(std::count_if(t.begin(), t.end(), [](uint64_t v) { return v > 0; }));
  };
  const uint64_t r = occurring(row_total), c = occurring(col_total);
  if (r < 2 || c < 2) {
    return InvalidArgument("only " + std::to_string(r) + " x " + std::to_string(c) +
                           " cells occur: an independence test needs at least 2 x 2 (dof 0)");
  }
  const long double n = static_cast<long double>(out.pairs);
  long double x2 = 0;
  long double min_e = INFINITY;
  for (int32_t i = 0; i < rows; ++i) {
    if (row_total[static_cast<size_t>(i)] == 0) continue;
    for (int32_t j = 0; j < cols; ++j) {
      if (col_total[static_cast<size_t>(j)] == 0) continue;
      const long double e = static_cast<long double>(row_total[static_cast<size_t>(i)]) *
                            static_cast<long double>(col_total[static_cast<size_t>(j)]) / n;
      const long double d = static_cast<long double>(table[static_cast<size_t>(i) * cols + j]) - e;
      x2 += d * d / e;
      min_e = std::min(min_e, e);
    }
  }
  out.statistic = static_cast<double>(x2);
  out.dof = (r - 1) * (c - 1);
  out.min_expected = static_cast<double>(min_e);
  Result<double> p = ChiSquarePValue(out.statistic, out.dof);
  if (!p.ok()) return p.error();
  out.p_value = *p;
  return out;
}

}  // namespace samplecheck::stats
