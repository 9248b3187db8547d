// samplecheck::kernels::ParamColumns / ScalarParams — SamplingParams built from per-row parameter structs.
//
// Callers usually have one struct per row (kernels::RowParams, samplecheck::SamplingParams of reference/, an
// engine's own request struct); SampleFromLogits takes one host array per parameter. ParamColumns owns those
// arrays, fills them from any range of row structs with the fields temperature, top_k, top_p, min_p, seed and
// offset, and hands out a SamplingParams view that stays valid while the columns live and are not resized.
#pragma once

#include <cstdint>
#include <vector>

#include "samplecheck/kernels/sampling.h"

namespace samplecheck::kernels {

// One row struct as scalars: every batch row gets the same parameters.
template <class Row>
SamplingParams ScalarParams(const Row& row) {
  SamplingParams p;
  p.temperature.scalar = static_cast<double>(row.temperature);
  p.top_k.scalar = static_cast<int64_t>(row.top_k);
  p.top_p.scalar = static_cast<double>(row.top_p);
  p.min_p.scalar = static_cast<double>(row.min_p);
  p.seed.scalar = static_cast<uint64_t>(row.seed);
  p.offset.scalar = static_cast<uint64_t>(row.offset);
  return p;
}

struct ParamColumns {
  std::vector<double> temperature, top_p, min_p;
  std::vector<int64_t> top_k;
  std::vector<uint64_t> seed, offset;

  ParamColumns() = default;

  // Any range of structs with the six fields (member names as in RowParams).
  template <class Rows>
  static ParamColumns FromRows(const Rows& rows) {
    ParamColumns c;
    for (const auto& row : rows) c.Append(row);
    return c;
  }

  template <class Row>
  void Append(const Row& row) {
    temperature.push_back(static_cast<double>(row.temperature));
    top_k.push_back(static_cast<int64_t>(row.top_k));
    top_p.push_back(static_cast<double>(row.top_p));
    min_p.push_back(static_cast<double>(row.min_p));
    seed.push_back(static_cast<uint64_t>(row.seed));
    offset.push_back(static_cast<uint64_t>(row.offset));
  }

  int64_t rows() const { return static_cast<int64_t>(top_k.size()); }

  // Per-row host arrays for SampleFromLogits / ComputeProcessedDistribution: row b reads column[b].
  SamplingParams View() const {
    SamplingParams p;
    p.temperature.values = temperature.data();
    p.top_k.values = top_k.data();
    p.top_p.values = top_p.data();
    p.min_p.values = min_p.data();
    p.seed.values = seed.data();
    p.offset.values = offset.data();
    return p;
  }
};

}  // namespace samplecheck::kernels
