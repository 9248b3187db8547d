// A small cache of what a sampler computes from one logits row and its filter parameters (temperature, top-k,
// top-p, min-p; not the seed and offset, which pick a draw, not a distribution). The rows of a batch case come back
// in every Sample call, and computing the exact distribution of a row costs far more than a draw from it. A hit
// compares the row's bytes and the parameters exactly (the hash only finds the slot): the cache never changes a
// result. At most `max_bytes` of rows are kept, oldest out first. One instance per sampler (one thread at a time).
#pragma once

#include <cstdint>
#include <cstring>
#include <deque>
#include <memory>
#include <span>
#include <vector>

#include "samplecheck/core/error.h"
#include "samplecheck/reference/params.h"

namespace samplecheck::harness {

// The filter parameters of two calls are the same, bit for bit (seed and offset aside).
inline bool SameFilterParams(const SamplingParams& a, const SamplingParams& b) {
  return std::memcmp(&a.temperature, &b.temperature, sizeof a.temperature) == 0 &&
         std::memcmp(&a.top_p, &b.top_p, sizeof a.top_p) == 0 && std::memcmp(&a.min_p, &b.min_p, sizeof a.min_p) == 0 &&
         a.top_k == b.top_k;
}

template <class Value>
class RowCache {
 public:
  explicit RowCache(size_t max_bytes = size_t{32} << 20) : max_bytes_(max_bytes) {}

  // The value for (row, params), computed by make() -> Result<Value> on a miss.
  template <class Make>
  Result<std::shared_ptr<const Value>> Get(std::span<const float> row, const SamplingParams& params, Make&& make) {
    // Replicated rows come one after another: the last hit is tried first, by a plain comparison (memcmp is far
    // faster than hashing a long row).
    if (last_ < entries_.size() && Same(entries_[last_], row, params)) return entries_[last_].value;
    const uint64_t hash = Hash(row, params);
    for (size_t i = 0; i < entries_.size(); ++i) {
      if (entries_[i].hash == hash && Same(entries_[i], row, params)) {
        last_ = i;
        return entries_[i].value;
      }
    }
    Result<Value> made = make();
    if (!made.ok()) return made.error();
    const size_t bytes = row.size() * sizeof(float);
    if (bytes > max_bytes_) return std::shared_ptr<const Value>(std::make_shared<Value>(std::move(*made)));
    while (!entries_.empty() && used_ + bytes > max_bytes_) {
      used_ -= entries_.front().row.size() * sizeof(float);
      entries_.pop_front();
    }
    Entry e{hash, std::vector<float>(row.begin(), row.end()), params,
            std::make_shared<const Value>(std::move(*made))};
    used_ += bytes;
    entries_.push_back(std::move(e));
    last_ = entries_.size() - 1;
    return entries_.back().value;
  }

 private:
  struct Entry {
    uint64_t hash;
    std::vector<float> row;
    SamplingParams params;
    std::shared_ptr<const Value> value;
  };

  static uint64_t Mix(uint64_t h, uint64_t v) {
    h ^= v + 0x9E3779B97F4A7C15ULL + (h << 6) + (h >> 2);
    return h * 0xBF58476D1CE4E5B9ULL;
  }

  static uint64_t Hash(std::span<const float> row, const SamplingParams& p) {
    uint64_t h = Mix(0x243F6A8885A308D3ULL, row.size());
    size_t i = 0;
    for (; i + 2 <= row.size(); i += 2) {
      uint64_t word;
      std::memcpy(&word, row.data() + i, sizeof word);
      h = Mix(h, word);
    }
    if (i < row.size()) {
      uint32_t last;
      std::memcpy(&last, row.data() + i, sizeof last);
      h = Mix(h, last);
    }
    uint64_t bits;
    std::memcpy(&bits, &p.temperature, sizeof bits);
    h = Mix(h, bits);
    std::memcpy(&bits, &p.top_p, sizeof bits);
    h = Mix(h, bits);
    std::memcpy(&bits, &p.min_p, sizeof bits);
    h = Mix(h, bits);
    return Mix(h, static_cast<uint64_t>(p.top_k));
  }

  static bool Same(const Entry& e, std::span<const float> row, const SamplingParams& p) {
    return e.row.size() == row.size() && std::memcmp(e.row.data(), row.data(), row.size() * sizeof(float)) == 0 &&
           SameFilterParams(e.params, p);
  }

  size_t max_bytes_;
  size_t used_ = 0;
  size_t last_ = 0;  // index of the last hit or insert
  std::deque<Entry> entries_;
};

}  // namespace samplecheck::harness
