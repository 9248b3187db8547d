// The process sampler: the protocol of docs/process-protocol.md over the transport of process_sampler_child.h.
// Byte layouts are little-endian and written field by field (no struct dumps), so the harness and a client on
// any host agree.
#include "samplecheck/samplers/process_sampler.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <string>
#include <vector>

#include "default_count.h"
#include "process_protocol.h"
#include "process_sampler_child.h"
#include "process_sampler_internal.h"
#include "replay_internal.h"
#include "samplecheck/core/format.h"
#include "samplecheck/samplers/verifier.h"

namespace samplecheck::harness {
namespace {

using process_internal::ChildProcess;
using process_internal::Clock;
using process_internal::Frame;
using namespace protocol;

// Requests are chunked so one message stays small and one exchange stays short (docs/process-protocol.md).
struct RequestLimits {
  size_t logits_bytes;  // of one SAMPLE (at least one row)
  uint64_t draws;       // of one COUNT
};
constexpr RequestLimits kProcessLimits{size_t{32} << 20, uint64_t{1} << 18};
// The plugin host gets the calls an in-process plugin gets from a campaign: the draws of a campaign's CountDraws
// call (2^22) and the batches of the default CountDraws (64 MiB) pass through whole, so that a plugin's calls, and
// the messages of its contract breaks, are the same isolated and in process (and its per-call setup, such as
// sorting the row, is paid as often).
constexpr RequestLimits kPluginHostLimits{size_t{256} << 20, uint64_t{1} << 22};

// SAMPLE_STEPS: the most calls and tokens one message asks for (a message's calls share its deadline).
constexpr uint64_t kStepsPerMessage = 256;
constexpr uint64_t kStepTokensPerMessage = uint64_t{1} << 18;

// The deadlines a user may set, in seconds: (0, kMaxTimeoutSeconds].
constexpr double kMaxTimeoutSeconds = 86400.0;

// `text` as it can be quoted in a message: printable ASCII as is, every other byte as \xNN.
std::string Printable(std::string_view text) {
  static const char kHex[] = "0123456789abcdef";
  std::string out;
  for (const char c : text) {
    const auto b = static_cast<unsigned char>(c);
    if (b >= 0x20 && b < 0x7f) {
      out.push_back(c);
    } else {
      out += "\\x";
      out.push_back(kHex[b >> 4]);
      out.push_back(kHex[b & 15]);
    }
  }
  return out;
}

// The most of a client's own text (an ERROR's message) a message quotes: a report holds each case's reason, and a
// client's 20 MB error copied into every case made a 240 MB report.
constexpr size_t kMaxQuotedBytes = 4096;

// `text` as a message quotes it: whole up to kMaxQuotedBytes, else its first kMaxQuotedBytes (cut before a UTF-8
// sequence, not inside one) and "... (N bytes more)".
std::string Bounded(std::string text) {
  if (text.size() <= kMaxQuotedBytes) return text;
  size_t cut = kMaxQuotedBytes;
  while (cut > 0 && (static_cast<unsigned char>(text[cut]) & 0xC0) == 0x80) --cut;
  const size_t more = text.size() - cut;
  text.resize(cut);
  return text + "... (" + std::to_string(more) + " bytes more)";
}

// How a ProcessSampler names itself and quotes its client.
struct Identity {
  std::string label;         // errors of the transport and the protocol start with it
  std::string fallback_name; // Name() when the client's HELLO names nothing
  bool plugin_host = false;  // the client is samplecheck's plugin host: its HELLO name is the whole Name(), and its
                             // ERROR messages already name the plugin (they are quoted as they are)
  std::string library;       // the plugin host's library: after the handshake the label is "<Name()> (<library>,
                             // isolated)"
};

class ProcessSampler final : public Sampler {
 public:
  ProcessSampler(std::unique_ptr<ChildProcess> child, Identity identity, ProcessSamplerOptions options)
      : child_(std::move(child)), identity_(std::move(identity)), options_(options) {}

  ~ProcessSampler() override {
    if (!broken_) child_->WriteBestEffort(Writer(kBye).Finish());
  }

  Status Handshake() {
    Writer hello(kHello);
    hello.PutU32(kMagic);
    hello.PutU32(kVersion);
    auto frame = Exchange(hello.Finish(), options_.handshake_timeout_s, "waiting for its HELLO");
    if (!frame.ok()) return frame.status();
    if (frame->type == kError) return Refused(*frame);
    if (frame->type != kHello) {
      return Broken("answered the HELLO with " + TypeName(frame->type) + ", not HELLO");
    }
    Reader in(frame->payload);
    const uint32_t magic = in.U32();
    if (in.ok() && magic != kMagic) {
      return Stop(identity_.label + " does not speak the samplecheck process protocol: the magic number of its " +
                  "HELLO is " + DescribeU32(magic) + ", expected " + DescribeU32(kMagic) +
                  " (docs/process-protocol.md)");
    }
    const uint32_t version = in.U32();
    capabilities_ = in.U32();
    name_ = in.Str();
    profile_ = in.Str();
    if (!in.ok()) {
      return Broken("sent a malformed HELLO of " + std::to_string(frame->payload.size()) +
                    " bytes, too short for magic, version, capabilities, name and profile");
    }
    if (version != kVersion) {
      return Broken("speaks protocol version " + std::to_string(version) + "; this samplecheck speaks " +
                    std::to_string(kVersion));
    }
    if (identity_.plugin_host) identity_.label = Name() + " (" + identity_.library + ", isolated)";
    return Status::Ok();
  }

  std::string Name() const override {
    if (identity_.plugin_host) return name_.empty() ? identity_.fallback_name : name_;
    return "process:" + (name_.empty() ? identity_.fallback_name : name_);
  }

  Capabilities GetCapabilities() const override {
    Capabilities caps;
    caps.processed_distribution = (capabilities_ & kCapProcessed) != 0;
    caps.count_draws = (capabilities_ & kCapCount) != 0;
    caps.deterministic = (capabilities_ & kCapNondeterministic) == 0;
    caps.count_distributional = caps.count_draws && (capabilities_ & kCapCountDistributional) != 0;
    caps.profile = profile_;
    return caps;
  }

  Status Sample(const RowBatch& batch, std::span<const SamplingParams> params, std::span<int32_t> tokens) override {
    if (Status st = CheckBatchShape(batch, params.size(), tokens.size(), /*min_vocab=*/1); !st.ok()) return st;
    return SendSample(batch, params, tokens, 0);
  }

  // A client that sets the SAMPLE_REPLICATED bit gets each distinct row once with its copy count; the others get
  // SAMPLE on the copies, made one message at a time.
  Status SampleReplicated(const RowBatch& rows, uint64_t replicas, std::span<const SamplingParams> params,
                          std::span<int32_t> tokens) override {
    if (Status st = CheckReplicatedArgs(rows, replicas, params.size(), tokens.size(), /*min_vocab=*/1); !st.ok()) {
      return st;
    }
    if (replicas == 0 || rows.rows == 0) return Status::Ok();
    if (!(capabilities_ & kCapSampleReplicated)) return SampleCopies(rows, params, tokens);
    // Messages of at most Limits().logits_bytes of params and logits: the whole call when it fits; else groups of
    // rows filling at most half of it (at least one row), each sent with as many replicas as fill the rest.
    const size_t total_rows = static_cast<size_t>(rows.rows);
    const size_t row_bytes = 4 * static_cast<size_t>(rows.vocab);
    const size_t limit = Limits().logits_bytes;
    const bool whole = total_rows * row_bytes <= limit && replicas <= (limit - total_rows * row_bytes) /
                                                                          (total_rows * kParamsBytes);
    const size_t group = whole ? total_rows : std::clamp<size_t>(limit / 2 / row_bytes, 1, total_rows);
    const uint64_t per_message =
        whole ? replicas
              : std::clamp<uint64_t>((limit - std::min(limit, group * row_bytes)) / (group * kParamsBytes), 1,
                                     replicas);
    std::vector<int32_t> answer;
    for (size_t first_row = 0; first_row < total_rows; first_row += group) {
      const size_t n_rows = std::min(group, total_rows - first_row);
      for (uint64_t first_copy = 0; first_copy < replicas; first_copy += per_message) {
        const uint64_t n_copies = std::min(per_message, replicas - first_copy);
        auto call_of = [&](size_t i) { return (first_copy + i / n_rows) * total_rows + first_row + i % n_rows; };
        Writer req(kSampleReplicated);
        req.PutU64(n_rows);
        req.PutU64(static_cast<uint64_t>(rows.vocab));
        req.PutU64(n_copies);
        answer.assign(n_copies * n_rows, kInvalidToken);
        for (size_t i = 0; i < answer.size(); ++i) req.PutParams(params[call_of(i)]);
        for (size_t r = first_row; r < first_row + n_rows; ++r) req.PutF32s(rows.Row(static_cast<int64_t>(r)));
        const std::string asked = "SAMPLE_REPLICATED of " + std::to_string(answer.size()) + " call rows (" +
                                  std::to_string(n_copies) + " copies of " + std::to_string(n_rows) + " rows)";
        auto frame = Exchange(req.Finish(), options_.request_timeout_s, "answering SAMPLE_REPLICATED");
        Status st = ReadTokens(std::move(frame), asked, rows.vocab, answer, [&](size_t i) {
          const size_t call = call_of(i);
          return "call row " + std::to_string(call) + " (copy " + std::to_string(call / total_rows) + " of row " +
                 std::to_string(call % total_rows) + ") of SAMPLE_REPLICATED";
        });
        if (!st.ok()) return st;
        for (size_t i = 0; i < answer.size(); ++i) tokens[call_of(i)] = answer[i];
      }
    }
    return Status::Ok();
  }

  // A client that sets the SAMPLE_STEPS bit gets the batch once for up to kStepsPerMessage calls (and at most
  // kStepTokensPerMessage tokens) a message; the others, and a batch too large for one message, get one SAMPLE per
  // step (Sampler::SampleSteps).
  Status SampleSteps(const RowBatch& batch, std::span<const SamplingParams> params, uint64_t steps,
                     std::span<int32_t> tokens) override {
    if (Status st = CheckStepsArgs(batch, params.size(), steps, tokens.size(), /*min_vocab=*/1); !st.ok()) return st;
    const size_t rows = params.size();
    if (steps == 0 || rows == 0) return Status::Ok();
    const size_t row_bytes = 4 * static_cast<size_t>(batch.vocab) + kParamsBytes;
    if (!(capabilities_ & kCapSampleSteps) || rows > Limits().logits_bytes / row_bytes) {
      return Sampler::SampleSteps(batch, params, steps, tokens);
    }
    const uint64_t per_message = std::clamp<uint64_t>(kStepTokensPerMessage / rows, 1, kStepsPerMessage);
    std::vector<SamplingParams> at(params.begin(), params.end());
    for (uint64_t first = 0; first < steps; first += per_message) {
      const uint64_t n = std::min(per_message, steps - first);
      Writer req(kSampleSteps);
      req.PutU64(rows);
      req.PutU64(static_cast<uint64_t>(batch.vocab));
      req.PutU64(n);
      for (size_t r = 0; r < rows; ++r) {
        at[r].offset = params[r].offset + first;
        req.PutParams(at[r]);
      }
      for (size_t r = 0; r < rows; ++r) req.PutF32s(batch.Row(static_cast<int64_t>(r)));
      const std::string asked = "SAMPLE_STEPS of " + std::to_string(n) + " steps of " + std::to_string(rows) + " rows";
      auto frame = Exchange(req.Finish(), options_.request_timeout_s, "answering SAMPLE_STEPS");
      Status st =
          ReadTokens(std::move(frame), asked, batch.vocab, tokens.subspan(first * rows, n * rows), [&](size_t i) {
            return "row " + std::to_string(i % rows) + " of step " + std::to_string(first + i / rows) +
                   " of SAMPLE_STEPS";
          });
      if (!st.ok()) return st;
    }
    return Status::Ok();
  }

  // Draw i at offset + i through SampleReplicated of the one row (the row sent once per message to a client that
  // answers SAMPLE_REPLICATED), in pieces of 16 default batches so the params stay small.
  Status SampleRepeated(std::span<const float> row, const SamplingParams& params, std::span<int32_t> tokens) override {
    const uint64_t piece = 16 * DefaultCountBatchRows(row.size());
    std::vector<SamplingParams> at(std::min<uint64_t>(piece, tokens.size()), params);
    const RowBatch one{row.data(), 1, static_cast<int64_t>(row.size()), static_cast<int64_t>(row.size())};
    for (uint64_t done = 0; done < tokens.size();) {
      const uint64_t n = std::min<uint64_t>(piece, tokens.size() - done);
      for (uint64_t i = 0; i < n; ++i) at[i].offset = params.offset + done + i;
      if (Status st = SampleReplicated(one, n, std::span(at).first(n), tokens.subspan(done, n)); !st.ok()) return st;
      done += n;
    }
    return Status::Ok();
  }

  Result<std::vector<double>> ProcessedDistribution(std::span<const float> row,
                                                    const SamplingParams& params) override {
    if (!(capabilities_ & kCapProcessed)) return Sampler::ProcessedDistribution(row, params);
    if (row.empty()) return Error{ErrorCode::kInvalidRow, "empty row"};
    Writer req(kProcessed);
    req.PutU64(row.size());
    req.PutParams(params);
    req.PutF32s(row);
    auto frame = Exchange(req.Finish(), options_.request_timeout_s, "answering PROCESSED");
    if (!frame.ok()) return frame.error();
    if (frame->type == kError) return AnswerError(*frame, "PROCESSED").error();
    if (frame->type != kDistribution) {
      return Broken("answered PROCESSED with " + TypeName(frame->type) + ", not DISTRIBUTION").error();
    }
    Reader in(frame->payload);
    const uint64_t vocab = in.U64();
    if (!in.ok() || vocab != row.size() || in.left() != 8 * row.size()) {
      return Broken("answered PROCESSED of a " + std::to_string(row.size()) + "-token row with a DISTRIBUTION of " +
                    std::to_string(frame->payload.size()) + " bytes").error();
    }
    std::vector<double> probs(row.size());
    double sum = 0.0;
    for (size_t t = 0; t < probs.size(); ++t) {
      probs[t] = in.F64();
      if (!std::isfinite(probs[t]) || probs[t] < 0.0) {
        return PluginError(Name() + " returned probability " + std::to_string(probs[t]) + " for token " +
                           std::to_string(t) + " (every entry must be finite and >= 0)");
      }
      sum += probs[t];
    }
    if (std::abs(sum - 1.0) > 1e-3) {
      return PluginError(Name() + " returned a distribution summing to " + std::to_string(sum) +
                         ", not 1 (tolerance 1e-3)");
    }
    return probs;
  }

  Status CountDraws(std::span<const float> row, const SamplingParams& params, uint64_t draws,
                    std::span<uint64_t> histogram, uint64_t* invalid_draws) override {
    const bool native = (capabilities_ & kCapCount) != 0;
    if (!native && !identity_.plugin_host) return Sampler::CountDraws(row, params, draws, histogram, invalid_draws);
    // The plugin host answers COUNT for every plugin: one without count_draws draws through sample there, in the
    // batches of the default CountDraws, so only the row and the histogram cross the pipe (not the row once per
    // draw), and the plugin gets the sample calls it gets in process. Requests of 16 such batches (or fewer).
    const uint64_t per_request =
        native ? Limits().draws : std::min(Limits().draws, 16 * DefaultCountBatchRows(row.size()));
    if (row.empty() || histogram.size() != row.size()) {
      return InvalidArgument("histogram has " + std::to_string(histogram.size()) + " cells, the row has " +
                             std::to_string(row.size()) + " tokens (at least 1)");
    }
    std::vector<uint64_t> counted(row.size(), 0);
    uint64_t invalid = 0;
    for (uint64_t done = 0; done < draws;) {
      const uint64_t n = std::min(per_request, draws - done);
      SamplingParams chunk = params;
      chunk.offset = params.offset + done;
      Writer req(kCount);
      req.PutU64(row.size());
      req.PutParams(chunk);
      req.PutU64(n);
      req.PutF32s(row);
      auto frame = Exchange(req.Finish(), options_.request_timeout_s, "answering COUNT");
      if (!frame.ok()) return frame.status();
      if (frame->type == kError) return AnswerError(*frame, "COUNT");
      if (frame->type != kHistogram) return Broken("answered COUNT with " + TypeName(frame->type) + ", not HISTOGRAM");
      Reader in(frame->payload);
      const uint64_t vocab = in.U64();
      const uint64_t chunk_invalid = in.U64();
      if (!in.ok() || vocab != row.size() || in.left() != 8 * row.size()) {
        return Broken("answered COUNT of a " + std::to_string(row.size()) + "-token row with a HISTOGRAM of " +
                      std::to_string(frame->payload.size()) + " bytes");
      }
      // Overflow-free: total never exceeds n, so counts that wrap 2^64 cannot add up to n.
      bool exceeded = chunk_invalid > n;
      uint64_t total = exceeded ? n : chunk_invalid;
      for (size_t t = 0; t < counted.size(); ++t) {
        const uint64_t c = in.U64();
        if (c > n - total) {
          exceeded = true;
        } else {
          total += c;
          counted[t] += c;
        }
      }
      if (exceeded || total != n) {
        return PluginError(Name() + " was asked for " + std::to_string(n) + " draws but counted " +
                           (exceeded ? "more" : std::to_string(total)) + " (" + std::to_string(chunk_invalid) +
                           " of them invalid)");
      }
      invalid += chunk_invalid;
      done += n;
    }
    for (size_t t = 0; t < counted.size(); ++t) histogram[t] += counted[t];
    if (invalid_draws) *invalid_draws += invalid;
    return Status::Ok();
  }

  // ---- VERIFY: the speculative-decoding verifier of the process (ProcessVerifier below) ----
  uint32_t RawCapabilities() const { return capabilities_; }
  const std::string& Profile() const { return profile_; }
  const Identity& Who() const { return identity_; }

  // The requests, each with its trials, in VERIFY messages of at most Limits().logits_bytes (at least one request,
  // the trials of one request cut so that their tokens stay below that size), answers checked.
  // LOGPROBS_BATCH of the rows [first, first + n) of `batch` (labels sent when `labels`) into `out`.
  Status LogprobsMessage(const ReplayBatch& batch, size_t first, size_t n, bool labels, ReplayRows& out) {
    const size_t vocab = static_cast<size_t>(batch.rows.vocab);
    Writer req(kLogprobsBatch);
    req.PutU64(n);
    req.PutU64(vocab);
    req.PutU32(batch.dtype == ReplayDType::kBFloat16 ? kDTypeBf16 : kDTypeFp32);
    req.PutU32(labels ? uint32_t{kFlagLabels} : 0u);
    for (size_t r = first; r < first + n; ++r) req.PutParams(batch.params[r]);
    if (labels) {
      for (size_t r = first; r < first + n; ++r) req.PutI32(batch.labels[r]);
    }
    for (size_t r = first; r < first + n; ++r) req.PutF32s(batch.rows.Row(static_cast<int64_t>(r)));
    auto frame = Exchange(req.Finish(), options_.request_timeout_s, "answering LOGPROBS_BATCH");
    if (!frame.ok()) return frame.status();
    if (frame->type == kError) return AnswerError(*frame, "LOGPROBS_BATCH");
    if (frame->type != kLogprobs) return Broken("answered LOGPROBS_BATCH with " + TypeName(frame->type) + ", not LOGPROBS");
    Reader in(frame->payload);
    const uint64_t rows = in.U64(), cols = in.U64();
    if (!in.ok() || rows != n || cols != vocab || in.left() != n + 4 * n * vocab) {
      return Broken("answered a LOGPROBS_BATCH of " + std::to_string(n) + " rows x " + std::to_string(vocab) +
                    " tokens with a LOGPROBS of " + std::to_string(frame->payload.size()) + " bytes");
    }
    for (size_t r = first; r < first + n; ++r) {
      const uint8_t guarded = in.U8();
      if (guarded > 1) {
        return PluginError(Name() + " returned guard flag " + std::to_string(guarded) + " for row " +
                           std::to_string(r) + " of LOGPROBS (allowed: 0, or 1 where the row's label was restored)");
      }
      out.guarded[r] = guarded;
    }
    in.F32s(std::span<float>(out.logprobs.data() + first * vocab, n * vocab));
    return Status::Ok();
  }

  // Every row of `batch` through LOGPROBS_BATCH messages of at most Limits().logits_bytes of logits (one row at
  // least); the labels go to a client that set the labels bit.
  Result<ReplayRows> LogprobsAll(const ReplayBatch& batch) {
    if (Status st = CheckBatchShape(batch.rows, batch.params.size(), batch.params.size(), 1); !st.ok()) return st.error();
    const bool labels = !batch.labels.empty() && (capabilities_ & kCapLogprobsLabels) != 0;
    if (labels && batch.labels.size() != batch.params.size()) {
      return InvalidArgument(std::to_string(batch.labels.size()) + " labels for " +
                             std::to_string(batch.params.size()) + " rows");
    }
    const size_t rows = static_cast<size_t>(batch.rows.rows), vocab = static_cast<size_t>(batch.rows.vocab);
    ReplayRows out;
    out.logprobs.resize(rows * vocab);
    out.guarded.assign(rows, 0);
    const size_t group = std::clamp<size_t>(Limits().logits_bytes / (4 * vocab), 1, std::max<size_t>(rows, 1));
    for (size_t first = 0; first < rows; first += group) {
      if (Status st = LogprobsMessage(batch, first, std::min(group, rows - first), labels, out); !st.ok()) {
        return st.error();
      }
    }
    return out;
  }

  Status VerifyAll(std::span<const VerifyTrials> all) {
    const size_t limit = Limits().logits_bytes;
    std::vector<VerifyTrials> message;
    size_t bytes = 8;
    auto flush = [&]() -> Status {
      if (message.empty()) return Status::Ok();
      Status st = VerifyMessage(message);
      message.clear();
      bytes = 8;
      return st;
    };
    for (const VerifyTrials& t : all) {
      const size_t g = static_cast<size_t>(t.request.g);
      const size_t per_message =
          g == 0 ? t.results.size() : std::max<size_t>(1, limit / 2 / (4 * g + 4 * (g + 2)));
      for (size_t begin = 0; begin < t.results.size(); begin += per_message) {
        const size_t n = std::min(per_message, t.results.size() - begin);
        VerifyTrials part = t;
        part.request.params.offset = t.request.params.offset + begin * (g + 1);
        part.draft_tokens = t.draft_tokens.subspan(begin * g, n * g);
        part.results = t.results.subspan(begin, n);
        const size_t add = VerifyRequestBytes(part.request, n);
        if (!message.empty() && bytes + add > limit) {
          if (Status st = flush(); !st.ok()) return st;
        }
        message.push_back(part);
        bytes += add;
      }
    }
    return flush();
  }

 private:
  const RequestLimits& Limits() const { return identity_.plugin_host ? kPluginHostLimits : kProcessLimits; }

  // The call rows of one SAMPLE (at least one).
  int64_t RowsPerSample(int64_t vocab) const {
    return std::max<int64_t>(1, static_cast<int64_t>(Limits().logits_bytes / (4 * static_cast<size_t>(vocab))));
  }

  // SAMPLE messages of RowsPerSample rows; errors name row first_call + r.
  Status SendSample(const RowBatch& batch, std::span<const SamplingParams> params, std::span<int32_t> tokens,
                    size_t first_call) {
    const int64_t rows_per_request = RowsPerSample(batch.vocab);
    for (int64_t first = 0; first < batch.rows; first += rows_per_request) {
      const int64_t n = std::min(rows_per_request, batch.rows - first);
      Writer req(kSample);
      req.PutU64(static_cast<uint64_t>(n));
      req.PutU64(static_cast<uint64_t>(batch.vocab));
      for (int64_t r = first; r < first + n; ++r) req.PutParams(params[static_cast<size_t>(r)]);
      for (int64_t r = first; r < first + n; ++r) req.PutF32s(batch.Row(r));
      auto frame = Exchange(req.Finish(), options_.request_timeout_s, "answering SAMPLE");
      const size_t base = first_call + static_cast<size_t>(first);
      Status st = ReadTokens(std::move(frame), "SAMPLE of " + std::to_string(n) + " rows", batch.vocab,
                             tokens.subspan(static_cast<size_t>(first), static_cast<size_t>(n)),
                             [&](size_t i) { return "row " + std::to_string(base + i); });
      if (!st.ok()) return st;
    }
    return Status::Ok();
  }

  // SAMPLE on the copies of a replicated batch for a client without SAMPLE_REPLICATED: the copies of one message
  // at a time (RowsPerSample call rows), so the copies in memory stay within one message's cap.
  Status SampleCopies(const RowBatch& rows, std::span<const SamplingParams> params, std::span<int32_t> tokens) {
    const size_t vocab = static_cast<size_t>(rows.vocab), calls = params.size();
    const size_t per_message = static_cast<size_t>(RowsPerSample(rows.vocab));
    std::vector<float> copies(std::min(per_message, calls) * vocab);
    for (size_t first = 0; first < calls; first += per_message) {
      const size_t n = std::min(per_message, calls - first);
      for (size_t i = 0; i < n; ++i) {
        const auto row = rows.Row(static_cast<int64_t>((first + i) % static_cast<size_t>(rows.rows)));
        std::copy(row.begin(), row.end(), copies.begin() + i * vocab);
      }
      const RowBatch batch{copies.data(), static_cast<int64_t>(n), rows.vocab, rows.vocab};
      if (Status st = SendSample(batch, params.subspan(first, n), tokens.subspan(first, n), first); !st.ok()) {
        return st;
      }
    }
    return Status::Ok();
  }

  // The TOKENS answer to `asked` (a SAMPLE or SAMPLE_REPLICATED of out.size() call rows): every token in
  // [-1, vocab), where(i) naming call row i in the error of one that is not.
  template <typename Where>
  Status ReadTokens(Result<Frame> frame, const std::string& asked, int64_t vocab, std::span<int32_t> out,
                    Where where) {
    if (!frame.ok()) return frame.status();
    const std::string request = asked.substr(0, asked.find(' '));
    if (frame->type == kError) return AnswerError(*frame, request.c_str());
    if (frame->type != kTokens) return Broken("answered " + request + " with " + TypeName(frame->type) + ", not TOKENS");
    Reader in(frame->payload);
    const uint64_t count = in.U64();
    if (!in.ok() || count != out.size() || in.left() != 4 * out.size()) {
      return Broken("answered " + asked + " with a TOKENS of " + std::to_string(frame->payload.size()) +
                    " bytes for " + std::to_string(count) + " rows");
    }
    for (size_t i = 0; i < out.size(); ++i) {
      const int32_t t = in.I32();
      if (t != kInvalidToken && (t < 0 || t >= vocab)) {
        return PluginError(Name() + " returned token " + std::to_string(t) + " for " + where(i) +
                           "; a token must be in [-1, " + std::to_string(vocab) + ") (vocab " +
                           std::to_string(vocab) + "; -1 marks a row that cannot be sampled)");
      }
      out[i] = t;
    }
    return Status::Ok();
  }

  Status VerifyMessage(std::span<const VerifyTrials> message) {
    Writer req(kVerify);
    req.PutU64(message.size());
    for (const VerifyTrials& t : message) PutVerifyRequest(req, t);
    auto frame = Exchange(req.Finish(), options_.request_timeout_s, "answering VERIFY");
    if (!frame.ok()) return frame.status();
    if (frame->type == kError) return AnswerError(*frame, "VERIFY");
    if (frame->type != kVerified) return Broken("answered VERIFY with " + TypeName(frame->type) + ", not VERIFIED");
    // The size first: u64 requests, then per request u64 trials and trials × (1 + g + 1) i32.
    size_t expected = 8;
    for (const VerifyTrials& t : message) expected += 8 + 4 * t.results.size() * static_cast<size_t>(t.request.g + 2);
    if (frame->payload.size() != expected) {
      return Broken("answered a VERIFY of " + std::to_string(message.size()) + " requests (" +
                    std::to_string(expected) + " bytes expected) with a VERIFIED of " +
                    std::to_string(frame->payload.size()) + " bytes");
    }
    Reader in(frame->payload);
    const uint64_t count = in.U64();
    if (count != message.size()) {
      return Broken("answered a VERIFY of " + std::to_string(message.size()) + " requests with a VERIFIED of " +
                    std::to_string(count));
    }
    for (size_t r = 0; r < message.size(); ++r) {
      const VerifyTrials& t = message[r];
      const uint64_t trials = in.U64();
      if (trials != t.results.size()) {
        return Broken("answered request " + std::to_string(r) + " of " + std::to_string(t.results.size()) +
                      " trials with " + std::to_string(trials) + " trials");
      }
      const int32_t g = t.request.g;
      for (size_t i = 0; i < t.results.size(); ++i) {
        const std::string where = "request " + std::to_string(r) + ", trial " + std::to_string(i);
        const int32_t a = in.I32();
        if (a < 0 || a > g) {
          return PluginError(Name() + " returned accepted length " + std::to_string(a) + " for " + where +
                             " of VERIFY; allowed: 0..g = 0.." + std::to_string(g));
        }
        VerifyResult& out = t.results[i];
        out.emitted.fill(kInvalidToken);
        for (int32_t j = 0; j <= g; ++j) {
          const int32_t tok = in.I32();
          if (j > a) continue;  // slots past the accepted length are not read
          if (tok != kInvalidToken && (tok < 0 || tok >= t.request.vocab)) {
            return PluginError(Name() + " returned token " + std::to_string(tok) + " at emitted slot " +
                               std::to_string(j) + " of " + where + " of VERIFY (accepted length " +
                               std::to_string(a) + "); a token must be in [-1, " + std::to_string(t.request.vocab) +
                               ")");
          }
          out.emitted[static_cast<size_t>(j)] = tok;
        }
        out.accepted = a;
      }
    }
    return Status::Ok();
  }

  Result<Frame> Exchange(const std::vector<uint8_t>& request, double timeout_s, const char* what) {
    if (broken_) return *broken_;
    const auto deadline = Clock::now() + std::chrono::duration_cast<Clock::duration>(
                                             std::chrono::duration<double>(timeout_s));
    auto frame = child_->Exchange(request, deadline, timeout_s, what);
    if (!frame.ok()) {
      broken_ = Error{ErrorCode::kPlugin, identity_.label + ": " + frame.error().message};
      return *broken_;
    }
    return frame;
  }

  // The client can no longer be trusted: the process is stopped for good, and this error is every later call's.
  Status Stop(std::string message) {
    child_->Kill();
    broken_ = PluginError(std::move(message));
    const std::string tail = child_->StderrTail();
    if (!tail.empty()) broken_->message += "; its stderr ends with:\n" + tail;
    return *broken_;
  }

  // A protocol violation.
  Status Broken(const std::string& reason) {
    return Stop(identity_.label + " broke the protocol: it " + reason + " (docs/process-protocol.md)");
  }

  // A well-formed ERROR answer: this call fails, the process stays usable.
  Status AnswerError(const Frame& frame, const char* request) {
    Reader in(frame.payload);
    const uint32_t code = in.U32();
    const std::string message = Bounded(in.Str());
    if (!in.ok()) return Broken(std::string("sent a malformed ERROR for ") + request);
    return ErrorOfCode(code, identity_.plugin_host ? message : Name() + ": " + request + " failed: " + message);
  }

  // ERROR in answer to HELLO: the client cannot serve (a plugin that does not load, a missing dependency). The
  // sampler is not made; the process is stopped.
  Status Refused(const Frame& frame) {
    Reader in(frame.payload);
    const uint32_t code = in.U32();
    const std::string message = Bounded(in.Str());
    if (!in.ok()) return Broken("sent a malformed ERROR in answer to HELLO");
    child_->Kill();
    return ErrorOfCode(code, identity_.plugin_host ? message : identity_.label + " cannot serve: " + message);
  }

  static Error ErrorOfCode(uint32_t code, std::string text) {
    switch (code) {
      case kErrInvalidArgument: return InvalidArgument(std::move(text));
      case kErrUnsupported: return Unsupported(std::move(text));
      case kErrInvalidRow: return Error{ErrorCode::kInvalidRow, std::move(text)};
      default: return PluginError(std::move(text));
    }
  }

  std::unique_ptr<ChildProcess> child_;
  Identity identity_;
  ProcessSamplerOptions options_;
  uint32_t capabilities_ = 0;
  std::string name_;
  std::string profile_;
  std::optional<Error> broken_;
};

// A process (or the plugin host) as a chain verifier: VERIFY messages over the ProcessSampler's transport, with
// its deadlines and its rules (a protocol violation stops the process for good, an ERROR fails one call).
class ProcessVerifier final : public Verifier {
 public:
  explicit ProcessVerifier(std::unique_ptr<ProcessSampler> process) : process_(std::move(process)) {}

  std::string Name() const override { return process_->Name(); }

  VerifierCapabilities GetCapabilities() const override {
    VerifierCapabilities caps;
    const uint32_t bits = process_->RawCapabilities();
    caps.deterministic = (bits & kCapNondeterministic) == 0;
    caps.scripted_uniforms = (bits & kCapVerifyScripted) != 0;
    caps.draft_logits = true;
    // The plugin host: one process per instance, and the ABI lets handles work concurrently. A user's process
    // may be a GPU worker: one at a time unless --jobs says otherwise.
    caps.parallel_instances = process_->Who().plugin_host;
    caps.profile = process_->Profile();
    return caps;
  }

  Status Verify(std::span<const VerifyRequest> requests, std::span<VerifyResult> results) override {
    if (Status st = CheckVerifyRequests(requests, results.size()); !st.ok()) return st;
    if (Status st = CheckScripted(requests); !st.ok()) return st;
    std::vector<VerifyTrials> all(requests.size());
    for (size_t r = 0; r < requests.size(); ++r) {
      all[r] = {requests[r], std::span<const int32_t>(requests[r].draft_tokens, static_cast<size_t>(requests[r].g)),
                results.subspan(r, 1)};
    }
    return process_->VerifyAll(all);
  }

  Status VerifyRepeated(const VerifyRequest& request, std::span<const int32_t> draft_tokens,
                        std::span<VerifyResult> results) override {
    VerifyRequest first;
    if (Status st = CheckVerifyRepeated(request, draft_tokens, results.size(), &first); !st.ok()) return st;
    if (results.empty()) return Status::Ok();
    if (Status st = CheckScripted({&first, 1}); !st.ok()) return st;
    const VerifyTrials one{first, draft_tokens, results};
    return process_->VerifyAll({&one, 1});
  }

 private:
  Status CheckScripted(std::span<const VerifyRequest> requests) const {
    if (process_->RawCapabilities() & kCapVerifyScripted) return Status::Ok();
    for (const VerifyRequest& q : requests) {
      if (!q.uniforms.empty()) {
        return Unsupported(Name() + ": a scripted uniform stream was given, but its HELLO does not set the "
                                    "scripted-VERIFY capability bit (16)");
      }
    }
    return Status::Ok();
  }

  std::unique_ptr<ProcessSampler> process_;
};

// A process as a replay source (replay_source.h): LOGPROBS_BATCH over the ProcessSampler's transport.
class ProcessReplaySource final : public ReplaySource {
 public:
  explicit ProcessReplaySource(std::unique_ptr<ProcessSampler> process) : process_(std::move(process)) {}
  std::string Name() const override { return process_->Name(); }
  ReplayCapabilities GetCapabilities() const override {
    return {.labels = (process_->RawCapabilities() & kCapLogprobsLabels) != 0,
            .parallel_instances = process_->Who().plugin_host,
            .profile = process_->Profile()};
  }
  Result<ReplayRows> Logprobs(const ReplayBatch& batch) override { return process_->LogprobsAll(batch); }

 private:
  std::unique_ptr<ProcessSampler> process_;
};

// A deadline of the options: in (0, 86400] seconds.
Status CheckTimeout(const char* field, double seconds) {
  if (seconds > 0 && seconds <= kMaxTimeoutSeconds) return Status::Ok();
  return InvalidArgument(std::string("process sampler option ") + field + " = " + FormatSignificant(seconds) +
                         " is outside (0, 86400] seconds");
}

// Checks the deadlines, then spawns the child (spawn() gives a Result<std::unique_ptr<ChildProcess>>) and shakes hands.
template <typename Spawn>
Result<std::unique_ptr<ProcessSampler>> StartProcess(Spawn spawn, Identity identity,
                                                     const ProcessSamplerOptions& options) {
  if (Status st = CheckTimeout("handshake_timeout_s", options.handshake_timeout_s); !st.ok()) return st.error();
  if (Status st = CheckTimeout("request_timeout_s", options.request_timeout_s); !st.ok()) return st.error();
  Result<std::unique_ptr<ChildProcess>> child = spawn();
  if (!child.ok()) return Error{child.error().code, identity.label + ": " + child.error().message};
  auto sampler = std::make_unique<ProcessSampler>(std::move(child).value(), std::move(identity), options);
  if (Status st = sampler->Handshake(); !st.ok()) return st.error();
  return sampler;
}

Result<std::unique_ptr<Sampler>> AsSampler(Result<std::unique_ptr<ProcessSampler>> started) {
  if (!started.ok()) return started.error();
  return std::unique_ptr<Sampler>(std::move(started).value());
}

Identity CommandIdentity(std::string_view role, std::string_view command) {
  Identity identity;
  identity.label = std::string(role) + " '" + std::string(command) + "'";
  identity.fallback_name = std::string(command);
  return identity;
}

Identity PluginHostIdentity(const std::string& library, std::string fallback_name) {
  Identity identity;
  identity.label = "plugin " + library + " (isolated)";
  identity.library = library;
  identity.fallback_name = std::move(fallback_name);
  identity.plugin_host = true;
  return identity;
}

// The handshake done, the process must have set the VERIFY bit.
Result<std::unique_ptr<Verifier>> AsVerifier(Result<std::unique_ptr<ProcessSampler>> started) {
  if (!started.ok()) return started.error();
  std::unique_ptr<ProcessSampler> process = std::move(started).value();
  if (!(process->RawCapabilities() & kCapVerify)) {
    const Identity& who = process->Who();
    const std::string why =
        who.plugin_host
            ? process->Name() + " (" + who.library + ") cannot be used as --verifier: it does not export "
                  "samplecheck_plugin_verify_chain (an optional export of plugin ABI version 2, "
                  "docs/plugin-abi.md); it can still be checked as a sampler (--sampler plugin:...)"
            : who.label + " (" + process->Name() + ") cannot be used as --verifier: its HELLO does not set the " +
                  "VERIFY capability bit (8) (capabilities " + std::to_string(process->RawCapabilities()) +
                  "; docs/process-protocol.md); it can still be checked as a sampler (--sampler process:...)";
    return InvalidArgument(why);
  }
  return std::unique_ptr<Verifier>(std::make_unique<ProcessVerifier>(std::move(process)));
}

}  // namespace

Result<std::unique_ptr<ReplaySource>> MakeProcessReplaySource(std::string_view command) {
  auto options = ProcessSamplerOptions::FromEnvironment();
  if (!options.ok()) return options.error();
  auto started = StartProcess([&] { return ChildProcess::Spawn(std::string(command)); },
                              CommandIdentity("process replay source", command), *options);
  if (!started.ok()) return started.error();
  std::unique_ptr<ProcessSampler> process = std::move(started).value();
  if (!(process->RawCapabilities() & kCapLogprobsBatch)) {
    return InvalidArgument(process->Who().label + " (" + process->Name() + ") cannot be a replay source: its HELLO "
                           "does not set the LOGPROBS_BATCH capability bit (64) (capabilities " +
                           std::to_string(process->RawCapabilities()) + "; docs/process-protocol.md); a client "
                           "answering PROCESSED replays row by row as sampler:process:<command>");
  }
  return std::unique_ptr<ReplaySource>(std::make_unique<ProcessReplaySource>(std::move(process)));
}

Result<double> process_internal::ParseTimeoutSeconds(std::string_view variable, std::string_view text) {
  const std::string value(text);
  const std::string quoted = std::string(variable) + " = '" + Printable(text) + "'";
  const bool decimal = !value.empty() && value.find_first_not_of("0123456789.eE+-") == std::string::npos;
  char* end = nullptr;
  const double seconds = decimal ? std::strtod(value.c_str(), &end) : 0.0;
  if (!decimal || end != value.c_str() + value.size()) {
    return InvalidArgument(quoted + " is not a number of seconds; allowed: a decimal number in (0, 86400]");
  }
  if (!(seconds > 0 && seconds <= kMaxTimeoutSeconds)) {
    return InvalidArgument(quoted + " is outside the allowed (0, 86400] seconds");
  }
  return seconds;
}

Result<ProcessSamplerOptions> ProcessSamplerOptions::FromEnvironment() {
  ProcessSamplerOptions options;
  if (const char* env = std::getenv(kProcessTimeoutEnv)) {
    auto seconds = process_internal::ParseTimeoutSeconds(kProcessTimeoutEnv, env);
    if (!seconds.ok()) return seconds.error();
    options.handshake_timeout_s = *seconds;
    options.request_timeout_s = *seconds;
  }
  return options;
}

Result<std::unique_ptr<Sampler>> MakeProcessSampler(std::string_view command, const ProcessSamplerOptions& options) {
  if (command.find_first_not_of(" \t") == std::string_view::npos) {
    return InvalidArgument("process spec has an empty command (process:<command>)");
  }
  return AsSampler(StartProcess([&] { return ChildProcess::Spawn(std::string(command)); },
                                CommandIdentity("process sampler", command), options));
}

Result<std::unique_ptr<Verifier>> MakeProcessVerifier(std::string_view command,
                                                      const ProcessSamplerOptions& options) {
  if (command.find_first_not_of(" \t") == std::string_view::npos) {
    return InvalidArgument("verifier spec process:<command> has an empty command");
  }
  return AsVerifier(StartProcess([&] { return ChildProcess::Spawn(std::string(command)); },
                                 CommandIdentity("process verifier", command), options));
}

namespace process_internal {

Result<std::unique_ptr<Verifier>> MakePluginHostVerifier(const std::vector<std::string>& argv,
                                                         const std::string& library, std::string fallback_name,
                                                         const ProcessSamplerOptions& options) {
  return AsVerifier(StartProcess([&] { return ChildProcess::SpawnProgram(argv, "plugin host process"); },
                                 PluginHostIdentity(library, std::move(fallback_name)), options));
}

Result<std::unique_ptr<Sampler>> MakePluginHostSampler(const std::vector<std::string>& argv,
                                                       const std::string& library, std::string fallback_name,
                                                       const ProcessSamplerOptions& options) {
  return AsSampler(StartProcess([&] { return ChildProcess::SpawnProgram(argv, "plugin host process"); },
                                PluginHostIdentity(library, std::move(fallback_name)), options));
}

}  // namespace process_internal
}  // namespace samplecheck::harness
