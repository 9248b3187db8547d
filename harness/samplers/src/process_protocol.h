// The process protocol of docs/process-protocol.md, both ends: its constants and the little-endian field writer
// and bounds-checked reader of its frames. The harness end is process_sampler.cpp; the client end in samplecheck
// is the plugin host (host/plugin_host.cpp, the program that runs `plugin:` libraries isolated). Internal.
#pragma once

#include <bit>
#include <cstdint>
#include <cstring>
#include <span>
#include <string>
#include <vector>

#include "samplecheck/reference/params.h"
#include "samplecheck/samplers/verifier.h"

namespace samplecheck::harness::protocol {

inline constexpr uint32_t kMagic = 0x4B484353;  // the bytes "SCHK" in wire order
inline constexpr uint32_t kVersion = 1;
inline constexpr uint32_t kMaxFrameBytes = 1u << 30;  // the length field: 4 <= length <= 2^30
inline constexpr size_t kParamsBytes = 48;

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
  kVerify = 10,
  kVerified = 11,
  kSampleReplicated = 12,
  kLogprobsBatch = 13,  // the replay campaign's processed logprobs of a batch (docs/replay.md)
  kLogprobs = 14,
  kSampleSteps = 15,  // consecutive SAMPLE calls of one batch at offsets + 0, 1, ... (a decode loop)
};
enum CapabilityBits : uint32_t {
  kCapProcessed = 1,
  kCapCount = 2,
  kCapNondeterministic = 4,
  kCapVerify = 8,                 // answers VERIFY (a speculative-decoding chain verifier)
  kCapVerifyScripted = 16,        // VERIFY honours a scripted uniform stream
  kCapSampleReplicated = 32,      // answers SAMPLE_REPLICATED (each distinct row sent once, with its copy count)
  kCapLogprobsBatch = 64,         // answers LOGPROBS_BATCH (a replay source)
  kCapLogprobsLabels = 128,       // takes LOGPROBS_BATCH's labels (a trainer's label guard)
  kCapSampleSteps = 256,          // answers SAMPLE_STEPS (the batch sent once for many calls)
  kCapCountDistributional = 512,  // COUNT draws the distribution, not SAMPLE's tokens at the same (seed, offset)
};
// LOGPROBS_BATCH: the dtype of its rows (bf16 rows hold bf16 values, sent exactly as f32) and its flags.
enum LogprobsCodes : uint32_t { kDTypeFp32 = 0, kDTypeBf16 = 1, kFlagLabels = 1 };
// The draft forms of VERIFY.
enum DraftFormCodes : uint32_t { kDraftProbabilities = 0, kDraftLogits = 1, kDraftOneHot = 2 };
enum ErrorCodes : uint32_t { kErrInvalidArgument = 1, kErrUnsupported = 2, kErrFailed = 3, kErrInvalidRow = 4 };

inline std::string TypeName(uint32_t type) {
  static const char* const kNames[] = {
      "?",     "HELLO", "SAMPLE", "TOKENS",   "PROCESSED",         "DISTRIBUTION",   "COUNT",    "HISTOGRAM",
      "ERROR", "BYE",   "VERIFY", "VERIFIED", "SAMPLE_REPLICATED", "LOGPROBS_BATCH", "LOGPROBS", "SAMPLE_STEPS"};
  return type < std::size(kNames) ? kNames[type] : "type " + std::to_string(type);
}

// "0x4B484353 (bytes 'SCHK')": a u32 of the wire in hex and as its four bytes in wire order, each printable byte
// as itself and the others as \xNN, so that text where a number was expected is recognizable.
inline std::string DescribeU32(uint32_t v) {
  static const char kHex[] = "0123456789ABCDEF";
  std::string out = "0x";
  for (int shift = 28; shift >= 0; shift -= 4) out.push_back(kHex[(v >> shift) & 15]);
  out += " (bytes '";
  for (int i = 0; i < 4; ++i) {
    const auto b = static_cast<unsigned char>(v >> (8 * i));
    if (b >= 0x20 && b < 0x7f && b != '\'' && b != '\\') {
      out.push_back(static_cast<char>(b));
    } else {
      out += "\\x";
      out.push_back(kHex[b >> 4]);
      out.push_back(kHex[b & 15]);
    }
  }
  return out + "')";
}

// The whole frame of one message: u32 length | u32 type | payload, fields little-endian.
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
  void PutI32(int32_t v) { PutU32(static_cast<uint32_t>(v)); }
  void PutF64(double v) { PutU64(std::bit_cast<uint64_t>(v)); }
  void PutStr(const std::string& s) {
    PutU32(static_cast<uint32_t>(s.size()));
    bytes_.insert(bytes_.end(), s.begin(), s.end());
  }
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
  uint8_t U8() { return static_cast<uint8_t>(Little(1)); }
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
  SamplingParams Params() {
    SamplingParams p;
    p.temperature = F64();
    p.top_k = static_cast<int64_t>(U64());
    p.top_p = F64();
    p.min_p = F64();
    p.seed = U64();
    p.offset = U64();
    return p;
  }
  // n floats into out (out.size() == n); false (and ok() false) when fewer than 4n bytes are left.
  bool F32s(std::span<float> out) {
    if (left() / 4 < out.size()) {
      ok_ = false;
      at_ = bytes_.size();
      return false;
    }
    if constexpr (std::endian::native == std::endian::little) {
      std::memcpy(out.data(), bytes_.data() + at_, 4 * out.size());
      at_ += 4 * out.size();
    } else {
      for (float& f : out) f = std::bit_cast<float>(U32());
    }
    return true;
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

// ---- SAMPLE, SAMPLE_REPLICATED and SAMPLE_STEPS, as a client reads them (the plugin host) -------------------------
// SAMPLE:            u64 rows | u64 vocab | rows × params | rows × vocab × f32 logits
// SAMPLE_REPLICATED: u64 rows | u64 vocab | u64 replicas | (replicas × rows) × params | rows × vocab × f32 logits
// SAMPLE_STEPS:      u64 rows | u64 vocab | u64 steps | rows × params | rows × vocab × f32 logits
// Call row k rows + r is logits row r with params[k rows + r]; a SAMPLE is the case replicas = 1. SAMPLE_STEPS is
// `steps` SAMPLE calls of the rows, call s with every offset + s, answered with the steps × rows tokens step by step.
struct WireSample {
  uint64_t rows = 0;
  uint64_t vocab = 0;
  uint64_t replicas = 1;
  uint64_t steps = 1;
  std::vector<SamplingParams> params;  // replicas × rows (rows for SAMPLE_STEPS: step 0's)
  std::vector<float> logits;           // rows × vocab, each distinct row once
};

// Reads a SAMPLE, SAMPLE_REPLICATED or SAMPLE_STEPS payload (`type`); "" on success, else what is wrong.
inline std::string ReadSample(const std::vector<uint8_t>& payload, uint32_t type, WireSample& out) {
  Reader in(payload);
  out.rows = in.U64();
  out.vocab = in.U64();
  const bool replicated = type == kSampleReplicated, stepped = type == kSampleSteps;
  out.replicas = replicated ? in.U64() : 1;
  out.steps = stepped ? in.U64() : 1;
  // Each count bounded by what is left (the payload is < 2^30 bytes) before it is multiplied, so nothing overflows.
  const size_t left = in.left();
  const bool shaped = in.ok() && out.rows >= 1 && out.vocab >= 1 && out.replicas >= 1 && out.steps >= 1 &&
                      out.steps <= (uint64_t{1} << 30) / out.rows && out.vocab <= left / 4 &&
                      out.rows <= left / (4 * out.vocab) && out.replicas <= left / (kParamsBytes * out.rows) &&
                      left == out.replicas * out.rows * kParamsBytes + out.rows * 4 * out.vocab;
  if (!shaped) {
    return TypeName(type) + " of " + std::to_string(payload.size()) + " bytes does not hold rows " +
           std::to_string(out.rows) + " >= 1 of vocab " + std::to_string(out.vocab) + " >= 1" +
           (replicated ? " in " + std::to_string(out.replicas) + " >= 1 replicas" : std::string()) +
           (stepped ? " for " + std::to_string(out.steps) + " steps (1 <= steps x rows <= 2^30)" : std::string());
  }
  out.params.resize(static_cast<size_t>(out.replicas * out.rows));
  for (SamplingParams& p : out.params) p = in.Params();
  out.logits.resize(static_cast<size_t>(out.rows * out.vocab));
  in.F32s(out.logits);
  return "";
}

// The TOKENS answer: u64 rows | rows × i32 token.
inline std::vector<uint8_t> TokensFrame(std::span<const int32_t> tokens) {
  Writer w(kTokens);
  w.PutU64(tokens.size());
  for (int32_t t : tokens) w.PutI32(t);
  return w.Finish();
}

// ---- VERIFY (docs/process-protocol.md) ----------------------------------------------------------------------------
// One request of a VERIFY, verified `results.size()` times (trial i: draft_tokens[i g .. i g + g), offset
// request.params.offset + i (g + 1)); request.draft_tokens is not read.
struct VerifyTrials {
  VerifyRequest request;
  std::span<const int32_t> draft_tokens;
  std::span<VerifyResult> results;
};

inline uint32_t DraftFormCode(DraftForm form) {
  return form == DraftForm::kLogits ? kDraftLogits : form == DraftForm::kOneHot ? kDraftOneHot : kDraftProbabilities;
}

// The bytes one request adds to a VERIFY.
inline size_t VerifyRequestBytes(const VerifyRequest& q, size_t trials) {
  const size_t g = static_cast<size_t>(q.g), v = static_cast<size_t>(q.vocab);
  const size_t rows = (g + 1) + (q.draft_form == DraftForm::kOneHot ? 0 : g);
  return 8 + 4 + 4 + 2 * kParamsBytes + 8 + 4 + 4 * trials * g + 8 * q.uniforms.size() + 4 * rows * v;
}

// u64 vocab | u32 g | u32 form | params | draft params | u64 trials | u32 uniforms | trials × g × i32 draft tokens |
// uniforms × f64 | (g + 1) × vocab × f32 target | (form != one-hot) g × vocab × f32 draft
inline void PutVerifyRequest(Writer& w, const VerifyTrials& t) {
  const VerifyRequest& q = t.request;
  const size_t g = static_cast<size_t>(q.g), v = static_cast<size_t>(q.vocab);
  w.PutU64(v);
  w.PutU32(static_cast<uint32_t>(q.g));
  w.PutU32(DraftFormCode(q.draft_form));
  w.PutParams(q.params);
  w.PutParams(q.draft_params);
  w.PutU64(t.results.size());
  w.PutU32(static_cast<uint32_t>(q.uniforms.size()));
  for (int32_t x : t.draft_tokens) w.PutI32(x);
  for (double u : q.uniforms) w.PutF64(u);
  w.PutF32s({q.target, (g + 1) * v});
  if (q.draft_form != DraftForm::kOneHot) w.PutF32s({q.draft, g * v});
}

// A VERIFY request as read by a client (the plugin host): it owns its arrays; request points into them.
struct WireVerifyRequest {
  VerifyRequest request;
  uint64_t trials = 0;
  std::vector<int32_t> draft_tokens;
  std::vector<double> uniforms;
  std::vector<float> target;
  std::vector<float> draft;
};

// Reads one request of a VERIFY; "" on success, else what is wrong (the reader stays bounds-checked).
inline std::string ReadVerifyRequest(Reader& in, WireVerifyRequest& out) {
  const uint64_t vocab = in.U64();
  const uint32_t g = in.U32();
  const uint32_t form = in.U32();
  out.request.params = in.Params();
  out.request.draft_params = in.Params();
  out.trials = in.U64();
  const uint32_t n_uniforms = in.U32();
  if (!in.ok()) return "a request header is cut short";
  if (vocab < 1 || vocab > (uint64_t{1} << 31) - 1) return "vocab " + std::to_string(vocab) + " outside 1..2^31 - 1";
  if (g > static_cast<uint32_t>(kMaxSpecDraft)) return "g " + std::to_string(g) + " outside 0..16";
  if (form > kDraftOneHot) return "draft form " + std::to_string(form) + " outside 0..2";
  if (out.trials < 1) return "0 trials";
  const uint64_t rows = (g + 1) + (form == kDraftOneHot ? 0 : g);
  // Every count bounded by what is left (the payload is < 2^30 bytes), so the products below cannot overflow.
  if (out.trials > in.left() || n_uniforms > in.left() || rows * vocab > in.left()) {
    return "counts larger than the message (" + std::to_string(in.left()) + " bytes left)";
  }
  out.draft_tokens.resize(static_cast<size_t>(out.trials * g));
  for (int32_t& x : out.draft_tokens) x = in.I32();
  out.uniforms.resize(n_uniforms);
  for (double& u : out.uniforms) u = in.F64();
  out.target.resize(static_cast<size_t>((g + 1) * vocab));
  in.F32s(out.target);
  out.draft.resize(form == kDraftOneHot ? 0 : static_cast<size_t>(g * vocab));
  in.F32s(out.draft);
  if (!in.ok()) return "a request's arrays are cut short";
  VerifyRequest& q = out.request;
  q.vocab = static_cast<int64_t>(vocab);
  q.g = static_cast<int32_t>(g);
  q.draft_form = form == kDraftLogits ? DraftForm::kLogits : form == kDraftOneHot ? DraftForm::kOneHot
                                                                                    : DraftForm::kProbabilities;
  q.target = out.target.data();
  q.draft = out.draft.empty() ? nullptr : out.draft.data();
  q.draft_tokens = out.draft_tokens.data();
  q.uniforms = out.uniforms;
  return "";
}

}  // namespace samplecheck::harness::protocol
