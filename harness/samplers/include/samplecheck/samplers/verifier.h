// The speculative-decoding verifier under test (docs/speculative.md): given target logits (g + 1 rows), g draft
// tokens and the draft's distribution (probabilities, logits or one-hot), a seed and an offset, a verifier returns
// the emitted tokens and the accepted length. The exact CPU verifier (the reference's VerifyChain), the mutant
// verifiers, plugins (the optional export samplecheck_plugin_verify_chain of plugin_abi.h, ABI version 2) and
// processes (the VERIFY message of docs/process-protocol.md) implement it; the spec campaigns
// (harness/campaign/spec_campaign.h) judge any of them against the laws of reference/speculative.h.
//
// The uniform stream of a request is the Philox discipline of reference/speculative.h: counters offset .. offset + g,
// position j's coin from words 2, 3 and its draw uniform from words 0, 1 of the block at offset + j - 1. A verifier
// that claims scripted_uniforms takes, per request, 2 (g + 1) values instead (coin, draw per position), so the
// campaign can probe u = 0 and u at the p/q edge.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "samplecheck/core/error.h"
#include "samplecheck/reference/params.h"
#include "samplecheck/reference/speculative.h"
#include "samplecheck/samplers/kinds.h"

namespace samplecheck::harness {

// The most draft positions of one request (g); a larger g is kInvalidArgument.
inline constexpr int32_t kMaxSpecDraft = 16;

struct VerifyRequest {
  const float* target = nullptr;    // g + 1 rows of vocab fp32 logits, row j at target + j * vocab
  int64_t vocab = 0;
  int32_t g = 0;                    // draft positions, 0..kMaxSpecDraft
  const int32_t* draft_tokens = nullptr;  // g tokens
  DraftForm draft_form = DraftForm::kProbabilities;
  const float* draft = nullptr;     // g rows of vocab: probabilities (kProbabilities) or logits (kLogits); unused
                                    // for kOneHot
  SamplingParams params;            // the target's processing, and the request's seed and offset
  SamplingParams draft_params;      // kLogits: the draft's processing (seed, offset unused)
  std::span<const double> uniforms; // empty: Philox; else the scripted stream, 2 (g + 1) values in [0, 1)
};

struct VerifyResult {
  int32_t accepted = -1;                          // 0..g; -1: not verified
  std::array<int32_t, kMaxSpecDraft + 1> emitted; // emitted[0 .. accepted]: accepted drafts, then the residual or
                                                  // bonus token; kInvalidToken (-1) where the target row cannot be
                                                  // sampled
};

struct VerifierCapabilities {
  bool deterministic = true;       // same (seed, offset) and inputs give the same result
  bool scripted_uniforms = false;  // honours VerifyRequest::uniforms
  bool draft_logits = true;        // takes DraftForm::kLogits
  bool parallel_instances = false; // instances may verify in parallel threads
  std::string profile;             // the semantics profile of its target processing
  bool lossy = false;              // approximates the laws by design (Medusa typical acceptance, relaxed thresholds):
                                   // its campaigns state a distance, not a verdict (`--verifier lossy:<spec>`)
};

class Verifier {
 public:
  virtual ~Verifier() = default;
  virtual std::string Name() const = 0;
  virtual VerifierCapabilities GetCapabilities() const = 0;
  // One result per request of a batch (requests may differ in g, vocab, form, parameters). Invalid input fails the
  // whole call with kInvalidArgument naming the request and the value.
  virtual Status Verify(std::span<const VerifyRequest> requests, std::span<VerifyResult> results) = 0;
  // results.size() trials of one request: trial i has draft tokens draft_tokens[i g .. i g + g) and offset
  // request.offset + i (g + 1) (the counters of one trial do not overlap the next's). Default: batches of Verify.
  virtual Status VerifyRepeated(const VerifyRequest& request, std::span<const int32_t> draft_tokens,
                                std::span<VerifyResult> results);
};

// The shape and value checks every verifier applies (kInvalidArgument naming the request and the value).
Status CheckVerifyRequests(std::span<const VerifyRequest> requests, size_t result_slots);

// The checks a VerifyRepeated override starts with: draft_tokens holds trials * g tokens, the request with the first
// trial's tokens (*first) passes CheckVerifyRequests, and every trial's tokens are inside the vocabulary. With no
// trials it returns Ok and leaves *first alone.
Status CheckVerifyRepeated(const VerifyRequest& request, std::span<const int32_t> draft_tokens, size_t trials,
                           VerifyRequest* first);

// `--verifier exact[:profile]`: the reference's own verifier (reference/speculative.h, VerifyChain).
Result<std::unique_ptr<Verifier>> MakeExactVerifier(std::string_view profile);

// The verifier mutants: the exact verifier with one bug class of docs/speculative.md each.
struct VerifierMutantInfo {
  std::string name;
  std::string bug_class;
  std::string description;
};
const std::vector<VerifierMutantInfo>& VerifierMutants();
Result<std::unique_ptr<Verifier>> MakeVerifierMutant(std::string_view name, std::string_view profile);

// A kind of `--verifier <kind>[:<arg>]`, as `samplecheck list --verifiers` prints it: an entry of the template of
// kinds.h, whose factory gets the split spec and the judged profile (the default of exact and cuda).
using VerifierKind = Kind<std::unique_ptr<Verifier>, std::string_view>;
// Every verifier kind, in the order `list` prints them: the one table MakeVerifier, its help and `list` read.
const std::vector<VerifierKind>& VerifierKinds();

// `--verifier <spec>`: exact[:profile], cuda[:profile], mutant:<name>, plugin:<lib.so>[:config],
// plugin-inproc:<lib.so>[:config], process:<command>, lossy:<spec>. kInvalidArgument for an unknown kind or a
// malformed spec (the messages of kinds.h), an unknown profile or mutant; kUnsupported for cuda without CUDA or a
// GPU; kPlugin for a plugin or process that fails to load or to handshake, or cannot verify.
Result<std::unique_ptr<Verifier>> MakeVerifier(std::string_view spec, std::string_view profile);
// "verifier spec: exact[:profile], cuda[:profile], ..." from the table.
std::string VerifierSpecHelp();

}  // namespace samplecheck::harness
