// Logits row sources of the campaigns: synthetic rows that stress one aspect of a sampler each, and rows loaded
// from .npy files (real model logits). Every synthetic row is a pure function of (spec, seed): the generator is a
// splitmix64 stream and the transforms are written out here (no std:: distributions, whose output differs between
// standard libraries), so a row is the same on every platform and a report can be replayed from its JSON.
//
// Kinds (RowSpec::kind) and the fields each reads:
//   gaussian   vocab, sigma            logit ~ N(0, sigma^2) (Box-Muller)
//   zipf       vocab, exponent         logit = -exponent * ln(rank), ranks 1..V permuted per row (Fisher-Yates)
//   gumbel     vocab, scale            logit = scale * G, G ~ Gumbel(0, 1)
//   near_flat  vocab, sigma            logit ~ N(0, sigma^2) with a small sigma (default 1e-3): near-uniform
//   tied       vocab, levels, spacing  logit = spacing * L, L uniform on {0, .., levels-1}: heavy ties
//   dyadic     vector | probs          logit = fp32(ln p) for the V1..V5 probability vectors of semantics.md 1.6
//                                      (or any `probs`); the reference judges the fp32 row as stored
//   many_tail  vocab, head, tail_min_gap, tail_max_gap
//                                      `head` tokens at logits 0, -0.5, -1, ..; every other token (>= 1e5 of them
//                                      by default) uniform in [-tail_max_gap, -tail_min_gap] below the max:
//                                      catches noise floors and clipped Gumbel/exponential noise
//   npy        path, row               one row of a 1-D or 2-D little-endian fp32/fp16 .npy file
// Modifiers of every kind: mask_fraction in [0, 1): that fraction of tokens (never the argmax) set to -inf;
// poison: "nan" (one token NaN), "all_nan", "all_masked" (every logit -inf): an unsamplable row, whose only right
// answer is the invalid marker (applied last, after the mask).
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "samplecheck/core/error.h"

namespace samplecheck::harness {

struct RowSpec {
  std::string kind = "gaussian";
  int64_t vocab = 1024;
  double sigma = 1.0;          // gaussian, near_flat
  double exponent = 1.1;       // zipf
  double scale = 1.0;          // gumbel
  int64_t levels = 4;          // tied
  double spacing = 1.0;        // tied
  std::string vector;          // dyadic: "V1" .. "V5"
  std::vector<double> probs;   // dyadic: explicit probabilities (instead of vector)
  int64_t head = 16;           // many_tail
  double tail_min_gap = 14.0;  // many_tail
  double tail_max_gap = 22.0;  // many_tail
  std::string path;            // npy (relative paths resolve against RowSpec::base_dir)
  int64_t row = 0;             // npy: row of a 2-D array
  double mask_fraction = 0.0;  // every kind
  std::string poison;          // every kind: "", "nan", "all_nan", "all_masked"

  std::filesystem::path base_dir;  // not serialized: the folder of the suite file that named `path`
};

// Parses a row spec from its suite/report JSON form; kParse with the offending field named.
Result<RowSpec> ParseRowSpec(const nlohmann::json& json);
// The JSON form (only the fields the kind reads, plus mask_fraction when set).
nlohmann::json RowSpecToJson(const RowSpec& spec);
// One line for reports: "gaussian(V=32000, sigma=2)".
std::string DescribeRowSpec(const RowSpec& spec);

// The fp32 logits of the row for `seed`. kInvalidArgument for an out-of-range field, kIo / kParse for a .npy.
Result<std::vector<float>> MakeRow(const RowSpec& spec, uint64_t seed);

// The dyadic probability vectors V1..V5 of semantics.md 1.6 (V5 is completed with twelve tokens of 0.01).
Result<std::vector<double>> DyadicVector(const std::string& name);

// A .npy array of fp32 values (fp16 files widened exactly). shape has 1 or 2 entries.
struct NpyArray {
  std::vector<int64_t> shape;
  std::string dtype;  // "<f4" or "<f2" as stored
  std::vector<float> data;

  int64_t rows() const { return shape.size() == 2 ? shape[0] : 1; }
  int64_t cols() const { return shape.empty() ? 0 : shape.back(); }
};
// Strict parser of the NPY format versions 1.0, 2.0 and 3.0: magic, header dict with exactly the keys descr,
// fortran_order and shape; descr '<f4' or '<f2' (or '|'/'=' on little-endian); fortran_order False; 1-D or 2-D;
// data size matching the shape. Errors name the file and what was wrong (kIo unreadable, kParse malformed).
Result<NpyArray> LoadNpy(const std::filesystem::path& path);
Result<NpyArray> ParseNpy(const std::string& bytes, const std::string& what);

}  // namespace samplecheck::harness
