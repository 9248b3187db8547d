// Sources of processed log-probabilities for the replay campaign (docs/replay.md): an inference engine's
// `processed_logprobs` (the truncated, renormalized distribution it sampled from) or an RL trainer's replay of that
// truncation on its own logits. A source answers a batch of rows at once (engines switch paths by batch size) and
// may take one label per row (the token the engine sampled), which a trainer's label guard keeps finite.
//
// Kinds (`--engine` / `--trainer` of `samplecheck replay`; ReplaySourceKinds() is the one table, of kinds.h):
//   exact[:profile]         the reference's processed distribution (reference/distribution.h) as fp32 logprobs;
//                           with labels, the label guard of trainers: a label outside the kept set is restored
//                           and the row renormalized over kept + {label} (reported as guarded)
//   fault:<name>[:profile]  the same with one planted replay fault (ReplayFaults(): top-p on the un-renormalized
//                           mass, ties cut differently at k, no label guard, temperature after the masks, no
//                           renormalization)
//   cuda[:profile]          samplecheck's CUDA kernels: ComputeProcessedDistribution's logprobs, the label kernel
//                           (ComputeLabelLogprobs, keep_label_in_kept_set) for the guard; bf16 rows are sent to the
//                           kernels as bf16 (needs a CUDA build and a GPU)
//   sampler:<sampler spec>  any --sampler with a processed distribution (plugin:, process: through PROCESSED,
//                           mutant:, cuda): row by row, no labels
//   process:<command>       a process answering LOGPROBS_BATCH (docs/process-protocol.md): a batch with its labels
//                           and dtype in one message
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "samplecheck/core/error.h"
#include "samplecheck/reference/params.h"
#include "samplecheck/reference/profile.h"
#include "samplecheck/samplers/kinds.h"
#include "samplecheck/samplers/sampler.h"

namespace samplecheck::harness {

// What the logits of a replay batch are. kBFloat16: every value is a bf16 number (held widened, exactly, in fp32);
// a source may run its bf16 path on them (a trainer recomputing logits in bf16).
enum class ReplayDType { kFloat32, kBFloat16 };
const char* ReplayDTypeName(ReplayDType dtype);

inline constexpr int32_t kNoLabel = -1;

struct ReplayBatch {
  RowBatch rows;
  ReplayDType dtype = ReplayDType::kFloat32;
  std::span<const SamplingParams> params;  // one per row
  std::span<const int32_t> labels;         // one per row (kNoLabel: none), or empty: no labels
};

struct ReplayRows {
  std::vector<float> logprobs;  // rows x vocab, row-major: -inf outside the kept set, finite inside
  std::vector<uint8_t> guarded; // per row: 1 when the source restored the row's label (a label-guard event)
};

struct ReplayCapabilities {
  bool labels = false;              // takes labels (a trainer with a label guard); others get none
  bool parallel_instances = false;  // several instances may run in parallel threads (CPU sources)
  std::string profile;              // the semantics profile it claims ("" when unknown)
};

class ReplaySource {
 public:
  virtual ~ReplaySource() = default;
  // "exact:vllm", "fault:no-label-guard:vllm", "cuda:vllm", "process:<name>".
  virtual std::string Name() const = 0;
  virtual ReplayCapabilities GetCapabilities() const = 0;
  // The processed logprobs of every row. Errors: kInvalidArgument (parameters the source's semantics reject) and
  // kUnsupported (what it cannot replay, e.g. min-p) fail the whole call before anything is computed; kInvalidRow
  // for a row that cannot be sampled; anything else is the source failing.
  virtual Result<ReplayRows> Logprobs(const ReplayBatch& batch) = 0;
};

// One planted replay fault (the classes of /docs/replay.md "Where it breaks" that trainers' reviews found).
struct ReplayFault {
  std::string name;    // "topp-unrenormalized": `fault:<name>`
  std::string fault;   // one sentence
  std::string source;  // the tracker, seed or review it models
};
const std::vector<ReplayFault>& ReplayFaults();

// A kind of replay source: an entry of the template of kinds.h, whose factory gets the split spec and the judged
// profile (the default of exact, fault and cuda).
using ReplaySourceKind = Kind<std::unique_ptr<ReplaySource>, std::string_view>;
const std::vector<ReplaySourceKind>& ReplaySourceKinds();
// "replay source spec: exact[:profile], fault:<name>[:profile], ..." from the table, for --engine / --trainer help.
std::string ReplaySourceSpecHelp();

// A source by spec under the judged profile (the default of exact, fault and cuda). kInvalidArgument for an
// unknown kind or a malformed spec (the messages of kinds.h, listing the known kinds), an unknown fault or profile
// (the message lists what is known), or a sampler without a processed distribution;
// kUnsupported for cuda without CUDA or a GPU; kPlugin for a process that fails to start or handshake.
Result<std::unique_ptr<ReplaySource>> MakeReplaySource(std::string_view spec, std::string_view profile);

// The row's processed logprobs renormalized over the token set `tokens` (ascending, unique): log w_i - log sum_tokens
// w, w_i = exp((x_i - x_max) / T) in long double (+inf logits: weight 1 each and every finite logit 0; T <= 0: the
// maximal logits of the set share the mass); -inf outside the set. The distribution a source computes when it keeps
// `tokens`, whatever its truncation rule (every profile with renormalized top-p mass): the label guard of trainers
// is this over kept + {label} (prime-rl PR #2601, loss.py:73, 90-91: the label's scaled logit put back after
// masking, then log_softmax), and the campaign judges a side's logprobs over the set it kept.
std::vector<long double> LogprobsOver(std::span<const float> row, const SamplingParams& params,
                                      std::span<const int32_t> tokens);

}  // namespace samplecheck::harness
