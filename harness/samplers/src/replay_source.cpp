// Replay sources (replay_source.h): the reference, its planted faults, any sampler's processed distribution, and
// the table of kinds (a table of kinds.h, whose functions find a kind, word its errors and its help). The CUDA source
// is src/cuda/cuda_replay.cpp, the process source src/process_replay.cpp.
#include "samplecheck/samplers/replay_source.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <utility>

#include "replay_internal.h"
#include "samplecheck/reference/distribution.h"
#include "samplecheck/samplers/sampler_registry.h"

namespace samplecheck::harness {
namespace {

constexpr float kMinusInf = -std::numeric_limits<float>::infinity();
constexpr std::string_view kWhat = "replay source";
using Made = Result<std::unique_ptr<ReplaySource>>;
using ReplaySourceFactory = decltype(ReplaySourceKind::make);

enum class FaultKind { kNone, kProfile, kNoLabelGuard, kNoRenormalization };

struct FaultEntry {
  ReplayFault info;
  FaultKind kind;
  std::function<void(Profile&)> change;  // kProfile: the one field of the profile the fault changes
};

const std::vector<FaultEntry>& FaultTable() {
  static const std::vector<FaultEntry> table = {
      {{"topp-unrenormalized", "top-p cut on the full softmax's mass instead of the mass renormalized after top-k and "
                               "min-p (the cumsum of probabilities the earlier masks did not renormalize)",
        "prime-rl PR #2601 review (the top-p masking question); docs/replay.md, top-p on the un-renormalized mass"},
       FaultKind::kProfile,
       [](Profile& p) {
         p.top_p_input = TopPInput::kFull;
         p.top_p_input_with_min_p = TopPInput::kFull;
       }},
      {{"ties-cut-at-k", "top-k keeps exactly k, the tie group at the k-th logit trimmed by position, where the "
                         "profile keeps every tied token",
        "vLLM's Triton top-k/top-p path (exact k) against the PyTorch path a trainer mirrors (semantics.md V2)"},
       FaultKind::kProfile,
       [](Profile& p) { p.top_k_ties = TopKTies::kExactK; }},
      {{"no-label-guard", "no label guard: a label outside the replayed kept set gets logprob -inf (importance "
                          "ratio 0, loss inf) instead of being restored and counted",
        "prime-rl PR #2601 (\"Loss: inf\" at step 0 from bf16 ranking jitter without the guard)"},
       FaultKind::kNoLabelGuard, nullptr},
      {{"temperature-after-masks", "the masks computed on the T = 1 distribution and the temperature applied to "
                                   "what they kept",
        "docs/replay.md (temperature applied after the masks); semantics.md section 2, filter order"},
       FaultKind::kProfile,
       [](Profile& p) { p.temperature_placement = TemperaturePlacement::kLast; }},
      {{"no-renormalization", "the kept set right, its logprobs those of the full softmax (not renormalized over the "
                              "kept set): the ratio carries the kept mass",
        "huggingface/trl#6789 and #7269 (mean ratio 0.896 with top_p = 0.8)"},
       FaultKind::kNoRenormalization, nullptr},
  };
  return table;
}

const FaultEntry* FindFault(std::string_view name) {
  for (const FaultEntry& f : FaultTable()) {
    if (f.info.name == name) return &f;
  }
  return nullptr;
}

std::string KnownFaults() {
  std::string names;
  for (const FaultEntry& f : FaultTable()) names += (names.empty() ? "" : ", ") + f.info.name;
  return names;
}

Result<const Profile*> ProfileNamed(std::string_view name) {
  Result<const Profile*> found = ProfileByName(name);
  if (!found.ok()) return found;
  const Profile* p = *found;
  if (p->top_p_mass != TopPMass::kRenormalize) {
    return InvalidArgument("profile '" + std::string(name) +
                           "' draws from a truncated CDF, not a renormalized distribution: it has no processed "
                           "logprobs to replay");
  }
  return p;
}

// The reference under `profile` (or one planted fault): every row's processed logprobs, the label guard on labels.
class ReferenceSource final : public ReplaySource {
 public:
  ReferenceSource(const Profile& profile, const FaultEntry* fault) : profile_(profile), fault_(fault) {
    if (fault_ != nullptr && fault_->kind == FaultKind::kProfile) fault_->change(profile_);
  }

  std::string Name() const override {
    return (fault_ ? "fault:" + fault_->info.name + ":" : std::string("exact:")) + std::string(profile_.name);
  }

  ReplayCapabilities GetCapabilities() const override {
    return {.labels = true, .parallel_instances = true, .profile = std::string(profile_.name)};
  }

  Result<ReplayRows> Logprobs(const ReplayBatch& batch) override {
    if (Status st = CheckReplayBatch(batch, profile_); !st.ok()) return st.error();
    const size_t vocab = static_cast<size_t>(batch.rows.vocab);
    ReplayRows out;
    out.logprobs.assign(static_cast<size_t>(batch.rows.rows) * vocab, kMinusInf);
    out.guarded.assign(static_cast<size_t>(batch.rows.rows), 0);
    for (int64_t r = 0; r < batch.rows.rows; ++r) {
      const std::span<const float> row = batch.rows.Row(r);
      const SamplingParams& params = batch.params[static_cast<size_t>(r)];
      auto dist = ComputeDistribution(LogitsView::Fp32(row), params, profile_);
      if (!dist.ok()) return dist.error().WithContext("row " + std::to_string(r));
      std::span<float> lp(out.logprobs.data() + static_cast<size_t>(r) * vocab, vocab);
      FillRow(row, params, *dist, lp);
      const int32_t label = batch.labels.empty() ? kNoLabel : batch.labels[static_cast<size_t>(r)];
      if (label == kNoLabel || dist->IsKept(label) || dist->greedy || !Guards()) continue;
      std::vector<int32_t> tokens = dist->kept;
      tokens.insert(std::upper_bound(tokens.begin(), tokens.end(), label), label);
      const std::vector<long double> guarded = LogprobsOver(row, params, tokens);
      for (size_t t = 0; t < vocab; ++t) lp[t] = static_cast<float>(guarded[t]);
      out.guarded[static_cast<size_t>(r)] = 1;
    }
    return out;
  }

 private:
  bool Guards() const { return fault_ == nullptr || fault_->kind != FaultKind::kNoLabelGuard; }

  void FillRow(std::span<const float> row, const SamplingParams& params, const ProcessedDistribution& dist,
               std::span<float> lp) const {
    if (fault_ != nullptr && fault_->kind == FaultKind::kNoRenormalization && !dist.greedy) {
      std::vector<int32_t> all(lp.size());
      for (size_t t = 0; t < all.size(); ++t) all[t] = static_cast<int32_t>(t);
      const std::vector<long double> full = LogprobsOver(row, params, all);
      for (int32_t t : dist.kept) lp[static_cast<size_t>(t)] = static_cast<float>(full[static_cast<size_t>(t)]);
      return;
    }
    for (size_t i = 0; i < dist.kept.size(); ++i) {
      lp[static_cast<size_t>(dist.kept[i])] = static_cast<float>(std::log(dist.prob[i]));
    }
  }

  Profile profile_;
  const FaultEntry* fault_;
};

// Any sampler with a processed distribution: one ProcessedDistribution call per row; no labels.
class SamplerSource final : public ReplaySource {
 public:
  explicit SamplerSource(std::unique_ptr<Sampler> sampler) : sampler_(std::move(sampler)) {}

  std::string Name() const override { return sampler_->Name(); }

  ReplayCapabilities GetCapabilities() const override {
    const Capabilities caps = sampler_->GetCapabilities();
    return {.labels = false, .parallel_instances = caps.parallel_instances, .profile = caps.profile};
  }

  Result<ReplayRows> Logprobs(const ReplayBatch& batch) override {
    if (Status st = CheckBatchShape(batch.rows, batch.params.size(), batch.params.size()); !st.ok()) return st.error();
    const size_t vocab = static_cast<size_t>(batch.rows.vocab);
    ReplayRows out;
    out.logprobs.assign(static_cast<size_t>(batch.rows.rows) * vocab, kMinusInf);
    out.guarded.assign(static_cast<size_t>(batch.rows.rows), 0);
    for (int64_t r = 0; r < batch.rows.rows; ++r) {
      auto p = sampler_->ProcessedDistribution(batch.rows.Row(r), batch.params[static_cast<size_t>(r)]);
      if (!p.ok()) return p.error().WithContext("row " + std::to_string(r));
      if (p->size() != vocab) {
        return Error{ErrorCode::kPlugin, Name() + " returned a processed distribution of " +
                                             std::to_string(p->size()) + " entries for a row of " +
                                             std::to_string(vocab) + " tokens"};
      }
      for (size_t t = 0; t < vocab; ++t) {
        const double q = (*p)[t];
        out.logprobs[static_cast<size_t>(r) * vocab + t] = q > 0 ? static_cast<float>(std::log(q))
                                                          : std::isnan(q) ? std::numeric_limits<float>::quiet_NaN()
                                                                          : kMinusInf;
      }
    }
    return out;
  }

 private:
  std::unique_ptr<Sampler> sampler_;
};

Result<std::unique_ptr<ReplaySource>> MakeReference(std::string_view arg, std::string_view profile,
                                                    const FaultEntry* fault) {
  auto p = ProfileNamed(arg.empty() ? profile : arg);
  if (!p.ok()) return p.error();
  return std::unique_ptr<ReplaySource>(std::make_unique<ReferenceSource>(**p, fault));
}

Error Malformed(const KindSpec& spec, const std::string& why) {
  return MalformedKindSpec(kWhat, spec.text, why, InfosOf(ReplaySourceKinds()));
}

Made MakeExact(const KindSpec& spec, std::string_view profile) { return MakeReference(spec.arg, profile, nullptr); }

// fault:<name>[:profile]
Made MakeFault(const KindSpec& spec, std::string_view profile) {
  const std::string_view arg = spec.arg;
  const size_t colon = arg.find(':');
  const std::string_view name = arg.substr(0, colon);
  const FaultEntry* fault = FindFault(name);
  if (fault == nullptr) {
    return InvalidArgument("replay source '" + std::string(spec.text) + "': unknown fault '" + std::string(name) +
                           "' (known: " + KnownFaults() + ")");
  }
  return MakeReference(colon == std::string_view::npos ? std::string_view{} : arg.substr(colon + 1), profile, fault);
}

// cuda[:profile] (src/cuda/cuda_replay.cpp); no factory in a build without CUDA (the kind is not available:
// KindNotBuiltIn).
ReplaySourceFactory CudaFactory() {
#ifdef SAMPLECHECK_HAVE_CUDA
  return [](const KindSpec& spec, std::string_view profile) -> Made {
    return MakeCudaReplaySource(spec.arg.empty() ? profile : spec.arg);
  };
#else
  return nullptr;
#endif
}

// sampler:<sampler spec>
Made MakeFromSampler(const KindSpec& spec, std::string_view profile) {
  if (spec.arg.empty()) return Malformed(spec, "a sampler source needs a sampler spec (sampler:<sampler spec>)");
  auto sampler = MakeSampler(spec.arg, SamplerOptions{.profile = std::string(profile)});
  if (!sampler.ok()) return sampler.error();
  if (!(*sampler)->GetCapabilities().processed_distribution) {
    return InvalidArgument("replay source '" + std::string(spec.text) + "': sampler " + (*sampler)->Name() +
                           " exposes no processed distribution (a process must answer PROCESSED, a plugin export "
                           "processed_distribution)");
  }
  return std::unique_ptr<ReplaySource>(std::make_unique<SamplerSource>(std::move(*sampler)));
}

// process:<command> (src/process_sampler.cpp)
Made MakeProcess(const KindSpec& spec, std::string_view) {
  if (spec.arg.find_first_not_of(" \t") == std::string_view::npos) {
    return Malformed(spec, "a process needs a command (process:<command>)");
  }
  return MakeProcessReplaySource(spec.arg);
}

}  // namespace

const char* ReplayDTypeName(ReplayDType dtype) { return dtype == ReplayDType::kBFloat16 ? "bf16" : "fp32"; }

const std::vector<ReplayFault>& ReplayFaults() {
  static const std::vector<ReplayFault> faults = [] {
    std::vector<ReplayFault> v;
    for (const FaultEntry& f : FaultTable()) v.push_back(f.info);
    return v;
  }();
  return faults;
}

const std::vector<ReplaySourceKind>& ReplaySourceKinds() {
  static const std::vector<ReplaySourceKind> kinds = {
      {{"exact", "exact[:profile]",
        "the reference's processed distribution as fp32 logprobs; with labels, the trainers' label guard", true},
       MakeExact},
      {{"fault", "fault:<name>[:profile]", "the reference with one planted replay fault (" + KnownFaults() + ")", true},
       MakeFault},
      {{"cuda", "cuda[:profile]",
        CudaKindSummary(
            "samplecheck's CUDA processed-logprobs and label kernels (profiles vllm, hf; needs CUDA and a GPU)"),
        CudaBuiltIn()},
       CudaFactory()},
      {{"sampler", "sampler:<sampler spec>",
        "any --sampler with a processed distribution (process: through PROCESSED, plugin:, mutant:), row by row, "
        "no labels",
        true},
       MakeFromSampler},
      {{"process", "process:<command>",
        "a process answering LOGPROBS_BATCH: a batch in one message with its dtype, and its labels to a trainer "
        "that takes them (docs/process-protocol.md)",
        true},
       MakeProcess},
  };
  return kinds;
}

std::string ReplaySourceSpecHelp() { return KindSpecHelp(kWhat, InfosOf(ReplaySourceKinds())); }

Result<std::unique_ptr<ReplaySource>> MakeReplaySource(std::string_view spec, std::string_view profile) {
  return MakeKind(kWhat, ReplaySourceKinds(), spec, profile);
}

Status CheckReplayBatch(const ReplayBatch& batch, const Profile& profile) {
  if (Status st = CheckBatchShape(batch.rows, batch.params.size(), batch.params.size(), 1); !st.ok()) return st;
  if (!batch.labels.empty() && batch.labels.size() != batch.params.size()) {
    return InvalidArgument(std::to_string(batch.labels.size()) + " labels for " + std::to_string(batch.params.size()) +
                           " rows (allowed: one per row, or none)");
  }
  for (size_t r = 0; r < batch.params.size(); ++r) {
    if (auto bad = ValidateParams(batch.params[r], profile)) {
      return InvalidArgument("row " + std::to_string(r) + ": " + bad->message);
    }
    if (!batch.labels.empty() && batch.labels[r] != kNoLabel &&
        (batch.labels[r] < 0 || batch.labels[r] >= batch.rows.vocab)) {
      return InvalidArgument("row " + std::to_string(r) + ": label " + std::to_string(batch.labels[r]) +
                             " is outside [0, " + std::to_string(batch.rows.vocab) + ") (or -1: no label)");
    }
  }
  return Status::Ok();
}

std::vector<long double> LogprobsOver(std::span<const float> row, const SamplingParams& params,
                                      std::span<const int32_t> tokens) {
  const long double minus_inf = -std::numeric_limits<long double>::infinity();
  std::vector<long double> out(row.size(), minus_inf);
  bool has_pos_inf = false;
  long double x_max = minus_inf;
  for (int32_t t : tokens) {
    const float x = row[static_cast<size_t>(t)];
    has_pos_inf = has_pos_inf || x == std::numeric_limits<float>::infinity();
    if (!std::isnan(x)) x_max = std::max<long double>(x_max, x);
  }
  if (x_max == minus_inf) return out;
  const long double T = static_cast<long double>(params.temperature);
  auto log_weight = [&](float x) -> long double {
    if (std::isnan(x) || x == -std::numeric_limits<float>::infinity()) return minus_inf;
    if (has_pos_inf) return x == std::numeric_limits<float>::infinity() ? 0.0L : minus_inf;
    if (!(T > 0)) return static_cast<long double>(x) == x_max ? 0.0L : minus_inf;
    return (static_cast<long double>(x) - x_max) / T;
  };
  long double sum = 0;  // terms in (0, 1], the maximum's exactly 1: no cancellation, no overflow
  for (int32_t t : tokens) {
    const long double lw = log_weight(row[static_cast<size_t>(t)]);
    if (lw != minus_inf) sum += std::exp(lw);
  }
  const long double log_sum = std::log(sum);
  for (int32_t t : tokens) {
    const long double lw = log_weight(row[static_cast<size_t>(t)]);
    out[static_cast<size_t>(t)] = lw == minus_inf ? minus_inf : lw - log_sum;
  }
  return out;
}

}  // namespace samplecheck::harness
