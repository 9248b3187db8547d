// The sampler-under-test interface. The exact CPU sampler, the CUDA kernels, the mutants, plugins and external
// processes all implement it, so the same campaigns and property suites run against every one of them.
//
// Capabilities:
//   Sample                 required: one token per row of a batch, per-row parameters
//   ProcessedDistribution  optional: the renormalized probabilities the sampler draws from, for one row
//   CountDraws             optional fast path: N draws of one row counted into a histogram (a GPU sampler keeps
//                          the histogram on the device); the default loops over Sample
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "samplecheck/core/error.h"
#include "samplecheck/reference/params.h"
#include "samplecheck/reference/profile.h"

namespace samplecheck::harness {

// Marker a sampler returns for a row it cannot sample (NaN logits, every logit -inf). Never token 0.
inline constexpr int32_t kInvalidToken = -1;

// A batch of fp32 logits rows in host memory. Row r starts at logits + r * row_stride.
struct RowBatch {
  const float* logits = nullptr;
  int64_t rows = 0;
  int64_t vocab = 0;
  int64_t row_stride = 0;  // >= vocab

  std::span<const float> Row(int64_t r) const { return {logits + r * row_stride, static_cast<size_t>(vocab)}; }
};

struct Capabilities {
  bool processed_distribution = false;
  bool count_draws = false;      // a native fast path (the default CountDraws always works)
  bool deterministic = true;     // same (seed, offset) gives the same token
  // CountDraws draws the profile's distribution on another of the engine's paths (its unseeded production draw,
  // say), not the tokens Sample gives at the same (seed, offset): the agreement check is then the two-sample test,
  // while `deterministic` still holds Sample to its stream checks (seed dependence, determinism, batch invariance).
  bool count_distributional = false;
  bool parallel_instances = false;  // several instances may draw in parallel threads (CPU samplers); a campaign
                                    // then runs one per core
  bool gpu = false;                 // runs on a GPU: a large replicated batch costs little (the agreement check of
                                    // a campaign then samples 2^16 draws of every row, whatever its size)
  std::string profile;           // the semantics profile the sampler claims ("" when unknown: `identify` finds it)
  // The sampler approximates its profile by design (a lossy fast path): a campaign then states its measured distance
  // to the profile instead of a pass/fail of equality, and `gate --max-tv T` judges that distance (docs/campaigns.md,
  // "Lossy samplers"). `--sampler lossy:<spec>` declares it for any sampler.
  bool lossy = false;
};

class Sampler {
 public:
  virtual ~Sampler() = default;

  // A short name for reports: "exact:vllm", "cuda:hf", "mutant:no-renorm", "plugin:libfoo.so".
  virtual std::string Name() const = 0;
  virtual Capabilities GetCapabilities() const = 0;

  // One token per row into tokens (size batch.rows); params has batch.rows entries. A row that cannot be sampled
  // gets kInvalidToken; invalid params fail the whole call with kInvalidArgument before anything is drawn.
  virtual Status Sample(const RowBatch& batch, std::span<const SamplingParams> params, std::span<int32_t> tokens) = 0;

  // The processed distribution of one row (size vocab, 0 outside the kept set). Default: kUnsupported.
  virtual Result<std::vector<double>> ProcessedDistribution(std::span<const float> row, const SamplingParams& params);

  // Adds `draws` draws of one row to histogram (size vocab); draw i uses params with offset params.offset + i.
  // *invalid_draws counts draws that returned kInvalidToken or an id outside [0, vocab) (a failing sampler,
  // never a crash). Default: batches of Sample over the replicated row.
  virtual Status CountDraws(std::span<const float> row, const SamplingParams& params, uint64_t draws,
                            std::span<uint64_t> histogram, uint64_t* invalid_draws);

  // tokens.size() draws of one row through the sampler's sampling call (Sample's path, never a counting fast path):
  // token i is the draw at offset params.offset + i, kInvalidToken where the row cannot be sampled. What the
  // campaign's agreement check compares the counting fast path with. Default: batches of Sample over the replicated
  // row; a sampler whose sampling call can repeat one row without copying it overrides it (the cuda sampler: index
  // indirection; a process: SampleReplicated of the row, which crosses once to a client that answers
  // SAMPLE_REPLICATED).
  virtual Status SampleRepeated(std::span<const float> row, const SamplingParams& params, std::span<int32_t> tokens);

  // Sample on `replicas` copies of a batch: call row k * rows.rows + r is logits row r of `rows`, with
  // params[k * rows.rows + r] (params and tokens have replicas * rows.rows entries). The campaign's batch cases draw
  // through it. Default: the copies are made on the host and passed to Sample in batches of whole copies, at most
  // 4096 rows and 64 MiB of copied logits each (at least one copy; a campaign's calls stay within one batch); a
  // sampler whose device can read rows through an index (cuda) sends each row once, and a process whose client
  // answers SAMPLE_REPLICATED (the plugin host) sends each row once with its copy count.
  virtual Status SampleReplicated(const RowBatch& rows, uint64_t replicas, std::span<const SamplingParams> params,
                                  std::span<int32_t> tokens);

  // `steps` consecutive Sample calls of one batch, as an engine's decode loop makes them: call s is Sample(batch,
  // params with every offset + s), its tokens at tokens[s * batch.rows + r] (tokens has steps * batch.rows entries).
  // The campaign's sequential draws go through it: a decode batch's steps, a row drawn alone call by call, a fresh
  // instance's first calls. Default: the Sample calls, one after the other; a process whose client answers
  // SAMPLE_STEPS (Python's serve, the plugin host) sends the batch once for many steps and its client makes the same
  // calls, so the draws are those of the calls one by one without a round trip each.
  virtual Status SampleSteps(const RowBatch& batch, std::span<const SamplingParams> params, uint64_t steps,
                             std::span<int32_t> tokens);
};

// Adds tokens to histogram (size vocab); a token outside [0, vocab) (kInvalidToken included) counts in *invalid.
void AddToHistogram(std::span<const int32_t> tokens, std::span<uint64_t> histogram, uint64_t* invalid);

// The argument checks of the Sampler contract, shared by the samplers. Each error is kInvalidArgument and names
// the value and what is allowed.
// The batch is well formed (rows >= 0, row_stride >= vocab >= min_vocab, logits set when rows > 0) and there is
// one params and one token slot per row.
Status CheckBatchShape(const RowBatch& batch, size_t params, size_t token_slots, int64_t min_vocab = 0);
// SampleReplicated's arguments: `rows` is well formed (CheckBatchShape) and there are replicas * rows.rows params and
// token slots (no 2^64 wrap).
Status CheckReplicatedArgs(const RowBatch& rows, uint64_t replicas, size_t params, size_t token_slots,
                           int64_t min_vocab = 0);
// SampleSteps' arguments: `batch` is well formed (CheckBatchShape with one params per row) and there are steps *
// batch.rows token slots (no 2^64 wrap).
Status CheckStepsArgs(const RowBatch& batch, size_t params, uint64_t steps, size_t token_slots, int64_t min_vocab = 0);
// Every params entry is valid for `profile` (the first bad one is named "row <i>").
Status CheckParams(std::span<const SamplingParams> params, const Profile& profile);
// CheckBatchShape, and every row's params are valid for `profile` (the first bad row is named).
Status CheckSampleArgs(const RowBatch& batch, std::span<const SamplingParams> params, size_t token_slots,
                       const Profile& profile);
// CountDraws: the histogram has one cell per token and params are valid for `profile`.
Status CheckCountDrawsArgs(std::span<const float> row, const SamplingParams& params, size_t histogram_cells,
                           const Profile& profile);

}  // namespace samplecheck::harness
