// The defaults of the Sampler interface (sampler.cpp) that a sampler with only Sample inherits: SampleReplicated
// makes its copies in bounded Sample calls of whole copies (at most 4096 rows and 64 MiB of logits, at least one
// copy), with each call row's params and token where the call order puts them.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "harness_test_rows.h"
#include "samplecheck/samplers/sampler.h"

namespace samplecheck::harness {
namespace {

// Draws (argmax of the row + seed + offset) mod V and records the rows of every Sample call.
class RecordingSampler final : public Sampler {
 public:
  std::string Name() const override { return "recording"; }
  Capabilities GetCapabilities() const override { return {}; }
  Status Sample(const RowBatch& batch, std::span<const SamplingParams> params, std::span<int32_t> tokens) override {
    if (Status st = CheckBatchShape(batch, params.size(), tokens.size(), 1); !st.ok()) return st;
    calls.push_back(batch.rows);
    for (int64_t r = 0; r < batch.rows; ++r) tokens[r] = Token(batch.Row(r), params[r]);
    return Status::Ok();
  }
  static int32_t Token(std::span<const float> row, const SamplingParams& p) {
    const size_t argmax = static_cast<size_t>(std::max_element(row.begin(), row.end()) - row.begin());
    return static_cast<int32_t>((argmax + p.seed + p.offset) % row.size());
  }
  std::vector<int64_t> calls;
};

// rows x replicas calls with a seed per row and an offset per copy; the tokens RecordingSampler::Token gives the
// copies in call order.
void ExpectBoundedCalls(size_t rows, size_t vocab, uint64_t replicas, const std::vector<int64_t>& calls) {
  std::vector<float> logits(rows * vocab, 0.0f);
  for (size_t r = 0; r < rows; ++r) logits[r * vocab + (5 * r + 1) % vocab] = 1.0f;
  std::vector<SamplingParams> params(rows * replicas);
  std::vector<int32_t> want(params.size());
  for (uint64_t k = 0; k < replicas; ++k) {
    for (size_t r = 0; r < rows; ++r) {
      params[k * rows + r] = testing::Params(1.0, -1, 1.0, 0.0, 10 + r, 3 * k);
      want[k * rows + r] =
          RecordingSampler::Token({logits.data() + r * vocab, vocab}, params[k * rows + r]);
    }
  }
  RecordingSampler sampler;
  std::vector<int32_t> got(params.size(), -7);
  ASSERT_TRUE(sampler.SampleReplicated({logits.data(), int64_t(rows), int64_t(vocab), int64_t(vocab)}, replicas,
                                       params, got)
                  .ok());
  EXPECT_EQ(got, want) << rows << " rows of " << vocab << " x " << replicas;
  EXPECT_EQ(sampler.calls, calls) << rows << " rows of " << vocab << " x " << replicas;
}

TEST(SamplerDefaults, SampleReplicatedCallsSampleOnWholeCopiesWithinTheDefaultBatch) {
  // 4096 rows a call: 1365 copies of 3 rows (4095 rows), then the rest.
  ExpectBoundedCalls(3, 10, 5000, {4095, 4095, 4095, 2715});
  // 64 MiB a call: 2 rows of 2^20 tokens are 8 MiB a copy, 8 copies a call.
  ExpectBoundedCalls(2, size_t{1} << 20, 20, {16, 16, 8});
  // At least one copy, however large the batch.
  ExpectBoundedCalls(5000, 4, 2, {5000, 5000});
  // A campaign's call (within the bounds) is one Sample.
  ExpectBoundedCalls(4, 100, 1024, {4096});
}

}  // namespace
}  // namespace samplecheck::harness
