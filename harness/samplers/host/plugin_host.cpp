// samplecheck-plugin-host <library.so> <config>: the program behind isolated `plugin:` samplers
// (samplers/plugin_sampler.h). It loads one plugin of the C ABI (docs/plugin-abi.md) with the in-process loader
// and its checks (MakePluginSampler) and serves it as a client of the process protocol (docs/process-protocol.md)
// on its stdin and stdout; samplecheck starts it as a process sampler, so a plugin that crashes, exits or hangs
// ends or stalls this process, never samplecheck.
//
//   HELLO     after the harness's HELLO the plugin is loaded: a load error is answered with ERROR (the code of the
//             error, its message), then the host exits 1; else HELLO with the plugin's Name() ("plugin:exact-vllm"),
//             profile and capabilities (PROCESSED and COUNT when the plugin exports them, nondeterministic;
//             SAMPLE_REPLICATED always)
//   requests  SAMPLE, SAMPLE_REPLICATED (the copies made here, in bounded batches), PROCESSED, COUNT: the loader's
//             answer, or ERROR with the code of its error and its message;
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

#include "../src/process_client_io.h"
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

// The protocol's pipe (copies of the original stdin and stdout), opened by TakeProtocolFds.
ClientPipe& Pipe() {
  static ClientPipe pipe(g_in, g_out, [](const std::string& message) { Die(message); });
  return pipe;
}

void Send(const std::vector<uint8_t>& bytes) { Pipe().Send(bytes); }

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

RowRequest ReadRowRequest(const ClientFrame& frame, bool with_draws) {
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

// SAMPLE, and SAMPLE_REPLICATED: each distinct row arrives once with its copy count, and the copies are made here,
// in the bounded batches of the default SampleReplicated (sampler.cpp), the calls the plugin gets in process.
// SAMPLE, SAMPLE_REPLICATED and SAMPLE_STEPS: the plugin gets the calls it gets in process (SAMPLE_STEPS: one
// sample call per step, each at the step's offsets).
void Sample(Sampler& sampler, const ClientFrame& frame) {
  WireSample req;
  if (const std::string why = ReadSample(frame.payload, frame.type, req); !why.empty()) Die(why);
  std::vector<int32_t> tokens(req.params.size() * req.steps);
  const RowBatch batch{req.logits.data(), static_cast<int64_t>(req.rows), static_cast<int64_t>(req.vocab),
                       static_cast<int64_t>(req.vocab)};
  const Status st = frame.type == kSampleReplicated ? sampler.SampleReplicated(batch, req.replicas, req.params, tokens)
                    : frame.type == kSampleSteps    ? sampler.SampleSteps(batch, req.params, req.steps, tokens)
                                                    : sampler.Sample(batch, req.params, tokens);
  if (!st.ok()) return SendError(st.error());
  Send(TokensFrame(tokens));
}

void Processed(Sampler& sampler, const ClientFrame& frame) {
  const RowRequest r = ReadRowRequest(frame, /*with_draws=*/false);
  auto probs = sampler.ProcessedDistribution(r.row, r.params);
  if (!probs.ok()) return SendError(probs.error());
  Writer w(kDistribution);
  w.PutU64(probs->size());
  for (double p : *probs) w.PutF64(p);
  Send(w.Finish());
}

void Count(Sampler& sampler, const ClientFrame& frame) {
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

void Verify(Verifier* verifier, const ClientFrame& frame) {
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
  const auto hello = Pipe().Read();
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
           (caps.deterministic ? 0u : kCapNondeterministic) | kCapSampleReplicated | kCapSampleSteps | verify_bits);
  w.PutStr(sampler->Name());
  w.PutStr(caps.profile);
  Send(w.Finish());
  for (;;) {
    const auto frame = Pipe().Read();
    if (!frame || frame->type == kBye) return 0;
    switch (frame->type) {
      case kSample:
      case kSampleReplicated:
      case kSampleSteps: Sample(*sampler, *frame); break;
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
