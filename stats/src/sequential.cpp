#include "samplecheck/stats/sequential.h"

#include <cmath>
#include <sstream>

#include "argument_checks.h"

namespace samplecheck::stats {

Result<EProcess> EProcess::Create(std::span<const double> p0, double alpha, Estimator estimator, Update update) {
  if (Status st = CheckProbabilityOpen("alpha", alpha); !st.ok()) return st.error();
  if (p0.size() < 2) {
    std::ostringstream msg;
    msg << "p0.size() = " << p0.size() << " is outside the allowed range [2, inf): the e-process needs two cells";
    return InvalidArgument(msg.str());
  }
  long double total = 0;
  for (std::size_t i = 0; i < p0.size(); ++i) {
    if (!(std::isfinite(p0[i]) && p0[i] > 0.0)) {
      std::ostringstream msg;
      msg << "p0[" << i << "] = " << p0[i]
          << " is outside the allowed range (0, inf): forbidden cells belong to the support check, not here";
      return InvalidArgument(msg.str());
    }
    total += p0[i];
  }
  EProcess e;
  e.log_p0_.resize(p0.size());
  for (std::size_t i = 0; i < p0.size(); ++i) e.log_p0_[i] = static_cast<double>(std::log(p0[i] / total));
  e.counts_.assign(p0.size(), 0);
  e.smoothing_ = estimator == Estimator::kKrichevskyTrofimov ? 0.5 : 1.0;
  e.update_ = update;
  e.log_threshold_ = -std::log(alpha);
  return e;
}

double EProcess::LogMixture() const {
  // ln [ Gamma(K a) / Gamma(n + K a) * prod Gamma(n_i + a) / Gamma(a) ]
  const double a = smoothing_;
  const double K = static_cast<double>(counts_.size());
  double s = std::lgamma(K * a) - std::lgamma(static_cast<double>(draws_) + K * a);
  for (std::uint64_t c : counts_) s += std::lgamma(static_cast<double>(c) + a) - std::lgamma(a);
  return s;
}

Status EProcess::Observe(std::span<const std::uint64_t> batch_counts) {
  if (batch_counts.size() != counts_.size()) {
    std::ostringstream msg;
    msg << "batch_counts.size() = " << batch_counts.size() << " differs from the " << counts_.size()
        << " cells of the e-process";
    return InvalidArgument(msg.str());
  }
  std::uint64_t batch = 0;
  for (std::uint64_t c : batch_counts) batch += c;
  if (update_ == Update::kPerBatch) {
    // q_hat from earlier batches only, frozen for this batch.
    const double a = smoothing_;
    const double denom = static_cast<double>(draws_) + a * static_cast<double>(counts_.size());
    double increment = 0.0;
    for (std::size_t i = 0; i < counts_.size(); ++i) {
      if (batch_counts[i] == 0) continue;
      const double log_q = std::log((static_cast<double>(counts_[i]) + a) / denom);
      increment += static_cast<double>(batch_counts[i]) * (log_q - log_p0_[i]);
    }
    log_e_ += increment;
    for (std::size_t i = 0; i < counts_.size(); ++i) counts_[i] += batch_counts[i];
    draws_ += batch;
  } else {
    for (std::size_t i = 0; i < counts_.size(); ++i) {
      counts_[i] += batch_counts[i];
      log_null_ += static_cast<double>(batch_counts[i]) * log_p0_[i];
    }
    draws_ += batch;
    log_e_ = LogMixture() - log_null_;
  }
  ++batches_;
  if (log_e_ > max_log_e_) max_log_e_ = log_e_;
  if (!rejected_ && log_e_ >= log_threshold_) {
    rejected_ = true;
    draws_at_rejection_ = draws_;
  }
  return Status::Ok();
}

double EProcess::anytime_p_value() const noexcept {
  return max_log_e_ <= 0.0 ? 1.0 : std::exp(-max_log_e_);
}

}  // namespace samplecheck::stats
