// The semantics profiles of samplecheck, each defined once. docs/semantics.md explains every field of every
// profile and the source line it follows; change a profile here and there together.
#include <limits>
#include <string_view>

#include "samplecheck/reference/profile.h"

namespace samplecheck {
namespace {

constexpr double kUnbounded = std::numeric_limits<double>::infinity();

// --- Numerics: the shapes of the fp32 sums engines form (docs/semantics.md, "Numerics model"). ---------------------
// Each shape is kBlocked {width, combine_depth}: a term passes through at most ceil(n / width) + combine_depth
// roundings (reference/numerics.h).
constexpr double kFp32 = 0x1p-24;  // unit roundoff of fp32

// torch.softmax on CUDA (aten/src/ATen/native/cuda/SoftMax.cu): rows longer than 1024 take cunn_SoftMaxForward,
// one block of up to 1024 threads per row, each thread summing its strided elements in sequence (ilpReduce), then
// blockReduce (a warp-shuffle tree, then the warp totals in the first warp): ceil(n / 1024) + 10. Rows of at most
// 1024 take the persistent warp softmax: each lane sums up to 32 elements, then 5 shuffle levels. 37 covers both.
constexpr SumModel kTorchCudaSoftmaxSum{SumOrder::kBlocked, 1024, 37};
// torch.softmax on CPU (aten/src/ATen/native/cpu/SoftMaxKernel.cpp _vec_softmax_lastdim: vec::reduce_all over
// Vectorized<float>, 8 lanes with AVX2 each summing n / 8 terms in sequence, then 3 horizontal levels) is deeper
// (n / 8 + 3); the CPU cumsum accumulates in double. hf is modelled on CUDA; tests/reference/numerics_test.cpp
// measures the CPU shape against that model (docs/semantics.md).
// torch.cumsum on CUDA over [B, V] rows (aten/src/ATen/native/cuda/ScanUtils.cuh scan_innermost_dim): tiles of
// 2 * num_threads_x elements, a Sklansky scan inside the tile (log2(tile) levels) and the running total of the
// previous tiles added to the tile's first element: ceil(n / tile) + log2(tile) + 1. num_threads_x =
// clamp((9 + log2 V - log2 B) / 2, 4, 9): tile 1024 for B <= V / 512, 256 for B <= V / 32 (B <= 4096 at V = 128256).
// A single row goes through CUB's decoupled look-back scan (tiles of ~2k items: shallower). The tile of 256 is
// the model: it covers every batch an engine runs at V >= 32000.
constexpr SumModel kTorchCudaCumsum{SumOrder::kBlocked, 256, 9};
// FlashInfer's mass above a pivot (include/flashinfer/sampling.cuh TopKTopPSamplingFromProbKernel,
// TopPSamplingFromProbKernel): every thread adds its VEC_SIZE-wide strided loads in sequence
// (threadlocal_aggregate_gt_pivot: ceil(V / (threads * vec)) * vec terms), then cub BlockReduce
// (BLOCK_REDUCE_WARP_REDUCTIONS: 5 shuffle levels, then the warp totals in sequence, up to 31). 1024 threads from
// compute capability 8.0, 512 before: width 512 covers both.
constexpr SumModel kFlashinferMassAbove{SumOrder::kBlocked, 512, 36};
// vLLM Triton top-k/top-p (vllm/v1/sample/ops/topk_topp_triton.py): tl.sum over tiles of BLOCK_SIZE = 8192
// (13 tree levels), the tiles added in sequence (sum_exp_logits; the mass above a pivot accumulates the fp32 tile
// sums in fp64); the split-row pipeline combines up to 32 slices (5 more levels).
constexpr SumModel kTritonTileSum{SumOrder::kBlocked, 8192, 18};
// TensorRT-LLM legacy top-p (samplingTopPKernels.cu, guide): a block-wide prefix scan over the radix-sorted fp32
// probabilities, tile by tile with a running prefix. Modelled as the 256-wide tile scan above.
constexpr SumModel kBlockScan256{SumOrder::kBlocked, 256, 9};

// Each fp32 probability: exp within 2 ulps (CUDA expf, the CPU's vectorized exp), the division or the
// multiplication by 1 / sum 0.5.
constexpr double kProbErrorUlps = 2.5;

// HuggingFace transformers: generation/utils.py _get_logits_processor + generation/logits_process.py
// (TemperatureLogitsWarper, TopKLogitsWarper, TopPLogitsWarper, MinPLogitsWarper).
constexpr Profile kHf{
    .name = "hf",
    .summary = "transformers warpers: T, top-k (ties kept), top-p on the top-k-renormalized p, then min-p",
    .source = "huggingface/transformers src/transformers/generation/logits_process.py (TopKLogitsWarper, "
              "TopPLogitsWarper, MinPLogitsWarper) and generation/utils.py _get_logits_processor, main 2026",
    .order = {Filter::kTopK, Filter::kTopP, Filter::kMinP},
    .top_p_input = TopPInput::kRenormalized,
    .top_k_ties = TopKTies::kKeepTied,
    .top_p_comparison = TopPComparison::kStrict,
    .top_p_ties = TopPTies::kByPosition,
    .top_p_mass = TopPMass::kRenormalize,
    .top_k_input = TopKInput::kLogits,
    .top_p_cumsum = TopPCumsum::kAscending,
    .top_p_input_with_min_p = TopPInput::kRenormalized,
    .top_k_zero_disables = true,
    .top_k_minus_one_disables = true,  // samplecheck's sentinel; HF itself raises for negative top_k
    .greedy_temperature_below = 0.0,
    .greedy_temperature_inclusive = false,
    .top_p_zero_is_greedy = true,  // TopPLogitsWarper(0) keeps min_tokens_to_keep = 1 token
    .top_k_one_is_greedy = false,  // TopKLogitsWarper(1) keeps every token tied with the maximum
    .temperature_zero_allowed = true,  // T == 0 is do_sample=False (greedy); the warper itself raises
    .max_temperature = kUnbounded,
    .numerics = {.unit_roundoff = kFp32, .normalizer = kTorchCudaSoftmaxSum, .top_p_mass = kTorchCudaCumsum,
                 .prob_error_ulps = kProbErrorUlps, .orders_by_probs = false, .pivot_tolerance = 0.0,
                 .summary = "sort by logits; torch.softmax and torch.cumsum (CUDA), ascending, compared with "
                            "1 - top_p (on CPU: 8-lane softmax chains, cumsum in double; measured inside)"},
};

// vLLM v1 Sampler, PyTorch path: vllm/v1/sample/sampler.py + ops/topk_topp_sampler.py apply_top_k_top_p_pytorch,
// MinPLogitsProcessor; validation in vllm/sampling_params.py _verify_args.
constexpr Profile kVllm{
    .name = "vllm",
    .summary = "vLLM v1 PyTorch path: min-p on the full p, top-k (ties kept), strict top-p on the renormalized p",
    .source = "vllm-project/vllm vllm/v1/sample/ops/topk_topp_sampler.py apply_top_k_top_p_pytorch, "
              "vllm/v1/sample/sampler.py, vllm/sampling_params.py _verify_args, main 2026",
    .order = {Filter::kMinP, Filter::kTopK, Filter::kTopP},
    .top_p_input = TopPInput::kRenormalized,
    .top_k_ties = TopKTies::kKeepTied,
    .top_p_comparison = TopPComparison::kStrict,
    .top_p_ties = TopPTies::kByPosition,
    .top_p_mass = TopPMass::kRenormalize,
    .top_k_input = TopKInput::kLogits,
    .top_p_cumsum = TopPCumsum::kAscending,
    .top_p_input_with_min_p = TopPInput::kRenormalized,
    .top_k_zero_disables = true,
    .top_k_minus_one_disables = true,
    .greedy_temperature_below = 1e-5,  // _SAMPLING_EPS
    .greedy_temperature_inclusive = false,
    .top_p_zero_is_greedy = false,  // "top_p must be in (0, 1]"
    .top_k_one_is_greedy = false,
    .temperature_zero_allowed = true,
    .max_temperature = 2.0,  // "temperature must be in [0, 2]"
    .numerics = {.unit_roundoff = kFp32, .normalizer = kTorchCudaSoftmaxSum, .top_p_mass = kTorchCudaCumsum,
                 .prob_error_ulps = kProbErrorUlps, .orders_by_probs = false, .pivot_tolerance = 0.0,
                 .summary = "sort by logits; torch.softmax (CUDA block reduction) and torch.cumsum (CUDA tile "
                            "scan), ascending, compared with 1 - top_p"},
};

// vLLM through its API: SamplingParams.__post_init__ raises 0 < T < 0.01 to 0.01 (_MAX_TEMP) before anything, and
// only then tests T < 1e-5 for greedy (vllm/sampling_params.py:450-459, 492-496 at v0.26.0 = 568afb3a; unchanged in
// main 2026): a request's T in (0, 0.01) samples at T = 0.01, and only T == 0 is greedy. The sampler files behind it
// are profile vllm's (a client that hands T to vllm/v1/sample/sampler.py directly is judged by vllm).
constexpr Profile kVllmApi = [] {
  Profile p = kVllm;
  p.name = "vllm-api";
  p.summary = "vLLM through SamplingParams: as vllm, but 0 < T < 0.01 is raised to 0.01 (greedy only at T = 0)";
  p.source = "vllm-project/vllm vllm/sampling_params.py SamplingParams.__post_init__ (_MAX_TEMP = 1e-2, "
             "_SAMPLING_EPS = 1e-5), v0.26.0 (568afb3a) and main 2026; the sampler files as in vllm";
  p.min_temperature = 1e-2;         // _MAX_TEMP
  p.greedy_temperature_below = 0.0;  // after the floor, T < _SAMPLING_EPS only at T == 0
  return p;
}();

// vLLM v1 Triton path (apply_top_k_top_p_triton, the default with Triton at batch >= 8: topk_topp_sampler.py:345-360
// at v0.26.0 = 568afb3a): exactly k kept, and a row whose finite logits are all equal is not masked at all
// (Profile::tied_row_unmasked).
constexpr Profile kVllmTriton{
    .name = "vllm-triton",
    .summary = "vLLM v1 Triton path: as vllm, but top-k keeps exactly k (tie group trimmed by position); a fully "
               "tied row is kept whole",
    .source = "vllm-project/vllm vllm/v1/sample/ops/topk_topp_triton.py apply_top_k_top_p_triton (the fully tied "
              "row: 285-366, 449-516, 676-677, 830-831 at v0.26.0 = 568afb3a), main 2026",
    .order = {Filter::kMinP, Filter::kTopK, Filter::kTopP},
    .top_p_input = TopPInput::kRenormalized,
    .top_k_ties = TopKTies::kExactK,
    .top_p_comparison = TopPComparison::kStrict,
    .top_p_ties = TopPTies::kByPosition,
    .top_p_mass = TopPMass::kRenormalize,
    .top_k_input = TopKInput::kLogits,
    .top_p_cumsum = TopPCumsum::kDescending,
    .top_p_input_with_min_p = TopPInput::kRenormalized,
    .top_k_zero_disables = true,
    .top_k_minus_one_disables = true,
    .greedy_temperature_below = 1e-5,
    .greedy_temperature_inclusive = false,
    .top_p_zero_is_greedy = false,
    .top_k_one_is_greedy = false,
    .temperature_zero_allowed = true,
    .max_temperature = 2.0,
    .numerics = {.unit_roundoff = kFp32, .normalizer = kTritonTileSum, .top_p_mass = kTritonTileSum,
                 .prob_error_ulps = kProbErrorUlps, .orders_by_probs = true, .pivot_tolerance = 1e-6,
                 .summary = "pivot search on fp32 probabilities exp(x - M) / Z: tile sums of 8192 (tl.sum), "
                            "tiles in sequence; the search stops within 1e-6 relative of the pivot"},
    .tied_row_unmasked = true,  // topk_topp_triton.py:285-366, 830-831 (docs/semantics.md, vllm-triton)
};

// vLLM through its API front end (SamplingParams.__post_init__, as vllm-api) at a batch that takes the Triton path
// (topk_topp_sampler.py:345-360: batch >= 8 with Triton): vllm-triton's filters with vllm-api's temperature floor.
constexpr Profile kVllmApiTriton = [] {
  Profile p = kVllmTriton;
  p.name = "vllm-api-triton";
  p.summary = "vLLM through SamplingParams at batch >= 8: as vllm-triton, but 0 < T < 0.01 is raised to 0.01 "
              "(greedy only at T = 0)";
  p.source = "vllm-project/vllm vllm/sampling_params.py SamplingParams.__post_init__ (_MAX_TEMP = 1e-2, "
             "_SAMPLING_EPS = 1e-5; 450-459, 492-496), vllm/v1/sample/ops/topk_topp_sampler.py apply_top_k_top_p "
             "(345-360) and topk_topp_triton.py apply_top_k_top_p_triton, v0.26.0 (568afb3a)";
  p.min_temperature = kVllmApi.min_temperature;
  p.greedy_temperature_below = kVllmApi.greedy_temperature_below;
  return p;
}();

// FlashInfer top_k_top_p_sampling_from_logits, filter_apply_order="top_k_first" (the rejection path, not the
// radix fast path), with min-p applied first by the engine (min_p_renorm / MinPLogitsProcessor).
constexpr Profile kFlashinferTopkFirst{
    .name = "flashinfer-topk-first",
    .summary = "FlashInfer top_k_first: top-k mask on logits (ties kept), pivot top-p on the renormalized p; "
               "top-k alone a pivot on fp32 p",
    .source = "flashinfer-ai/flashinfer flashinfer/sampling.py top_k_top_p_sampling_from_logits, "
              "include/flashinfer/sampling.cuh TopKMaskLogits / TopPSamplingFromProb, main 2026",
    .order = {Filter::kMinP, Filter::kTopK, Filter::kTopP},
    .top_p_input = TopPInput::kRenormalized,
    .top_k_ties = TopKTies::kKeepTied,
    .top_p_comparison = TopPComparison::kStrict,
    .top_p_ties = TopPTies::kKeepTied,
    .top_p_mass = TopPMass::kRenormalize,
    .top_k_input = TopKInput::kLogits,
    .top_p_cumsum = TopPCumsum::kDescending,
    .top_p_input_with_min_p = TopPInput::kRenormalized,
    .top_k_zero_disables = false,  // k = 0 never accepts a pivot: invalid
    .top_k_minus_one_disables = true,
    .greedy_temperature_below = 0.0,
    .greedy_temperature_inclusive = false,
    .top_p_zero_is_greedy = false,  // top_p = 0 never accepts a pivot: invalid
    .top_k_one_is_greedy = false,
    .temperature_zero_allowed = false,  // softmax(T = 0) is uniform / NaN, not greedy
    .max_temperature = kUnbounded,
    .numerics = {.unit_roundoff = kFp32, .normalizer = kTorchCudaSoftmaxSum, .top_p_mass = kFlashinferMassAbove,
                 .prob_error_ulps = kProbErrorUlps, .orders_by_probs = true, .pivot_tolerance = 0.0,
                 .summary = "torch.softmax of the masked logits; pivot on fp32 probabilities, the mass above it "
                            "a block reduction (per-thread chains of V / threads, warp tree, warp totals)"},
    // top-k alone: vLLM's flashinfer_sample calls top_k_sampling_from_probs (TopKSamplingFromProb, a pivot on the
    // fp32 probabilities, ties in fp32 kept), not the logits mask of top_k_top_p_sampling_from_logits.
    .top_k_input_without_top_p = TopKInput::kProbs,
};

// FlashInfer filter_apply_order="joint" / top_k_top_p_sampling_from_probs: top-k and top-p on the same p.
constexpr Profile kFlashinferJoint{
    .name = "flashinfer-joint",
    .summary = "FlashInfer joint: pivot top-k (ties kept) and pivot top-p (ties kept) on the same p, intersected",
    .source = "flashinfer-ai/flashinfer include/flashinfer/sampling.cuh TopKTopPSamplingFromProbKernel, main 2026",
    .order = {Filter::kMinP, Filter::kTopK, Filter::kTopP},
    .top_p_input = TopPInput::kFull,
    .top_k_ties = TopKTies::kKeepTied,
    .top_p_comparison = TopPComparison::kStrict,
    .top_p_ties = TopPTies::kKeepTied,
    .top_p_mass = TopPMass::kRenormalize,
    .top_k_input = TopKInput::kProbs,
    .top_p_cumsum = TopPCumsum::kDescending,
    .top_p_input_with_min_p = TopPInput::kFull,
    .top_k_zero_disables = false,
    .top_k_minus_one_disables = true,
    .greedy_temperature_below = 0.0,
    .greedy_temperature_inclusive = false,
    .top_p_zero_is_greedy = false,
    .top_k_one_is_greedy = false,
    .temperature_zero_allowed = false,
    .max_temperature = kUnbounded,
    .numerics = {.unit_roundoff = kFp32, .normalizer = kTorchCudaSoftmaxSum, .top_p_mass = kFlashinferMassAbove,
                 .prob_error_ulps = kProbErrorUlps, .orders_by_probs = true, .pivot_tolerance = 0.0,
                 .summary = "torch.softmax; pivot on fp32 probabilities, the mass above it a block reduction "
                            "(per-thread chains of V / threads, warp tree, warp totals)"},
};

// TensorRT-LLM PyTorch backend TorchSampler: sampling_utils.py top_k_top_p_sampling_batch (vanilla path),
// min-p first ("vLLM semantics") as in _compute_probs / min_p_renorm_probs.
constexpr Profile kTrtllmTorch{
    .name = "trtllm-torch",
    .summary = "TensorRT-LLM TorchSampler: min-p first, top-k (ties kept), top-p exclusive cumsum < p, renormalized",
    .source = "NVIDIA/TensorRT-LLM tensorrt_llm/_torch/pyexecutor/sampling_utils.py top_k_top_p_sampling_batch, "
              "resolve_sampling_strategy, GREEDY_TEMPERATURE_THRESHOLD, main 2026",
    .order = {Filter::kMinP, Filter::kTopK, Filter::kTopP},
    .top_p_input = TopPInput::kRenormalized,
    .top_k_ties = TopKTies::kKeepTied,
    .top_p_comparison = TopPComparison::kStrict,
    .top_p_ties = TopPTies::kByPosition,
    .top_p_mass = TopPMass::kRenormalize,
    .top_k_input = TopKInput::kLogits,
    .top_p_cumsum = TopPCumsum::kDescending,
    .top_p_input_with_min_p = TopPInput::kRenormalized,
    .top_k_zero_disables = true,
    .top_k_minus_one_disables = true,
    .greedy_temperature_below = 1e-4,  // GREEDY_TEMPERATURE_THRESHOLD: T <= 1e-4 is greedy
    .greedy_temperature_inclusive = true,
    .top_p_zero_is_greedy = true,
    .top_k_one_is_greedy = true,
    .temperature_zero_allowed = true,
    .max_temperature = kUnbounded,
    .numerics = {.unit_roundoff = kFp32, .normalizer = kTorchCudaSoftmaxSum, .top_p_mass = kTorchCudaCumsum,
                 .prob_error_ulps = kProbErrorUlps, .orders_by_probs = false, .pivot_tolerance = 0.0,
                 .summary = "sort by logits; torch.softmax and torch.cumsum (CUDA), descending, compared with "
                            "top_p"},
};

// TensorRT-LLM legacy CUDA kernels (FasterTransformer lineage): exactly k, and a CDF truncated at top_p.
constexpr Profile kTrtllmCuda{
    .name = "trtllm-cuda",
    .summary = "TensorRT-LLM legacy kernels: exactly k; top-p draws from the CDF truncated at top_p (not nucleus)",
    .source = "NVIDIA/TensorRT-LLM cpp/tensorrt_llm/kernels/samplingTopKKernels.cu, samplingTopPKernels.cu, "
              "main 2026 (read through the field guide; see docs/semantics.md)",
    .order = {Filter::kMinP, Filter::kTopK, Filter::kTopP},
    .top_p_input = TopPInput::kRenormalized,
    .top_k_ties = TopKTies::kExactK,
    .top_p_comparison = TopPComparison::kStrict,
    .top_p_ties = TopPTies::kByPosition,
    .top_p_mass = TopPMass::kTruncatedCdf,
    .top_k_input = TopKInput::kLogits,
    .top_p_cumsum = TopPCumsum::kDescending,
    .top_p_input_with_min_p = TopPInput::kRenormalized,
    .top_k_zero_disables = true,
    .top_k_minus_one_disables = true,
    .greedy_temperature_below = 0.0,
    .greedy_temperature_inclusive = false,
    .top_p_zero_is_greedy = true,
    .top_k_one_is_greedy = true,
    .temperature_zero_allowed = true,
    .max_temperature = kUnbounded,
    .numerics = {.unit_roundoff = kFp32, .normalizer = kTorchCudaSoftmaxSum, .top_p_mass = kBlockScan256,
                 .prob_error_ulps = kProbErrorUlps, .orders_by_probs = true, .pivot_tolerance = 0.0,
                 .summary = "radix sort of fp32 probabilities, block-wide prefix scan (guide: not re-read)"},
};

// SGLang PyTorch backend: sampler.py top_k_top_p_min_p_sampling_from_probs_torch.
constexpr Profile kSglangTorch{
    .name = "sglang-torch",
    .summary = "SGLang torch: exactly k, non-strict top-p on the full p, min-p on the full p, intersected",
    .source = "sgl-project/sglang python/sglang/srt/layers/sampler.py top_k_top_p_min_p_sampling_from_probs_torch, "
              "sampling/sampling_params.py verify, main 2026",
    .order = {Filter::kTopK, Filter::kTopP, Filter::kMinP},
    .top_p_input = TopPInput::kFull,
    .top_k_ties = TopKTies::kExactK,
    .top_p_comparison = TopPComparison::kNonStrict,
    .top_p_ties = TopPTies::kByPosition,
    .top_p_mass = TopPMass::kRenormalize,
    .top_k_input = TopKInput::kProbs,
    .top_p_cumsum = TopPCumsum::kDescending,
    .top_p_input_with_min_p = TopPInput::kFull,
    .top_k_zero_disables = false,  // "top_k must be -1 (disable), or at least 1"
    .top_k_minus_one_disables = true,
    .greedy_temperature_below = 1e-6,  // _SAMPLING_EPS: T < 1e-6 becomes top_k = 1
    .greedy_temperature_inclusive = false,
    .top_p_zero_is_greedy = false,
    .top_k_one_is_greedy = true,
    .temperature_zero_allowed = true,
    .max_temperature = kUnbounded,
    .numerics = {.unit_roundoff = kFp32, .normalizer = kTorchCudaSoftmaxSum, .top_p_mass = kTorchCudaCumsum,
                 .prob_error_ulps = kProbErrorUlps, .orders_by_probs = true, .pivot_tolerance = 0.0,
                 .summary = "torch.softmax, torch.sort of fp32 probabilities, torch.cumsum (CUDA), descending"},
};

// SGLang FlashInfer backend: joint top-k/top-p without min-p; top_k_renorm -> top_p_renorm -> min-p with it.
constexpr Profile kSglangFlashinfer{
    .name = "sglang-flashinfer",
    .summary = "SGLang FlashInfer: joint pivot top-k/top-p; with min-p: top-k, top-p renormalized, then min-p",
    .source = "sgl-project/sglang python/sglang/srt/layers/sampler.py Sampler.forward (flashinfer backend), main 2026",
    .order = {Filter::kTopK, Filter::kTopP, Filter::kMinP},
    .top_p_input = TopPInput::kFull,
    .top_k_ties = TopKTies::kKeepTied,
    .top_p_comparison = TopPComparison::kStrict,
    .top_p_ties = TopPTies::kKeepTied,
    .top_p_mass = TopPMass::kRenormalize,
    .top_k_input = TopKInput::kProbs,
    .top_p_cumsum = TopPCumsum::kDescending,
    .top_p_input_with_min_p = TopPInput::kRenormalized,
    .top_k_zero_disables = false,
    .top_k_minus_one_disables = true,
    .greedy_temperature_below = 1e-6,
    .greedy_temperature_inclusive = false,
    .top_p_zero_is_greedy = false,
    .top_k_one_is_greedy = true,
    .temperature_zero_allowed = true,
    .max_temperature = kUnbounded,
    .numerics = {.unit_roundoff = kFp32, .normalizer = kTorchCudaSoftmaxSum, .top_p_mass = kFlashinferMassAbove,
                 .prob_error_ulps = kProbErrorUlps, .orders_by_probs = true, .pivot_tolerance = 0.0,
                 .summary = "torch.softmax; FlashInfer pivots on fp32 probabilities (joint, or top_p_renorm_prob "
                            "with min-p), the mass above a block reduction"},
};

// llama.cpp, the default sampler chain of common/sampling.cpp (common_sampler_init, the order of
// common_params_sampling::samplers in common/common.h): penalties, DRY, top-n-sigma, top-k, typical, top-p, min-p,
// XTC, temperature (temp_ext), then dist. The samplers samplecheck has parameters for are top-k, top-p, min-p and
// temperature; the others are disabled by their defaults. src/llama-sampler.cpp: each step works on the array the
// previous one left (top-k truncates the sorted array; top-p and dist take the softmax of what is left), the
// temperature divides the logits of the survivors last, dist draws by inverse CDF in array order. Line references
// in docs/semantics.md.
constexpr Profile kLlamaCpp{
    .name = "llama-cpp",
    .summary = "llama.cpp chain: top-k (exactly k), top-p on the renormalized p, min-p, all at T = 1; temperature last",
    .source = "ggml-org/llama.cpp src/llama-sampler.cpp (llama_sampler_top_k_impl, llama_sampler_top_p_apply, "
              "llama_sampler_min_p_apply, llama_sampler_temp_impl, llama_sampler_dist_apply) and "
              "common/sampling.cpp common_sampler_init, common/common.h default samplers, 2026-06 (37957e85; "
              "the binary of @node-llama-cpp/linux-x64 3.22.1 is commit 0ad4a86)",
    .order = {Filter::kTopK, Filter::kTopP, Filter::kMinP},
    .top_p_input = TopPInput::kRenormalized,
    .top_k_ties = TopKTies::kExactK,              // partial sort by logit, size = k: the tie group cut by position
    .top_p_comparison = TopPComparison::kStrict,  // keep through the first i with cumsum >= p: mass above < p
    .top_p_ties = TopPTies::kByPosition,
    .top_p_mass = TopPMass::kRenormalize,
    .top_k_input = TopKInput::kLogits,
    .top_p_cumsum = TopPCumsum::kDescending,
    .top_p_input_with_min_p = TopPInput::kRenormalized,
    .top_k_zero_disables = true,       // top_k <= 0: llama_sampler_init_top_k returns the empty sampler
    .top_k_minus_one_disables = true,
    .greedy_temperature_below = 0.0,   // temp <= 0: llama_sampler_temp_impl keeps the maximal logit only
    .greedy_temperature_inclusive = false,
    .top_p_zero_is_greedy = true,      // cumsum >= 0 at the first token: one token kept
    .top_k_one_is_greedy = false,      // top-k 1 keeps one token of a tied maximum by sort position
    .temperature_zero_allowed = true,
    .max_temperature = kUnbounded,
    .numerics = {.unit_roundoff = kFp32, .normalizer = {SumOrder::kSequential, 1, 0},
                 .top_p_mass = {SumOrder::kSequential, 1, 0}, .prob_error_ulps = kProbErrorUlps,
                 .orders_by_probs = false, .pivot_tolerance = 0.0,
                 .summary = "llama_sampler_softmax_impl: one fp32 accumulator over the array (sequential); top-p's "
                            "cum_sum one fp32 accumulator in sorted order (sequential), compared with fp32(top_p), "
                            "both over the survivors of top-k",
                 .sums_survivors_only = true},
    .temperature_placement = TemperaturePlacement::kLast,
    .min_p_input = MinPInput::kLogits,  // logit >= max_logit + logf(p)
    .greedy_ties_by_position = true,    // temp <= 0: the first maximal logit in the (possibly sorted) array
};

// TokenSpeed's Triton sampling backends (lightseekorg/tokenspeed PR #280 at f4d8ec6e): every route of
// python/tokenspeed/runtime/sampling/backends/triton.py _select_sample_route (305-325) draws Gumbel-max over the
// tokens one rule keeps: top-k exactly k over the T-scaled logits, ties to the lowest id (topk_topp.py stage 1
// packs the logit bits over 2^31 - 1 - id; generic.py:104-160 the same order), top-p on the top-k-renormalized p
// with mass above < top_p (topk_topp.py:383-387, generic.py:160-166; the top_p route accepts a candidate iff the
// mass before it in (logit, id) order is < top_p * total: topp.py:235-247, 293-343), and min-p as the logit test
// x >= x_max + log(min_p) intersected with them (topk_topp.py:321-324, 387; generic.py:78, 166, 231; min_p.py:78,
// 94, 255-268): min-p last, which keeps what top-p kept from the unfiltered renormalized p. SamplingParams
// (sampling_params.py:28-39, 100-137): T < 1e-6 becomes T = 1, top_k = 1 (greedy: the lowest id of the maximal
// logits, in cute argmax and in the k = 1 kernels); top_k = -1 disables; 0, < -1 and >= 128 (the fused kernels'
// pad) are refused; top_p in (0, 1], min_p in [0, 1]. The "triton" backend takes min-p and ignores it
// (base.py:108-110): it is judged by this profile and fails its min-p cases (docs/conformance.md).
// Numerics: the sums behind the top-p decisions are tl.sum over blocks of 1024 (10 tree levels) added block after
// block (generic.py's rejection loop) or joined by a second tl.sum over the blocks with the max rescaling (the
// top_p route's stages): ceil(n / 1024) + 20 covers both; the top-k routes sum at most 128 candidates.
constexpr SumModel kTokenspeedRowSum{SumOrder::kBlocked, 1024, 20};
constexpr Profile kTokenspeed{
    .name = "tokenspeed",
    .summary = "TokenSpeed Triton: exactly k (k <= 127), top-p on the top-k-renormalized p, then min-p (logit test); "
               "T < 1e-6 greedy",
    .source = "lightseekorg/tokenspeed python/tokenspeed/runtime/sampling/sampling_params.py (28-39, 100-137), "
              "backends/triton.py _select_sample_route (305-325), tokenspeed-kernel .../ops/sampling/triton/"
              "topk_topp.py (321-387), generic.py (78-231), topp.py (235-343), min_p.py (62-94, 255-268), f4d8ec6e",
    .order = {Filter::kTopK, Filter::kTopP, Filter::kMinP},
    .top_p_input = TopPInput::kRenormalized,
    .top_k_ties = TopKTies::kExactK,
    .top_p_comparison = TopPComparison::kStrict,
    .top_p_ties = TopPTies::kByPosition,
    .top_p_mass = TopPMass::kRenormalize,
    .top_k_input = TopKInput::kLogits,
    .top_p_cumsum = TopPCumsum::kDescending,
    .top_p_input_with_min_p = TopPInput::kRenormalized,
    .top_k_zero_disables = false,  // "top_k must be -1 (disable), or at least 1"
    .top_k_minus_one_disables = true,
    .greedy_temperature_below = 1e-6,  // _SAMPLING_EPS: T < 1e-6 becomes top_k = 1
    .greedy_temperature_inclusive = false,
    .top_p_zero_is_greedy = false,  // "top_p must be in (0, 1]"
    .top_k_one_is_greedy = true,    // exactly one token, the lowest id of the maximal logits
    .temperature_zero_allowed = true,
    .max_temperature = kUnbounded,
    .numerics = {.unit_roundoff = kFp32, .normalizer = kTokenspeedRowSum, .top_p_mass = kTokenspeedRowSum,
                 .prob_error_ulps = kProbErrorUlps, .orders_by_probs = false, .pivot_tolerance = 0.0,
                 .summary = "Triton: order by T-scaled fp32 logits (ties by id); exp(x - max) summed by tl.sum "
                            "over blocks of 1024, the blocks in sequence or by a second tl.sum; mass before a "
                            "token compared with top_p * total"},
    .min_p_input = MinPInput::kLogits,  // x >= x_max + log(min_p), in fp32
    .max_top_k = 127,                   // _TOP_K_FUSED_MAX = 128: "top_k must be < 128 (fused kernel limit)"
};

constexpr const Profile* kAllProfiles[] = {&kHf,          &kVllm,          &kVllmTriton,     &kFlashinferTopkFirst,
                                           &kFlashinferJoint, &kTrtllmTorch, &kTrtllmCuda, &kSglangTorch,
                                           &kSglangFlashinfer, &kLlamaCpp, &kVllmApi, &kVllmApiTriton,
                                           &kTokenspeed};

}  // namespace

std::span<const Profile* const> AllProfiles() { return kAllProfiles; }

const Profile* FindProfile(std::string_view name) {
  for (const Profile* profile : kAllProfiles) {
    if (profile->name == name) return profile;
  }
  return nullptr;
}

std::string KnownProfileNames() {
  std::string names;
  for (const Profile* profile : kAllProfiles) names += (names.empty() ? "" : ", ") + std::string(profile->name);
  return names;
}

Result<const Profile*> ProfileByName(std::string_view name) {
  if (const Profile* profile = FindProfile(name)) return profile;
  return Error{ErrorCode::kInvalidArgument,
               "unknown profile '" + std::string(name) + "' (known: " + KnownProfileNames() + ")"};
}

}  // namespace samplecheck
