// Replay sources (replay_source.h): the exact source is the reference's processed distribution as logprobs and
// guards labels as trainers do; each planted fault departs from it on a row built to show it; LogprobsOver
// renormalizes over any set; a sampler's processed distribution through `sampler:`; errors name the value.
#include "samplecheck/samplers/replay_source.h"

#include <gtest/gtest.h>

#include <unistd.h>

#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "samplecheck/reference/distribution.h"

namespace samplecheck::harness {
namespace {

std::unique_ptr<ReplaySource> Make(const std::string& spec) {
  auto s = MakeReplaySource(spec, "vllm");
  EXPECT_TRUE(s.ok()) << spec << ": " << s.error().message;
  return std::move(*s);
}

ReplayRows Ask(ReplaySource& s, const std::vector<float>& row, const SamplingParams& p,
               const std::vector<int32_t>& labels = {}) {
  ReplayBatch b;
  b.rows = RowBatch{row.data(), 1, static_cast<int64_t>(row.size()), static_cast<int64_t>(row.size())};
  b.params = std::span<const SamplingParams>(&p, 1);
  b.labels = labels;
  auto r = s.Logprobs(b);
  EXPECT_TRUE(r.ok()) << s.Name() << ": " << r.error().message;
  return r.ok() ? std::move(*r) : ReplayRows{};
}

std::vector<int32_t> Kept(const std::vector<float>& lp) {
  std::vector<int32_t> k;
  for (size_t t = 0; t < lp.size(); ++t) {
    if (std::isfinite(lp[t])) k.push_back(static_cast<int32_t>(t));
  }
  return k;
}

const std::vector<float> kRow = {3.0f, 2.5f, 2.5f, 2.0f, 1.0f, 0.0f, -1.0f, -3.0f};

TEST(ReplaySource, ExactIsTheReferenceAsLogprobs) {
  SamplingParams p;
  p.temperature = 0.8;
  p.top_k = 4;
  p.top_p = 0.9;
  auto exact = Make("exact");
  const ReplayRows r = Ask(*exact, kRow, p);
  auto ref = ComputeDistribution(LogitsView::Fp32(kRow), p, *FindProfile("vllm"));
  ASSERT_TRUE(ref.ok());
  ASSERT_EQ(Kept(r.logprobs), ref->kept);
  for (size_t i = 0; i < ref->kept.size(); ++i) {
    EXPECT_FLOAT_EQ(r.logprobs[size_t(ref->kept[i])], float(std::log(ref->prob[i])));
  }
  EXPECT_EQ(r.guarded, std::vector<uint8_t>{0});
  EXPECT_EQ(exact->Name(), "exact:vllm");
  EXPECT_TRUE(exact->GetCapabilities().labels);
}

TEST(ReplaySource, ExactGuardsALabelOutsideTheKeptSetAndNoLabelGuardDoesNot) {
  SamplingParams p;
  p.top_k = 2;  // keeps 0 and the tie 1, 2 (ties kept): token 3 is outside
  const ReplayRows guarded = Ask(*Make("exact"), kRow, p, {3});
  EXPECT_EQ(Kept(guarded.logprobs), (std::vector<int32_t>{0, 1, 2, 3}));
  EXPECT_EQ(guarded.guarded, std::vector<uint8_t>{1});
  const auto want = LogprobsOver(kRow, p, std::vector<int32_t>{0, 1, 2, 3});
  for (int32_t t : {0, 1, 2, 3}) EXPECT_FLOAT_EQ(guarded.logprobs[size_t(t)], float(want[size_t(t)]));
  const ReplayRows kept_label = Ask(*Make("exact"), kRow, p, {1});
  EXPECT_EQ(kept_label.guarded, std::vector<uint8_t>{0});
  const ReplayRows unguarded = Ask(*Make("fault:no-label-guard"), kRow, p, {3});
  EXPECT_EQ(Kept(unguarded.logprobs), (std::vector<int32_t>{0, 1, 2}));
  EXPECT_EQ(unguarded.guarded, std::vector<uint8_t>{0});
}

TEST(ReplaySource, EachPlantedFaultDepartsFromExactOnItsRow) {
  SamplingParams ties;
  ties.top_k = 2;
  EXPECT_EQ(Kept(Ask(*Make("fault:ties-cut-at-k"), kRow, ties).logprobs), (std::vector<int32_t>{0, 1}));
  SamplingParams joint;  // top-p 0.6 of the top-3-renormalized mass keeps 2 tokens, of the full mass 3
  joint.top_k = 3;
  joint.top_p = 0.6;
  EXPECT_NE(Kept(Ask(*Make("fault:topp-unrenormalized"), kRow, joint).logprobs),
            Kept(Ask(*Make("exact"), kRow, joint).logprobs));
  SamplingParams cold;
  cold.temperature = 0.3;
  cold.top_p = 0.9;
  EXPECT_NE(Kept(Ask(*Make("fault:temperature-after-masks"), kRow, cold).logprobs),
            Kept(Ask(*Make("exact"), kRow, cold).logprobs));
  SamplingParams topk;
  topk.top_k = 3;
  const ReplayRows unnorm = Ask(*Make("fault:no-renormalization"), kRow, topk);
  EXPECT_EQ(Kept(unnorm.logprobs), Kept(Ask(*Make("exact"), kRow, topk).logprobs));
  double mass = 0;
  for (float lp : unnorm.logprobs) mass += std::isfinite(lp) ? std::exp(double(lp)) : 0.0;
  EXPECT_LT(mass, 0.95);  // the kept mass of the full softmax, not 1
  auto unknown = MakeReplaySource("fault:nope", "vllm");
  ASSERT_FALSE(unknown.ok());
  EXPECT_NE(unknown.error().message.find("no-label-guard"), std::string::npos) << unknown.error().message;
}

TEST(ReplaySource, LogprobsOverRenormalizesOverAnySet) {
  SamplingParams p;
  p.temperature = 0.5;
  const auto lp = LogprobsOver(kRow, p, std::vector<int32_t>{1, 4, 6});
  long double sum = 0;
  for (int32_t t : {1, 4, 6}) sum += std::exp(lp[size_t(t)]);
  EXPECT_NEAR(double(sum), 1.0, 1e-15);
  EXPECT_TRUE(std::isinf(lp[0]) && lp[0] < 0);
  EXPECT_NEAR(double(lp[1] - lp[4]), (2.5 - 1.0) / 0.5, 1e-15);
  const std::vector<float> inf_row = {1.0f, std::numeric_limits<float>::infinity(), 5.0f,
                                      std::numeric_limits<float>::infinity()};
  const auto inf_lp = LogprobsOver(inf_row, SamplingParams{}, std::vector<int32_t>{0, 1, 2, 3});
  EXPECT_NEAR(double(inf_lp[1]), std::log(0.5), 1e-15);
  EXPECT_TRUE(std::isinf(inf_lp[2]));
}

TEST(ReplaySource, SamplerSourcesAndErrorsNameTheValue) {
  SamplingParams p;
  p.top_k = 3;
  auto control = Make("sampler:mutant:none");
  EXPECT_FALSE(control->GetCapabilities().labels);
  EXPECT_EQ(Kept(Ask(*control, kRow, p).logprobs), Kept(Ask(*Make("exact"), kRow, p).logprobs));
  SamplingParams bad;
  bad.top_p = 1.5;
  ReplayBatch b;
  b.rows = RowBatch{kRow.data(), 1, 8, 8};
  b.params = std::span<const SamplingParams>(&bad, 1);
  auto r = Make("exact")->Logprobs(b);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code, ErrorCode::kInvalidArgument);
  EXPECT_NE(r.error().message.find("top_p"), std::string::npos) << r.error().message;
  const int32_t label = 8;
  b.params = std::span<const SamplingParams>(&p, 1);
  b.labels = std::span<const int32_t>(&label, 1);
  r = Make("exact")->Logprobs(b);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("label 8"), std::string::npos) << r.error().message;
  EXPECT_EQ(MakeReplaySource("nope", "vllm").error().code, ErrorCode::kInvalidArgument);
  EXPECT_EQ(MakeReplaySource("exact:trtllm-cuda", "vllm").error().code, ErrorCode::kInvalidArgument);
#ifndef SAMPLECHECK_HAVE_CUDA
  EXPECT_EQ(MakeReplaySource("cuda", "vllm").error().code, ErrorCode::kUnsupported);
#endif
}

// The process source: LOGPROBS_BATCH over the protocol (tests/samplers/replay_test_client.py, standard library only).
std::string ReplayClient(const std::string& mode) {
  std::string dir = SAMPLECHECK_PYTHON_CLIENT;  // <source>/examples/python/samplecheck_client.py
  dir = dir.substr(0, dir.rfind("/examples/"));
  return "process:exec " + std::string(SAMPLECHECK_PYTHON3) + " " + dir + "/tests/samplers/replay_test_client.py " + mode;
}

bool HavePython3() { return SAMPLECHECK_PYTHON3[0] != '\0' && access(SAMPLECHECK_PYTHON3, X_OK) == 0; }

TEST(ReplaySource, AProcessAnswersABatchWithItsLabelsAndGuardFlags) {
  if (!HavePython3()) GTEST_SKIP() << "python3 was not found at configure time";
  auto process = MakeReplaySource(ReplayClient("ok"), "vllm");
  ASSERT_TRUE(process.ok()) << process.error().message;
  EXPECT_EQ((*process)->Name(), "process:replay-ok");
  EXPECT_TRUE((*process)->GetCapabilities().labels);
  // Two rows of one call: top-k 2 at T = 0.8 (the tie at 2.5 kept) and top-k 3 with a label outside the kept set.
  std::vector<float> rows = kRow;
  rows.insert(rows.end(), kRow.begin(), kRow.end());
  std::vector<SamplingParams> params(2);
  params[0].temperature = 0.8;
  params[0].top_k = 2;
  params[1].top_k = 3;
  const std::vector<int32_t> labels = {0, 6};
  ReplayBatch b;
  b.rows = RowBatch{rows.data(), 2, 8, 8};
  b.dtype = ReplayDType::kBFloat16;
  b.params = params;
  b.labels = labels;
  auto got = (*process)->Logprobs(b);
  ASSERT_TRUE(got.ok()) << got.error().message;
  EXPECT_EQ(got->guarded, (std::vector<uint8_t>{0, 1}));
  auto exact = Make("exact")->Logprobs(b);
  ASSERT_TRUE(exact.ok());
  EXPECT_EQ(exact->guarded, got->guarded);
  for (size_t i = 0; i < rows.size(); ++i) {
    if (std::isinf(exact->logprobs[i])) {
      EXPECT_TRUE(std::isinf(got->logprobs[i])) << i;
    } else {
      EXPECT_NEAR(got->logprobs[i], exact->logprobs[i], 1e-6) << i;
    }
  }
  // A client without the labels bit gets none.
  auto plain = MakeReplaySource(ReplayClient("no-labels"), "vllm");
  ASSERT_TRUE(plain.ok());
  EXPECT_FALSE((*plain)->GetCapabilities().labels);
  EXPECT_EQ((*plain)->Logprobs(b)->guarded, (std::vector<uint8_t>{0, 0}));
}

TEST(ReplaySource, AProcessWithoutTheBatchBitIsRefusedAndBrokenAnswersAreErrors) {
  if (!HavePython3()) GTEST_SKIP() << "python3 was not found at configure time";
  auto refused = MakeReplaySource(ReplayClient("sample-only"), "vllm");
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.error().code, ErrorCode::kInvalidArgument);
  EXPECT_NE(refused.error().message.find("LOGPROBS_BATCH capability bit (64)"), std::string::npos)
      << refused.error().message;
  SamplingParams p;
  ReplayBatch b;
  b.rows = RowBatch{kRow.data(), 1, 8, 8};
  b.params = std::span<const SamplingParams>(&p, 1);
  for (const char* mode : {"short", "guard-2"}) {
    auto broken = MakeReplaySource(ReplayClient(mode), "vllm");
    ASSERT_TRUE(broken.ok()) << broken.error().message;
    auto r = (*broken)->Logprobs(b);
    ASSERT_FALSE(r.ok()) << mode;
    EXPECT_EQ(r.error().code, ErrorCode::kPlugin) << mode;
    EXPECT_NE(r.error().message.find(std::string(mode) == "short" ? "broke the protocol" : "guard flag 2"),
              std::string::npos)
        << r.error().message;
  }
}

}  // namespace
}  // namespace samplecheck::harness
