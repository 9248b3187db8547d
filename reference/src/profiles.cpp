// The semantics profiles of samplecheck, each defined once. docs/semantics.md explains every field of every
// profile and the source line it follows; change a profile here and there together.
#include <limits>
#include <string_view>

#include "samplecheck/reference/profile.h"

namespace samplecheck {
namespace {

constexpr double kUnbounded = std::numeric_limits<double>::infinity();

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
};

// vLLM v1 Triton path (apply_top_k_top_p_triton, the default with Triton at batch >= 8): exactly k kept.
constexpr Profile kVllmTriton{
    .name = "vllm-triton",
    .summary = "vLLM v1 Triton path: as vllm, but top-k keeps exactly k (tie group trimmed by position)",
    .source = "vllm-project/vllm vllm/v1/sample/ops/topk_topp_triton.py apply_top_k_top_p_triton, main 2026",
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
};

// FlashInfer top_k_top_p_sampling_from_logits, filter_apply_order="top_k_first" (the rejection path, not the
// radix fast path), with min-p applied first by the engine (min_p_renorm / MinPLogitsProcessor).
constexpr Profile kFlashinferTopkFirst{
    .name = "flashinfer-topk-first",
    .summary = "FlashInfer top_k_first: top-k mask on logits (ties kept), pivot top-p on the renormalized p",
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
};

constexpr const Profile* kAllProfiles[] = {&kHf,          &kVllm,          &kVllmTriton,     &kFlashinferTopkFirst,
                                           &kFlashinferJoint, &kTrtllmTorch, &kTrtllmCuda, &kSglangTorch,
                                           &kSglangFlashinfer};

}  // namespace

std::span<const Profile* const> AllProfiles() { return kAllProfiles; }

const Profile* FindProfile(std::string_view name) {
  for (const Profile* profile : kAllProfiles) {
    if (profile->name == name) return profile;
  }
  return nullptr;
}

}  // namespace samplecheck
