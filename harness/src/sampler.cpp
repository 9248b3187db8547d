#include "samplecheck/harness/sampler.h"

#include <algorithm>
#include <string>

namespace samplecheck::harness {

Result<std::vector<double>> Sampler::ProcessedDistribution(std::span<const float>, const SamplingParams&) {
  return Unsupported(Name() + " does not expose its processed distribution");
}

Status Sampler::CountDraws(std::span<const float> row, const SamplingParams& params, uint64_t draws,
                           std::span<uint64_t> histogram, uint64_t* invalid_draws) {
  const int64_t vocab = static_cast<int64_t>(row.size());
  if (static_cast<int64_t>(histogram.size()) != vocab) {
    return InvalidArgument("histogram has " + std::to_string(histogram.size()) + " cells, the row has " +
                           std::to_string(vocab) + " tokens");
  }
  // Replicate the row into a batch (row_stride 0 would alias; the batch is explicit so samplers that assume
  // distinct rows stay correct) and draw in chunks.
  // At most 4096 rows and at most 64 MiB of replicated logits per chunk (a 1e6-token row is 4 MB).
  constexpr uint64_t kMaxRows = 4096;
  constexpr uint64_t kMaxBytes = 64ull << 20;
  const uint64_t rows_by_memory = std::max<uint64_t>(1, kMaxBytes / (sizeof(float) * std::max<size_t>(row.size(), 1)));
  const uint64_t rows = std::min({kMaxRows, rows_by_memory, std::max<uint64_t>(draws, 1)});
  std::vector<float> replicated(rows * row.size());
  for (uint64_t r = 0; r < rows; ++r) std::copy(row.begin(), row.end(), replicated.begin() + r * row.size());
  std::vector<SamplingParams> batch_params(rows, params);
  std::vector<int32_t> tokens(rows);
  uint64_t invalid = 0;
  for (uint64_t done = 0; done < draws;) {
    const uint64_t n = std::min(rows, draws - done);
    for (uint64_t i = 0; i < n; ++i) batch_params[i].offset = params.offset + done + i;
    RowBatch batch{replicated.data(), static_cast<int64_t>(n), vocab, vocab};
    Status st = Sample(batch, std::span(batch_params).first(n), std::span(tokens).first(n));
    if (!st.ok()) return st;
    for (uint64_t i = 0; i < n; ++i) {
      const int32_t t = tokens[i];
      if (t < 0 || t >= vocab) {
        ++invalid;
      } else {
        ++histogram[t];
      }
    }
    done += n;
  }
  if (invalid_draws) *invalid_draws += invalid;
  return Status::Ok();
}

}  // namespace samplecheck::harness
