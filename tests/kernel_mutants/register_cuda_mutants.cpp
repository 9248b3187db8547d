// The CUDA kernel mutants as samplers: each KernelFault of fault_sample.h registers itself with the harness's mutant
// registry (harness/mutants.h, family "cuda") at static initialization, so the test program that links this file
// (samplecheck-kernel-mutants: the samplecheck program plus the kernel mutants, built only into test builds) runs
// `samplecheck mutants --sampler-family cuda` and `--sampler mutant:cuda:<name>` like the CPU zoo. Each sampler is
// the harness's cuda sampler (harness/cuda_sampler_launch.h) drawing through SampleFromLogitsWithFault; cuda:none (no
// fault: the shipped kernel) is the family's control.
#include <string>
#include <vector>

#include "fault_sample.h"
#include "samplecheck/samplers/cuda_sampler_launch.h"
#include "samplecheck/samplers/mutants.h"

namespace samplecheck::kernels::test_mutants {
namespace {

struct KernelMutant {
  KernelFault fault;
  const char* bug_class;
  const char* source;
  const char* description;
  const char* hook;
  const char* expected_check;
  bool gross;
  harness::CudaCountPath count = harness::CudaCountPath::kLauncher;
};

// One entry per KernelFault; docs/mutants.md lists them with the checks that catch them.
const std::vector<KernelMutant>& KernelMutants() {
  static const std::vector<KernelMutant> list = {
      {KernelFault::kNone, "control", "samplecheck",
       "no fault: the shipped kernels, drawing what SampleFromLogits draws", "none", "passes everything", false},
      {KernelFault::kSeedOfRowZero, "RNG stream errors", "FlashInfer seed_arr[0] (semantics.md 2)",
       "every batch row draws with the (seed, offset) of batch row 0", "rng", "campaign (identical draws)", true},
      {KernelFault::kOffsetNotAdvanced, "RNG stream errors", "RNG streams reused across steps (seeds)",
       "the Philox counter is the batch row; the offset is never added", "rng", "property:batch-invariance", false},
      {KernelFault::kInvalidRowToken0, "bad rows", "vLLM v1 all -inf row: argmax of NaN is token 0 (semantics.md 1.2)",
       "a NaN or all -inf row returns token 0 with status sampled", "bad-row", "property:support-containment", false},
      {KernelFault::kParamsByLogitsRow, "per-row parameters from the wrong row",
       "FlashInfer top_p_arr[row_idx] vs top_k_arr[bx]",
       "filter parameters read at the logits row row_indices[b] instead of the batch row b", "params",
       "property:batch-invariance", false},
      {KernelFault::kTopKPlusOne, "boundary rules", "off-by-one in a top-k select", "top-k keeps k + 1 tokens",
       "profile", "campaign: support", false},
      {KernelFault::kMinPFromRowZero, "disabled values that are not no-ops",
       "a min-p scalar broadcast over per-row values", "rows with min_p = 0 run min-p with batch row 0's min_p",
       "params", "property:batch-invariance", false},
      {KernelFault::kDrawMirrored, "draw step alone",
       "a draw step changed while the counting fast path stays correct (RL replay: token-for-token)",
       "the sampling kernel's draw step walks the CDF with 1 - u (same law, other tokens); counts go through the "
       "correct fast path",
       "draw", "campaign: agreement", false, harness::CudaCountPath::kFastPath},
  };
  return list;
}

bool RegisterAll() {
  bool ok = true;
  for (const KernelMutant& m : KernelMutants()) {
    harness::MutantInfo info{std::string(KernelFaultName(m.fault)), m.bug_class,      m.source, m.description,
                             m.hook,                                m.expected_check, m.gross};
    const KernelFault fault = m.fault;
    const harness::CudaCountPath count = m.count;
    const std::string name = "mutant:" + info.name;
    ok = harness::RegisterExternalMutant(
             "cuda", std::move(info),
             [fault, name, count](const harness::SamplerOptions& options) {
               return harness::MakeCudaSampler(
                   options.profile, name,
                   [fault](const LogitsBatch& logits, const SamplingParams& params, Profile profile, int32_t* tokens,
                           int32_t* row_status, cudaStream_t stream) {
                     return SampleFromLogitsWithFault(fault, logits, params, profile, tokens, row_status, stream);
                   },
                   count);
             }) &&
         ok;
  }
  return ok;
}

[[maybe_unused]] const bool registered = RegisterAll();

}  // namespace
}  // namespace samplecheck::kernels::test_mutants
