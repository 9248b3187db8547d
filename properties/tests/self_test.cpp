// Self-tests: known-bad samplers (the exact sampler plus one planted fault, defined here) must each be caught by
// the property written for their bug class, with a shrunk counterexample and a replay line. These guard the
// properties' power the way the mutant zoo will guard the whole harness.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <memory>

#include "rc_defaults.h"
#include "samplecheck/samplers/sampler_registry.h"
#include "samplecheck/properties/suite.h"
#include "samplecheck/reference/philox.h"
#include "samplecheck/reference/profile.h"

namespace samplecheck::properties {
namespace {

enum class Fault {
  kIgnoreOffset,   // every draw uses offset 0: the same (seed, offset) reused across draws
  kSeedOfRowZero,  // every row uses row 0's seed (FlashInfer reads seed_arr[0] only)
  kCollapseTies,   // all mass of a kept tie group on its lowest id
  kMinPClamp,      // min_p = 0 as max(min_p, 1e-20): tokens ~46 logits down disappear
  kNoRenormalize,  // probabilities of the kept tokens not renormalized after truncation
};

class FaultySampler final : public harness::Sampler {
 public:
  FaultySampler(Fault fault, const std::string& profile) : fault_(fault) {
    exact_ = std::move(harness::MakeSampler("exact:" + profile, {})).value();
  }
  std::string Name() const override { return "faulty:" + exact_->Name(); }
  harness::Capabilities GetCapabilities() const override { return exact_->GetCapabilities(); }

  Result<std::vector<double>> ProcessedDistribution(std::span<const float> row, const SamplingParams& params) override {
    SamplingParams p = params;
    if (fault_ == Fault::kMinPClamp) p.min_p = std::max(p.min_p, 1e-20);
    auto dense = exact_->ProcessedDistribution(row, p);
    if (!dense.ok()) return dense;
    std::vector<double> probs = std::move(dense).value();
    if (fault_ == Fault::kCollapseTies) {
      std::map<float, int32_t> first_of_logit;
      for (size_t t = 0; t < probs.size(); ++t) {
        if (!(probs[t] > 0)) continue;
        auto [it, inserted] = first_of_logit.emplace(row[t] == 0.0f ? 0.0f : row[t], static_cast<int32_t>(t));
        if (!inserted) {
          probs[static_cast<size_t>(it->second)] += probs[t];
          probs[t] = 0;
        }
      }
    }
    if (fault_ == Fault::kNoRenormalize) {
      SamplingParams unfiltered = p;
      unfiltered.top_k = static_cast<int64_t>(row.size());
      unfiltered.top_p = 1.0;
      unfiltered.min_p = 0.0;
      auto full = exact_->ProcessedDistribution(row, unfiltered);
      if (full.ok() && p.temperature >= 1e-4) {
        for (size_t t = 0; t < probs.size(); ++t) probs[t] = probs[t] > 0 ? (*full)[t] : 0.0;
      }
    }
    return probs;
  }

  Status Sample(const harness::RowBatch& batch, std::span<const SamplingParams> params, std::span<int32_t> tokens) override {
    std::vector<SamplingParams> changed(params.begin(), params.end());
    for (auto& p : changed) {
      if (fault_ == Fault::kIgnoreOffset) p.offset = 0;
      if (fault_ == Fault::kSeedOfRowZero) p.seed = params[0].seed;
      if (fault_ == Fault::kMinPClamp) p.min_p = std::max(p.min_p, 1e-20);
    }
    if (fault_ != Fault::kCollapseTies && fault_ != Fault::kNoRenormalize) return exact_->Sample(batch, changed, tokens);
    if (Status st = exact_->Sample(batch, changed, tokens); !st.ok()) return st;  // validation, invalid rows
    for (int64_t r = 0; r < batch.rows; ++r) {
      if (tokens[static_cast<size_t>(r)] == harness::kInvalidToken) continue;
      auto dense = ProcessedDistribution(batch.Row(r), changed[static_cast<size_t>(r)]);
      if (!dense.ok()) return dense.status();
      double u = UniformForDraw(changed[static_cast<size_t>(r)].seed, changed[static_cast<size_t>(r)].offset);
      int32_t token = -1;
      for (size_t t = 0; t < dense->size(); ++t) {
        if (!((*dense)[t] > 0)) continue;
        token = static_cast<int32_t>(t);  // the last kept token when u runs past the (unnormalized) end
        if (u < (*dense)[t]) break;
        u -= (*dense)[t];
      }
      tokens[static_cast<size_t>(r)] = token;
    }
    return Status::Ok();
  }

 private:
  Fault fault_;
  std::unique_ptr<harness::Sampler> exact_;
};

struct Expectation {
  const char* name;
  Fault fault;
  const char* property;
};

class SelfTest : public ::testing::TestWithParam<Expectation> {};

TEST_P(SelfTest, PlantedFaultIsCaught) {
  const Expectation& e = GetParam();
  FaultySampler sampler(e.fault, "vllm");
  PropertyOptions options = testing::OptionsFromRcParams();
  options.reproduce.clear();
  options.max_success = std::max(options.max_success, 200);
  const PropertyResult result = RunProperty(sampler, *FindProfile("vllm"), e.property, options, "faulty");
  EXPECT_EQ(result.status, PropertyStatus::kFailed)
      << "planted fault '" << e.name << "' was not caught by " << e.property << " (" << PropertyStatusName(result.status)
      << " after " << result.cases << " cases)\n" << result.message;
  EXPECT_FALSE(result.reproduce.empty());
  // The shrunk counterexample, printed so a reader can judge how minimal it is.
  std::cout << "[" << e.name << " caught by " << e.property << "]\n" << result.message << "\nreplay: " << result.replay << "\n";
}

INSTANTIATE_TEST_SUITE_P(
    Faults, SelfTest,
    ::testing::Values(Expectation{"ignore_offset", Fault::kIgnoreOffset, "stream-independence"},
                      Expectation{"seed_of_row_zero", Fault::kSeedOfRowZero, "stream-independence"},
                      Expectation{"seed_of_row_zero_batch", Fault::kSeedOfRowZero, "batch-invariance"},
                      Expectation{"collapse_ties", Fault::kCollapseTies, "tied-tokens-identical-probability"},
                      Expectation{"collapse_ties_draws", Fault::kCollapseTies, "ties-drawn-equally"},
                      Expectation{"min_p_clamp", Fault::kMinPClamp, "all-filters-disabled-is-softmax"},
                      Expectation{"min_p_clamp_kept", Fault::kMinPClamp, "kept-set-complete"},
                      Expectation{"no_renormalize", Fault::kNoRenormalize, "mass-sums-to-one"}),
    [](const ::testing::TestParamInfo<Expectation>& param_info) { return std::string(param_info.param.name); });

}  // namespace
}  // namespace samplecheck::properties
