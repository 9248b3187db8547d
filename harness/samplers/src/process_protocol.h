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
};
enum CapabilityBits : uint32_t { kCapProcessed = 1, kCapCount = 2, kCapNondeterministic = 4 };
enum ErrorCodes : uint32_t { kErrInvalidArgument = 1, kErrUnsupported = 2, kErrFailed = 3, kErrInvalidRow = 4 };

inline std::string TypeName(uint32_t type) {
  static const char* const kNames[] = {"?",         "HELLO",        "SAMPLE", "TOKENS",    "PROCESSED",
                                       "DISTRIBUTION", "COUNT", "HISTOGRAM", "ERROR", "BYE"};
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

}  // namespace samplecheck::harness::protocol
