#include "samplecheck/harness/exact_sampler.h"

#include <string>
#include <vector>

#include "samplecheck/reference/distribution.h"
#include "samplecheck/reference/exact_sampler.h"
#include "samplecheck/reference/philox.h"
#include "samplecheck/reference/profile.h"

namespace samplecheck::harness {
namespace {

class ExactSampler final : public Sampler {
 public:
  explicit ExactSampler(const Profile& profile) : profile_(profile) {}

  std::string Name() const override { return "exact:" + std::string(profile_.name); }

  Capabilities GetCapabilities() const override {
    Capabilities caps;
    caps.processed_distribution = true;
    caps.count_draws = true;
    caps.deterministic = true;
    caps.profile = std::string(profile_.name);
    return caps;
  }

  Status Sample(const RowBatch& batch, std::span<const SamplingParams> params, std::span<int32_t> tokens) override {
    if (Status st = CheckBatch(batch, params.size(), tokens.size()); !st.ok()) return st;
    // Every row's params are validated before anything is drawn: one bad row fails the call.
    for (size_t r = 0; r < params.size(); ++r) {
      if (auto bad = ValidateParams(params[r], profile_)) {
        return InvalidArgument("row " + std::to_string(r) + ": " + bad->message);
      }
    }
    for (int64_t r = 0; r < batch.rows; ++r) {
      const SamplingParams& row_params = params[static_cast<size_t>(r)];
      auto dist = ComputeDistribution(LogitsView::Fp32(batch.Row(r)), row_params, profile_);
      if (!dist.ok()) {
        if (dist.error().code != ErrorCode::kInvalidRow) return dist.status();
        tokens[static_cast<size_t>(r)] = kInvalidToken;
        continue;
      }
      tokens[static_cast<size_t>(r)] = InverseCdfDraw(*dist, UniformForDraw(row_params.seed, row_params.offset));
    }
    return Status::Ok();
  }

  Result<std::vector<double>> ProcessedDistribution(std::span<const float> row,
                                                    const SamplingParams& params) override {
    if (auto bad = ValidateParams(params, profile_)) return bad->ToError();
    auto dist = ComputeDistribution(LogitsView::Fp32(row), params, profile_);
    if (!dist.ok()) return dist.error();
    return dist->Dense();
  }

  Status CountDraws(std::span<const float> row, const SamplingParams& params, uint64_t draws,
                    std::span<uint64_t> histogram, uint64_t* invalid_draws) override {
    if (histogram.size() != row.size()) {
      return InvalidArgument("histogram has " + std::to_string(histogram.size()) + " cells, the row has " +
                             std::to_string(row.size()) + " tokens");
    }
    if (auto bad = ValidateParams(params, profile_)) return bad->ToError();
    Status st = ExactCountDraws(LogitsView::Fp32(row), params, profile_, draws, histogram);
    if (!st.ok() && st.error().code == ErrorCode::kInvalidRow) {
      // Same contract as Sample: a row that cannot be sampled yields kInvalidToken on every draw.
      if (invalid_draws) *invalid_draws += draws;
      return Status::Ok();
    }
    return st;
  }

 private:
  static Status CheckBatch(const RowBatch& batch, size_t params_size, size_t tokens_size) {
    if (batch.rows < 0 || batch.vocab < 0 || batch.row_stride < batch.vocab) {
      return InvalidArgument("malformed batch: rows = " + std::to_string(batch.rows) + ", vocab = " +
                             std::to_string(batch.vocab) + ", row_stride = " + std::to_string(batch.row_stride) +
                             " (rows >= 0, row_stride >= vocab >= 0)");
    }
    if (batch.rows > 0 && batch.logits == nullptr) return InvalidArgument("malformed batch: logits is null");
    if (params_size != static_cast<size_t>(batch.rows) || tokens_size != static_cast<size_t>(batch.rows)) {
      return InvalidArgument("batch has " + std::to_string(batch.rows) + " rows but " + std::to_string(params_size) +
                             " params and " + std::to_string(tokens_size) + " token slots");
    }
    return Status::Ok();
  }

  const Profile& profile_;
};

std::string KnownProfiles() {
  std::string names;
  for (const Profile* p : AllProfiles()) {
    if (!names.empty()) names += ", ";
    names += std::string(p->name);
  }
  return names;
}

}  // namespace

Result<std::unique_ptr<Sampler>> MakeExactSampler(std::string_view profile) {
  const Profile* found = FindProfile(profile);
  if (found == nullptr) {
    return InvalidArgument("unknown profile '" + std::string(profile) + "'; known profiles: " + KnownProfiles());
  }
  return std::unique_ptr<Sampler>(std::make_unique<ExactSampler>(*found));
}

}  // namespace samplecheck::harness
