// Structured decoding shared by the fuzz targets: logits rows in every float class and storage format, sampling
// parameters around every boundary the profiles define.
//
// Rows are built from a small palette of values (so a few bytes make long rows full of ties) chosen from the
// float classes: NaN, +-inf, +-0, subnormals, huge values, small integers (exact ties), raw bit patterns, and
// one-ulp neighbours of an earlier palette entry (near-ties, the ambiguous margins). Parameters are drawn from the
// disabled values, the greedy triggers, the invalid values (NaN, negative, > 1, inf), the exact range edges and
// ordinary values.
#pragma once

#include <fuzzer/FuzzedDataProvider.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "fuzz_check.h"
#include "samplecheck/reference/logits.h"
#include "samplecheck/reference/params.h"

namespace samplecheck::fuzz {

// One fp32 value of a chosen float class. `palette` holds earlier values (for one-ulp neighbours).
inline float DecodeFloat(FuzzedDataProvider& in, const std::vector<float>& palette) {
  constexpr float kInf = std::numeric_limits<float>::infinity();
  switch (in.ConsumeIntegralInRange<int>(0, 15)) {
    case 0: return in.ConsumeFloatingPointInRange<float>(-20.0f, 20.0f);
    case 1: return static_cast<float>(in.ConsumeIntegralInRange<int>(-8, 8));  // exact ties
    case 2: return std::numeric_limits<float>::quiet_NaN();
    case 3: return kInf;
    case 4: return -kInf;
    case 5: return in.ConsumeBool() ? 0.0f : -0.0f;
    case 6: return std::numeric_limits<float>::denorm_min() * static_cast<float>(in.ConsumeIntegralInRange<int>(-64, 64));
    case 7: return (in.ConsumeBool() ? 1.0f : -1.0f) * std::numeric_limits<float>::max() /
                   static_cast<float>(in.ConsumeIntegralInRange<int>(1, 1 << 20));  // huge
    case 8: {  // raw bits: every class, payload NaNs included
      const uint32_t bits = in.ConsumeIntegral<uint32_t>();
      float x;
      std::memcpy(&x, &bits, sizeof x);
      return x;
    }
    case 9:
    case 10: {  // a one-ulp (or few-ulp) neighbour of an earlier value: near-ties
      if (palette.empty()) return 0.0f;
      float x = palette[in.ConsumeIntegralInRange<size_t>(0, palette.size() - 1)];
      const int steps = in.ConsumeIntegralInRange<int>(-4, 4);
      for (int s = 0; s < std::abs(steps); ++s) x = std::nextafter(x, steps > 0 ? kInf : -kInf);
      return x;
    }
    case 11: return in.ConsumeFloatingPointInRange<float>(-1e4f, 1e4f);
    case 12: return in.ConsumeFloatingPointInRange<float>(-0.01f, 0.01f);
    case 13: return -static_cast<float>(in.ConsumeIntegralInRange<int>(0, 200)) * 0.5f;  // ln-like spread
    case 14: return in.ConsumeFloatingPointInRange<float>(-200.0f, 0.0f);
    default: return in.ConsumeFloatingPointInRange<float>(-3.0f, 3.0f);
  }
}

// A logits row in its storage format. `storage` owns the bytes that `view` points at.
struct FuzzRow {
  DType dtype = DType::kFloat32;
  std::vector<float> fp32;       // the fp32 row (for fp32 storage) or scratch
  std::vector<uint16_t> half;    // bf16 / fp16 storage
  LogitsView view;
  std::vector<float> widened;    // view.At(i) for every i: what the reference reads
};

// A row of vocab in [1, max_vocab]. With `finite_only`, NaN and +-inf are replaced by finite values most of the
// time (the draw-path targets want valid rows); the float classes still appear through the 16-bit formats.
inline FuzzRow DecodeRow(FuzzedDataProvider& in, int64_t max_vocab, bool finite_only = false) {
  FuzzRow row;
  row.dtype = static_cast<DType>(in.ConsumeIntegralInRange<int>(0, 2));
  // Mostly small rows (fast inputs, dense ties), a quarter of them up to max_vocab.
  const int64_t vocab = in.ConsumeIntegralInRange<int>(0, 3) == 0 ? in.ConsumeIntegralInRange<int64_t>(1, max_vocab)
                                                                   : in.ConsumeIntegralInRange<int64_t>(1, 64);
  std::vector<float> palette;
  const size_t palette_size = in.ConsumeIntegralInRange<size_t>(1, 24);
  for (size_t i = 0; i < palette_size; ++i) {
    float x = DecodeFloat(in, palette);
    if (finite_only && !std::isfinite(x)) x = static_cast<float>(i) * -0.75f;
    palette.push_back(x);
  }
  // Elements: a palette index per token; the bytes run out into palette[0] (a row of ties), or a layout rule.
  const int layout = in.ConsumeIntegralInRange<int>(0, 3);
  row.fp32.resize(static_cast<size_t>(vocab));
  for (int64_t i = 0; i < vocab; ++i) {
    size_t pick = 0;
    switch (layout) {
      case 0: pick = in.ConsumeIntegralInRange<size_t>(0, palette.size() - 1); break;
      case 1: pick = static_cast<size_t>(i) % palette.size(); break;                        // periodic
      case 2: pick = i == 0 ? palette.size() - 1 : (in.ConsumeBool() ? 0 : 1 % palette.size()); break;
      default: pick = static_cast<size_t>((static_cast<uint64_t>(i) * 2654435761u) >> 7) % palette.size(); break;
    }
    row.fp32[static_cast<size_t>(i)] = palette[pick];
  }
  if (row.dtype == DType::kFloat32) {
    row.view = LogitsView::Fp32(row.fp32);
  } else {
    row.half.resize(row.fp32.size());
    for (size_t i = 0; i < row.fp32.size(); ++i) {
      row.half[i] = row.dtype == DType::kBFloat16 ? FloatToBFloat16(row.fp32[i]) : FloatToFloat16(row.fp32[i]);
    }
    row.view = row.dtype == DType::kBFloat16 ? LogitsView::Bf16(row.half) : LogitsView::Fp16(row.half);
  }
  row.widened.resize(row.fp32.size());
  for (int64_t i = 0; i < vocab; ++i) row.widened[static_cast<size_t>(i)] = row.view.At(i);
  return row;
}

// A double from the boundary classes of a probability-like parameter (top_p, min_p).
inline double DecodeProbability(FuzzedDataProvider& in) {
  switch (in.ConsumeIntegralInRange<int>(0, 13)) {
    case 0: return 0.0;
    case 1: return 1.0;
    case 2: return std::nextafter(1.0, 0.0);
    case 3: return std::numeric_limits<double>::quiet_NaN();
    case 4: return -in.ConsumeFloatingPointInRange<double>(0.0, 2.0);
    case 5: return 1.0 + in.ConsumeFloatingPointInRange<double>(0.0, 1.0);
    case 6: return std::numeric_limits<double>::denorm_min();
    case 7: return in.ConsumeBool() ? std::numeric_limits<double>::infinity() : -std::numeric_limits<double>::infinity();
    case 8: return static_cast<double>(in.ConsumeIntegralInRange<int>(1, 64)) / 64.0;  // dyadic: exact ties
    case 9: return std::nextafter(static_cast<double>(in.ConsumeIntegralInRange<int>(1, 63)) / 64.0,
                                  in.ConsumeBool() ? 0.0 : 1.0);
    default: return in.ConsumeProbability<double>();
  }
}

inline double DecodeTemperature(FuzzedDataProvider& in) {
  switch (in.ConsumeIntegralInRange<int>(0, 13)) {
    case 0: return 0.0;
    case 1: return 1.0;
    case 2: return -in.ConsumeFloatingPointInRange<double>(0.0, 2.0);
    case 3: return std::numeric_limits<double>::quiet_NaN();
    case 4: return std::numeric_limits<double>::infinity();
    case 5: return std::numeric_limits<double>::denorm_min();
    case 6: return std::pow(10.0, -in.ConsumeIntegralInRange<int>(1, 12));  // around the greedy thresholds
    case 7: return std::nextafter(std::pow(10.0, -in.ConsumeIntegralInRange<int>(1, 8)), in.ConsumeBool() ? 0.0 : 1.0);
    case 8: return in.ConsumeFloatingPointInRange<double>(1.0, 1e6);
    case 9: return std::numeric_limits<double>::max();
    case 10: return in.ConsumeFloatingPointInRange<double>(1e-3, 0.1);
    default: return in.ConsumeFloatingPointInRange<double>(0.05, 3.0);
  }
}

inline int64_t DecodeTopK(FuzzedDataProvider& in, int64_t vocab) {
  switch (in.ConsumeIntegralInRange<int>(0, 9)) {
    case 0: return -1;
    case 1: return 0;
    case 2: return 1;
    case 3: return -in.ConsumeIntegralInRange<int64_t>(2, 1000);
    case 4: return vocab;
    case 5: return vocab + in.ConsumeIntegralInRange<int64_t>(1, 3);
    case 6: return in.ConsumeBool() ? std::numeric_limits<int64_t>::max() : std::numeric_limits<int64_t>::min();
    default: return in.ConsumeIntegralInRange<int64_t>(1, std::max<int64_t>(1, vocab));
  }
}

inline SamplingParams DecodeParams(FuzzedDataProvider& in, int64_t vocab) {
  SamplingParams p;
  const uint8_t which = in.ConsumeIntegral<uint8_t>();  // which fields leave their disabled default
  if (which & 1) p.temperature = DecodeTemperature(in);
  if (which & 2) p.top_k = DecodeTopK(in, vocab);
  if (which & 4) p.top_p = DecodeProbability(in);
  if (which & 8) p.min_p = DecodeProbability(in);
  p.seed = in.ConsumeIntegral<uint64_t>();
  p.offset = in.ConsumeBool() ? in.ConsumeIntegral<uint64_t>() : in.ConsumeIntegralInRange<uint64_t>(0, 16);
  return p;
}

inline std::string DescribeParams(const SamplingParams& p) {
  char buf[256];
  std::snprintf(buf, sizeof buf, "T=%.17g top_k=%lld top_p=%.17g min_p=%.17g seed=%llu offset=%llu", p.temperature,
                static_cast<long long>(p.top_k), p.top_p, p.min_p, static_cast<unsigned long long>(p.seed),
                static_cast<unsigned long long>(p.offset));
  return buf;
}

}  // namespace samplecheck::fuzz
