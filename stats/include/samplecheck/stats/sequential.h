// Anytime-valid sequential test of "draws ~ p0 over K coarse cells" (statistics.md 5.7): an e-process that
// may stop a long campaign early when the evidence against the null is already overwhelming.
//
// E_n = prod over draws of q_hat(cell of draw) / p0(cell), where q_hat is a predictable estimate from earlier
// draws only: Krichevsky-Trofimov (add 1/2) or Laplace (add 1) smoothing of the counts so far. Under H0 each
// factor has expectation 1 given the past, so E is a non-negative martingale with E_0 = 1 and, by Ville's
// inequality, P(sup_n E_n >= 1/alpha) <= alpha: rejecting the first time E >= 1/alpha is valid at every
// stopping time, however often one looks (Ramdas, Gruenwald, Vovk, Shafer, arXiv 2210.01948).
//
// Update granularity:
//   kPerDraw  (default) the estimate is updated after every draw. Because the KT/Laplace product depends only
//             on the counts (it is the Dirichlet-multinomial mixture likelihood), a batch of counts is absorbed
//             exactly, in closed form with lgamma, whatever the order of draws inside it.
//   kPerBatch q_hat is frozen during a batch at the estimate from earlier batches (the plug-in form of 5.7).
//             Also valid; it loses power when batches are large.
//   alpha:      P(ever rejecting under H0) <= alpha (Ville), whatever the batch sizes or stopping rule.
//   power:      against p1, log E grows like N KL(p1 || p0) - (K - 1)/2 ln N (the KT regret); use coarse cells
//               (K <= 64) so the regret stays small. The fixed-N Pearson test stays the final verdict when the
//               e-process does not stop.
//   assumption: independent draws with the same distribution; cells fixed in advance; every p0 cell > 0
//               (forbidden tokens are a separate hard check, support.h).
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "samplecheck/core/error.h"

namespace samplecheck::stats {

enum class Estimator : std::uint8_t { kKrichevskyTrofimov, kLaplace };
enum class Update : std::uint8_t { kPerDraw, kPerBatch };

class EProcess {
 public:
  // p0: cell probabilities (normalized here; every one > 0, at least two cells); alpha in (0, 1).
  static Result<EProcess> Create(std::span<const double> p0, double alpha,
                                  Estimator estimator = Estimator::kKrichevskyTrofimov,
                                  Update update = Update::kPerDraw);

  EProcess() = default;

  // Absorbs one batch of counts per cell (size K). Returns Ok or an error naming the bad input; a rejected
  // process keeps its verdict (it stays rejected) but still accumulates.
  Status Observe(std::span<const std::uint64_t> batch_counts);

  double log_e_value() const noexcept { return log_e_; }      // ln E_n
  double log_threshold() const noexcept { return log_threshold_; }  // ln(1 / alpha)
  bool rejected() const noexcept { return rejected_; }        // E crossed 1/alpha at some batch end
  std::uint64_t draws() const noexcept { return draws_; }
  std::uint64_t draws_at_rejection() const noexcept { return draws_at_rejection_; }
  std::uint64_t batches() const noexcept { return batches_; }
  // Anytime-valid p-value: min(1, 1 / max_{batch ends} E).
  double anytime_p_value() const noexcept;

 private:
  double LogMixture() const;  // ln of the KT/Laplace mixture probability of the counts so far

  std::vector<double> log_p0_;
  std::vector<std::uint64_t> counts_;
  double smoothing_ = 0.5;
  Update update_ = Update::kPerDraw;
  double log_threshold_ = 0.0;
  double log_e_ = 0.0;
  double max_log_e_ = 0.0;
  double log_null_ = 0.0;  // sum counts_i ln p0_i
  std::uint64_t draws_ = 0;
  std::uint64_t batches_ = 0;
  bool rejected_ = false;
  std::uint64_t draws_at_rejection_ = 0;
};

}  // namespace samplecheck::stats
