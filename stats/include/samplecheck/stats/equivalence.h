// Equivalence: an upper confidence bound on the distance between a sampler's binned distribution and the
// reference (statistics.md, "Equivalence bounds"). A campaign's tests only ever fail to reject; these bounds give
// the opposite verdict, "within total variation eps of p0 at confidence 1 - alpha".
//
// What is bounded. q = the sampler's cell probabilities on one binning (binning.h; cells fixed from p0 and N
// before the data), p0 = the reference's. Bounded are TV(q, p0) = 1/2 sum |q - p0| and
// chi2(q || p0) = sum (q - p0)^2 / p0 ON THE BINNING. Merging tokens into cells only loses distance: the binned
// TV is a LOWER bound on the token-level TV, so a certificate says "the binned distribution is within eps",
// which is necessary, not sufficient, for the token distribution to be within eps. Draws of p0 = 0 tokens
// (support violations) are not in the cells; they fail a case on their own (support.h).
//
// The bounds (alpha one-sided: P(bound < true distance) <= alpha for every q). alpha is split: 0.9 alpha for the
// Hellinger inversion (asymptotic), 0.1 alpha for the exact parts; a union bound keeps each result at alpha.
//   H^2 = sum (sqrt q - sqrt p0)^2 in [0, 2] (squared Hellinger distance without the factor 1/2), and the
//   statistic T = 4 sum (sqrt x - sqrt(N p0))^2 over the cells. sqrt is the variance-stabilizing transform of
//   counts: for large N, whatever q is (local or not), T ~ chi'^2(K - 1, N (4 H^2 - H^4)) + N H^4 (delta method:
//   the noise of 2 sqrt(N) sqrt(p_hat) has covariance I - sqrt(q) sqrt(q)^T, a projection, for every q).
//   H_U = the H whose law puts T_obs at its lower 0.9 alpha-quantile (test inversion, TOMS 748 on the
//   non-central chi-square cdf of Boost.Math); H <= H_U with probability >= 1 - 0.9 alpha. T is first floored at
//   the median of chi^2(K - 1): H_U grows with T, so this keeps coverage, and a fit too good to be random
//   (exact expected counts) earns no certificate beyond the median one of a correct sampler.
//   tv_upper   = min( H_U sqrt(1 - H_U^2 / 4)                          [Le Cam; tight for the worst-case shift,
//                                                                         p0-proportional halves, where TV ~ H],
//                     tv_point + sqrt((ln(2^K - 2) + ln(10 / alpha)) / (2 N)) [L1 deviation: Hoeffding over the
//                                                                         2^K - 2 subsets, Weissman et al. 2003;
//                                                                         exact; wins where mass is removed
//                                                                         (truncation), where H^2 ~ TV] ).
//   chi2_upper = chi2 = sum (sqrt q - sqrt p0)^2 (1 + sqrt(q / p0))^2 maximized under H^2 <= H_U^2 and per-cell
//                bounds L_i <= q_i <= U_i at alpha / (20 K) per side (Chernoff and Bernstein, exact): a
//                fractional knapsack; the smaller of that and the per-cell box bound sum max (q_i - p0_i)^2 / p0_i.
// Validity: asymptotic in N for the Hellinger part (every cell has E = N p0 >= 10 by the binning); the other
// parts are exact. Calibration by simulation (tests/stats/equivalence_calibration_test.cpp; table in
// statistics.md): coverage >= nominal for null, worst-case, single-cell-bump, tail-truncation and tail-deflation
// shifts over K = 2..1024, N = 1e4..2^26, at nominal for the worst-case shift where E >= 100. Departures: at
// E ~ 10 the small-count bias of sqrt makes T larger than its limit (E T - (K - 1) ~ 0.44 sum 1 / E_i:
// conservative, ~7% on a correct sampler's bound); where q starves a cell (N q_i <~ 1) the pivot alone can
// undercover, but there H^2 ~ the starved mass >> TV^2, Le Cam is loose by far and the L1 part decides; and the
// lattice of discrete counts: exact two-cell enumeration at E = 10 (N = 100) finds the worst q missing with
// probability up to 1.08 alpha (1.04 alpha at alpha 1e-4), <= alpha at N = 1000.
// Power (what a correct sampler certifies): at q = p0, T ~ chi^2(K - 1) and the bound is
// TV_U ~ sqrt(lambda_U / (4 N)), lambda_U ~ z sqrt(2 (K - 1)) for large K: eps ~ K^(1/4) / sqrt(N), the minimax
// rate of identity testing (the L1 part is ~ sqrt(K / N), looser there). E.g. alpha 1e-4, K = 1024, N = 2^26:
// median tv_upper 8.36e-4; 4.69e7 draws certify eps 1e-3 (CertifiableTotalVariation,
// DrawsToCertifyTotalVariation).
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "samplecheck/core/error.h"
#include "samplecheck/stats/binning.h"

namespace samplecheck::stats {

struct EquivalenceBound {
  std::string binning;         // "head", "tail", "hash" from EquivalenceOverBinnings; empty otherwise
  std::uint64_t draws = 0;     // N = sum of the observed cell counts
  std::uint64_t cells = 0;     // K
  double alpha = 0.0;          // one-sided level of each upper bound
  double statistic = 0.0;      // T = 4 sum (sqrt x - sqrt(N p0))^2, the Hellinger statistic inverted
  // Plug-in distances of the empirical cell distribution x / N to p0. Biased upwards (at q = p0: E chi2_point =
  // (K - 1) / N, E hellinger2_point ~ (K - 1) / (4 N), tv_point ~ sqrt((K - 1) / (2 pi N))); reported, not gated.
  double tv_point = 0.0;
  double chi2_point = 0.0;          // Pearson X^2 / N
  double hellinger2_point = 0.0;    // sum (sqrt(x / N) - sqrt p0)^2 = T / (4 N)
  // Upper confidence bounds, each at one-sided level alpha.
  double hellinger2_upper = 0.0;    // H_U^2 in [0, 2] at 0.9 alpha
  double tv_upper_hellinger = 0.0;  // H_U sqrt(1 - H_U^2 / 4)
  double tv_upper_l1 = 0.0;         // tv_point + the L1 deviation at 0.1 alpha
  double tv_upper = 0.0;            // the smaller of the two, in [0, 1]
  double chi2_upper = 0.0;
  std::string tv_method;
  std::string chi2_method;
};

// Upper confidence bounds on TV(q, p0) and chi2(q || p0) over K cells from the observed cell counts.
// observed: counts per cell (sum N >= 1; N large enough that every cell has N p0 >= 10 for the stated
// calibration). p0_cells: positive finite cell masses (normalized here), same size, K in [2, 2^32].
// alpha in (0, 1). Invalid input is kInvalidArgument naming the value and the allowed range.
Result<EquivalenceBound> EquivalenceUpperBounds(std::span<const std::uint64_t> observed,
                                                std::span<const double> p0_cells, double alpha);

// The Hellinger inversion alone: H_U^2 for a statistic T over K cells and N draws (T in [0, 8 N], N >= 1).
Result<double> HellingerSquaredUpperBound(double statistic, std::uint64_t draws, std::uint64_t cells, double alpha);

// Le Cam's inequality: the largest TV at squared Hellinger distance h2 = sum (sqrt q - sqrt p)^2 in [0, 2] is
// sqrt(h2 (1 - h2 / 4)) (0 below 0, 1 from h2 = 2 on).
double TotalVariationFromHellingerSquared(double h2);

// The Hellinger part of tv_upper that a correct sampler (q = p0) reaches with probability `probability` (0.5: the
// median) over K cells with N draws at level alpha, from T ~ chi^2(K - 1); tv_upper is at most this with at least
// that probability. alpha in (0, 1), probability in [0.5, 1) (below the median the floor of T decides), cells in
// [2, 2^32], draws in [1, inf).
Result<double> CertifiableTotalVariation(double alpha, std::uint64_t cells, double draws, double probability = 0.5);

// The draws N at which CertifiableTotalVariation(alpha, cells, N, probability) = eps: how many draws certify
// TV eps for a correct sampler (real; round up). eps in (0, 1).
Result<double> DrawsToCertifyTotalVariation(double eps, double alpha, std::uint64_t cells, double probability = 0.5);

// The bounds of one case on each usable binning of its plan, from a token histogram (size V). The largest of the
// per-binning bounds is itself a bound on the largest binned distance at the same alpha (no multiplicity
// correction: the binning of largest true distance is fixed by q, and its bound covers it with 1 - alpha).
// A support of one token has no binning and distance 0 on it (every in-support draw is that token); any other
// plan without a usable binning (N too small for two cells of E >= 10) is an error.
struct BinnedEquivalence {
  std::vector<EquivalenceBound> binnings;  // one per usable binning, in the plan's order
  double tv_upper = 0.0;                   // max over binnings
  double chi2_upper = 0.0;                 // max over binnings
  std::size_t worst = 0;                   // index of the binning with the largest tv_upper
  std::uint64_t support_violations = 0;    // draws of p0 = 0 tokens: not in any bound; a failure of their own
};
Result<BinnedEquivalence> EquivalenceOverBinnings(const BinningPlan& plan,
                                                  std::span<const std::uint64_t> token_counts, double alpha);

// The verdict on a target eps: certified when every bound's tv_upper < eps. Otherwise inconclusive, and either
// for lack of draws (the case drew fewer than draws_to_certify: the draws at which a correct sampler certifies eps
// with probability 0.99 on the bound that needs most) or with enough draws (the data themselves point at a distance
// near or above eps: a correct sampler would have certified with probability >= 0.99).
struct EquivalenceVerdict {
  bool certified = false;
  bool lacks_draws = false;        // inconclusive and draws < draws_to_certify
  double eps = 0.0;
  double tv_upper = 0.0;           // the largest bound
  std::string worst_binning;       // where it was found
  std::uint64_t draws = 0;         // the fewest draws of the bounds judged
  double draws_to_certify = 0.0;   // the most any bound's cells need for eps at its alpha (probability 0.99, q = p0)
  std::string message;
};
// bounds: one or more (e.g. BinnedEquivalence::binnings); eps in (0, 1).
Result<EquivalenceVerdict> JudgeEquivalence(std::span<const EquivalenceBound> bounds, double eps);

}  // namespace samplecheck::stats
