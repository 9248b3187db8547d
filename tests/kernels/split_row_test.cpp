// The split-row kernels (a thread-block cluster per row, the row in shared memory: kernels/src/detail/
// split_row_planner.cuh) against the single-block kernels (row_plan.cuh): the same tokens and row statuses, the
// same processed outputs bit for bit, the same label outputs, token for token, on rows chosen to take every path
// of the split planner (select first, the top-p bucket with one and two level digits, none / min-p, the
// single-block fallback for +inf maxima and candidate lists over capacity, invalid rows), every dtype, both
// profiles, and every cluster size. Both planners compute the same keys and the same integer masses, so any
// difference is a bug: the tests accept none. Also: device-resident parameters (DeviceSamplingParams) give the
// tokens of the host-array call, and a row whose device parameters are out of range gets kRowBadParams.
#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>
#include <random>

#include "detail/path_override.h"
#include "kernels_test_support.h"
#include "samplecheck/reference/logits.h"

namespace samplecheck::kernels::testing {
namespace {

constexpr float kInf = std::numeric_limits<float>::infinity();
constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();

// Restores the automatic path when it goes out of scope.
class PathScope {
 public:
  explicit PathScope(int path) { detail::SetPathOverride(path); }
  ~PathScope() { detail::SetPathOverride(detail::kPathAuto); }
  PathScope(const PathScope&) = delete;
  PathScope& operator=(const PathScope&) = delete;
};

struct RowCase {
  std::string name;
  std::vector<float> row;
};

// Rows that take every path: smooth, heavy-tailed, tied, constant, masked, invalid, +inf, extreme ranges.
std::vector<RowCase> RowCases(int64_t vocab) {
  std::vector<RowCase> cases;
  cases.push_back({"N(0,1)", RandomLogits(vocab, 1.0, 11)});
  cases.push_back({"N(0,3)", RandomLogits(vocab, 3.0, 12)});
  cases.push_back({"N(0,10)", RandomLogits(vocab, 10.0, 13)});
  cases.push_back({"ties 0.25", RandomLogits(vocab, 2.0, 14, 0.25)});
  cases.push_back({"ties 2.0", RandomLogits(vocab, 2.0, 15, 2.0)});
  cases.push_back({"constant", std::vector<float>(vocab, 1.5f)});
  {
    auto row = RandomLogits(vocab, 3.0, 16);
    std::mt19937_64 rng(16);
    for (auto& x : row) {
      if (rng() % 10 < 3) x = -kInf;
    }
    row[0] = 1.0f;  // at least one live token
    cases.push_back({"30% -inf", row});
  }
  {
    auto row = RandomLogits(vocab, 3.0, 17);
    row[vocab / 2] = kNaN;
    cases.push_back({"one NaN", row});
  }
  cases.push_back({"all -inf", std::vector<float>(vocab, -kInf)});
  {
    auto row = RandomLogits(vocab, 3.0, 18);
    row[vocab - 1] = kInf;
    row[vocab / 3] = kInf;
    cases.push_back({"+inf", row});
  }
  {
    auto row = RandomLogits(vocab, 3.0, 19);
    row[vocab / 4] = -3e38f;
    cases.push_back({"-3e38 outlier", row});
  }
  {
    auto row = RandomLogits(vocab, 3.0, 20);
    float mx = -kInf;
    for (float x : row) mx = std::max(mx, x);
    row[vocab / 5] = mx;
    row[vocab - 1] = mx;
    cases.push_back({"tied maxima", row});
  }
  cases.push_back({"N(0,1e-3)", RandomLogits(vocab, 1e-3, 21)});
  {
    std::vector<float> row(vocab);
    std::vector<int64_t> perm(vocab);
    for (int64_t i = 0; i < vocab; ++i) perm[i] = i;
    std::shuffle(perm.begin(), perm.end(), std::mt19937_64(22));
    for (int64_t i = 0; i < vocab; ++i) row[perm[i]] = static_cast<float>(-1.1 * std::log(1.0 + i));
    cases.push_back({"zipf", row});
  }
  return cases;
}

std::vector<samplecheck::SamplingParams> ParamCases(const std::string& profile) {
  std::vector<samplecheck::SamplingParams> out;
  auto add = [&](double t, int64_t k, double p, double m) { out.push_back(MakeParams(t, k, p, m)); };
  add(1.0, -1, 1.0, 0.0);
  for (int64_t k : {1, 2, 50, 200, 1000, 2500, 100000}) add(1.0, k, 1.0, 0.0);
  for (double p : {1e-9, 0.1, 0.5, 0.9, 0.999}) add(1.0, -1, p, 0.0);
  for (double m : {0.05, 0.5, 1.0}) add(1.0, -1, 1.0, m);
  add(1.0, 50, 0.9, 0.0);
  add(0.7, 200, 0.8, 0.02);
  add(1.5, 0, 0.5, 0.1);
  add(0.05, 50, 0.9, 0.0);
  add(0.01, -1, 0.9, 0.0);
  add(2.0, 1000, 0.95, 0.01);
  add(1e-4, -1, 0.9, 0.0);
  add(0.0, -1, 1.0, 0.0);  // greedy
  if (profile == "hf") {
    add(1.0, 50, 0.0, 0.0);  // hf: top_p = 0 is greedy
    add(5.0, 2500, 0.9, 0.3);
    add(1e-30, 10, 0.5, 0.0);
  }
  return out;
}

// The batch of every (row case, params, offset) through row_indices; host copies of the logits in `dtype`.
struct Batch {
  DType dtype = DType::kFloat32;
  int64_t vocab = 0;
  int64_t logits_rows = 0;
  std::vector<float> fp32;
  std::vector<uint16_t> half;
  std::vector<int32_t> indices;
  std::vector<samplecheck::SamplingParams> params;
  std::vector<std::string> names;
};

Batch MakeBatch(const std::vector<RowCase>& cases, const std::vector<samplecheck::SamplingParams>& param_cases,
                int64_t vocab, DType dtype, int offsets) {
  Batch batch;
  batch.dtype = dtype;
  batch.vocab = vocab;
  batch.logits_rows = static_cast<int64_t>(cases.size());
  for (const RowCase& c : cases) {
    for (float x : c.row) {
      if (dtype == DType::kFloat32) batch.fp32.push_back(x);
      if (dtype == DType::kBFloat16) batch.half.push_back(samplecheck::FloatToBFloat16(x));
      if (dtype == DType::kFloat16) batch.half.push_back(samplecheck::FloatToFloat16(x));
    }
  }
  for (size_t r = 0; r < cases.size(); ++r) {
    for (size_t p = 0; p < param_cases.size(); ++p) {
      for (int o = 0; o < offsets; ++o) {
        batch.indices.push_back(static_cast<int32_t>(r));
        batch.params.push_back(WithRng(param_cases[p], 1000 + p, 17 * o + r));
        batch.names.push_back(cases[r].name + " " + Describe(batch.params.back()));
      }
    }
  }
  return batch;
}

struct Drawn {
  std::vector<int32_t> tokens, status;
};

Drawn Sample(const Batch& batch, Profile profile, int path) {
  PathScope scope(path);
  const int64_t n = static_cast<int64_t>(batch.indices.size());
  DeviceArray<float> d_fp32(batch.fp32.empty() ? std::vector<float>{0.0f} : batch.fp32);
  DeviceArray<uint16_t> d_half(batch.half.empty() ? std::vector<uint16_t>{0} : batch.half);
  DeviceArray<int32_t> d_indices(batch.indices), d_tokens(n), d_status(n);
  const kernels::ParamColumns columns = kernels::ParamColumns::FromRows(batch.params);
  LogitsBatch lb;
  lb.dtype = batch.dtype;
  lb.data = batch.dtype == DType::kFloat32 ? static_cast<const void*>(d_fp32.get()) : d_half.get();
  lb.vocab = batch.vocab;
  lb.logits_rows = batch.logits_rows;
  lb.batch = n;
  lb.row_indices = d_indices.get();
  const Status st = SampleFromLogits(lb, columns.View(), profile, d_tokens.get(), d_status.get(), nullptr);
  EXPECT_TRUE(st.ok()) << st.message;
  EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  return {d_tokens.Download(), d_status.Download()};
}

void ExpectSameDraws(const Batch& batch, const Drawn& single, const Drawn& split, const std::string& what) {
  int reported = 0;
  int64_t differ = 0;
  for (size_t b = 0; b < batch.indices.size(); ++b) {
    if (single.tokens[b] == split.tokens[b] && single.status[b] == split.status[b]) continue;
    ++differ;
    if (reported++ < 10) {
      ADD_FAILURE() << what << ": batch row " << b << " (" << batch.names[b] << "): single-block token "
                    << single.tokens[b] << " status " << single.status[b] << ", split-row token " << split.tokens[b]
                    << " status " << split.status[b];
    }
  }
  EXPECT_EQ(differ, 0) << what << ": " << differ << " of " << batch.indices.size() << " rows differ";
}

class SplitRowTest : public ::testing::TestWithParam<std::string> {};

// Every row case x params x offset, fp32 / bf16 / fp16, V from 1 to 151936: the split-row kernel (automatic
// cluster size) draws exactly the single-block kernel's token and status.
TEST_P(SplitRowTest, SameTokensAsSingleBlockKernel) {
  SKIP_WITHOUT_DEVICE();
  const std::string profile = GetParam();
  const std::vector<int64_t> vocabs = UnderSanitizer() ? std::vector<int64_t>{1, 7, 100, 3000}
                                                       : std::vector<int64_t>{1, 7, 100, 5000, 128256, 151936};
  const auto param_cases = ParamCases(profile);
  for (int64_t vocab : vocabs) {
    const auto cases = RowCases(vocab);
    for (DType dtype : {DType::kFloat32, DType::kBFloat16, DType::kFloat16}) {
      if (vocab == 151936 && dtype == DType::kFloat32) continue;
      const Batch batch = MakeBatch(cases, param_cases, vocab, dtype, UnderSanitizer() ? 1 : 3);
      const Drawn single = Sample(batch, ProfileOf(profile), detail::kPathSingleBlock);
      const Drawn split = Sample(batch, ProfileOf(profile), detail::kPathAuto);
      ExpectSameDraws(batch, single, split,
                      profile + " V=" + std::to_string(vocab) + " dtype " + std::to_string(static_cast<int>(dtype)));
    }
  }
}

// Every cluster size (1 to 16 CTAs per row) and small batches (where the policy picks 16), V = 128256 and 32000.
TEST_P(SplitRowTest, SameTokensAtEveryClusterSize) {
  SKIP_WITHOUT_DEVICE();
  const std::string profile = GetParam();
  const std::vector<int64_t> vocabs = UnderSanitizer() ? std::vector<int64_t>{2000} : std::vector<int64_t>{32000, 128256};
  auto param_cases = ParamCases(profile);
  for (int64_t vocab : vocabs) {
    const auto cases = RowCases(vocab);
    for (DType dtype : {DType::kFloat32, DType::kBFloat16}) {
      const Batch batch = MakeBatch(cases, param_cases, vocab, dtype, 1);
      const Drawn single = Sample(batch, ProfileOf(profile), detail::kPathSingleBlock);
      for (int cluster : {1, 2, 4, 8, 16}) {
        const Drawn split = Sample(batch, ProfileOf(profile), cluster);
        ExpectSameDraws(batch, single, split, profile + " V=" + std::to_string(vocab) + " cluster " + std::to_string(cluster));
      }
      // One row at a time (batch 1: the automatic policy's widest split).
      for (size_t b = 0; b < batch.indices.size(); b += UnderSanitizer() ? 97 : 7) {
        Batch one = batch;
        one.indices = {batch.indices[b]};
        one.params = {batch.params[b]};
        one.names = {batch.names[b]};
        const Drawn alone = Sample(one, ProfileOf(profile), detail::kPathAuto);
        EXPECT_EQ(alone.tokens[0], single.tokens[b]) << profile << " batch 1: " << batch.names[b];
        EXPECT_EQ(alone.status[0], single.status[b]) << profile << " batch 1: " << batch.names[b];
      }
    }
  }
}

// Random rows (N(0, sigma) for sigma in [0.3, 8], a third rounded to a random tie step) with random parameters
// (T in [0.05, 2], top-k off or in [1, 3000], top-p off or in (0, 1], min-p off or in [0, 0.3], both profiles),
// fp32 and bf16: the same token and status on both paths, every row.
TEST_P(SplitRowTest, SameTokensOnRandomRowsAndParams) {
  SKIP_WITHOUT_DEVICE();
  const std::string profile = GetParam();
  const int64_t vocab = UnderSanitizer() ? 3000 : 128256;
  const int64_t rows = UnderSanitizer() ? 8 : 64;
  std::mt19937_64 rng(profile == "vllm" ? 77 : 78);
  std::uniform_real_distribution<double> unit(0.0, 1.0);
  std::vector<RowCase> cases;
  for (int64_t r = 0; r < rows; ++r) {
    const double sigma = 0.3 + 7.7 * unit(rng);
    const double tie = r % 3 == 0 ? 0.01 + 0.5 * unit(rng) : 0.0;
    cases.push_back({"random sigma " + std::to_string(sigma) + " tie " + std::to_string(tie),
                     RandomLogits(vocab, sigma, 9000 + r, tie)});
  }
  std::vector<samplecheck::SamplingParams> params;
  for (int i = 0; i < 6; ++i) {
    const double t = 0.05 + 1.95 * unit(rng);
    const int64_t k = unit(rng) < 0.4 ? -1 : 1 + static_cast<int64_t>(unit(rng) * unit(rng) * 3000);
    const double p = unit(rng) < 0.3 ? 1.0 : std::max(1e-6, unit(rng));
    const double m = unit(rng) < 0.6 ? 0.0 : 0.3 * unit(rng);
    params.push_back(MakeParams(t, k, p, m));
  }
  for (DType dtype : {DType::kFloat32, DType::kBFloat16}) {
    const Batch batch = MakeBatch(cases, params, vocab, dtype, 1);
    const Drawn single = Sample(batch, ProfileOf(profile), detail::kPathSingleBlock);
    const Drawn split = Sample(batch, ProfileOf(profile), detail::kPathAuto);
    ExpectSameDraws(batch, single, split, profile + " random rows dtype " + std::to_string(static_cast<int>(dtype)));
  }
}

bool SameBits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

// ComputeProcessedDistribution and ComputeLabelLogprobs: the same outputs bit for bit on both paths.
TEST_P(SplitRowTest, SameProcessedOutputsAndLabelsAsSingleBlockKernel) {
  SKIP_WITHOUT_DEVICE();
  const std::string profile = GetParam();
  const int64_t vocab = UnderSanitizer() ? 1500 : 32000;
  const auto cases = RowCases(vocab);
  // none, k 1, k 50, k 2500 (fallback), top-p 0.1 / 0.9, min-p 0.05, k 50 + p 0.9, all filters, T 1.5 p + min-p,
  // T 1e-4 p 0.9, greedy.
  const auto all_params = ParamCases(profile);
  std::vector<samplecheck::SamplingParams> param_cases;
  for (size_t i : {0, 1, 3, 6, 9, 11, 13, 16, 17, 18, 22, 23}) param_cases.push_back(all_params[i]);
  for (DType dtype : {DType::kFloat32, DType::kBFloat16}) {
    const Batch batch = MakeBatch(cases, param_cases, vocab, dtype, 1);
    const int64_t n = static_cast<int64_t>(batch.indices.size());
    DeviceArray<float> d_fp32(batch.fp32.empty() ? std::vector<float>{0.0f} : batch.fp32);
    DeviceArray<uint16_t> d_half(batch.half.empty() ? std::vector<uint16_t>{0} : batch.half);
    DeviceArray<int32_t> d_indices(batch.indices);
    const kernels::ParamColumns columns = kernels::ParamColumns::FromRows(batch.params);
    LogitsBatch lb;
    lb.dtype = dtype;
    lb.data = dtype == DType::kFloat32 ? static_cast<const void*>(d_fp32.get()) : d_half.get();
    lb.vocab = vocab;
    lb.logits_rows = batch.logits_rows;
    lb.batch = n;
    lb.row_indices = d_indices.get();
    constexpr int kLabels = 5;
    std::vector<int32_t> labels;
    std::mt19937_64 rng(5);
    for (int64_t b = 0; b < n; ++b) {
      for (int j = 0; j < kLabels; ++j) labels.push_back(j == 4 ? static_cast<int32_t>(vocab) : static_cast<int32_t>(rng() % vocab));
    }
    DeviceArray<int32_t> d_labels(labels);
    struct Outputs {
      std::vector<float> probs, logprobs, masked, label_lp, label_p;
      std::vector<int32_t> status, label_status, label_row_status;
    };
    auto run = [&](int path, bool keep_label) {
      PathScope scope(path);
      DeviceArray<float> probs(n * vocab), logprobs(n * vocab), masked(n * vocab), label_lp(n * kLabels),
          label_p(n * kLabels);
      DeviceArray<int32_t> status(n), label_status(n * kLabels), label_row_status(n);
      ProcessedOutputs out;
      out.probs = probs.get();
      out.logprobs = logprobs.get();
      out.masked_logits = masked.get();
      out.row_status = status.get();
      Status st = ComputeProcessedDistribution(lb, columns.View(), ProfileOf(profile), out, nullptr);
      EXPECT_TRUE(st.ok()) << st.message;
      LabelQuery query;
      query.labels = d_labels.get();
      query.labels_per_row = kLabels;
      query.keep_label_in_kept_set = keep_label;
      LabelOutputs lo;
      lo.logprobs = label_lp.get();
      lo.probs = label_p.get();
      lo.label_status = label_status.get();
      lo.row_status = label_row_status.get();
      st = ComputeLabelLogprobs(lb, columns.View(), ProfileOf(profile), query, lo, nullptr);
      EXPECT_TRUE(st.ok()) << st.message;
      EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess);
      return Outputs{probs.Download(),  logprobs.Download(),     masked.Download(),
                     label_lp.Download(), label_p.Download(),   status.Download(),
                     label_status.Download(), label_row_status.Download()};
    };
    for (bool keep_label : {false, true}) {
      const Outputs single = run(detail::kPathSingleBlock, keep_label);
      const Outputs split = run(detail::kPathAuto, keep_label);
      EXPECT_EQ(single.status, split.status);
      EXPECT_EQ(single.label_status, split.label_status);
      EXPECT_EQ(single.label_row_status, split.label_row_status);
      EXPECT_TRUE(SameBits(single.label_lp, split.label_lp)) << "label logprobs differ";
      EXPECT_TRUE(SameBits(single.label_p, split.label_p)) << "label probs differ";
      for (int64_t b = 0; b < n; ++b) {
        const size_t at = static_cast<size_t>(b * vocab);
        const bool same = std::memcmp(single.probs.data() + at, split.probs.data() + at, vocab * sizeof(float)) == 0 &&
                          std::memcmp(single.logprobs.data() + at, split.logprobs.data() + at, vocab * sizeof(float)) == 0 &&
                          std::memcmp(single.masked.data() + at, split.masked.data() + at, vocab * sizeof(float)) == 0;
        EXPECT_TRUE(same) << profile << " dtype " << static_cast<int>(dtype) << " row " << b << " ("
                          << batch.names[b] << "): processed outputs differ";
      }
    }
  }
}

// DeviceSamplingParams (device-resident per-row arrays): the tokens of the host-array call; a row whose device
// parameters are out of range gets kInvalidToken and kRowBadParams, the other rows are untouched.
TEST_P(SplitRowTest, DeviceResidentParamsMatchHostArrays) {
  SKIP_WITHOUT_DEVICE();
  const std::string profile = GetParam();
  const int64_t vocab = UnderSanitizer() ? 2000 : 128256;
  const int64_t rows = 24;
  std::vector<float> logits;
  std::vector<samplecheck::SamplingParams> params;
  const auto grid = ParamGrid();
  for (int64_t r = 0; r < rows; ++r) {
    const auto row = RandomLogits(vocab, 2.0, 700 + r);
    logits.insert(logits.end(), row.begin(), row.end());
    params.push_back(WithRng(grid[r % grid.size()].params, 3 + r, 11 * r));
  }
  const SampleResult host = SampleRows(logits, rows, vocab, params, ProfileOf(profile));
  const kernels::ParamColumns columns = kernels::ParamColumns::FromRows(params);
  DeviceArray<float> d_logits(logits);
  DeviceArray<double> d_t(columns.temperature), d_p(columns.top_p), d_m(columns.min_p);
  DeviceArray<int64_t> d_k(columns.top_k);
  DeviceArray<uint64_t> d_seed(columns.seed), d_offset(columns.offset);
  DeviceArray<int32_t> d_tokens(rows), d_status(rows);
  LogitsBatch lb;
  lb.data = d_logits.get();
  lb.vocab = vocab;
  lb.batch = rows;
  DeviceSamplingParams dp;
  dp.temperature = d_t.get();
  dp.top_k = d_k.get();
  dp.top_p = d_p.get();
  dp.min_p = d_m.get();
  dp.seed = d_seed.get();
  dp.offset = d_offset.get();
  ASSERT_KOK(SampleFromLogits(lb, dp, ProfileOf(profile), d_tokens.get(), d_status.get(), nullptr));
  EXPECT_EQ(d_tokens.Download(), host.tokens);
  EXPECT_EQ(d_status.Download(), host.status);
  // Row 5's top_p out of range on the device: that row only is rejected.
  std::vector<double> bad_top_p = columns.top_p;
  bad_top_p[5] = 1.5;
  d_p.Upload(bad_top_p);
  ASSERT_KOK(SampleFromLogits(lb, dp, ProfileOf(profile), d_tokens.get(), d_status.get(), nullptr));
  const auto tokens = d_tokens.Download();
  const auto status = d_status.Download();
  for (int64_t r = 0; r < rows; ++r) {
    if (r == 5) {
      EXPECT_EQ(tokens[r], kInvalidToken);
      EXPECT_EQ(status[r], kRowBadParams);
    } else {
      EXPECT_EQ(tokens[r], host.tokens[r]) << "row " << r;
    }
  }
  // An out-of-range scalar in use is rejected on the host, before any launch.
  DeviceSamplingParams scalar_bad;
  scalar_bad.scalar.top_p = 1.5;
  EXPECT_EQ(SampleFromLogits(lb, scalar_bad, ProfileOf(profile), d_tokens.get(), d_status.get(), nullptr).code,
            ErrorCode::kInvalidArgument);
  // The same scalar shadowed by a device array is not in use.
  scalar_bad.top_p = d_p.get();
  d_p.Upload(columns.top_p);
  EXPECT_TRUE(SampleFromLogits(lb, scalar_bad, ProfileOf(profile), d_tokens.get(), d_status.get(), nullptr).ok());
  ASSERT_CUDA(cudaDeviceSynchronize());
}

INSTANTIATE_TEST_SUITE_P(Profiles, SplitRowTest, ::testing::Values("vllm", "hf"));

}  // namespace
}  // namespace samplecheck::kernels::testing
