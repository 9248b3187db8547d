// The process sampler: the protocol of docs/process-protocol.md over the transport of process_sampler_child.h.
// Byte layouts are little-endian and written field by field (no struct dumps), so the harness and a client on
// any host agree.
#include "samplecheck/samplers/process_sampler.h"

#include <bit>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <string>
#include <vector>

#include "process_sampler_child.h"

namespace samplecheck::harness {
namespace {

using process_internal::ChildProcess;
using process_internal::Clock;
using process_internal::Frame;

// Protocol constants (docs/process-protocol.md).
constexpr uint32_t kMagic = 0x4B484353;  // the bytes "SCHK"
constexpr uint32_t kProtocolVersion = 1;
enum MessageType : uint32_t {
  kHello = 1,
  kSample = 2,
  kTokens = 3,
  kProcessed = 4,
  kDistribution = 5,
  kCount = 6,
  kHistogram = 7,
  kError = 8,
  kBye = 9,
};
enum CapabilityBits : uint32_t { kCapProcessed = 1, kCapCount = 2, kCapNondeterministic = 4 };
enum ErrorCodes : uint32_t { kErrInvalidArgument = 1, kErrUnsupported = 2, kErrFailed = 3, kErrInvalidRow = 4 };

// Requests are chunked so one message stays small and one exchange stays short.
constexpr size_t kMaxLogitsBytesPerRequest = size_t{32} << 20;
constexpr uint64_t kDrawsPerCountRequest = uint64_t{1} << 18;

Error PluginError(std::string message) { return {ErrorCode::kPlugin, std::move(message)}; }

class Writer {
 public:
  explicit Writer(uint32_t type) {
    PutU32(0);  // length, patched by Finish
    PutU32(type);
  }
  void PutU32(uint32_t v) {
    for (int i = 0; i < 4; ++i) bytes_.push_back(static_cast<uint8_t>(v >> (8 * i)));
  }
  void PutU64(uint64_t v) {
    for (int i = 0; i < 8; ++i) bytes_.push_back(static_cast<uint8_t>(v >> (8 * i)));
  }
  void PutF64(double v) { PutU64(std::bit_cast<uint64_t>(v)); }
  void PutParams(const SamplingParams& p) {
    PutF64(p.temperature);
    PutU64(static_cast<uint64_t>(p.top_k));
    PutF64(p.top_p);
    PutF64(p.min_p);
    PutU64(p.seed);
    PutU64(p.offset);
  }
  void PutF32s(std::span<const float> values) {
    const size_t at = bytes_.size();
    bytes_.resize(at + 4 * values.size());
    if constexpr (std::endian::native == std::endian::little) {
      std::memcpy(bytes_.data() + at, values.data(), 4 * values.size());
    } else {
      for (size_t i = 0; i < values.size(); ++i) {
        const uint32_t v = std::bit_cast<uint32_t>(values[i]);
        for (int b = 0; b < 4; ++b) bytes_[at + 4 * i + b] = static_cast<uint8_t>(v >> (8 * b));
      }
    }
  }
  std::vector<uint8_t> Finish() {
    const uint32_t length = static_cast<uint32_t>(bytes_.size() - 4);
    for (int i = 0; i < 4; ++i) bytes_[i] = static_cast<uint8_t>(length >> (8 * i));
    return std::move(bytes_);
  }

 private:
  std::vector<uint8_t> bytes_;
};

// Bounds-checked reads of a payload; a short payload sets ok() false instead of reading past the end.
class Reader {
 public:
  explicit Reader(const std::vector<uint8_t>& bytes) : bytes_(bytes) {}
  bool ok() const { return ok_; }
  size_t left() const { return bytes_.size() - at_; }
  uint32_t U32() { return static_cast<uint32_t>(Little(4)); }
  uint64_t U64() { return Little(8); }
  double F64() { return std::bit_cast<double>(Little(8)); }
  int32_t I32() { return static_cast<int32_t>(static_cast<uint32_t>(Little(4))); }
  std::string Str() {
    const uint32_t n = U32();
    if (!ok_ || n > left()) {
      ok_ = false;
      return {};
    }
    std::string s(reinterpret_cast<const char*>(bytes_.data() + at_), n);
    at_ += n;
    return s;
  }

 private:
  uint64_t Little(int n) {
    if (left() < static_cast<size_t>(n)) {
      ok_ = false;
      at_ = bytes_.size();
      return 0;
    }
    uint64_t v = 0;
    for (int i = 0; i < n; ++i) v |= uint64_t(bytes_[at_ + i]) << (8 * i);
    at_ += static_cast<size_t>(n);
    return v;
  }
  const std::vector<uint8_t>& bytes_;
  size_t at_ = 0;
  bool ok_ = true;
};

std::string TypeName(uint32_t type) {
  static const char* const kNames[] = {"?",         "HELLO",     "SAMPLE", "TOKENS", "PROCESSED",
                                       "DISTRIBUTION", "COUNT", "HISTOGRAM", "ERROR", "BYE"};
  return type < std::size(kNames) ? kNames[type] : "type " + std::to_string(type);
}

class ProcessSampler final : public Sampler {
 public:
  ProcessSampler(std::unique_ptr<ChildProcess> child, std::string command, ProcessSamplerOptions options)
      : child_(std::move(child)), command_(std::move(command)), options_(options) {}

  ~ProcessSampler() override {
    if (!broken_) child_->WriteBestEffort(Writer(kBye).Finish());
  }

  Status Handshake() {
    Writer hello(kHello);
    hello.PutU32(kMagic);
    hello.PutU32(kProtocolVersion);
    auto frame = Exchange(hello.Finish(), options_.handshake_timeout_s, "waiting for its HELLO");
    if (!frame.ok()) return frame.status();
    if (frame->type != kHello) return Broken("answered the HELLO with " + TypeName(frame->type) + ", not HELLO");
    Reader in(frame->payload);
    const uint32_t magic = in.U32();
    const uint32_t version = in.U32();
    capabilities_ = in.U32();
    name_ = in.Str();
    profile_ = in.Str();
    if (!in.ok() || magic != kMagic) {
      return Broken("sent a malformed HELLO (magic " + std::to_string(magic) + ", expected 0x4B484353 'SCHK')");
    }
    if (version != kProtocolVersion) {
      return Broken("speaks protocol version " + std::to_string(version) + "; this samplecheck speaks " +
                    std::to_string(kProtocolVersion));
    }
    return Status::Ok();
  }

  std::string Name() const override { return "process:" + (name_.empty() ? command_ : name_); }

  Capabilities GetCapabilities() const override {
    Capabilities caps;
    caps.processed_distribution = (capabilities_ & kCapProcessed) != 0;
    caps.count_draws = (capabilities_ & kCapCount) != 0;
    caps.deterministic = (capabilities_ & kCapNondeterministic) == 0;
    caps.profile = profile_;
    return caps;
  }

  Status Sample(const RowBatch& batch, std::span<const SamplingParams> params, std::span<int32_t> tokens) override {
    if (Status st = CheckBatchShape(batch, params.size(), tokens.size(), /*min_vocab=*/1); !st.ok()) return st;
    const int64_t rows_per_request = std::max<int64_t>(
        1, static_cast<int64_t>(kMaxLogitsBytesPerRequest / (4 * static_cast<size_t>(batch.vocab))));
    for (int64_t first = 0; first < batch.rows; first += rows_per_request) {
      const int64_t n = std::min(rows_per_request, batch.rows - first);
      Writer req(kSample);
      req.PutU64(static_cast<uint64_t>(n));
      req.PutU64(static_cast<uint64_t>(batch.vocab));
      for (int64_t r = first; r < first + n; ++r) req.PutParams(params[static_cast<size_t>(r)]);
      for (int64_t r = first; r < first + n; ++r) req.PutF32s(batch.Row(r));
      auto frame = Exchange(req.Finish(), options_.request_timeout_s, "answering SAMPLE");
      if (!frame.ok()) return frame.status();
      if (frame->type == kError) return AnswerError(*frame, "SAMPLE");
      if (frame->type != kTokens) return Broken("answered SAMPLE with " + TypeName(frame->type) + ", not TOKENS");
      Reader in(frame->payload);
      const uint64_t rows = in.U64();
      if (!in.ok() || rows != static_cast<uint64_t>(n) || in.left() != 4 * static_cast<size_t>(n)) {
        return Broken("answered SAMPLE of " + std::to_string(n) + " rows with a TOKENS of " +
                      std::to_string(frame->payload.size()) + " bytes for " + std::to_string(rows) + " rows");
      }
      for (int64_t r = first; r < first + n; ++r) {
        const int32_t t = in.I32();
        if (t != kInvalidToken && (t < 0 || t >= batch.vocab)) {
          return PluginError(Name() + " returned token " + std::to_string(t) + " for row " + std::to_string(r) +
                             ", outside [0, " + std::to_string(batch.vocab) + ") (-1 marks a row that cannot be " +
                             "sampled)");
        }
        tokens[static_cast<size_t>(r)] = t;
      }
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
    if (!(capabilities_ & kCapCount)) return Sampler::CountDraws(row, params, draws, histogram, invalid_draws);
    if (row.empty() || histogram.size() != row.size()) {
      return InvalidArgument("histogram has " + std::to_string(histogram.size()) + " cells, the row has " +
                             std::to_string(row.size()) + " tokens (at least 1)");
    }
    std::vector<uint64_t> counted(row.size(), 0);
    uint64_t invalid = 0;
    for (uint64_t done = 0; done < draws;) {
      const uint64_t n = std::min(kDrawsPerCountRequest, draws - done);
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

 private:
  Result<Frame> Exchange(const std::vector<uint8_t>& request, double timeout_s, const char* what) {
    if (broken_) return *broken_;
    const auto deadline = Clock::now() + std::chrono::duration_cast<Clock::duration>(
                                             std::chrono::duration<double>(timeout_s));
    auto frame = child_->Exchange(request, deadline, what);
    if (!frame.ok()) {
      broken_ = Error{ErrorCode::kPlugin, Label() + ": " + frame.error().message};
      return *broken_;
    }
    return frame;
  }

  // A protocol violation: the stream can no longer be trusted, so the process is stopped for good.
  Status Broken(const std::string& reason) {
    child_->Kill();
    broken_ = PluginError(Label() + " broke the protocol: it " + reason + " (docs/process-protocol.md)");
    const std::string tail = child_->StderrTail();
    if (!tail.empty()) broken_->message += "; its stderr ends with:\n" + tail;
    return *broken_;
  }

  // A well-formed ERROR answer: this call fails, the process stays usable.
  Status AnswerError(const Frame& frame, const char* request) {
    Reader in(frame.payload);
    const uint32_t code = in.U32();
    const std::string message = in.Str();
    if (!in.ok()) return Broken(std::string("sent a malformed ERROR for ") + request);
    const std::string text = Name() + ": " + request + " failed: " + message;
    switch (code) {
      case kErrInvalidArgument: return InvalidArgument(text);
      case kErrUnsupported: return Unsupported(text);
      case kErrInvalidRow: return Error{ErrorCode::kInvalidRow, text};
      default: return PluginError(text);
    }
  }

  std::string Label() const { return "process sampler '" + command_ + "'"; }

  std::unique_ptr<ChildProcess> child_;
  std::string command_;
  ProcessSamplerOptions options_;
  uint32_t capabilities_ = 0;
  std::string name_;
  std::string profile_;
  std::optional<Error> broken_;
};

}  // namespace

ProcessSamplerOptions ProcessSamplerOptions::FromEnvironment() {
  ProcessSamplerOptions options;
  if (const char* env = std::getenv("SAMPLECHECK_PROCESS_TIMEOUT_S")) {
    char* end = nullptr;
    const double seconds = std::strtod(env, &end);
    if (end != env && *end == '\0' && seconds > 0 && std::isfinite(seconds)) {
      options.handshake_timeout_s = seconds;
      options.request_timeout_s = seconds;
    }
  }
  return options;
}

Result<std::unique_ptr<Sampler>> MakeProcessSampler(std::string_view command, const ProcessSamplerOptions& options) {
  if (command.find_first_not_of(" \t") == std::string_view::npos) {
    return InvalidArgument("process spec has an empty command (process:<command>)");
  }
  auto child = ChildProcess::Spawn(std::string(command));
  if (!child.ok()) return child.error();
  auto sampler = std::make_unique<ProcessSampler>(std::move(child).value(), std::string(command), options);
  if (Status st = sampler->Handshake(); !st.ok()) return st.error();
  return std::unique_ptr<Sampler>(std::move(sampler));
}

}  // namespace samplecheck::harness
