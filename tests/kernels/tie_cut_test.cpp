// The top-p tie cut by sort position (vllm and hf: strict top-p; the crossing tie group is cut by position, lowest
// id first, exactly as reference/ computes it with AmbiguousPolicy::kAsComputed). Every pass honours the cut: the
// processed distribution (probs, logprobs, masked logits), label logprobs, SampleFromLogits and CountDraws.
#include <cmath>
#include <cstdio>
#include <limits>

#include <utility>

#include "kernels_test_support.h"

namespace samplecheck::kernels::testing {
namespace {

constexpr float kInf = std::numeric_limits<float>::infinity();

class TieCutTest : public ::testing::TestWithParam<std::string> {};

struct TieCase {
  std::string name;
  std::vector<float> row;
  samplecheck::SamplingParams params;
  int64_t expect_kept;  // -1: whatever the reference keeps
};

samplecheck::SamplingParams Params(double t, int64_t k, double p, double min_p = 0.0) {
  return MakeParams(t, k, p, min_p);
}

std::vector<TieCase> Cases() {
  std::vector<TieCase> cases;
  // The two rows properties_gpu_test found.
  cases.push_back({"exact-tie-boundary-count [0,0] T0.5 k2 p0.5", {0.0f, 0.0f}, Params(0.5, 2, 0.5), 1});
  cases.push_back({"greedy-limits [-64,-64] T0.05 p1e-9", {-64.0f, -64.0f}, Params(0.05, -1, 1e-9), 1});
  // 4 equal logits: top_p 0.25 / 0.5 / 0.75 keep 1 / 2 / 3 (strict: j * 0.25 < top_p).
  cases.push_back({"4 equal p0.25", {1.5f, 1.5f, 1.5f, 1.5f}, Params(1.0, -1, 0.25), 1});
  cases.push_back({"4 equal p0.5", {1.5f, 1.5f, 1.5f, 1.5f}, Params(1.0, -1, 0.5), 2});
  cases.push_back({"4 equal p0.75", {1.5f, 1.5f, 1.5f, 1.5f}, Params(1.0, -1, 0.75), 3});
  cases.push_back({"4 equal p0.76", {1.5f, 1.5f, 1.5f, 1.5f}, Params(1.0, -1, 0.76), 4});
  cases.push_back({"4 equal p0.3 k4", {0.0f, 0.0f, 0.0f, 0.0f}, Params(0.7, 4, 0.3), 2});
  // A token above the group, members at scattered ids, the rest far below.
  {
    std::vector<float> row(40, -8.0f);
    row[5] = 2.0f;
    for (int i : {1, 3, 7, 8, 20, 33}) row[i] = 1.0f;
    cases.push_back({"scattered group under a max", row, Params(1.0, -1, 0.6), -1});
    cases.push_back({"scattered group, top-k 4", row, Params(1.0, 4, 0.5), -1});
    cases.push_back({"scattered group, min-p 0.05", row, Params(1.0, -1, 0.6, 0.05), -1});
  }
  // A whole-row tie spanning many 256-token chunks: keeps the lowest ids (the id search crosses chunks).
  for (int64_t vocab : {int64_t{5000}, int64_t{70001}}) {
    for (double p : {0.5, 0.123}) {
      std::vector<float> row(vocab, -3.25f);
      cases.push_back({"whole-row tie V" + std::to_string(vocab) + " p" + std::to_string(p), row, Params(1.3, -1, p),
                       -1});
    }
  }
  return cases;
}

struct Outputs {
  std::vector<float> probs, logprobs, masked;
  int32_t status = -1;
};

Outputs Processed(const std::vector<float>& row, const samplecheck::SamplingParams& p, Profile profile) {
  ProcessedRows got = RunProcessed(row, 1, static_cast<int64_t>(row.size()), p, profile);
  return {std::move(got.probs), std::move(got.logprobs), std::move(got.masked), got.status.at(0)};
}

TEST_P(TieCutTest, ProcessedDistributionCutsTheTopPTieGroupByPosition) {
  SKIP_WITHOUT_DEVICE();
  const std::string profile = GetParam();
  for (const TieCase& c : Cases()) {
    SCOPED_TRACE(profile + " " + c.name);
    const auto dist = Reference(c.row, c.params, profile, samplecheck::AmbiguousPolicy::kAsComputed);
    if (c.expect_kept >= 0) {
      ASSERT_EQ(static_cast<int64_t>(dist.kept.size()), c.expect_kept);
    }
    ASSERT_FALSE(dist.greedy);
    const Outputs got = Processed(c.row, c.params, ProfileOf(profile));
    ASSERT_EQ(got.status, kRowSampled);
    const auto dense = dist.Dense();
    int64_t failures = 0;
    for (size_t i = 0; i < c.row.size(); ++i) {
      const bool kept = got.masked[i] > -kInf;
      const bool ref_kept = dist.IsKept(static_cast<int32_t>(i));
      if ((kept != ref_kept || (got.probs[i] > 0) != ref_kept ||
           std::fabs(static_cast<double>(got.probs[i]) - dense[i]) > 1e-6) &&
          failures++ < 5) {
        ADD_FAILURE() << "token " << i << ": cuda kept " << kept << " prob " << got.probs[i] << ", reference kept "
                      << ref_kept << " prob " << dense[i];
      }
      if (kept) {
        EXPECT_NEAR(std::exp(static_cast<double>(got.logprobs[i])), dense[i], 1e-6 + 1e-5 * dense[i]) << i;
      } else {
        EXPECT_EQ(got.logprobs[i], -kInf) << i;
      }
    }
    EXPECT_EQ(failures, 0);
  }
}

TEST_P(TieCutTest, LabelsSamplesAndCountDrawsHonourTheCut) {
  SKIP_WITHOUT_DEVICE();
  const std::string profile = GetParam();
  const int rows = UnderSanitizer() ? 16 : 256;
  for (const TieCase& c : Cases()) {
    SCOPED_TRACE(profile + " " + c.name);
    const int64_t vocab = c.row.size();
    const auto dist = Reference(c.row, c.params, profile, samplecheck::AmbiguousPolicy::kAsComputed);
    // Labels: every token (at most 4096 of them); kept iff the reference keeps it.
    const int64_t per_row = std::min<int64_t>(vocab, 4096);
    std::vector<int32_t> labels(per_row);
    for (int64_t j = 0; j < per_row; ++j) labels[j] = static_cast<int32_t>(j);
    DeviceArray<float> d_row(c.row), d_lp(per_row);
    DeviceArray<int32_t> d_labels(labels), d_lstatus(per_row);
    LogitsBatch lb;
    lb.data = d_row.get();
    lb.vocab = vocab;
    lb.batch = 1;
    LabelQuery q{d_labels.get(), per_row, false};
    LabelOutputs lo{d_lp.get(), nullptr, d_lstatus.get(), nullptr};
    ASSERT_KOK(ComputeLabelLogprobs(lb, ToKernelParams(c.params), ProfileOf(profile), q, lo, nullptr));
    const auto lp = d_lp.Download();
    const auto ls = d_lstatus.Download();
    for (int64_t j = 0; j < per_row; ++j) {
      const bool ref_kept = dist.IsKept(static_cast<int32_t>(j));
      ASSERT_EQ(ls[j], ref_kept ? kLabelKept : kLabelOutsideKeptSet) << "label " << j;
      if (ref_kept) {
        EXPECT_NEAR(lp[j], std::log(static_cast<double>(dist.Prob(static_cast<int32_t>(j)))), 1e-5) << j;
      } else {
        EXPECT_EQ(lp[j], -kInf) << j;
      }
    }
    // SampleFromLogits: `rows` copies of the row with different offsets, every token kept by the reference.
    if (vocab <= 5000) {
      std::vector<float> logits;
      std::vector<samplecheck::SamplingParams> params;
      for (int r = 0; r < rows; ++r) {
        logits.insert(logits.end(), c.row.begin(), c.row.end());
        params.push_back(WithRng(c.params, 4242, 1000 + r));
      }
      const SampleResult got = SampleRows(logits, rows, vocab, params, ProfileOf(profile));
      for (int r = 0; r < rows; ++r) {
        ASSERT_EQ(got.status[r], kRowSampled);
        ASSERT_TRUE(dist.IsKept(got.tokens[r])) << "row " << r << " drew " << got.tokens[r];
      }
    }
    // CountDraws: the support of the histogram is inside the kept set, every kept token of mass >= 1% is drawn.
    const uint64_t draws = UnderSanitizer() ? 4000 : 200000;
    DeviceArray<uint64_t> d_hist(std::vector<uint64_t>(vocab, 0));
    DeviceArray<int32_t> d_status(1);
    DeviceRow dr{DType::kFloat32, d_row.get(), vocab};
    const auto p = WithRng(c.params, 99, 7);
    const RowParams rp{p.temperature, p.top_k, p.top_p, p.min_p, p.seed, p.offset};
    ASSERT_KOK(CountDraws(dr, rp, ProfileOf(profile), draws, d_hist.get(), d_status.get(), nullptr));
    const auto hist = d_hist.Download();
    ASSERT_EQ(d_status.Download()[0], kRowSampled);
    uint64_t total = 0;
    for (int64_t i = 0; i < vocab; ++i) {
      total += hist[i];
      if (!dist.IsKept(static_cast<int32_t>(i))) {
        ASSERT_EQ(hist[i], 0u) << "token " << i << " outside the kept set";
      }
      if (dist.Prob(static_cast<int32_t>(i)) >= 0.01) {
        EXPECT_GT(hist[i], 0u) << "token " << i;
      }
    }
    EXPECT_EQ(total, draws);
  }
}

INSTANTIATE_TEST_SUITE_P(Profiles, TieCutTest, ::testing::Values("vllm", "hf"));

}  // namespace
}  // namespace samplecheck::kernels::testing
