// samplers_test_scripted_client <capabilities> <log> <draw> [<fault>]: a process-protocol client in C++ for
// process_replicated_test.cpp. Its HELLO sets <capabilities> (name "scripted", profile "vllm"); it answers SAMPLE,
// SAMPLE_REPLICATED and SAMPLE_STEPS, and appends one line per request to <log>:
//   "SAMPLE rows R vocab V bytes B", "SAMPLE_REPLICATED rows R vocab V replicas K bytes B" or
//   "SAMPLE_STEPS rows R vocab V steps S bytes B" (B: the payload)
// so a test sees what crossed the pipe. <draw> is how it draws call row c (logits row r, params p):
//   exact        the exact sampler of the vllm profile (--sampler exact:vllm), on the copies made here; invalid params
//                are an ERROR of code 1, as SAMPLE's rule says (every call row checked before any is drawn)
//   fingerprint  (argmax of row r + p.seed + p.offset) mod V, the argmax computed once per distinct row: cheap for
//                the large messages of the size tests
// <fault> breaks every answer one way: short (TOKENS with one token fewer than the call rows), long (one more),
// out-of-range (the last token is V), histogram (a HISTOGRAM instead of TOKENS). A request it cannot parse: a message
// on stderr, exit 3.
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "process_client_io.h"
#include "samplecheck/samplers/exact_sampler.h"

namespace samplecheck::harness {
namespace {

using namespace protocol;

[[noreturn]] void Die(const std::string& message) {
  std::fprintf(stderr, "scripted client: %s\n", message.c_str());
  std::exit(3);
}

struct Script {
  uint32_t capabilities = 0;
  std::string log;
  bool exact = true;
  std::string fault;
};

void Log(const Script& script, const std::string& line) {
  FILE* f = std::fopen(script.log.c_str(), "a");
  if (f == nullptr) Die("cannot open the log " + script.log);
  std::fprintf(f, "%s\n", line.c_str());
  std::fclose(f);
}

// The tokens of every call row, in call order; an error of the exact sampler as its ERROR answer.
std::vector<uint8_t> Draw(const Script& script, Sampler& exact, const WireSample& req, uint32_t type) {
  std::vector<int32_t> tokens(req.params.size() * req.steps);
  const RowBatch batch{req.logits.data(), static_cast<int64_t>(req.rows), static_cast<int64_t>(req.vocab),
                       static_cast<int64_t>(req.vocab)};
  if (script.exact) {
    const Status st = type == kSampleReplicated ? exact.SampleReplicated(batch, req.replicas, req.params, tokens)
                      : type == kSampleSteps    ? exact.SampleSteps(batch, req.params, req.steps, tokens)
                                                : exact.Sample(batch, req.params, tokens);
    if (!st.ok()) {
      Writer w(kError);
      w.PutU32(st.error().code == ErrorCode::kInvalidArgument ? kErrInvalidArgument : kErrFailed);
      w.PutStr(st.error().message);
      return w.Finish();
    }
  } else {
    std::vector<uint64_t> argmax(req.rows);
    for (uint64_t r = 0; r < req.rows; ++r) {
      const auto row = batch.Row(static_cast<int64_t>(r));
      argmax[r] = static_cast<uint64_t>(std::max_element(row.begin(), row.end()) - row.begin());
    }
    for (size_t c = 0; c < tokens.size(); ++c) {
      const SamplingParams& p = req.params[c % req.params.size()];
      const uint64_t step = c / req.params.size();  // 0 but for SAMPLE_STEPS
      tokens[c] = static_cast<int32_t>((argmax[c % req.rows] + p.seed + p.offset + step) % req.vocab);
    }
  }
  if (script.fault == "histogram") {
    Writer w(kHistogram);
    w.PutU64(req.vocab);
    w.PutU64(0);
    return w.Finish();
  }
  if (script.fault == "short") tokens.pop_back();
  if (script.fault == "long") tokens.push_back(0);
  if (script.fault == "out-of-range") tokens.back() = static_cast<int32_t>(req.vocab);
  return TokensFrame(tokens);
}

int Serve(const Script& script) {
  ClientPipe pipe(STDIN_FILENO, STDOUT_FILENO, Die);
  auto exact = MakeExactSampler("vllm");
  if (!exact.ok()) Die(exact.error().ToString());
  for (;;) {
    const auto frame = pipe.Read();
    if (!frame || frame->type == kBye) return 0;
    if (frame->type == kHello) {
      Writer w(kHello);
      w.PutU32(kMagic);
      w.PutU32(kVersion);
      w.PutU32(script.capabilities);
      w.PutStr("scripted");
      w.PutStr("vllm");
      pipe.Send(w.Finish());
      continue;
    }
    const uint32_t type = frame->type;
    if (type != kSample && type != kSampleReplicated && type != kSampleSteps) Die("unexpected " + TypeName(type));
    WireSample req;
    if (const std::string why = ReadSample(frame->payload, type, req); !why.empty()) Die(why);
    Log(script, TypeName(type) + " rows " + std::to_string(req.rows) + " vocab " + std::to_string(req.vocab) +
                    (type == kSampleReplicated ? " replicas " + std::to_string(req.replicas) : "") +
                    (type == kSampleSteps ? " steps " + std::to_string(req.steps) : "") + " bytes " +
                    std::to_string(frame->payload.size()));
    pipe.Send(Draw(script, **exact, req, type));
  }
}

}  // namespace
}  // namespace samplecheck::harness

int main(int argc, char** argv) {
  if (argc < 4 || argc > 5) {
    std::fprintf(stderr, "usage: %s <capabilities> <log> exact|fingerprint [short|long|out-of-range|histogram]\n",
                 argv[0]);
    return 2;
  }
  samplecheck::harness::Script script;
  script.capabilities = static_cast<uint32_t>(std::strtoul(argv[1], nullptr, 10));
  script.log = argv[2];
  script.exact = std::string(argv[3]) == "exact";
  if (argc == 5) script.fault = argv[4];
  return samplecheck::harness::Serve(script);
}
