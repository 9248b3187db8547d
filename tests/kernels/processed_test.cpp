// The processed distribution against the reference: probabilities within 1e-6 absolute (fp32 inputs), the kept
// set (masked logits > -inf) equal to the reference's except at ambiguous tokens, log-probabilities consistent,
// and label log-probabilities with the outside-the-kept-set report.
#include <cmath>
#include <cstdio>
#include <limits>

#include "kernels_test_support.h"

namespace samplecheck::kernels::testing {
namespace {

constexpr float kInf = std::numeric_limits<float>::infinity();

class ProcessedTest : public ::testing::TestWithParam<std::string> {};

using Processed = ProcessedRows;

TEST_P(ProcessedTest, ProbabilitiesAndKeptSetsMatchReference) {
  SKIP_WITHOUT_DEVICE();
  const std::string profile = GetParam();
  const int64_t vocab = UnderSanitizer() ? 3000 : 128256;
  const int64_t rows = UnderSanitizer() ? 2 : 6;
  for (const NamedParams& np : ParamGrid()) {
    std::vector<float> logits;
    for (int64_t r = 0; r < rows; ++r) {
      auto row = RandomLogits(vocab, r % 2 ? 3.0 : 1.0, 300 + r, r == rows - 1 ? 0.5 : 0.0);
      logits.insert(logits.end(), row.begin(), row.end());
    }
    const Processed got = RunProcessed(logits, rows, vocab, np.params, ProfileOf(profile));
    for (int64_t r = 0; r < rows; ++r) {
      std::vector<float> row(logits.begin() + r * vocab, logits.begin() + (r + 1) * vocab);
      const auto dist = Reference(row, np.params, profile);
      // Ambiguous tokens (decisions within 64 fp32 ulps, or a top-p tie group the reference cuts by position,
      // as this kernel does) change the renormalization: compare the probabilities with the reference that keeps
      // the same ambiguous tokens (as computed, all in or all out); skip them on a row where neither matches.
      size_t ambiguous_kept = 0;
      bool as_computed = true;
      for (int32_t t : dist.ambiguous) {
        const bool kept_here = got.masked[r * vocab + t] > -kInf;
        ambiguous_kept += kept_here;
        as_computed = as_computed && kept_here == dist.IsKept(t);
      }
      const bool comparable = as_computed || ambiguous_kept == 0 || ambiguous_kept == dist.ambiguous.size();
      const auto policy = ambiguous_kept == 0 ? samplecheck::AmbiguousPolicy::kAllOut : samplecheck::AmbiguousPolicy::kAllIn;
      const auto dense = as_computed ? dist.Dense() : Reference(row, np.params, profile, policy).Dense();
      if (!comparable) std::printf("%s %s row %lld: ambiguous tokens split, probabilities not compared\n",
                                   profile.c_str(), np.name.c_str(), static_cast<long long>(r));
      ASSERT_EQ(got.status[r], kRowSampled);
      int64_t prob_failures = 0, mask_failures = 0;
      double max_err = 0;
      for (int64_t i = 0; i < vocab; ++i) {
        const size_t at = r * vocab + i;
        const bool ambiguous = dist.IsAmbiguous(static_cast<int32_t>(i));
        const bool kept = got.masked[at] > -kInf;
        if (ambiguous) continue;
        if (kept != dist.IsKept(static_cast<int32_t>(i)) && mask_failures++ < 5) {
          ADD_FAILURE() << profile << " " << np.name << " row " << r << " token " << i << ": cuda kept " << kept
                        << ", reference kept " << dist.IsKept(static_cast<int32_t>(i)) << " (logit " << row[i] << ")";
        }
        if (!comparable) continue;
        const double err = std::fabs(static_cast<double>(got.probs[at]) - dense[i]);
        max_err = std::max(max_err, err);
        if (err > 1e-6 && prob_failures++ < 5) {
          ADD_FAILURE() << profile << " " << np.name << " row " << r << " token " << i << ": cuda " << got.probs[at]
                        << ", reference " << dense[i];
        }
        // probs, logprobs and masked logits describe the same set and the same numbers.
        EXPECT_EQ(got.probs[at] > 0 || kept, kept) << i;
        if (kept && got.probs[at] > 1e-30f) {
          EXPECT_NEAR(std::exp(static_cast<double>(got.logprobs[at])), got.probs[at], 1e-6 + 1e-5 * got.probs[at]);
        }
        if (!kept) {
          EXPECT_EQ(got.logprobs[at], -kInf);
        }
      }
      EXPECT_EQ(prob_failures, 0) << "max |error| " << max_err;
      EXPECT_EQ(mask_failures, 0);
    }
  }
}

// Label log-probabilities (vLLM processed_logprobs, trainer-side replay): kept labels match log of the reference
// probability; a label outside the kept set is reported (kLabelOutsideKeptSet) and is -inf, or, with
// keep_label_in_kept_set, log(e_label / (kept mass + e_label)), finite.
TEST_P(ProcessedTest, LabelLogprobsReportLabelsOutsideTheKeptSet) {
  SKIP_WITHOUT_DEVICE();
  const std::string profile = GetParam();
  const int64_t vocab = UnderSanitizer() ? 2000 : 32000;
  const auto row = RandomLogits(vocab, 2.0, 606);
  samplecheck::SamplingParams p;
  p.temperature = 0.8;
  p.top_k = 50;
  p.top_p = 0.9;
  const auto dist = Reference(row, p, profile);
  ASSERT_GE(dist.kept.size(), 2u);
  std::vector<int32_t> labels = {dist.kept[0], dist.kept[1]};
  int32_t outside = -1;
  for (int32_t i = 0; i < vocab && outside < 0; ++i) {
    if (!dist.IsKept(i) && !dist.IsAmbiguous(i)) outside = i;
  }
  labels.push_back(outside);
  labels.push_back(static_cast<int32_t>(vocab));  // out of range
  const int64_t per_row = labels.size();
  DeviceArray<float> d_logits(row), d_lp(per_row), d_p(per_row);
  DeviceArray<int32_t> d_labels(labels), d_status(per_row), d_row_status(1);
  LogitsBatch lb;
  lb.data = d_logits.get();
  lb.vocab = vocab;
  lb.batch = 1;
  for (bool keep : {false, true}) {
    LabelQuery q{d_labels.get(), per_row, keep};
    LabelOutputs out{d_lp.get(), d_p.get(), d_status.get(), d_row_status.get()};
    ASSERT_KOK(ComputeLabelLogprobs(lb, ToKernelParams(p), ProfileOf(profile), q, out, nullptr));
    const auto lp = d_lp.Download();
    const auto status = d_status.Download();
    for (int j = 0; j < 2; ++j) {
      EXPECT_EQ(status[j], kLabelKept);
      EXPECT_NEAR(lp[j], std::log(static_cast<double>(dist.Prob(labels[j]))), 1e-5) << labels[j];
    }
    EXPECT_EQ(status[2], kLabelOutsideKeptSet);
    if (keep) {
      // Host computation in double of log(e_l / (sum of kept e + e_l)).
      double mx = -1e300;
      for (float x : row) mx = std::max(mx, static_cast<double>(x));
      double kept_mass = 0;
      for (int32_t t : dist.kept) kept_mass += std::exp((row[t] - mx) / p.temperature);
      const double e = std::exp((row[outside] - mx) / p.temperature);
      EXPECT_TRUE(std::isfinite(lp[2]));
      EXPECT_NEAR(lp[2], std::log(e / (kept_mass + e)), 1e-4);
    } else {
      EXPECT_EQ(lp[2], -kInf);
    }
    EXPECT_EQ(status[3], kLabelOutOfRange);
    EXPECT_TRUE(std::isnan(lp[3]));
  }
}

INSTANTIATE_TEST_SUITE_P(Profiles, ProcessedTest, ::testing::Values("vllm", "hf"));

// Found by fuzz/cuda_fuzzer.cc on an H200 (corpus/cuda/regress-denormal-temperature-hf-v39): hf keeps a temperature
// of 4.9e-324 as a sampling temperature, whose reciprocal overflows double; (x - max) * (1 / T) was 0 * inf = NaN
// for the maxima. The limit is the tied maxima sharing the mass (then top-p's cut), as the reference computes.
TEST(ProcessedExtremeTemperature, DenormalTemperatureGivesTheReferenceLimitAndNoNaN) {
  SKIP_WITHOUT_DEVICE();
  const std::vector<float> row = {0.0f, 1.5f, -2.0f, 1.5f, 0.25f, -kInf};
  for (const double top_p : {1.0, 5.5468769768335369e-13}) {
    samplecheck::SamplingParams p;
    p.temperature = 4.9406564584124654e-324;
    p.top_p = top_p;
    const Processed out = RunProcessed(row, 1, static_cast<int64_t>(row.size()), p, Profile::kHf);
    const samplecheck::ProcessedDistribution ref = Reference(row, p, "hf");
    for (int32_t t = 0; t < static_cast<int32_t>(row.size()); ++t) {
      ASSERT_TRUE(std::isfinite(out.probs[t])) << "token " << t << " top_p " << top_p;
      ASSERT_FALSE(std::isnan(out.logprobs[t])) << "token " << t << " top_p " << top_p;
      ASSERT_FALSE(std::isnan(out.masked[t])) << "token " << t << " top_p " << top_p;
      EXPECT_NEAR(out.probs[t], static_cast<double>(ref.Prob(t)), 1e-6) << "token " << t << " top_p " << top_p;
    }
  }
}

// Found by fuzz/cuda_fuzzer.cc on an H200: min-p compares the probability ratio exp(z) with min_p, as the
// reference does; a token 1e-30 below the max has ratio 1 (in any fp32 softmax too) and is kept at min_p = 1.
TEST(ProcessedMinP, TokensWhoseRatioRoundsToOneAreTiedWithTheMax) {
  SKIP_WITHOUT_DEVICE();
  const std::vector<float> row = {0.0f, -1e-30f, -1.0f, 0.0f, -1e-7f};
  for (const char* profile : {"vllm", "hf"}) {
    samplecheck::SamplingParams p;
    p.min_p = 1.0;
    const Processed out = RunProcessed(row, 1, static_cast<int64_t>(row.size()), p, ProfileOf(profile));
    const samplecheck::ProcessedDistribution ref = Reference(row, p, profile);
    for (int32_t t = 0; t < static_cast<int32_t>(row.size()); ++t) {
      if (ref.IsAmbiguous(t)) continue;
      EXPECT_EQ(out.probs[t] > 0.0f, ref.IsKept(t)) << profile << " token " << t;
      EXPECT_NEAR(out.probs[t], static_cast<double>(ref.Prob(t)), 1e-6) << profile << " token " << t;
    }
    EXPECT_TRUE(ref.IsKept(1)) << "the reference keeps the token 1e-30 below the max";
  }
}

}  // namespace
}  // namespace samplecheck::kernels::testing
