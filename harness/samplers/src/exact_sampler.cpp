#include "samplecheck/samplers/exact_sampler.h"

#include "row_cache.h"

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
    caps.parallel_instances = true;
    caps.profile = std::string(profile_.name);
    return caps;
  }

  Status Sample(const RowBatch& batch, std::span<const SamplingParams> params, std::span<int32_t> tokens) override {
    if (Status st = CheckSampleArgs(batch, params, tokens.size(), profile_); !st.ok()) return st;
    for (int64_t r = 0; r < batch.rows; ++r) {
      const SamplingParams& row_params = params[static_cast<size_t>(r)];
      auto table = cache_.Get(batch.Row(r), row_params, [&]() -> Result<InverseCdf> {
        auto dist = ComputeDistribution(LogitsView::Fp32(batch.Row(r)), row_params, profile_);
        if (!dist.ok()) return dist.error();
        return InverseCdf(*dist);
      });
      if (!table.ok()) {
        if (table.error().code != ErrorCode::kInvalidRow) return table.status();
        tokens[static_cast<size_t>(r)] = kInvalidToken;
        continue;
      }
      tokens[static_cast<size_t>(r)] = (*table)->Draw(UniformForDraw(row_params.seed, row_params.offset));
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
    if (Status st = CheckCountDrawsArgs(row, params, histogram.size(), profile_); !st.ok()) return st;
    Status st = ExactCountDraws(LogitsView::Fp32(row), params, profile_, draws, histogram);
    if (!st.ok() && st.error().code == ErrorCode::kInvalidRow) {
      // Same contract as Sample: a row that cannot be sampled yields kInvalidToken on every draw.
      if (invalid_draws) *invalid_draws += draws;
      return Status::Ok();
    }
    return st;
  }

 private:
  const Profile& profile_;
  RowCache<InverseCdf> cache_;  // the rows of a batch come back every call
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
