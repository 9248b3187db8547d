// lossy:<spec> (lossy.h): the wrapped sampler or verifier, declared lossy.
#include "samplecheck/samplers/lossy.h"

#include <string>
#include <utility>

namespace samplecheck::harness {
namespace {

class LossySampler final : public Sampler {
 public:
  explicit LossySampler(std::unique_ptr<Sampler> inner) : inner_(std::move(inner)) {}
  std::string Name() const override { return "lossy:" + inner_->Name(); }
  Capabilities GetCapabilities() const override {
    Capabilities caps = inner_->GetCapabilities();
    caps.lossy = true;
    return caps;
  }
  Status Sample(const RowBatch& batch, std::span<const SamplingParams> params, std::span<int32_t> tokens) override {
    return inner_->Sample(batch, params, tokens);
  }
  Result<std::vector<double>> ProcessedDistribution(std::span<const float> row, const SamplingParams& params) override {
    return inner_->ProcessedDistribution(row, params);
  }
  Status CountDraws(std::span<const float> row, const SamplingParams& params, uint64_t draws,
                    std::span<uint64_t> histogram, uint64_t* invalid_draws) override {
    return inner_->CountDraws(row, params, draws, histogram, invalid_draws);
  }
  Status SampleRepeated(std::span<const float> row, const SamplingParams& params, std::span<int32_t> tokens) override {
    return inner_->SampleRepeated(row, params, tokens);
  }
  Status SampleReplicated(const RowBatch& rows, uint64_t replicas, std::span<const SamplingParams> params,
                          std::span<int32_t> tokens) override {
    return inner_->SampleReplicated(rows, replicas, params, tokens);
  }
  Status SampleSteps(const RowBatch& batch, std::span<const SamplingParams> params, uint64_t steps,
                     std::span<int32_t> tokens) override {
    return inner_->SampleSteps(batch, params, steps, tokens);
  }

 private:
  std::unique_ptr<Sampler> inner_;
};

class LossyVerifier final : public Verifier {
 public:
  explicit LossyVerifier(std::unique_ptr<Verifier> inner) : inner_(std::move(inner)) {}
  std::string Name() const override { return "lossy:" + inner_->Name(); }
  VerifierCapabilities GetCapabilities() const override {
    VerifierCapabilities caps = inner_->GetCapabilities();
    caps.lossy = true;
    return caps;
  }
  Status Verify(std::span<const VerifyRequest> requests, std::span<VerifyResult> results) override {
    return inner_->Verify(requests, results);
  }
  Status VerifyRepeated(const VerifyRequest& request, std::span<const int32_t> draft_tokens,
                        std::span<VerifyResult> results) override {
    return inner_->VerifyRepeated(request, draft_tokens, results);
  }

 private:
  std::unique_ptr<Verifier> inner_;
};

}  // namespace

std::unique_ptr<Sampler> MakeLossySampler(std::unique_ptr<Sampler> inner) {
  return std::make_unique<LossySampler>(std::move(inner));
}

std::unique_ptr<Verifier> MakeLossyVerifier(std::unique_ptr<Verifier> inner) {
  return std::make_unique<LossyVerifier>(std::move(inner));
}

}  // namespace samplecheck::harness
