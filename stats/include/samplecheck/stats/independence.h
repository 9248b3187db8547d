// Independence of paired categorical draws (a contingency-table chi-square), for the draws of two batch rows made
// by the same calls (independent seeds must give independent tokens) and for consecutive draws of one row
// (a stream can have a perfect marginal and still repeat itself from step to step).
//
// X^2 = sum over the r x c table of (O - E)^2 / E with E = (row total)(column total) / n, referred to
// chi-square((r - 1)(c - 1)) over the rows and columns that occur.
//   alpha:      the caller's; p = cdf(complement(chi_squared(dof), X^2)).
//   power:      against a dependence of chi-square divergence d between the joint law and the product of the
//               marginals (d = phi^2, the mean-square contingency), noncentrality n d: identical tokens from a
//               reused seed give phi^2 = (cells - 1), caught at any n worth drawing.
//   assumption: the n pairs are independent of each other (disjoint draws: consecutive pairs (0,1), (2,3), ...,
//               never overlapping ones); every expected count >= 5 (CoarseCells builds cells for it; the smallest
//               expected count is reported).
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "samplecheck/core/error.h"

namespace samplecheck::stats {

inline constexpr int32_t kNoCell = -1;

// Cells of roughly equal probability for a contingency test on `draws` pairs: tokens by p0 (descending, ties by
// id) cut at equal-mass quantiles into at most max_cells cells, adjacent cells merged until every cell has
// probability >= sqrt(min_expected / draws) (so every expected pair count of two such cells is >= min_expected).
// Tokens of p0 == 0 get kNoCell. One cell (or none) means no test is possible.
std::vector<int32_t> CoarseCells(std::span<const double> p0, uint32_t max_cells, uint64_t draws,
                                 double min_expected = 5.0);

struct Independence {
  double statistic = 0.0;  // X^2
  uint64_t dof = 0;        // (rows - 1)(columns - 1) over the occurring rows and columns
  double p_value = 1.0;
  uint64_t pairs = 0;      // pairs counted (both cells >= 0)
  double min_expected = 0.0;
};

// The pairs (a[i], b[i]) of cell indices (kNoCell pairs are left out). kInvalidArgument when the lengths differ,
// or fewer than two rows or two columns occur (dof 0: nothing to test).
Result<Independence> IndependenceChiSquareTest(std::span<const int32_t> a, std::span<const int32_t> b);

}  // namespace samplecheck::stats
