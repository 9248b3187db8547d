// What every verifier shares (verifier.h): the request checks and the default VerifyRepeated. Also compiled into
// samplecheck-plugin-host, which verifies through plugins without the rest of the samplers library.
#include <algorithm>
#include <string>
#include <vector>

#include "samplecheck/reference/speculative.h"
#include "samplecheck/samplers/verifier.h"

namespace samplecheck::harness {

Status CheckVerifyRequests(std::span<const VerifyRequest> requests, size_t result_slots) {
  if (result_slots != requests.size()) {
    return InvalidArgument("verify: " + std::to_string(requests.size()) + " requests but " +
                           std::to_string(result_slots) + " result slots");
  }
  for (size_t r = 0; r < requests.size(); ++r) {
    const VerifyRequest& q = requests[r];
    const std::string where = "request " + std::to_string(r) + ": ";
    if (q.g < 0 || q.g > kMaxSpecDraft) {
      return InvalidArgument(where + "g = " + std::to_string(q.g) + "; allowed: 0.." + std::to_string(kMaxSpecDraft));
    }
    if (q.vocab < 1 || q.vocab > (int64_t{1} << 31) - 1) {
      return InvalidArgument(where + "vocab = " + std::to_string(q.vocab) + "; allowed: 1..2^31 - 1");
    }
    if (q.target == nullptr) return InvalidArgument(where + "no target logits");
    if (q.g > 0 && q.draft_tokens == nullptr) return InvalidArgument(where + "no draft tokens");
    if (q.g > 0 && q.draft_form != DraftForm::kOneHot && q.draft == nullptr) {
      return InvalidArgument(where + "a " + std::string(DraftFormName(q.draft_form)) + " draft without its rows");
    }
    for (int32_t j = 0; j < q.g; ++j) {
      const int32_t x = q.draft_tokens[j];
      if (x < 0 || x >= q.vocab) {
        return InvalidArgument(where + "draft token " + std::to_string(x) + " at position " + std::to_string(j + 1) +
                               " is outside [0, " + std::to_string(q.vocab) + ")");
      }
    }
    if (Status st = ValidateScriptedUniforms(q.uniforms, q.g); !st.ok()) {
      return st.error().WithContext("request " + std::to_string(r));
    }
  }
  return Status::Ok();
}

namespace {

Status CheckTrialSizes(size_t g, std::span<const int32_t> draft_tokens, size_t trials) {
  if (draft_tokens.size() == trials * g) return Status::Ok();
  return InvalidArgument("verify repeated: " + std::to_string(trials) + " trials of g = " + std::to_string(g) +
                         " need " + std::to_string(trials * g) + " draft tokens, got " +
                         std::to_string(draft_tokens.size()));
}

}  // namespace

Status CheckVerifyRepeated(const VerifyRequest& request, std::span<const int32_t> draft_tokens, size_t trials,
                           VerifyRequest* first) {
  const size_t g = static_cast<size_t>(std::max(request.g, 0));
  if (Status st = CheckTrialSizes(g, draft_tokens, trials); !st.ok()) return st;
  if (trials == 0) return Status::Ok();
  *first = request;
  first->draft_tokens = draft_tokens.data();
  if (Status st = CheckVerifyRequests({first, 1}, 1); !st.ok()) return st;
  for (size_t i = 0; i < draft_tokens.size(); ++i) {
    if (draft_tokens[i] < 0 || draft_tokens[i] >= request.vocab) {
      return InvalidArgument("trial " + std::to_string(i / g) + ": draft token " + std::to_string(draft_tokens[i]) +
                             " is outside [0, " + std::to_string(request.vocab) + ")");
    }
  }
  return Status::Ok();
}

Status Verifier::VerifyRepeated(const VerifyRequest& request, std::span<const int32_t> draft_tokens,
                                std::span<VerifyResult> results) {
  const size_t g = static_cast<size_t>(std::max(request.g, 0));
  if (Status st = CheckTrialSizes(g, draft_tokens, results.size()); !st.ok()) return st;
  constexpr size_t kChunk = 256;
  std::vector<VerifyRequest> batch;
  for (size_t begin = 0; begin < results.size(); begin += kChunk) {
    const size_t n = std::min(kChunk, results.size() - begin);
    batch.assign(n, request);
    for (size_t i = 0; i < n; ++i) {
      batch[i].draft_tokens = draft_tokens.data() + (begin + i) * g;
      batch[i].params.offset = request.params.offset + (begin + i) * (g + 1);
    }
    if (Status st = Verify(batch, results.subspan(begin, n)); !st.ok()) return st;
  }
  return Status::Ok();
}

}  // namespace samplecheck::harness
