// The batches of Sampler::CountDraws's default (sampler.cpp): the row replicated into batches of at most 4096 rows
// and 64 MiB of logits. The process sampler sends samplecheck's plugin host COUNT requests cut on these batches, so
// that a plugin without count_draws gets the same sample calls isolated as in process. Internal.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>

namespace samplecheck::harness {

inline constexpr uint64_t kDefaultCountMaxRows = 4096;
inline constexpr uint64_t kDefaultCountMaxBytes = uint64_t{64} << 20;

// The rows of one batch of the default CountDraws for a row of `vocab` tokens (before the last, shorter batch).
inline uint64_t DefaultCountBatchRows(size_t vocab) {
  const uint64_t by_memory = std::max<uint64_t>(1, kDefaultCountMaxBytes / (sizeof(float) * std::max<size_t>(vocab, 1)));
  return std::min(kDefaultCountMaxRows, by_memory);
}

// The copies of a `rows`-row batch in one Sample call of the default SampleReplicated: whole copies, at most 4096
// rows and 64 MiB of logits, at least one copy. (A one-row batch: DefaultCountBatchRows.)
inline uint64_t ReplicasPerDefaultBatch(size_t rows, size_t vocab) {
  const uint64_t cells = uint64_t{std::max<size_t>(rows, 1)} * std::max<size_t>(vocab, 1);
  return std::max<uint64_t>(1, std::min(kDefaultCountMaxRows / std::max<size_t>(rows, 1),
                                        kDefaultCountMaxBytes / (sizeof(float) * cells)));
}

}  // namespace samplecheck::harness
