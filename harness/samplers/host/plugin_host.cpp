// samplecheck-plugin-host <library.so> <config>: the program behind isolated `plugin:` samplers
// (samplers/plugin_sampler.h). It loads one plugin of the C ABI (docs/plugin-abi.md) with the in-process loader
// and its checks (MakePluginSampler) and serves it as a client of the process protocol (docs/process-protocol.md)
// on its stdin and stdout; samplecheck starts it as a process sampler, so a plugin that crashes, exits or hangs
// ends or stalls this process, never samplecheck.
//
//   HELLO     after the harness's HELLO the plugin is loaded: a load error is answered with ERROR (the code of the
//             error, its message), then the host exits 1; else HELLO with the plugin's Name() ("plugin:exact-vllm"),
//             profile and capabilities (PROCESSED and COUNT when the plugin exports them, nondeterministic)
//   requests  SAMPLE, PROCESSED, COUNT: the loader's answer, or ERROR with the code of its error and its message;
//             VERIFY (the VERIFY bit of the HELLO is set when the plugin exports verify_chain, ABI version 2): the
//             plugin verifier's answer (MakePluginVerifier's checks), or ERROR
//   BYE, end of input: the plugin is destroyed and the host exits 0
//
// The protocol runs on copies of the original stdin and stdout; fd 0 becomes /dev/null and fd 1 a copy of stderr,
// so that a plugin that prints cannot corrupt the protocol (what it prints shows in the stderr tail samplecheck
// quotes). A request the host cannot parse is a bug of samplecheck: a message on stderr, exit 2. Not meant to be
// run by hand.
#include <fcntl.h>
#include <malloc.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "../src/process_protocol.h"
#include "samplecheck/samplers/plugin_sampler.h"

namespace samplecheck::harness {
namespace {

using namespace protocol;

int g_in = -1;   // the protocol's input (the original stdin)
int g_out = -1;  // the protocol's output (the original stdout)

[[noreturn]] void Die(const std::string& message) {
  std::fprintf(stderr, "%s: %s\n", kPluginHostProgram, message.c_str());
  std::fflush(stderr);
  _exit(2);
}

// Reads exactly n bytes; false at end of input before the first byte, Die on a partial read.
bool ReadExactly(uint8_t* data, size_t n) {
  size_t got = 0;
  while (got < n) {
    const ssize_t r = read(g_in, data + got, n - got);
    if (r > 0) {
      got += static_cast<size_t>(r);
    } else if (r == 0) {
      if (got == 0) return false;
      Die("end of input inside a frame");
    } else if (errno != EINTR) {
      Die(std::string("read: ") + std::strerror(errno));
    }
  }
  return true;
}

struct Frame {
  uint32_t type = 0;
  std::vector<uint8_t> payload;
};

std::optional<Frame> ReadFrame() {
  uint8_t header[8];
  if (!ReadExactly(header, 4)) return std::nullopt;
  if (!ReadExactly(header + 4, 4)) Die("end of input inside a frame header");
  auto u32 = [&](int at) {
    return uint32_t(header[at]) | uint32_t(header[at + 1]) << 8 | uint32_t(header[at + 2]) << 16 |
           uint32_t(header[at + 3]) << 24;
  };
  const uint32_t length = u32(0);
  if (length < 4 || length > kMaxFrameBytes) Die("frame length " + std::to_string(length) + " outside [4, 2^30]");
  Frame frame;
  frame.type = u32(4);
  frame.payload.resize(length - 4);
  if (!frame.payload.empty() && !ReadExactly(frame.payload.data(), frame.payload.size())) {
    Die("end of input inside a frame");
  }
  return frame;
}

void Send(const std::vector<uint8_t>& bytes) {
  size_t done = 0;
  while (done < bytes.size()) {
    const ssize_t n = write(g_out, bytes.data() + done, bytes.size() - done);
    if (n > 0) {
      done += static_cast<size_t>(n);
    } else if (n < 0 && errno != EINTR) {
      _exit(1);  // samplecheck is gone or closed the pipe: nobody to answer
    }
  }
}

uint32_t CodeOf(const Error& e) {
  switch (e.code) {
    case ErrorCode::kInvalidArgument: return kErrInvalidArgument;
    case ErrorCode::kUnsupported: return kErrUnsupported;
    case ErrorCode::kInvalidRow: return kErrInvalidRow;
    default: return kErrFailed;
  }
}

void SendError(const Error& e) {
  Writer w(kError);
  w.PutU32(CodeOf(e));
  w.PutStr(e.message);
  Send(w.Finish());
}

// The fixed part of PROCESSED and COUNT: u64 vocab | params [| u64 draws], then vocab floats, nothing more.
struct RowRequest {
  std::vector<float> row;
  SamplingParams params;
  uint64_t draws = 0;
};

RowRequest ReadRowRequest(const Frame& frame, bool with_draws) {
  Reader in(frame.payload);
  RowRequest r;
  const uint64_t vocab = in.U64();
  r.params = in.Params();
  if (with_draws) r.draws = in.U64();
  if (!in.ok() || vocab == 0 || in.left() != 4 * vocab) {
    Die(TypeName(frame.type) + " of " + std::to_string(frame.payload.size()) + " bytes does not hold vocab " +
        std::to_string(vocab) + " >= 1 logits");
  }
  r.row.resize(vocab);
  in.F32s(r.row);
  return r;
}

void Sample(Sampler& sampler, const Frame& frame) {
  Reader in(frame.payload);
  const uint64_t rows = in.U64();
  const uint64_t vocab = in.U64();
  // rows × (48 bytes of params + 4 × vocab bytes of logits), checked without overflow: the payload is < 2^30.
  const bool shaped = in.ok() && rows >= 1 && vocab >= 1 && vocab <= in.left() / 4 &&
                      rows <= in.left() / (kParamsBytes + 4 * vocab) &&
                      in.left() == rows * (kParamsBytes + 4 * vocab);
  if (!shaped) {
    Die("SAMPLE of " + std::to_string(frame.payload.size()) + " bytes does not hold rows " + std::to_string(rows) +
        " >= 1 of vocab " + std::to_string(vocab) + " >= 1");
  }
  std::vector<SamplingParams> params(rows);
  for (SamplingParams& p : params) p = in.Params();
  std::vector<float> logits(rows * vocab);
  in.F32s(logits);
  std::vector<int32_t> tokens(rows);
  const RowBatch batch{logits.data(), static_cast<int64_t>(rows), static_cast<int64_t>(vocab),
                       static_cast<int64_t>(vocab)};
  if (Status st = sampler.Sample(batch, params, tokens); !st.ok()) return SendError(st.error());
  Writer w(kTokens);
  w.PutU64(rows);
  for (int32_t t : tokens) w.PutI32(t);
  Send(w.Finish());
}

void Processed(Sampler& sampler, const Frame& frame) {
  const RowRequest r = ReadRowRequest(frame, /*with_draws=*/false);
  auto probs = sampler.ProcessedDistribution(r.row, r.params);
  if (!probs.ok()) return SendError(probs.error());
  Writer w(kDistribution);
  w.PutU64(probs->size());
  for (double p : *probs) w.PutF64(p);
  Send(w.Finish());
}

void Count(Sampler& sampler, const Frame& frame) {
  const RowRequest r = ReadRowRequest(frame, /*with_draws=*/true);
  std::vector<uint64_t> histogram(r.row.size(), 0);
  uint64_t invalid = 0;
  if (Status st = sampler.CountDraws(r.row, r.params, r.draws, histogram, &invalid); !st.ok()) {
    return SendError(st.error());
  }
  Writer w(kHistogram);
  w.PutU64(histogram.size());
  w.PutU64(invalid);
  for (uint64_t c : histogram) w.PutU64(c);
  Send(w.Finish());
}

void Verify(Verifier* verifier, const Frame& frame) {
  if (verifier == nullptr) {
    return SendError(Unsupported("the plugin does not export samplecheck_plugin_verify_chain: it cannot verify"));
  }
  Reader in(frame.payload);
  const uint64_t count = in.U64();
  if (!in.ok() || count < 1 || count > in.left()) Die("VERIFY of " + std::to_string(frame.payload.size()) + " bytes");
  std::vector<WireVerifyRequest> wire(count);
  for (uint64_t r = 0; r < count; ++r) {
    const std::string why = ReadVerifyRequest(in, wire[r]);
    if (!why.empty()) Die("VERIFY request " + std::to_string(r) + ": " + why);
  }
  if (in.left() != 0) Die("VERIFY has " + std::to_string(in.left()) + " bytes after its requests");
  std::vector<std::vector<VerifyResult>> results(count);
  for (uint64_t r = 0; r < count; ++r) results[r].resize(wire[r].trials);
  bool single = true;
  for (const WireVerifyRequest& w : wire) single = single && w.trials == 1;
  if (single) {  // a batch of requests: one Verify call, as in process
    std::vector<VerifyRequest> batch;
    std::vector<VerifyResult> out(count);
    for (const WireVerifyRequest& w : wire) batch.push_back(w.request);
    if (Status st = verifier->Verify(batch, out); !st.ok()) return SendError(st.error());
    for (uint64_t r = 0; r < count; ++r) results[r][0] = out[r];
  } else {
    for (uint64_t r = 0; r < count; ++r) {
      if (Status st = verifier->VerifyRepeated(wire[r].request, wire[r].draft_tokens, results[r]); !st.ok()) {
        return SendError(st.error());
      }
    }
  }
  Writer w(kVerified);
  w.PutU64(count);
  for (uint64_t r = 0; r < count; ++r) {
    w.PutU64(results[r].size());
    for (const VerifyResult& res : results[r]) {
      w.PutI32(res.accepted);
      for (int32_t j = 0; j <= wire[r].request.g; ++j) w.PutI32(j <= res.accepted ? res.emitted[j] : kInvalidToken);
    }
  }
  Send(w.Finish());
}

// The protocol on copies of fds 0 and 1 (close-on-exec, should the plugin start programs); fd 0 reads /dev/null,
// fd 1 writes to stderr.
void TakeProtocolFds() {
  g_in = fcntl(STDIN_FILENO, F_DUPFD_CLOEXEC, 3);
  g_out = fcntl(STDOUT_FILENO, F_DUPFD_CLOEXEC, 3);
  if (g_in < 0 || g_out < 0) Die(std::string("cannot copy stdin/stdout: ") + std::strerror(errno));
  const int null_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
  if (null_fd < 0 || dup2(null_fd, STDIN_FILENO) < 0 || dup2(STDERR_FILENO, STDOUT_FILENO) < 0) {
    Die(std::string("cannot redirect stdin/stdout: ") + std::strerror(errno));
  }
  close(null_fd);
}

int Serve(const char* library, const char* config) {
  TakeProtocolFds();
  // The host allocates the same large buffers request after request (a SAMPLE's logits, the rows the default
  // CountDraws replicates: up to 256 MiB): kept in the heap, not mapped and faulted in afresh each time.
  mallopt(M_MMAP_THRESHOLD, 1 << 30);
  mallopt(M_TRIM_THRESHOLD, 1 << 30);
  const auto hello = ReadFrame();
  if (!hello) return 0;  // samplecheck went away before the handshake
  {
    Reader in(hello->payload);
    const uint32_t magic = in.U32();
    const uint32_t version = in.U32();
    if (hello->type != kHello || !in.ok() || magic != kMagic || version != kVersion) {
      Die("the first frame is not a HELLO of protocol version 1 (" + TypeName(hello->type) + ", " +
          std::to_string(hello->payload.size()) + " bytes): " + kPluginHostProgram +
          " is started by samplecheck for isolated plugin: samplers, not by hand");
    }
  }
  auto made = LoadPluginPair(library, config);
  if (!made.ok()) {
    SendError(made.error());
    return 1;
  }
  std::unique_ptr<Sampler> sampler = std::move(made->sampler);
  std::unique_ptr<Verifier> verifier = std::move(made->verifier);
  const Capabilities caps = sampler->GetCapabilities();
  uint32_t verify_bits = 0;
  if (verifier) verify_bits = kCapVerify | (verifier->GetCapabilities().scripted_uniforms ? kCapVerifyScripted : 0u);
  Writer w(kHello);
  w.PutU32(kMagic);
  w.PutU32(kVersion);
  w.PutU32((caps.processed_distribution ? kCapProcessed : 0u) | (caps.count_draws ? kCapCount : 0u) |
           (caps.deterministic ? 0u : kCapNondeterministic) | verify_bits);
  w.PutStr(sampler->Name());
  w.PutStr(caps.profile);
  Send(w.Finish());
  for (;;) {
    const auto frame = ReadFrame();
    if (!frame || frame->type == kBye) return 0;
    switch (frame->type) {
      case kSample: Sample(*sampler, *frame); break;
      case kProcessed: Processed(*sampler, *frame); break;
      case kCount: Count(*sampler, *frame); break;
      case kVerify: Verify(verifier.get(), *frame); break;
      default: Die("unexpected " + TypeName(frame->type) + " request");
    }
  }
}

}  // namespace
}  // namespace samplecheck::harness

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr,
                 "usage: %s <library.so> <config>\n"
                 "Runs one samplecheck plugin (docs/plugin-abi.md) isolated from samplecheck, serving it over the "
                 "process protocol (docs/process-protocol.md) on stdin/stdout. samplecheck starts it for "
                 "`--sampler plugin:<path.so>[:config]`; it is not meant to be run by hand.\n",
                 argc > 0 ? argv[0] : samplecheck::harness::kPluginHostProgram);
    return 2;
  }
  return samplecheck::harness::Serve(argv[1], argv[2]);
}
