// samplecheck::kernels — production CUDA samplers for LLM token sampling: temperature, min-p, top-k and top-p
// from logits, one token per row; the processed (renormalized) distribution; a device fast path that counts many
// draws of one row. Plain structs, a C++ host API on cudaStream_t; nothing else of samplecheck is used.
//
// Semantics: exactly the profiles `vllm` and `hf` as reference/ defines them (reference/include/samplecheck/
// reference/profile.h and docs/semantics.md are the single source of truth; docs/kernels.md says how each pass
// realizes them). In short, after temperature:
//   vllm: min-p (relative to the max of the full softmax) -> top-k (ties with the k-th value kept) -> top-p on the
//         renormalized distribution (keep a token iff the mass strictly above it is < top_p; tokens tied with the
//         crossing token are kept) ; temperature < 1e-5 is greedy.
//   hf:   top-k (ties kept) -> top-p on the top-k renormalized distribution (same rule) -> min-p ; T == 0 and
//         top_p == 0 are greedy.
// Greedy = the lowest token id among the tied maxima of the raw logits.
//
// Draw: one uniform per row, u = Philox4x32-10(counter {lo32(offset), hi32(offset), 0, 0}, key {lo32(seed),
// hi32(seed)}) as reference/philox.h defines; the token is the first kept token in ascending id order whose
// inclusive cumulative mass exceeds u * (kept mass). A row's token depends only on its logits, its parameters,
// its seed and its offset (batch invariance by construction); the masses are summed in 2^-42 fixed point, so the
// result is bit-for-bit deterministic.
//
// Rows that cannot be sampled (a NaN logit, or every logit -inf) get token kInvalidToken (-1) and status
// kInvalidRow: never token 0, never an id >= vocab, never a hang.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>
#include <string>
#include <string_view>

namespace samplecheck::kernels {

// ---- Errors are values --------------------------------------------------------------------------------------
enum class ErrorCode { kOk = 0, kInvalidArgument, kCuda };

struct Status {
  ErrorCode code = ErrorCode::kOk;
  std::string message;  // names the bad value and the allowed range: "top_p = 1.5 is outside (0, 1] for profile vllm"

  bool ok() const { return code == ErrorCode::kOk; }
  static Status Ok() { return {}; }
};

// ---- Profiles --------------------------------------------------------------------------------------------------
enum class Profile { kVllm, kHf };

std::string_view ProfileName(Profile profile);
// false when `name` is neither "vllm" nor "hf".
bool ParseProfile(std::string_view name, Profile* profile);

// ---- Inputs ----------------------------------------------------------------------------------------------------
enum class DType { kFloat32, kBFloat16, kFloat16 };

// Logits in device memory. Batch row b reads logits row (row_indices ? row_indices[b] : b), which starts at
// data + row * row_stride elements. 64-bit index math throughout.
struct LogitsBatch {
  DType dtype = DType::kFloat32;
  const void* data = nullptr;            // device
  int64_t vocab = 0;                     // 1 .. kMaxVocab
  int64_t row_stride = 0;                // elements, >= vocab (0 = vocab)
  int64_t logits_rows = 0;               // rows stored in data (bound for row_indices; 0 = batch)
  int64_t batch = 0;                     // rows to sample, 1 .. kMaxBatch
  const int32_t* row_indices = nullptr;  // device, `batch` entries, or null for the identity. An index outside
                                         // [0, logits_rows) makes that row kInvalidIndex.
};

inline constexpr int64_t kMaxVocab = int64_t{1} << 20;  // 1,048,576
inline constexpr int64_t kMaxBatch = 1 << 20;

// A per-row parameter: a host array of `batch` values (indexed by batch row b, never by the logits row), or the
// scalar when values is null. Host arrays are validated on the host before anything is launched.
template <class T>
struct PerRow {
  T scalar{};
  const T* values = nullptr;

  T At(int64_t b) const { return values ? values[b] : scalar; }
};

struct SamplingParams {
  PerRow<double> temperature{1.0};  // vllm: [0, 2], < 1e-5 greedy. hf: [0, inf), 0 greedy.
  PerRow<int64_t> top_k{-1};        // -1 and 0 disable; k >= vocab is a no-op
  PerRow<double> top_p{1.0};        // vllm: (0, 1]; hf: [0, 1], 0 greedy; 1 disables
  PerRow<double> min_p{0.0};        // [0, 1]; 0 disables
  PerRow<uint64_t> seed{0};
  PerRow<uint64_t> offset{0};
};

// One row's parameters (CountDraws, ValidateRowParams).
struct RowParams {
  double temperature = 1.0;
  int64_t top_k = -1;
  double top_p = 1.0;
  double min_p = 0.0;
  uint64_t seed = 0;
  uint64_t offset = 0;
};

inline RowParams RowParamsAt(const SamplingParams& p, int64_t b) {
  return {p.temperature.At(b), p.top_k.At(b), p.top_p.At(b), p.min_p.At(b), p.seed.At(b), p.offset.At(b)};
}

// ---- Per-row outcome -------------------------------------------------------------------------------------------
inline constexpr int32_t kInvalidToken = -1;

enum RowStatus : int32_t {
  kRowSampled = 0,    // drawn from the processed distribution
  kRowGreedy = 1,     // the profile's greedy path (argmax, lowest id among ties)
  kRowInvalid = 2,    // a NaN logit, or every logit -inf: token kInvalidToken
  kRowBadIndex = 3,   // row_indices[b] outside [0, logits_rows): token kInvalidToken
  kRowBadParams = 4,  // DeviceSamplingParams only: the row's device-resident parameters are outside the profile's
                      // ranges (the checks of ValidateRowParams): token kInvalidToken
};

// ---- Validation ------------------------------------------------------------------------------------------------
// Ok, or kInvalidArgument naming the first bad value (temperature, top_k, top_p, min_p order) and its range.
Status ValidateRowParams(const RowParams& params, Profile profile);
// Validates shapes and every row's parameters (row b named in the message).
Status ValidateBatch(const LogitsBatch& logits, const SamplingParams& params, Profile profile);

// ---- Sampling --------------------------------------------------------------------------------------------------
// One token per batch row into tokens (device, batch entries); row_status (device, optional) gets a RowStatus.
// Asynchronous on `stream`; returns kInvalidArgument before launching anything when the inputs are invalid.
Status SampleFromLogits(const LogitsBatch& logits, const SamplingParams& params, Profile profile, int32_t* tokens,
                        int32_t* row_status, cudaStream_t stream);

// Per-row parameters resident in device memory, for a decode step captured once in a CUDA graph and replayed:
// the call reads no host memory and allocates nothing, so the caller updates the arrays (e.g. advances `offset`)
// on the device between replays. Each pointer is a device array of `batch` values indexed by batch row b, or null
// for the field of `scalar`. The scalars in use are validated on the host (kInvalidArgument before any launch);
// the device values cannot be, so the kernel checks each row against the same ranges and a row outside them
// gets kInvalidToken and kRowBadParams (never a draw with out-of-range parameters).
struct DeviceSamplingParams {
  RowParams scalar;
  const double* temperature = nullptr;
  const int64_t* top_k = nullptr;
  const double* top_p = nullptr;
  const double* min_p = nullptr;
  const uint64_t* seed = nullptr;
  const uint64_t* offset = nullptr;
};

// SampleFromLogits with device-resident parameters (same semantics, same tokens as the host-array overload for
// the same values).
Status SampleFromLogits(const LogitsBatch& logits, const DeviceSamplingParams& params, Profile profile,
                        int32_t* tokens, int32_t* row_status, cudaStream_t stream);

// ---- Processed distribution ------------------------------------------------------------------------------------
// Any output may be null. Row b of each output starts at b * out_stride (0 = vocab).
//   probs:         renormalized probability of each token, 0 outside the kept set
//   logprobs:      its natural log, -inf outside the kept set (finite for every kept token, however small)
//   masked_logits: logits / temperature inside the kept set, -inf outside (greedy rows: the raw max logit at the
//                  greedy token, -inf elsewhere)
// Invalid rows are filled with NaN (probs, logprobs, masked_logits) and marked in row_status.
struct ProcessedOutputs {
  float* probs = nullptr;
  float* logprobs = nullptr;
  float* masked_logits = nullptr;
  int64_t out_stride = 0;
  int32_t* row_status = nullptr;  // device, batch entries, optional
};

Status ComputeProcessedDistribution(const LogitsBatch& logits, const SamplingParams& params, Profile profile,
                                    const ProcessedOutputs& outputs, cudaStream_t stream);

// Log-probabilities of given label tokens under the processed distribution (vLLM processed_logprobs; what an RL
// trainer needs to replay the sampler's truncation). labels: device, batch x labels_per_row token ids.
// A label outside the kept set (e.g. bf16 ranking jitter between engine and trainer) is reported in label_status
// as kLabelOutsideKeptSet, never as a silent -inf:
//   keep_label_in_kept_set = false: prob 0, logprob -inf;
//   keep_label_in_kept_set = true:  the label's own logit is added to the kept set (as trainers do): logprob =
//                                   z_label - log(kept mass + e_label), finite.
enum LabelStatus : int32_t {
  kLabelKept = 0,
  kLabelOutsideKeptSet = 1,
  kLabelOutOfRange = 2,  // label id outside [0, vocab): NaN outputs
  kLabelRowInvalid = 3,  // the row is invalid (see RowStatus): NaN outputs
};

struct LabelQuery {
  const int32_t* labels = nullptr;  // device
  int64_t labels_per_row = 1;
  bool keep_label_in_kept_set = false;
};

struct LabelOutputs {
  float* logprobs = nullptr;       // device, batch x labels_per_row (optional)
  float* probs = nullptr;          // device, batch x labels_per_row (optional)
  int32_t* label_status = nullptr; // device, batch x labels_per_row (optional)
  int32_t* row_status = nullptr;   // device, batch (optional)
};

Status ComputeLabelLogprobs(const LogitsBatch& logits, const SamplingParams& params, Profile profile,
                            const LabelQuery& query, const LabelOutputs& outputs, cudaStream_t stream);

// ---- Fast path: many draws of one row --------------------------------------------------------------------------
// Adds `draws` draws of one device row to histogram (device, vocab uint64 cells); draw i uses offset
// params.offset + i. The row's processed distribution and its CDF (in token-id order) are computed once on the
// device; each draw is one Philox block and a binary search. The same tokens as SampleFromLogits with offset + i.
// row_status (device, 1 entry, optional): an invalid row adds nothing to the histogram.
struct DeviceRow {
  DType dtype = DType::kFloat32;
  const void* data = nullptr;  // device, vocab elements
  int64_t vocab = 0;
};

Status CountDraws(const DeviceRow& row, const RowParams& params, Profile profile, uint64_t draws,
                  uint64_t* histogram, int32_t* row_status, cudaStream_t stream);

}  // namespace samplecheck::kernels
