// One request of a speculative-decoding case (spec_request.h).
#include "spec_request.h"

#include <algorithm>
#include <cmath>

#include "samplecheck/core/splitmix.h"
#include "samplecheck/reference/logits.h"
#include "samplecheck/reference/philox.h"
#include "samplecheck/suites/row_source.h"

namespace samplecheck::harness {
namespace {

// The dense probabilities of a sparse distribution, as fp32 (what a draft stores).
std::vector<float> DenseFloat(const SparseDistribution& d, int64_t vocab) {
  std::vector<float> out(static_cast<size_t>(vocab), 0.0f);
  for (size_t i = 0; i < d.tokens.size(); ++i) out[static_cast<size_t>(d.tokens[i])] = static_cast<float>(d.prob[i]);
  return out;
}

}  // namespace

Result<Request> BuildRequest(const SpecRequestSpec& spec, const Profile& profile, uint64_t seed, std::string name) {
  Request r;
  r.spec = spec;
  r.name = std::move(name);
  r.row_seed = seed;
  const int32_t g = spec.g;
  // The target's length is its row's: an .npy row has the file's columns, whatever the spec's vocab says.
  int64_t V = 0;
  if (auto bad = ValidateParams(spec.params, profile)) return bad->ToError().WithContext(r.name);
  if (auto bad = ValidateParams(spec.draft.params, profile)) return bad->ToError().WithContext(r.name + " draft");
  for (int32_t j = 0; j <= g; ++j) {
    auto row = MakeRow(spec.target, SplitMix64(seed + 0x100 * static_cast<uint64_t>(j)));
    if (!row.ok()) return row.error().WithContext(r.name + " target row " + std::to_string(j));
    if (j == 0) {
      V = static_cast<int64_t>(row->size());
      r.target.reserve(static_cast<size_t>(g + 1) * row->size());
    }
    if (static_cast<int64_t>(row->size()) != V) {
      return InvalidArgument(r.name + " target row " + std::to_string(j) + " has " + std::to_string(row->size()) +
                             " tokens, row 0 has " + std::to_string(V) + " (every position of a request has one V)");
    }
    r.target.insert(r.target.end(), row->begin(), row->end());
    auto p = ComputeDistribution(LogitsView::Fp32(*row), spec.params, profile);
    if (!p.ok()) return p.error().WithContext(r.name + " target row " + std::to_string(j));
    r.greedy_any = r.greedy_any || p->greedy;
    r.p.push_back(std::move(*p));
  }
  r.spec.target.vocab = r.spec.draft.row.vocab = V;  // what Base() and V() say the verifier reads
  std::vector<float> draft_logits(static_cast<size_t>(V));
  for (int32_t j = 0; j < g; ++j) {
    const float* t = r.target.data() + static_cast<size_t>(j) * static_cast<size_t>(V);
    if (spec.draft.relation == "same") {
      std::copy(t, t + V, draft_logits.begin());
    } else if (spec.draft.relation == "close") {
      RowSpec noise;
      noise.kind = "gaussian";
      noise.vocab = V;
      noise.sigma = spec.draft.noise;
      auto n = MakeRow(noise, SplitMix64(seed ^ (0xD4AF7ULL + static_cast<uint64_t>(j))));
      if (!n.ok()) return n.error().WithContext(r.name + " draft noise");
      for (int64_t i = 0; i < V; ++i) draft_logits[static_cast<size_t>(i)] = t[i] + (std::isfinite(t[i]) ? (*n)[i] : 0.0f);
    } else {
      auto far = MakeRow(spec.draft.row, SplitMix64(seed ^ (0xFA12ULL + static_cast<uint64_t>(j))));
      if (!far.ok()) return far.error().WithContext(r.name + " draft row");
      if (static_cast<int64_t>(far->size()) != V) {
        return InvalidArgument(r.name + " draft row has " + std::to_string(far->size()) + " tokens, the target " +
                               std::to_string(V) + " (a draft is over the target's vocabulary)");
      }
      draft_logits = std::move(*far);
    }
    auto q = ComputeDistribution(LogitsView::Fp32(draft_logits), spec.draft.params, profile);
    if (!q.ok()) return q.error().WithContext(r.name + " draft row " + std::to_string(j));
    SparseDistribution qd = FromProcessed(*q);
    switch (spec.draft.form) {
      case DraftForm::kProbabilities: {
        std::vector<float> stored = DenseFloat(qd, V);
        auto normalized = DraftFromProbabilities(stored);  // what the verifier reads: the fp32 values, normalized
        if (!normalized.ok()) return normalized.error().WithContext(r.name + " draft row " + std::to_string(j));
        qd = std::move(*normalized);
        r.draft.insert(r.draft.end(), stored.begin(), stored.end());
        break;
      }
      case DraftForm::kLogits:
        r.draft.insert(r.draft.end(), draft_logits.begin(), draft_logits.end());
        break;
      case DraftForm::kOneHot:
        break;
    }
    r.laws.push_back(spec.draft.form == DraftForm::kOneHot ? MakeOneHotPositionLaw(r.p[static_cast<size_t>(j)], qd)
                                                           : MakePositionLaw(r.p[static_cast<size_t>(j)], qd));
    r.proposal_cdf.emplace_back(qd.tokens, qd.prob);
    r.proposal.push_back(std::move(qd));
  }
  long double reach = 1;
  for (int32_t j = 0; j <= g; ++j) {
    r.reach.push_back(reach);
    if (j < g) {
      r.length_law.push_back(reach * r.laws[static_cast<size_t>(j)].residual_mass);
      reach *= r.laws[static_cast<size_t>(j)].beta;
    } else {
      r.length_law.push_back(reach);
    }
  }
  r.draft_seed = SplitMix64(seed ^ 0xD7AF75EEDULL);
  return r;
}


bool SameResult(const VerifyResult& a, const VerifyResult& b) {
  if (a.accepted != b.accepted) return false;
  if (a.accepted < 0 || a.accepted > kMaxSpecDraft) return true;
  return std::equal(a.emitted.begin(), a.emitted.begin() + a.accepted + 1, b.emitted.begin());
}
std::string Show(const VerifyResult& r) {
  std::string s = "accepted ";
  s += std::to_string(r.accepted);
  s += ", tokens";
  for (int32_t j = 0; j <= std::clamp(r.accepted, 0, kMaxSpecDraft); ++j) {
    s += ' ';
    s += std::to_string(r.emitted[static_cast<size_t>(j)]);
  }
  return s;
}

void DrawDrafts(const Request& r, uint64_t first_trial, uint64_t n, std::vector<int32_t>& out) {
  const size_t g = static_cast<size_t>(r.spec.g);
  out.resize(n * g);
  for (uint64_t i = 0; i < n; ++i) {
    for (size_t j = 0; j < g; ++j) {
      out[i * g + j] = r.proposal_cdf[j].Draw(UniformForDraw(r.draft_seed, (first_trial + i) * g + j));
    }
  }
}


}  // namespace samplecheck::harness
