// `--verifier cuda[:profile]`: samplecheck's CUDA chain verifier (kernels/include/samplecheck/kernels/
// verify_chain.h) behind the Verifier interface, for the profiles vllm and hf. Built only when CUDA is
// (SAMPLECHECK_HAVE_CUDA).
//
// Verify: requests are grouped by (vocab, draft form, scripted or not) and each group is one VerifyChainBatch
// launch. VerifyRepeated: one VerifyChainRepeated launch per 2^20 trials (the request's rows are processed once
// per call; each trial is a few binary searches on the device). Capabilities: deterministic, scripted_uniforms
// (the scripted stream is honoured on the device), draft_logits; parallel_instances false (one stream per
// instance; concurrent instances were not tested). Parameters are validated with reference/'s ValidateParams, so
// the cuda and exact verifiers reject the same values with the same messages. A target row that cannot be sampled
// gives accepted 0 and no tokens, as the exact verifier does.
#pragma once

#include <memory>
#include <string_view>

#include "samplecheck/core/error.h"
#include "samplecheck/samplers/verifier.h"

namespace samplecheck::harness {

// kInvalidArgument for a profile the kernels do not implement; kCuda when no CUDA device is usable.
Result<std::unique_ptr<Verifier>> MakeCudaVerifier(std::string_view profile, int device = -1);

}  // namespace samplecheck::harness
