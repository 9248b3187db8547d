#include "samplecheck/samplers/sampler.h"

#include <algorithm>
#include <string>
#include <vector>

#include "default_count.h"

namespace samplecheck::harness {

Status CheckBatchShape(const RowBatch& batch, size_t params, size_t token_slots, int64_t min_vocab) {
  if (batch.rows < 0 || batch.vocab < min_vocab || batch.row_stride < batch.vocab) {
    return InvalidArgument("malformed batch: rows = " + std::to_string(batch.rows) + ", vocab = " +
                           std::to_string(batch.vocab) + ", row_stride = " + std::to_string(batch.row_stride) +
                           " (rows >= 0, row_stride >= vocab >= " + std::to_string(min_vocab) + ")");
  }
  if (batch.rows > 0 && batch.logits == nullptr) return InvalidArgument("malformed batch: logits is null");
  if (params != static_cast<size_t>(batch.rows) || token_slots != static_cast<size_t>(batch.rows)) {
    return InvalidArgument("batch has " + std::to_string(batch.rows) + " rows but " + std::to_string(params) +
                           " params and " + std::to_string(token_slots) + " token slots (one of each per row)");
  }
  return Status::Ok();
}

Status CheckReplicatedArgs(const RowBatch& rows, uint64_t replicas, size_t params, size_t token_slots,
                           int64_t min_vocab) {
  const size_t logits_rows = static_cast<size_t>(std::max<int64_t>(rows.rows, 0));
  if (Status st = CheckBatchShape(rows, logits_rows, logits_rows, min_vocab); !st.ok()) return st;
  uint64_t calls = 0;
  const bool wraps = __builtin_mul_overflow(replicas, uint64_t{logits_rows}, &calls);
  if (wraps || params != calls || token_slots != calls) {
    return InvalidArgument(std::to_string(replicas) + " copies of " + std::to_string(rows.rows) + " rows need " +
                           (wraps ? std::string("2^64 or more") : std::to_string(calls)) +
                           " params and token slots, not " + std::to_string(params) + " and " +
                           std::to_string(token_slots));
  }
  return Status::Ok();
}

Status CheckStepsArgs(const RowBatch& batch, size_t params, uint64_t steps, size_t token_slots, int64_t min_vocab) {
  const size_t rows = static_cast<size_t>(std::max<int64_t>(batch.rows, 0));
  if (Status st = CheckBatchShape(batch, params, rows, min_vocab); !st.ok()) return st;
  uint64_t calls = 0;
  const bool wraps = __builtin_mul_overflow(steps, uint64_t{rows}, &calls);
  if (wraps || token_slots != calls) {
    return InvalidArgument(std::to_string(steps) + " steps of " + std::to_string(rows) + " rows need " +
                           (wraps ? std::string("2^64 or more") : std::to_string(calls)) + " token slots, not " +
                           std::to_string(token_slots));
  }
  return Status::Ok();
}

Status CheckParams(std::span<const SamplingParams> params, const Profile& profile) {
  for (size_t r = 0; r < params.size(); ++r) {
    if (auto bad = ValidateParams(params[r], profile)) {
      return InvalidArgument("row " + std::to_string(r) + ": " + bad->message);
    }
  }
  return Status::Ok();
}

Status CheckSampleArgs(const RowBatch& batch, std::span<const SamplingParams> params, size_t token_slots,
                       const Profile& profile) {
  if (Status st = CheckBatchShape(batch, params.size(), token_slots); !st.ok()) return st;
  // Every row's params are validated before anything is drawn: one bad row fails the call.
  return CheckParams(params, profile);
}

Status CheckCountDrawsArgs(std::span<const float> row, const SamplingParams& params, size_t histogram_cells,
                           const Profile& profile) {
  if (histogram_cells != row.size()) {
    return InvalidArgument("histogram has " + std::to_string(histogram_cells) + " cells, the row has " +
                           std::to_string(row.size()) + " tokens");
  }
  if (auto bad = ValidateParams(params, profile)) return bad->ToError();
  return Status::Ok();
}

Result<std::vector<double>> Sampler::ProcessedDistribution(std::span<const float>, const SamplingParams&) {
  return Unsupported(Name() + " does not expose its processed distribution");
}

void AddToHistogram(std::span<const int32_t> tokens, std::span<uint64_t> histogram, uint64_t* invalid) {
  const int64_t vocab = static_cast<int64_t>(histogram.size());
  for (const int32_t t : tokens) {
    if (t < 0 || t >= vocab) {
      ++*invalid;
    } else {
      ++histogram[static_cast<size_t>(t)];
    }
  }
}

Status Sampler::CountDraws(std::span<const float> row, const SamplingParams& params, uint64_t draws,
                           std::span<uint64_t> histogram, uint64_t* invalid_draws) {
  const int64_t vocab = static_cast<int64_t>(row.size());
  if (histogram.size() != row.size()) {
    return InvalidArgument("histogram has " + std::to_string(histogram.size()) + " cells, the row has " +
                           std::to_string(vocab) + " tokens");
  }
  // Chunks of SampleRepeated, each a whole number of its batches (default_count.h).
  const uint64_t chunk = std::min<uint64_t>(std::max<uint64_t>(draws, 1), 16 * DefaultCountBatchRows(row.size()));
  std::vector<int32_t> tokens(chunk);
  uint64_t invalid = 0;
  for (uint64_t done = 0; done < draws;) {
    const uint64_t n = std::min(chunk, draws - done);
    SamplingParams at = params;
    at.offset = params.offset + done;
    if (Status st = SampleRepeated(row, at, std::span(tokens).first(n)); !st.ok()) return st;
    AddToHistogram(std::span(tokens).first(n), histogram, &invalid);
    done += n;
  }
  if (invalid_draws) *invalid_draws += invalid;
  return Status::Ok();
}

Status Sampler::SampleRepeated(std::span<const float> row, const SamplingParams& params, std::span<int32_t> tokens) {
  const int64_t vocab = static_cast<int64_t>(row.size());
  const uint64_t draws = tokens.size();
  // Replicate the row into a batch (row_stride 0 would alias; the batch is explicit so samplers that assume
  // distinct rows stay correct) and draw in chunks.
  // At most 4096 rows and at most 64 MiB of replicated logits per chunk (a 1e6-token row is 4 MB): default_count.h.
  const uint64_t rows = std::min(DefaultCountBatchRows(row.size()), std::max<uint64_t>(draws, 1));
  std::vector<float> replicated(rows * row.size());
  for (uint64_t r = 0; r < rows; ++r) std::copy(row.begin(), row.end(), replicated.begin() + r * row.size());
  std::vector<SamplingParams> batch_params(rows, params);
  for (uint64_t done = 0; done < draws;) {
    const uint64_t n = std::min(rows, draws - done);
    for (uint64_t i = 0; i < n; ++i) batch_params[i].offset = params.offset + done + i;
    RowBatch batch{replicated.data(), static_cast<int64_t>(n), vocab, vocab};
    Status st = Sample(batch, std::span(batch_params).first(n), tokens.subspan(done, n));
    if (!st.ok()) return st;
    done += n;
  }
  return Status::Ok();
}

Status Sampler::SampleSteps(const RowBatch& batch, std::span<const SamplingParams> params, uint64_t steps,
                            std::span<int32_t> tokens) {
  if (Status st = CheckStepsArgs(batch, params.size(), steps, tokens.size()); !st.ok()) return st;
  const size_t rows = params.size();
  std::vector<SamplingParams> at(params.begin(), params.end());
  for (uint64_t s = 0; s < steps; ++s) {
    for (size_t r = 0; r < rows; ++r) at[r].offset = params[r].offset + s;
    if (Status st = Sample(batch, at, tokens.subspan(s * rows, rows)); !st.ok()) return st;
  }
  return Status::Ok();
}

Status Sampler::SampleReplicated(const RowBatch& rows, uint64_t replicas, std::span<const SamplingParams> params,
                                 std::span<int32_t> tokens) {
  if (Status st = CheckReplicatedArgs(rows, replicas, params.size(), tokens.size()); !st.ok()) return st;
  const size_t logits_rows = static_cast<size_t>(rows.rows);
  if (replicas == 0 || logits_rows == 0) return Status::Ok();
  // Whole copies of the batch per Sample call, at most 4096 rows and 64 MiB of copied logits (at least one copy):
  // default_count.h, the batches a campaign's own calls stay within, so that those are one Sample each.
  const size_t vocab = static_cast<size_t>(rows.vocab);
  const uint64_t per_call = ReplicasPerDefaultBatch(logits_rows, vocab);
  const uint64_t first_call = std::min(per_call, replicas);
  std::vector<float> copies(first_call * logits_rows * vocab);
  for (uint64_t k = 0; k < first_call; ++k) {
    for (size_t r = 0; r < logits_rows; ++r) {
      const float* from = rows.logits + static_cast<int64_t>(r) * rows.row_stride;
      std::copy(from, from + vocab, copies.begin() + (k * logits_rows + r) * vocab);
    }
  }
  for (uint64_t done = 0; done < replicas;) {
    const uint64_t n = std::min(per_call, replicas - done);
    const size_t at = done * logits_rows, count = n * logits_rows;
    const RowBatch batch{copies.data(), static_cast<int64_t>(count), rows.vocab, rows.vocab};
    if (Status st = Sample(batch, params.subspan(at, count), tokens.subspan(at, count)); !st.ok()) return st;
    done += n;
  }
  return Status::Ok();
}

}  // namespace samplecheck::harness
