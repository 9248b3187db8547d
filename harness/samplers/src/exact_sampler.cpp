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
      auto table = Table(batch.Row(r), row_params);
      if (!table.ok()) {
        if (table.error().code != ErrorCode::kInvalidRow) return table.status();
        tokens[static_cast<size_t>(r)] = kInvalidToken;
        continue;
      }
      tokens[static_cast<size_t>(r)] = (*table)->Draw(UniformForDraw(row_params.seed, row_params.offset));
    }
    return Status::Ok();
  }

  // The campaign's batch call: each row's table is looked up once per call (and again only where a copy's filter
  // parameters differ from the copy before it), then every copy is drawn from it. The same tokens as Sample on the
  // copies laid out one after another (what the default does by copying them: 64 MiB a call, and a row hashed per
  // copy), without the copies.
  Status SampleReplicated(const RowBatch& rows, uint64_t replicas, std::span<const SamplingParams> params,
                          std::span<int32_t> tokens) override {
    if (Status st = CheckReplicatedArgs(rows, replicas, params.size(), tokens.size()); !st.ok()) return st;
    if (Status st = CheckParams(params, profile_); !st.ok()) return st;  // before anything is drawn
    const size_t b = static_cast<size_t>(rows.rows);
    std::vector<Resolved> resolved(b);
    for (uint64_t k = 0; k < replicas; ++k) {
      for (size_t r = 0; r < b; ++r) {
        const size_t i = static_cast<size_t>(k) * b + r;
        const std::span<const float> row(rows.logits + static_cast<int64_t>(r) * rows.row_stride,
                                         static_cast<size_t>(rows.vocab));
        if (Status st = Resolve(row, params[i], resolved[r]); !st.ok()) return st;
        tokens[i] = Draw(resolved[r], params[i]);
      }
    }
    return Status::Ok();
  }

  // Draw i of one row at offset + i: Sample's table, looked up once.
  Status SampleRepeated(std::span<const float> row, const SamplingParams& params, std::span<int32_t> tokens) override {
    if (Status st = CheckSampleArgs(RowBatch{row.data(), 1, static_cast<int64_t>(row.size()),
                                             static_cast<int64_t>(row.size())},
                                    std::span(&params, 1), 1, profile_);
        !st.ok()) {
      return st;
    }
    Resolved resolved;
    if (Status st = Resolve(row, params, resolved); !st.ok()) return st;
    SamplingParams at = params;
    for (size_t i = 0; i < tokens.size(); ++i) {
      at.offset = params.offset + i;
      tokens[i] = Draw(resolved, at);
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
  // A row's table for the filter parameters it was resolved with (none: the row cannot be sampled).
  struct Resolved {
    bool set = false;
    SamplingParams params;
    std::shared_ptr<const InverseCdf> table;
  };

  Result<std::shared_ptr<const InverseCdf>> Table(std::span<const float> row, const SamplingParams& params) {
    return cache_.Get(row, params, [&]() -> Result<InverseCdf> {
      auto dist = ComputeDistribution(LogitsView::Fp32(row), params, profile_);
      if (!dist.ok()) return dist.error();
      return InverseCdf(*dist);
    });
  }

  // Sample's lookup of one row, kept while the filter parameters stay the same.
  Status Resolve(std::span<const float> row, const SamplingParams& params, Resolved& out) {
    if (out.set && SameFilterParams(out.params, params)) return Status::Ok();
    auto table = Table(row, params);
    if (!table.ok() && table.error().code != ErrorCode::kInvalidRow) return table.status();
    out.set = true;
    out.params = params;
    out.table = table.ok() ? *table : nullptr;
    return Status::Ok();
  }

  static int32_t Draw(const Resolved& r, const SamplingParams& params) {
    return r.table ? r.table->Draw(UniformForDraw(params.seed, params.offset)) : kInvalidToken;
  }

  const Profile& profile_;
  RowCache<InverseCdf> cache_;  // the rows of a batch come back every call
};


}  // namespace

Result<std::unique_ptr<Sampler>> MakeExactSampler(std::string_view profile) {
  Result<const Profile*> found = ProfileByName(profile);
  if (!found.ok()) return found.error();
  return std::unique_ptr<Sampler>(std::make_unique<ExactSampler>(**found));
}

}  // namespace samplecheck::harness
