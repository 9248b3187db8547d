// Replicated batches across the process boundary (docs/process-protocol.md, SAMPLE_REPLICATED): a client that sets
// capability bit 32 gets each distinct row once with its copy count, in as few messages as the size cap allows, and
// the tokens come back in call order; a client without it gets SAMPLE on the copies, a message at a time; a bad
// answer is a protocol error. The client is tests/samplers/scripted_client.cpp, which logs every request it reads.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <iterator>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "harness_test_rows.h"
#include "samplecheck/samplers/exact_sampler.h"
#include "samplecheck/samplers/process_sampler.h"

namespace samplecheck::harness {
namespace {

using testing::GaussianRow;
using testing::Params;

constexpr uint32_t kReplicatedBit = 32;
constexpr uint32_t kStepsBit = 256;
constexpr size_t kParamsBytes = 48;
constexpr size_t kProcessCap = size_t{32} << 20;  // the process protocol's per-message cap of params and logits

class ScriptedClient {
 public:
  // caps: the HELLO's capability bits; draw: exact | fingerprint; fault: "" or one of scripted_client.cpp's.
  ScriptedClient(uint32_t caps, const std::string& draw, const std::string& fault = "") {
    static int count = 0;
    log_ = ::testing::TempDir() + "scripted_client_" + std::to_string(getpid()) + "_" + std::to_string(count++);
    std::remove(log_.c_str());
    const std::string command = std::string(SAMPLECHECK_SCRIPTED_CLIENT) + " " + std::to_string(caps) + " '" + log_ +
                                "' " + draw + (fault.empty() ? "" : " " + fault);
    auto made = MakeProcessSampler(command);
    EXPECT_TRUE(made.ok()) << made.error().ToString();
    if (made.ok()) sampler_ = std::move(made).value();
  }
  ~ScriptedClient() { std::remove(log_.c_str()); }
  Sampler& operator*() { return *sampler_; }
  Sampler* operator->() { return sampler_.get(); }
  explicit operator bool() const { return sampler_ != nullptr; }

  // The requests the client read so far, one line each.
  std::vector<std::string> Requests() const {
    std::ifstream in(log_);
    std::vector<std::string> lines;
    for (std::string line; std::getline(in, line);) lines.push_back(line);
    return lines;
  }

 private:
  std::string log_;
  std::unique_ptr<Sampler> sampler_;
};

std::string Replicated(size_t rows, size_t vocab, uint64_t replicas) {
  return "SAMPLE_REPLICATED rows " + std::to_string(rows) + " vocab " + std::to_string(vocab) + " replicas " +
         std::to_string(replicas) + " bytes " + std::to_string(24 + replicas * rows * kParamsBytes + rows * vocab * 4);
}

std::string Sample(size_t rows, size_t vocab) {
  return "SAMPLE rows " + std::to_string(rows) + " vocab " + std::to_string(vocab) + " bytes " +
         std::to_string(16 + rows * (kParamsBytes + vocab * 4));
}

// `rows` distinct rows of `vocab` tokens.
std::vector<float> Rows(size_t rows, size_t vocab) {
  std::vector<float> logits(rows * vocab);
  for (size_t r = 0; r < rows; ++r) {
    const auto row = GaussianRow(static_cast<int64_t>(vocab), static_cast<uint32_t>(r + 1));
    std::copy(row.begin(), row.end(), logits.begin() + r * vocab);
  }
  return logits;
}

// The params of call row k rows + r: a seed per row and an offset per copy, as the campaign's batch cases use.
std::vector<SamplingParams> CallParams(size_t rows, uint64_t replicas, double top_p = 0.9) {
  std::vector<SamplingParams> params(replicas * rows);
  for (uint64_t k = 0; k < replicas; ++k) {
    for (size_t r = 0; r < rows; ++r) params[k * rows + r] = Params(1.0, -1, top_p, 0.0, 100 + r, 1000 + k);
  }
  return params;
}

// The fingerprint draw of scripted_client.cpp for every call row: (argmax of its row + seed + offset) mod V.
std::vector<int32_t> Fingerprints(const std::vector<float>& logits, size_t vocab, std::span<const SamplingParams> params) {
  const size_t rows = logits.size() / vocab;
  std::vector<uint64_t> argmax(rows);
  for (size_t r = 0; r < rows; ++r) {
    const auto row = logits.begin() + static_cast<std::ptrdiff_t>(r * vocab);
    argmax[r] = static_cast<uint64_t>(std::max_element(row, row + static_cast<std::ptrdiff_t>(vocab)) - row);
  }
  std::vector<int32_t> tokens(params.size());
  for (size_t c = 0; c < params.size(); ++c) {
    tokens[c] = static_cast<int32_t>((argmax[c % rows] + params[c].seed + params[c].offset) % vocab);
  }
  return tokens;
}

bool Contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

// A batch case's call: 3 rows, 100 copies, each call row with its own seed and offset. One SAMPLE_REPLICATED with
// each row once (24 + 300 params + 3 rows of logits), and the tokens of the exact sampler on the copies, in call
// order.
// Capability 512 (COUNT draws the distribution, not SAMPLE's tokens at the same seeds) means something only beside
// COUNT (bit 2): with it the sampler is count_distributional, so the campaign tests agreement two-sample; without
// COUNT the harness counts through SAMPLE and the bit is ignored.
TEST(ProcessCapabilities, TheDistributionalCountBitCountsOnlyBesideCount) {
  constexpr uint32_t kCountBit = 2, kDistributionalBit = 512;
  ScriptedClient both(kCountBit | kDistributionalBit, "exact");
  ScriptedClient count_only(kCountBit, "exact");
  ScriptedClient bit_only(kDistributionalBit, "exact");
  ASSERT_TRUE(both && count_only && bit_only);
  EXPECT_TRUE(both->GetCapabilities().count_draws);
  EXPECT_TRUE(both->GetCapabilities().count_distributional);
  EXPECT_TRUE(count_only->GetCapabilities().count_draws);
  EXPECT_FALSE(count_only->GetCapabilities().count_distributional);
  EXPECT_FALSE(bit_only->GetCapabilities().count_draws);
  EXPECT_FALSE(bit_only->GetCapabilities().count_distributional);
}

TEST(ProcessReplicated, AReplicatedBatchIsOneMessageWithEachRowOnceAndTokensInCallOrder) {
  ScriptedClient client(kReplicatedBit, "exact");
  ASSERT_TRUE(client);
  auto exact = MakeExactSampler("vllm");
  ASSERT_TRUE(exact.ok());
  constexpr size_t kRows = 3, kVocab = 50;
  constexpr uint64_t kCopies = 100;
  const auto logits = Rows(kRows, kVocab);
  const auto params = CallParams(kRows, kCopies);
  const RowBatch batch{logits.data(), kRows, kVocab, kVocab};
  std::vector<int32_t> got(params.size(), -7), want(params.size(), -7);
  ASSERT_TRUE(client->SampleReplicated(batch, kCopies, params, got).ok());
  ASSERT_TRUE((*exact)->SampleReplicated(batch, kCopies, params, want).ok());
  EXPECT_EQ(got, want);
  EXPECT_GT(std::set<int32_t>(got.begin(), got.end()).size(), 3u) << "the draws should differ across copies";
  EXPECT_EQ(client.Requests(), std::vector<std::string>{Replicated(kRows, kVocab, kCopies)});
}

// A row stride wider than the vocab: only the vocab's logits of each row cross.
TEST(ProcessReplicated, ARowStrideWiderThanTheVocabSendsTheVocabOnly) {
  ScriptedClient client(kReplicatedBit, "exact");
  ASSERT_TRUE(client);
  auto exact = MakeExactSampler("vllm");
  ASSERT_TRUE(exact.ok());
  constexpr size_t kRows = 2, kVocab = 30, kStride = 41;
  std::vector<float> logits(kRows * kStride, 1e30f);  // the padding would dominate a draw that read it
  const auto rows = Rows(kRows, kVocab);
  for (size_t r = 0; r < kRows; ++r) std::copy_n(rows.begin() + r * kVocab, kVocab, logits.begin() + r * kStride);
  const auto params = CallParams(kRows, 5);
  std::vector<int32_t> got(params.size()), want(params.size());
  ASSERT_TRUE(client->SampleReplicated({logits.data(), kRows, kVocab, kStride}, 5, params, got).ok());
  ASSERT_TRUE((*exact)->SampleReplicated({rows.data(), kRows, kVocab, kVocab}, 5, params, want).ok());
  EXPECT_EQ(got, want);
  EXPECT_EQ(client.Requests(), std::vector<std::string>{Replicated(kRows, kVocab, 5)});
}

// The agreement check's call: N draws of one row at offsets offset + i, one SAMPLE_REPLICATED (rows 1, replicas N).
TEST(ProcessReplicated, SampleRepeatedIsOneReplicatedMessageOfTheRow) {
  ScriptedClient client(kReplicatedBit, "exact");
  ASSERT_TRUE(client);
  auto exact = MakeExactSampler("vllm");
  ASSERT_TRUE(exact.ok());
  const auto row = GaussianRow(64, 9);
  const SamplingParams params = Params(0.8, 20, 0.95, 0.0, 11, 500);
  std::vector<int32_t> got(1000, -7), want(1000, -7);
  ASSERT_TRUE(client->SampleRepeated(row, params, got).ok());
  ASSERT_TRUE((*exact)->SampleRepeated(row, params, want).ok());
  EXPECT_EQ(got, want);
  EXPECT_EQ(client.Requests(), std::vector<std::string>{Replicated(1, 64, 1000)});
}

// A client without bit 32 gets what it got before: SAMPLE on the copies, each message within the cap (the copies
// of 2 rows x 60 replicas of a 100000-token row are 48 MB: SAMPLEs of 83 and 37 call rows), the same tokens.
TEST(ProcessReplicated, AClientWithoutTheBitGetsSampleOnTheCopiesAMessageAtATime) {
  ScriptedClient client(/*caps=*/0, "exact");
  ASSERT_TRUE(client);
  auto exact = MakeExactSampler("vllm");
  ASSERT_TRUE(exact.ok());
  constexpr size_t kRows = 2, kVocab = 100000;
  constexpr uint64_t kCopies = 60;
  const auto logits = Rows(kRows, kVocab);
  const auto params = CallParams(kRows, kCopies, /*top_p=*/0.5);
  const RowBatch batch{logits.data(), kRows, kVocab, kVocab};
  std::vector<int32_t> got(params.size(), -7), want(params.size(), -7);
  ASSERT_TRUE(client->SampleReplicated(batch, kCopies, params, got).ok());
  ASSERT_TRUE((*exact)->SampleReplicated(batch, kCopies, params, want).ok());
  EXPECT_EQ(got, want);
  const size_t per_message = kProcessCap / (4 * kVocab);
  ASSERT_EQ(per_message, 83u);
  EXPECT_EQ(client.Requests(), (std::vector<std::string>{Sample(83, kVocab), Sample(37, kVocab)}));
  // SampleRepeated too: 200 draws of one row in SAMPLEs of 83, 83 and 34.
  std::vector<int32_t> repeated(200), repeated_want(200);
  const std::span<const float> row(logits.data(), kVocab);
  ASSERT_TRUE(client->SampleRepeated(row, params[0], repeated).ok());
  ASSERT_TRUE((*exact)->SampleRepeated(row, params[0], repeated_want).ok());
  EXPECT_EQ(repeated, repeated_want);
  const auto requests = client.Requests();
  EXPECT_EQ(std::vector<std::string>(requests.begin() + 2, requests.end()),
            (std::vector<std::string>{Sample(83, kVocab), Sample(83, kVocab), Sample(34, kVocab)}));
}

// Params past the cap split by replicas: one 16-token row x 800000 copies is 38.4 MB of params, so two messages
// of (32 MiB - 64 bytes) / 48 = 699049 and 100951 replicas; every token where its call row is.
TEST(ProcessReplicated, TooManyParamsSplitByReplicas) {
  ScriptedClient client(kReplicatedBit, "fingerprint");
  ASSERT_TRUE(client);
  constexpr size_t kVocab = 16;
  constexpr uint64_t kCopies = 800000;
  const auto logits = Rows(1, kVocab);
  std::vector<SamplingParams> params(kCopies, Params(1.0, -1, 1.0, 0.0, 3, 0));
  for (uint64_t k = 0; k < kCopies; ++k) params[k].offset = 7 * k;
  std::vector<int32_t> tokens(kCopies, -7);
  ASSERT_TRUE(client->SampleReplicated({logits.data(), 1, kVocab, kVocab}, kCopies, params, tokens).ok());
  EXPECT_EQ(tokens, Fingerprints(logits, kVocab, params));
  const uint64_t first = (kProcessCap - 4 * kVocab) / kParamsBytes;
  ASSERT_EQ(first, 699049u);
  EXPECT_EQ(client.Requests(), (std::vector<std::string>{Replicated(1, kVocab, first),
                                                         Replicated(1, kVocab, kCopies - first)}));
}

// Rows past half the cap split by rows: 3 rows of 2^21 tokens (24 MiB) with 60000 copies (8.6 MB of params) do not
// fit one message; groups of 2 rows (16 MiB) and 1 row, each with every replica.
TEST(ProcessReplicated, LargeRowsSplitByRowsWithEveryReplica) {
  ScriptedClient client(kReplicatedBit, "fingerprint");
  ASSERT_TRUE(client);
  constexpr size_t kRows = 3, kVocab = size_t{1} << 21;
  constexpr uint64_t kCopies = 60000;
  const auto logits = Rows(kRows, kVocab);
  const auto params = CallParams(kRows, kCopies);
  std::vector<int32_t> tokens(params.size(), -7);
  ASSERT_TRUE(client->SampleReplicated({logits.data(), kRows, kVocab, kVocab}, kCopies, params, tokens).ok());
  EXPECT_EQ(tokens, Fingerprints(logits, kVocab, params));
  EXPECT_EQ(client.Requests(), (std::vector<std::string>{Replicated(2, kVocab, kCopies),
                                                         Replicated(1, kVocab, kCopies)}));
}

// Invalid params of one call row: the client's ERROR (code 1) is kInvalidArgument, and the process stays in use.
TEST(ProcessReplicated, InvalidParamsOfOneCallRowAreTheClientsInvalidArgument) {
  ScriptedClient client(kReplicatedBit, "exact");
  ASSERT_TRUE(client);
  const auto logits = Rows(2, 20);
  auto params = CallParams(2, 4);
  params[5].temperature = -1.0;
  std::vector<int32_t> tokens(params.size());
  const Status st = client->SampleReplicated({logits.data(), 2, 20, 20}, 4, params, tokens);
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.error().code, ErrorCode::kInvalidArgument) << st.error().ToString();
  EXPECT_TRUE(Contains(st.error().message, "SAMPLE_REPLICATED failed")) << st.error().message;
  params[5].temperature = 1.0;
  EXPECT_TRUE(client->SampleReplicated({logits.data(), 2, 20, 20}, 4, params, tokens).ok());
}

// A TOKENS of the wrong count, or another message type, breaks the protocol: kPlugin, the process is stopped and
// every later call fails with the same message.
TEST(ProcessReplicated, AWrongTokenCountOrTypeIsAProtocolError) {
  const struct {
    const char* fault;
    const char* says;
  } kCases[] = {
      {"short", "answered SAMPLE_REPLICATED of 12 call rows (4 copies of 3 rows) with a TOKENS of 52 bytes for 11 rows"},
      {"long", "answered SAMPLE_REPLICATED of 12 call rows (4 copies of 3 rows) with a TOKENS of 60 bytes for 13 rows"},
      {"histogram", "answered SAMPLE_REPLICATED with HISTOGRAM, not TOKENS"},
  };
  for (const auto& c : kCases) {
    ScriptedClient client(kReplicatedBit, "exact", c.fault);
    ASSERT_TRUE(client);
    const auto logits = Rows(3, 20);
    const auto params = CallParams(3, 4);
    std::vector<int32_t> tokens(params.size());
    const Status st = client->SampleReplicated({logits.data(), 3, 20, 20}, 4, params, tokens);
    ASSERT_FALSE(st.ok()) << c.fault;
    EXPECT_EQ(st.error().code, ErrorCode::kPlugin) << c.fault;
    EXPECT_TRUE(Contains(st.error().message, "broke the protocol")) << st.error().message;
    EXPECT_TRUE(Contains(st.error().message, c.says)) << st.error().message;
    std::vector<int32_t> one(1);
    const Status again = client->Sample({logits.data(), 1, 20, 20}, std::span(params).first(1), one);
    ASSERT_FALSE(again.ok()) << c.fault;
    EXPECT_EQ(again.error().message, st.error().message);
  }
}

// A token outside [-1, V) is kPlugin naming the call row, its copy and its row.
TEST(ProcessReplicated, ATokenOutsideTheVocabNamesTheCallRow) {
  ScriptedClient client(kReplicatedBit, "exact", "out-of-range");
  ASSERT_TRUE(client);
  const auto logits = Rows(3, 20);
  const auto params = CallParams(3, 4);
  std::vector<int32_t> tokens(params.size());
  const Status st = client->SampleReplicated({logits.data(), 3, 20, 20}, 4, params, tokens);
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.error().code, ErrorCode::kPlugin);
  EXPECT_TRUE(Contains(st.error().message, "returned token 20 for call row 11 (copy 3 of row 2) of SAMPLE_REPLICATED; "
                                           "a token must be in [-1, 20)"))
      << st.error().message;
}

// Arguments that do not match are kInvalidArgument before anything is sent.
TEST(ProcessReplicated, MismatchedArgumentsAreInvalidArgumentAndSendNothing) {
  ScriptedClient client(kReplicatedBit, "exact");
  ASSERT_TRUE(client);
  const auto logits = Rows(2, 20);
  const auto params = CallParams(2, 3);
  std::vector<int32_t> tokens(params.size());
  const Status st = client->SampleReplicated({logits.data(), 2, 20, 20}, 4, params, tokens);
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.error().code, ErrorCode::kInvalidArgument);
  EXPECT_TRUE(Contains(st.error().message, "4 copies of 2 rows need 8 params and token slots, not 6 and 6"))
      << st.error().message;
  EXPECT_TRUE(client->SampleReplicated({logits.data(), 2, 20, 20}, 0, {}, {}).ok());
  EXPECT_TRUE(client.Requests().empty());
}

// ---- SAMPLE_STEPS: a decode loop's consecutive calls of one batch --------------------------------------------------

std::string Steps(size_t rows, size_t vocab, uint64_t steps) {
  return "SAMPLE_STEPS rows " + std::to_string(rows) + " vocab " + std::to_string(vocab) + " steps " +
         std::to_string(steps) + " bytes " + std::to_string(24 + rows * (kParamsBytes + vocab * 4));
}

// A decode batch of 3 rows for 600 steps: the batch crosses once per 256 steps (3 messages, not 600), and the tokens
// are the exact sampler's calls one by one (call s at every offset + s), step by step.
TEST(ProcessSteps, ConsecutiveCallsOfABatchAreFewMessagesWithTheTokensOfTheCallsOneByOne) {
  ScriptedClient client(kStepsBit, "exact");
  ASSERT_TRUE(client);
  auto exact = MakeExactSampler("vllm");
  ASSERT_TRUE(exact.ok());
  constexpr size_t kRows = 3, kVocab = 40;
  constexpr uint64_t kSteps = 600;
  const auto logits = Rows(kRows, kVocab);
  const auto params = CallParams(kRows, 1);
  const RowBatch batch{logits.data(), kRows, kVocab, kVocab};
  std::vector<int32_t> got(kSteps * kRows, -7);
  ASSERT_TRUE(client->SampleSteps(batch, params, kSteps, got).ok());
  std::vector<int32_t> want(kSteps * kRows, -7);
  std::vector<SamplingParams> at = params;
  for (uint64_t s = 0; s < kSteps; ++s) {
    for (size_t r = 0; r < kRows; ++r) at[r].offset = params[r].offset + s;
    ASSERT_TRUE((*exact)->Sample(batch, at, std::span(want).subspan(s * kRows, kRows)).ok());
  }
  EXPECT_EQ(got, want);
  EXPECT_GT(std::set<int32_t>(got.begin(), got.end()).size(), 3u) << "the steps should draw different tokens";
  EXPECT_EQ(client.Requests(),
            (std::vector<std::string>{Steps(kRows, kVocab, 256), Steps(kRows, kVocab, 256), Steps(kRows, kVocab, 88)}));
}

// Each message's step 0 is the next step's offsets: the fingerprint client adds the step to each offset, so a wrong
// base offset in the second message would shift every token after step 256.
TEST(ProcessSteps, EveryMessageStartsAtItsFirstStepsOffsets) {
  ScriptedClient client(kStepsBit, "fingerprint");
  ASSERT_TRUE(client);
  constexpr size_t kRows = 2, kVocab = 1000;
  constexpr uint64_t kSteps = 300;
  const auto logits = Rows(kRows, kVocab);
  const auto params = CallParams(kRows, 1);
  std::vector<int32_t> got(kSteps * kRows);
  ASSERT_TRUE(client->SampleSteps({logits.data(), kRows, kVocab, kVocab}, params, kSteps, got).ok());
  std::vector<SamplingParams> calls;
  for (uint64_t s = 0; s < kSteps; ++s) {
    for (size_t r = 0; r < kRows; ++r) {
      calls.push_back(params[r]);
      calls.back().offset += s;
    }
  }
  EXPECT_EQ(got, Fingerprints(logits, kVocab, calls));
  EXPECT_EQ(client.Requests().size(), 2u);
}

// A client without bit 256 gets one SAMPLE per step, with the same tokens.
TEST(ProcessSteps, AClientWithoutTheBitGetsOneSampleAStep) {
  ScriptedClient with(kStepsBit, "exact"), without(0, "exact");
  ASSERT_TRUE(with);
  ASSERT_TRUE(without);
  constexpr size_t kRows = 2, kVocab = 30;
  constexpr uint64_t kSteps = 5;
  const auto logits = Rows(kRows, kVocab);
  const auto params = CallParams(kRows, 1);
  const RowBatch batch{logits.data(), kRows, kVocab, kVocab};
  std::vector<int32_t> a(kSteps * kRows), b(kSteps * kRows);
  ASSERT_TRUE(with->SampleSteps(batch, params, kSteps, a).ok());
  ASSERT_TRUE(without->SampleSteps(batch, params, kSteps, b).ok());
  EXPECT_EQ(a, b);
  EXPECT_EQ(without.Requests(), std::vector<std::string>(kSteps, Sample(kRows, kVocab)));
  EXPECT_EQ(with.Requests(), std::vector<std::string>{Steps(kRows, kVocab, kSteps)});
}

// A short answer, an out-of-range token and invalid params are the errors SAMPLE gives, naming the step.
TEST(ProcessSteps, BadAnswersAndInvalidParamsAreNamedWithTheStep) {
  constexpr size_t kRows = 2, kVocab = 20;
  const auto logits = Rows(kRows, kVocab);
  const RowBatch batch{logits.data(), kRows, kVocab, kVocab};
  std::vector<int32_t> tokens(4 * kRows);
  {
    ScriptedClient client(kStepsBit, "fingerprint", "short");
    ASSERT_TRUE(client);
    const Status st = client->SampleSteps(batch, CallParams(kRows, 1), 4, tokens);
    ASSERT_FALSE(st.ok());
    EXPECT_TRUE(Contains(st.error().message, "answered SAMPLE_STEPS of 4 steps of 2 rows with a TOKENS of"))
        << st.error().message;
  }
  {
    ScriptedClient client(kStepsBit, "fingerprint", "out-of-range");
    ASSERT_TRUE(client);
    const Status st = client->SampleSteps(batch, CallParams(kRows, 1), 4, tokens);
    ASSERT_FALSE(st.ok());
    EXPECT_EQ(st.error().code, ErrorCode::kPlugin);
    EXPECT_TRUE(Contains(st.error().message, "returned token 20 for row 1 of step 3 of SAMPLE_STEPS"))
        << st.error().message;
  }
  {
    ScriptedClient client(kStepsBit, "exact");
    ASSERT_TRUE(client);
    const Status st = client->SampleSteps(batch, CallParams(kRows, 1, /*top_p=*/1.5), 4, tokens);
    ASSERT_FALSE(st.ok());
    EXPECT_EQ(st.error().code, ErrorCode::kInvalidArgument) << st.error().ToString();
  }
}

// Token slots that are not steps x rows are kInvalidArgument before anything is sent.
TEST(ProcessSteps, MismatchedTokenSlotsAreInvalidArgumentAndSendNothing) {
  ScriptedClient client(kStepsBit, "exact");
  ASSERT_TRUE(client);
  const auto logits = Rows(2, 20);
  const auto params = CallParams(2, 1);
  std::vector<int32_t> tokens(7);
  const Status st = client->SampleSteps({logits.data(), 2, 20, 20}, params, 4, tokens);
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.error().code, ErrorCode::kInvalidArgument);
  EXPECT_TRUE(Contains(st.error().message, "4 steps of 2 rows need 8 token slots, not 7")) << st.error().message;
  EXPECT_TRUE(client.Requests().empty());
}

}  // namespace
}  // namespace samplecheck::harness
