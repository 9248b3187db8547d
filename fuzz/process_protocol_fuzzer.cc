// process_protocol_fuzzer: malformed answers of an external sampler process (docs/process-protocol.md) fed to the
// process sampler (harness/process_sampler.h) → clear errors, never a crash, a hang or a contract-breaking value.
//
// The decoder of process_sampler.cpp is internal (it reads frames from the child's pipe), so the target drives it
// end to end: each input becomes the frames a child writes (a HELLO answer, then the answers to one request kind),
// played by a shell that waits for each request (one `dd` read of its stdin) before it `cat`s the next answer, as a
// client does: an answer written before its request would only be "bytes nobody asked for". After the last answer,
// one whose length field is not its frame's, or raw bytes, the shell exits (a truncated answer shows as EOF at once,
// no deadline wait) while a background `sleep` keeps its stdin open, so the harness's writes never meet a closed
// pipe. About 30 inputs/s (one spawn each, a `dd` and a `cat` per answer). Half the inputs build well-formed frames with fuzzed fields (lengths,
// types, row counts, tokens, probabilities, histogram counts that wrap 2^64), half are raw bytes.
//
// Invariants (docs/fuzzing.md):
//   errors     every failure is a typed error (kPlugin for a broken protocol; kInvalidArgument, kUnsupported,
//              kInvalidRow for a well-formed ERROR answer, to the HELLO too) with a non-empty message; after a
//              failure, the next call gives a value or a typed error again.
//   Sample     ok => every token in [-1, vocab).
//   SampleReplicated (SAMPLE_REPLICATED to a client whose HELLO sets bit 32, else SAMPLE on the copies)
//              ok => every token of every call row in [-1, vocab).
//   PROCESSED  ok => vocab entries, each finite and >= 0, summing to 1 within 1e-3.
//   COUNT      ok => the histogram grew by exactly the draws asked for minus the invalid ones (no 2^64 wrap), no
//              entry above the draws.
#include <unistd.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <limits>
#include <string>
#include <vector>

#include "fuzz_decode.h"
#include "samplecheck/samplers/process_sampler.h"

namespace samplecheck::fuzz {
namespace {

constexpr uint32_t kMagic = 0x4B484353;
enum : uint32_t { kHello = 1, kSample = 2, kTokens = 3, kProcessed = 4, kDistribution = 5, kCount = 6,
                  kHistogram = 7, kError = 8, kBye = 9 };
constexpr uint32_t kCapSampleReplicated = 32;
// The requests a call makes: 0 Sample, 1 ProcessedDistribution, 2 CountDraws, 3 SampleReplicated.
enum Request : int { kSampleCall = 0, kProcessedCall = 1, kCountCall = 2, kReplicatedCall = 3 };
constexpr uint64_t kDrawsPerCountRequest = uint64_t{1} << 18;

class FrameWriter {
 public:
  void U32(uint32_t v) { for (int i = 0; i < 4; ++i) payload_.push_back(static_cast<uint8_t>(v >> (8 * i))); }
  void U64(uint64_t v) { for (int i = 0; i < 8; ++i) payload_.push_back(static_cast<uint8_t>(v >> (8 * i))); }
  void F64(double v) { uint64_t b; std::memcpy(&b, &v, 8); U64(b); }
  void Str(const std::string& s) { U32(static_cast<uint32_t>(s.size())); payload_.insert(payload_.end(), s.begin(), s.end()); }
  // Appends `u32 length | u32 type | payload` to out; the length is sometimes wrong, the payload sometimes cut.
  // False when the length is not the frame's (a reader waits for bytes that never come, or fails on the rest).
  bool Finish(FuzzedDataProvider& in, uint32_t type, std::vector<uint8_t>& out) {
    if (in.ConsumeIntegralInRange<int>(0, 15) == 0) payload_.resize(in.ConsumeIntegralInRange<size_t>(0, payload_.size()));
    uint32_t length = static_cast<uint32_t>(payload_.size() + 4);
    switch (in.ConsumeIntegralInRange<int>(0, 31)) {
      case 0: length = in.ConsumeIntegral<uint32_t>(); break;
      case 1: length = 0; break;
      case 2: length = (1u << 30) + 1; break;
      case 3: length += 1; break;
      default: break;
    }
    for (int i = 0; i < 4; ++i) out.push_back(static_cast<uint8_t>(length >> (8 * i)));
    for (int i = 0; i < 4; ++i) out.push_back(static_cast<uint8_t>(type >> (8 * i)));
    out.insert(out.end(), payload_.begin(), payload_.end());
    const bool whole = length == payload_.size() + 4;
    payload_.clear();
    return whole;
  }

 private:
  std::vector<uint8_t> payload_;
};

uint32_t AnswerType(FuzzedDataProvider& in, uint32_t expected) {
  switch (in.ConsumeIntegralInRange<int>(0, 15)) {
    case 0: return kError;
    case 1: return in.ConsumeIntegralInRange<uint32_t>(0, 13);
    case 2: return in.ConsumeIntegral<uint32_t>();
    default: return expected;
  }
}

void WriteError(FuzzedDataProvider& in, FrameWriter& w) {
  w.U32(in.ConsumeIntegralInRange<uint32_t>(0, 6));
  std::string message = in.ConsumeRandomLengthString(64);
  if (in.ConsumeBool()) {
    w.Str(message);
  } else {  // a string length that lies
    w.U32(in.ConsumeIntegral<uint32_t>());
    for (char c : message) w.U32(static_cast<uint8_t>(c));
  }
}

uint64_t Fuzzed64(FuzzedDataProvider& in, uint64_t right) {
  switch (in.ConsumeIntegralInRange<int>(0, 15)) {
    case 0: return in.ConsumeIntegral<uint64_t>();
    case 1: return right + 1;
    case 2: return right - 1;
    default: return right;
  }
}

// What a child writes: one piece per request it answers (the HELLO first), each written once its request arrived;
// the child exits after the last piece, or after one whose length field is not its frame's.
struct Script {
  std::vector<std::vector<uint8_t>> pieces;
  void Add(FrameWriter& w, FuzzedDataProvider& in, uint32_t type) {
    std::vector<uint8_t> frame;
    const bool whole = w.Finish(in, type, frame);  // built even after the end: the input decodes the same
    if (ended) return;
    pieces.push_back(std::move(frame));
    ended = !whole;
  }
  bool ended = false;
};

// The frames a child writes for one call of `request` kind (`rows` call rows for the two sampling calls).
Script BuildAnswers(FuzzedDataProvider& in, int request, int64_t rows, int64_t vocab, uint64_t draws) {
  Script out;
  FrameWriter w;
  // HELLO.
  const uint32_t hello_type = in.ConsumeIntegralInRange<int>(0, 15) == 0 ? AnswerType(in, kHello) : kHello;
  if (hello_type == kError) {
    WriteError(in, w);
  } else {
    w.U32(in.ConsumeIntegralInRange<int>(0, 15) == 0 ? in.ConsumeIntegral<uint32_t>() : kMagic);
    w.U32(in.ConsumeIntegralInRange<int>(0, 15) == 0 ? in.ConsumeIntegral<uint32_t>() : 1);
    // PROCESSED | COUNT, and SAMPLE_REPLICATED for a replicated call
    w.U32(in.ConsumeIntegralInRange<int>(0, 7) == 0 ? in.ConsumeIntegral<uint32_t>()
                                                    : request == kReplicatedCall ? 3 | kCapSampleReplicated : 3);
    w.Str(in.ConsumeRandomLengthString(16));
    w.Str(in.ConsumeBool() ? std::string("vllm") : in.ConsumeRandomLengthString(16));
  }
  out.Add(w, in, hello_type);
  // Answers: one per request the call makes (COUNT is chunked), plus a few stray frames.
  const uint64_t count_chunks = (draws + kDrawsPerCountRequest - 1) / kDrawsPerCountRequest;
  const int answers = request == kCountCall ? static_cast<int>(count_chunks) + in.ConsumeIntegralInRange<int>(0, 1)
                                            : 1 + in.ConsumeIntegralInRange<int>(0, 1);
  uint64_t left = draws;
  for (int a = 0; a < answers; ++a) {
    const uint32_t expected = request == kProcessedCall ? kDistribution : request == kCountCall ? kHistogram : kTokens;
    const uint32_t type = AnswerType(in, expected);
    if (type == kError) {
      WriteError(in, w);
    } else if (type == kTokens) {
      w.U64(Fuzzed64(in, static_cast<uint64_t>(rows)));
      const int64_t n = in.ConsumeIntegralInRange<int>(0, 15) == 0 ? in.ConsumeIntegralInRange<int64_t>(0, 8) : rows;
      for (int64_t r = 0; r < n; ++r) {
        const int pick = in.ConsumeIntegralInRange<int>(0, 7);
        w.U32(static_cast<uint32_t>(pick == 0 ? in.ConsumeIntegral<int32_t>()
                                    : pick == 1 ? -1
                                    : pick == 2 ? static_cast<int32_t>(vocab)
                                                : in.ConsumeIntegralInRange<int32_t>(0, static_cast<int32_t>(vocab - 1))));
      }
    } else if (type == kDistribution) {
      w.U64(Fuzzed64(in, static_cast<uint64_t>(vocab)));
      const int64_t n = in.ConsumeIntegralInRange<int>(0, 15) == 0 ? in.ConsumeIntegralInRange<int64_t>(0, 10) : vocab;
      for (int64_t t = 0; t < n; ++t) {
        switch (in.ConsumeIntegralInRange<int>(0, 9)) {
          case 0: w.F64(std::numeric_limits<double>::quiet_NaN()); break;
          case 1: w.F64(std::numeric_limits<double>::infinity()); break;
          case 2: w.F64(-in.ConsumeProbability<double>()); break;
          case 3: w.F64(std::numeric_limits<double>::max()); break;
          case 4: w.F64(std::numeric_limits<double>::denorm_min()); break;
          default: w.F64(t == 0 ? 1.0 : 0.0); break;
        }
      }
    } else if (type == kHistogram) {
      const uint64_t n = std::min(left, kDrawsPerCountRequest);
      left -= n;
      w.U64(Fuzzed64(in, static_cast<uint64_t>(vocab)));
      const uint64_t invalid = in.ConsumeBool() ? 0 : Fuzzed64(in, in.ConsumeIntegralInRange<uint64_t>(0, n));
      w.U64(invalid);
      const int64_t cells = in.ConsumeIntegralInRange<int>(0, 15) == 0 ? in.ConsumeIntegralInRange<int64_t>(0, 10) : vocab;
      uint64_t sum = invalid;
      for (int64_t t = 0; t < cells; ++t) {
        uint64_t c;
        if (t + 1 == cells && in.ConsumeBool()) {
          c = n - sum;  // makes the counts add up to n modulo 2^64
        } else {
          const int pick = in.ConsumeIntegralInRange<int>(0, 5);
          c = pick == 0 ? in.ConsumeIntegral<uint64_t>()
              : pick == 1 ? std::numeric_limits<uint64_t>::max() - in.ConsumeIntegralInRange<uint64_t>(0, 3)
                          : in.ConsumeIntegralInRange<uint64_t>(0, n);
        }
        sum += c;
        w.U64(c);
      }
    } else {  // any other type: a few payload bytes
      const std::string junk = in.ConsumeRandomLengthString(32);
      for (char c : junk) w.U32(static_cast<uint8_t>(c));
    }
    out.Add(w, in, type);
  }
  return out;
}

std::string ScriptPath(size_t piece) {
  return "/tmp/samplecheck-process-fuzz-" + std::to_string(getpid()) + "." + std::to_string(piece) + ".bin";
}

// Writes the pieces to files and returns the child's command: for each piece, wait for a request (the HELLO for
// the first), then write the piece. A background `sleep` holds the read end of the child's stdin (so the harness's
// writes never fail) but none of its output; after the last piece the shell exits, so the harness sees EOF and the
// exit at once. `dd` returns at once at end of input (the harness's BYE and close).
std::string PlayScript(const Script& script) {
  std::string command = "exec 3<&0; sleep 2 <&3 3<&- >/dev/null 2>&1 & exec 3<&-";
  for (size_t i = 0; i < script.pieces.size(); ++i) {
    FILE* f = std::fopen(ScriptPath(i).c_str(), "wb");
    FUZZ_CHECK(f != nullptr, "cannot write %s", ScriptPath(i).c_str());
    if (!script.pieces[i].empty()) std::fwrite(script.pieces[i].data(), 1, script.pieces[i].size(), f);
    std::fclose(f);
    command += "; dd bs=65536 count=1 status=none >/dev/null; cat '" + ScriptPath(i) + "'";
  }
  return command;
}

void CheckError(const Error& e, const char* call) {
  FUZZ_CHECK(e.code == ErrorCode::kPlugin || e.code == ErrorCode::kInvalidArgument ||
                 e.code == ErrorCode::kUnsupported || e.code == ErrorCode::kInvalidRow,
             "%s: unexpected error code %s", call, e.ToString().c_str());
  FUZZ_CHECK(!e.message.empty(), "%s: empty error message", call);
}

}  // namespace
}  // namespace samplecheck::fuzz

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace samplecheck;
  using namespace samplecheck::fuzz;
  FuzzedDataProvider in(data, size);
  const int request = in.ConsumeIntegralInRange<int>(kSampleCall, kReplicatedCall);
  const int64_t rows = in.ConsumeIntegralInRange<int64_t>(1, 3);
  const int64_t vocab = in.ConsumeIntegralInRange<int64_t>(1, 8);
  const uint64_t draws = in.ConsumeIntegralInRange<int>(0, 7) == 0
                             ? in.ConsumeIntegralInRange<uint64_t>(kDrawsPerCountRequest, 3 * kDrawsPerCountRequest)
                             : in.ConsumeIntegralInRange<uint64_t>(0, 1000);
  const uint64_t replicas = request == kReplicatedCall ? in.ConsumeIntegralInRange<uint64_t>(0, 4) : 1;
  Script script;
  if (in.ConsumeBool()) {
    script = BuildAnswers(in, request, rows * static_cast<int64_t>(replicas), vocab, draws);
  } else {
    script.pieces.push_back(in.ConsumeRemainingBytes<uint8_t>());  // raw bytes, written at the HELLO
  }

  harness::ProcessSamplerOptions options;
  options.handshake_timeout_s = 10;  // never reached: the child's stdout ends with the script
  options.request_timeout_s = 10;
  const std::string command = PlayScript(script);
  auto made = harness::MakeProcessSampler(command, options);
  if (!made.ok()) {
    // kPlugin, or the code of an ERROR in answer to the HELLO (a client that cannot serve).
    CheckError(made.error(), "handshake");
    return 0;
  }
  harness::Sampler& sampler = **made;
  std::vector<float> logits(static_cast<size_t>(rows * vocab));
  for (size_t i = 0; i < logits.size(); ++i) logits[i] = -0.5f * static_cast<float>(i % 7);
  std::vector<SamplingParams> params(static_cast<size_t>(rows));
  const std::span<const float> row(logits.data(), static_cast<size_t>(vocab));

  Status status;
  if (request == kReplicatedCall) {
    std::vector<SamplingParams> call_params(static_cast<size_t>(rows) * replicas);
    for (size_t c = 0; c < call_params.size(); ++c) call_params[c].offset = c;
    std::vector<int32_t> tokens(call_params.size(), 777);
    status = sampler.SampleReplicated({logits.data(), rows, vocab, vocab}, replicas, call_params, tokens);
    if (status.ok()) {
      for (int32_t t : tokens) FUZZ_CHECK(t >= -1 && t < vocab, "SampleReplicated accepted token %d for vocab %lld", t,
                                          static_cast<long long>(vocab));
    }
  } else if (request == kSampleCall) {
    std::vector<int32_t> tokens(static_cast<size_t>(rows), 777);
    const harness::RowBatch batch{logits.data(), rows, vocab, vocab};
    status = sampler.Sample(batch, params, tokens);
    if (status.ok()) {
      for (int32_t t : tokens) FUZZ_CHECK(t >= -1 && t < vocab, "Sample accepted token %d for vocab %lld", t,
                                          static_cast<long long>(vocab));
    }
  } else if (request == kProcessedCall) {
    auto probs = sampler.ProcessedDistribution(row, params[0]);
    if (probs.ok()) {
      FUZZ_CHECK(static_cast<int64_t>(probs->size()) == vocab, "PROCESSED: %zu entries", probs->size());
      double sum = 0;
      for (double p : *probs) {
        FUZZ_CHECK(std::isfinite(p) && p >= 0, "PROCESSED accepted probability %.17g", p);
        sum += p;
      }
      FUZZ_CHECK(std::fabs(sum - 1) <= 1e-3, "PROCESSED accepted a sum of %.17g", sum);
    } else {
      status = probs.status();
    }
  } else {
    std::vector<uint64_t> histogram(static_cast<size_t>(vocab), 0);
    uint64_t invalid = 0;
    status = sampler.CountDraws(row, params[0], draws, histogram, &invalid);
    if (status.ok()) {
      uint64_t total = invalid;
      bool wrapped = false;
      for (uint64_t c : histogram) {
        FUZZ_CHECK(c <= draws, "COUNT accepted a cell count %llu for %llu draws", static_cast<unsigned long long>(c),
                   static_cast<unsigned long long>(draws));
        wrapped |= __builtin_add_overflow(total, c, &total);
      }
      FUZZ_CHECK(!wrapped && total == draws, "COUNT accepted a histogram adding up to %llu%s for %llu draws",
                 static_cast<unsigned long long>(total), wrapped ? " (after a 2^64 wrap)" : "",
                 static_cast<unsigned long long>(draws));
    }
  }
  if (!status.ok()) {
    CheckError(status.error(), "request");
    // A second call after a failure (broken: fails at once; a contract error such as a bad token: the stream
    // goes on) must also end in a value or a typed error.
    std::vector<int32_t> tokens(static_cast<size_t>(rows), 777);
    const harness::RowBatch batch{logits.data(), rows, vocab, vocab};
    const Status again = sampler.Sample(batch, params, tokens);
    if (again.ok()) {
      for (int32_t t : tokens) FUZZ_CHECK(t >= -1 && t < vocab, "second Sample accepted token %d", t);
    } else {
      CheckError(again.error(), "second request");
    }
  }
  return 0;
}
