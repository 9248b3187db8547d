// MutantSampler: the correct sampler's pipeline (mutants_fault.h) with the one hook its mutant sets. With no hook
// set (`mutant:none`) it draws exactly what `exact` draws: same processed distribution, same inverse-CDF rule,
// same Philox uniform.
#include "samplecheck/samplers/mutants.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <string>
#include <vector>

#include "mutants_fault.h"
#include "row_cache.h"
#include "samplecheck/reference/philox.h"

namespace samplecheck::harness {
namespace mutants {

std::vector<long double> TemperedSoftmax(std::span<const float> logits, double temperature) {
  if (!(temperature > 0) || logits.empty()) return {};
  long double max = -std::numeric_limits<long double>::infinity();
  for (float x : logits) {
    if (std::isnan(x) || x == std::numeric_limits<float>::infinity()) return {};
    max = std::max<long double>(max, x);
  }
  if (!std::isfinite(max)) return {};
  std::vector<long double> p(logits.size(), 0.0L);
  long double sum = 0;
  for (size_t i = 0; i < logits.size(); ++i) {
    if (std::isinf(logits[i])) continue;
    p[i] = std::exp((static_cast<long double>(logits[i]) - max) / static_cast<long double>(temperature));
    sum += p[i];
  }
  for (long double& x : p) x /= sum;
  return p;
}

namespace {

// The cumulative weights of one row and the draw rule of its mutant.
class DrawTable {
 public:
  DrawTable(const std::vector<long double>& weights, DrawRule rule, std::span<const float> logits,
            const SamplingParams& params, bool greedy)
      : rule_(greedy && rule == DrawRule::kRejectionThenArgmax ? DrawRule::kInverseCdf : rule) {
    long double running = 0;
    float running_f = 0;
    for (size_t t = 0; t < weights.size(); ++t) {
      if (!(weights[t] > 0)) continue;
      tokens_.push_back(static_cast<int32_t>(t));
      running += weights[t];
      cdf_.push_back(static_cast<double>(running));
      if (rule_ == DrawRule::kFp32Cumsum) {
        running_f = running_f + static_cast<float>(weights[t]);  // the fault: a float running sum
        cdf_f_.push_back(running_f);
      }
    }
    if (rule_ == DrawRule::kRejectionThenArgmax) {
      const std::vector<long double> full = TemperedSoftmax(logits, params.temperature);
      if (full.empty()) {
        rule_ = DrawRule::kInverseCdf;
      } else {
        long double acc = 0;
        for (size_t t = 0; t < full.size(); ++t) {
          if (!(full[t] > 0)) continue;
          acc += full[t];
          candidate_tokens_.push_back(static_cast<int32_t>(t));
          candidate_cdf_.push_back(static_cast<double>(acc));
        }
        kept_.assign(weights.size(), 0);
        for (int32_t t : tokens_) kept_[static_cast<size_t>(t)] = 1;
        argmax_ = static_cast<int32_t>(std::max_element(logits.begin(), logits.end()) - logits.begin());
      }
    }
  }

  bool empty() const { return tokens_.empty(); }

  int32_t Draw(Counter counter) const {
    switch (rule_) {
      case DrawRule::kInverseCdf:
        return Pick(UniformForDraw(counter.seed, counter.offset));
      case DrawRule::kFp32Cumsum: {
        const float u = static_cast<float>(UniformForDraw(counter.seed, counter.offset));
        const size_t i = std::upper_bound(cdf_f_.begin(), cdf_f_.end(), u) - cdf_f_.begin();
        return tokens_[std::min(i, tokens_.size() - 1)];
      }
      case DrawRule::kRejectionThenArgmax:
        for (int j = 0; j < kRejectionRetries; ++j) {
          const double u = UniformForDraw(counter.seed, counter.offset * kRejectionRetries + j);
          const size_t i = std::upper_bound(candidate_cdf_.begin(), candidate_cdf_.end(), u) - candidate_cdf_.begin();
          const int32_t candidate = candidate_tokens_[std::min(i, candidate_tokens_.size() - 1)];
          if (kept_[static_cast<size_t>(candidate)]) return candidate;
        }
        return argmax_;
      case DrawRule::kLowDiscrepancy: {
        // Quasi-random: the row's draws step through [0, 1) by the golden ratio, so any N of them cover it evenly.
        const double start = UniformForDraw(counter.seed, 0);
        const double u = std::fmod(start + static_cast<double>(counter.offset) * 0.6180339887498949, 1.0);
        return Pick(std::clamp(u, 0x1p-53, 1.0 - 0x1p-53));
      }
      case DrawRule::kZeroUniformNonStrict: {
        const double bits24 = std::floor(UniformForDraw(counter.seed, counter.offset) * 16777216.0);
        if (bits24 == 0) return 0;  // cdf of token 0 is >= 0 whether token 0 is kept or not
        return Pick(bits24 / 16777216.0);
      }
    }
    return kInvalidToken;
  }

 private:
  int32_t Pick(double u) const {
    const size_t i = std::upper_bound(cdf_.begin(), cdf_.end(), u) - cdf_.begin();
    return tokens_[std::min(i, tokens_.size() - 1)];
  }

  DrawRule rule_;
  std::vector<int32_t> tokens_;
  std::vector<double> cdf_;
  std::vector<float> cdf_f_;
  std::vector<int32_t> candidate_tokens_;
  std::vector<double> candidate_cdf_;
  std::vector<uint8_t> kept_;
  int32_t argmax_ = 0;
};

std::vector<long double> Dense(const ProcessedDistribution& dist) {
  std::vector<long double> weights(static_cast<size_t>(dist.vocab), 0.0L);
  for (size_t i = 0; i < dist.kept.size(); ++i) weights[static_cast<size_t>(dist.kept[i])] = dist.prob[i];
  return weights;
}

std::string KnownMutants() {
  std::string names;
  for (const MutantDef& def : MutantDefs()) names += (names.empty() ? "" : ", ") + def.info.name;
  return names;
}

class MutantSampler final : public Sampler {
 public:
  MutantSampler(const MutantDef& def, const Profile& correct) : def_(def), profile_(correct) {
    if (def_.fault.profile) def_.fault.profile(profile_);
  }

  std::string Name() const override { return "mutant:" + def_.info.name; }

  Capabilities GetCapabilities() const override {
    Capabilities caps;
    caps.processed_distribution = true;
    caps.count_draws = true;
    caps.deterministic = true;
    caps.parallel_instances = true;
    caps.profile = std::string(FindProfileName());
    return caps;
  }

  Status Sample(const RowBatch& batch, std::span<const SamplingParams> params, std::span<int32_t> tokens) override {
    if (Status st = CheckSampleArgs(batch, params, tokens.size(), profile_); !st.ok()) return st;
    std::vector<Counter> counters(params.size());
    for (size_t r = 0; r < params.size(); ++r) counters[r] = CounterOf(params, r);
    StreamCounters(params, counters);
    for (size_t r = 0; r < params.size(); ++r) {
      const SamplingParams used = UsedParams(params, r);
      auto weights = cache_.Get(batch.Row(static_cast<int64_t>(r)), used,
                                [&] { return DrawWeights(batch.Row(static_cast<int64_t>(r)), used); });
      if (!weights.ok()) {
        if (weights.error().code != ErrorCode::kInvalidRow) return weights.status();
        tokens[r] = def_.fault.unsamplable_row_token;
        continue;
      }
      // A fault that masks every token (topp-tiny-masks-all) leaves nothing to draw: the invalid marker.
      tokens[r] = (*weights)->table.empty() ? kInvalidToken : (*weights)->table.Draw(counters[r]);
    }
    return Status::Ok();
  }

  Result<std::vector<double>> ProcessedDistribution(std::span<const float> row,
                                                    const SamplingParams& params) override {
    if (auto bad = ValidateParams(params, profile_)) return bad->ToError();
    const SamplingParams used = UsedParams(std::span(&params, 1), 0);
    auto dist = ComputeDistribution(LogitsView::Fp32(row), used, profile_);
    if (!dist.ok()) return dist.error();
    std::vector<long double> weights = Dense(*dist);
    if (def_.fault.distribution && !dist->greedy) def_.fault.distribution({row, used, profile_, *dist}, weights);
    return std::vector<double>(weights.begin(), weights.end());
  }

  // The fast path draws what Sampler::CountDraws would: batches of kBatch copies of the row, draw i at offset
  // params.offset + i, so a fault of the batch (rng or params hook) acts as it does through Sample.
  Status CountDraws(std::span<const float> row, const SamplingParams& params, uint64_t draws,
                    std::span<uint64_t> histogram, uint64_t* invalid_draws) override {
    if (Status st = CheckCountDrawsArgs(row, params, histogram.size(), profile_); !st.ok()) return st;
    constexpr uint64_t kBatch = 4096;
    const size_t rows = static_cast<size_t>(std::min<uint64_t>(kBatch, std::max<uint64_t>(draws, 1)));
    std::vector<SamplingParams> batch(rows, params);
    const SamplingParams used = UsedParams(batch, 0);  // every row of the batch has the same parameters
    auto weights = DrawWeights(row, used);
    if (!weights.ok()) {
      if (weights.error().code != ErrorCode::kInvalidRow) return weights.status();
      const int32_t t = def_.fault.unsamplable_row_token;
      if (t >= 0 && static_cast<size_t>(t) < histogram.size()) {
        histogram[static_cast<size_t>(t)] += draws;
      } else if (invalid_draws) {
        *invalid_draws += draws;
      }
      return Status::Ok();
    }
    if (weights->table.empty()) {  // every token masked by the fault: every draw is the invalid marker
      if (invalid_draws) *invalid_draws += draws;
      return Status::Ok();
    }
    for (uint64_t done = 0; done < draws;) {
      const size_t n = static_cast<size_t>(std::min<uint64_t>(rows, draws - done));
      for (size_t i = 0; i < n; ++i) batch[i].offset = params.offset + done + i;
      const std::span<const SamplingParams> view(batch.data(), n);
      for (size_t i = 0; i < n; ++i) ++histogram[static_cast<size_t>(weights->table.Draw(CounterOf(view, i)))];
      done += n;
    }
    return Status::Ok();
  }

 private:
  struct Weights {
    DrawTable table;
  };

  std::string_view FindProfileName() const { return profile_.name; }

  SamplingParams UsedParams(std::span<const SamplingParams> batch, size_t r) const {
    if (!def_.fault.params) return batch[r];
    SamplingParams used = def_.fault.params(batch, r);
    used.seed = batch[r].seed;
    used.offset = batch[r].offset;
    return used;
  }

  Counter CounterOf(std::span<const SamplingParams> batch, size_t r) const {
    if (def_.fault.rng) return def_.fault.rng(batch, r);
    return {batch[r].seed, batch[r].offset};
  }

  // The stream fault of a Sample call (mutants_fault.h, StreamFault): rewrites the call's counters from this
  // instance's state.
  void StreamCounters(std::span<const SamplingParams> batch, std::vector<Counter>& counters) {
    const size_t rows = batch.size();
    if (def_.fault.stream == StreamFault::kGraphBakedUniform) {
      if (rows < 2 || rows > 32 || (rows & (rows - 1)) != 0) return;  // not a captured size: eager
      auto [captured, first] = graph_.try_emplace(rows, counters);
      if (!first) counters = captured->second;  // a replay: the counters baked at capture
      return;
    }
    if (def_.fault.stream != StreamFault::kStepKeyReuse) return;
    bool step = rows >= 2 && last_.size() == rows;
    for (size_t r = 0; step && r < rows; ++r) {
      step = batch[r].seed == last_[r].seed && batch[r].offset == last_[r].offset + 1;
    }
    step_ = step ? step_ + 1 : 0;
    last_.assign(batch.begin(), batch.end());
    if (step_ % 2 == 1) counters = last_counters_;  // the offset advanced every second step only
    last_counters_ = counters;
  }

  Result<Weights> DrawWeights(std::span<const float> row, const SamplingParams& used) const {
    auto dist = ComputeDistribution(LogitsView::Fp32(row), used, profile_);
    if (!dist.ok()) return dist.error();
    std::vector<long double> weights = Dense(*dist);
    if (def_.fault.distribution && !def_.fault.distribution_reported_only && !dist->greedy) {
      def_.fault.distribution({row, used, profile_, *dist}, weights);
    }
    return Weights{DrawTable(weights, def_.fault.draw, row, used, dist->greedy)};
  }

  const MutantDef& def_;
  std::map<size_t, std::vector<Counter>> graph_;  // kGraphBakedUniform: the counters captured per batch size
  std::vector<SamplingParams> last_;              // kStepKeyReuse: the previous call's rows
  std::vector<Counter> last_counters_;
  uint64_t step_ = 0;
  Profile profile_;  // the correct profile with the profile hook applied
  RowCache<Weights> cache_;  // keyed by the parameters the mutant really uses (after its params hook)
};

}  // namespace
}  // namespace mutants

const std::vector<MutantInfo>& ListMutants() {
  static const std::vector<MutantInfo> infos = [] {
    std::vector<MutantInfo> list;
    for (const mutants::MutantDef& def : mutants::MutantDefs()) {
      if (def.info.name != kControlMutant) list.push_back(def.info);
    }
    return list;
  }();
  return infos;
}

namespace {

struct ExternalMutant {
  std::string family;
  MutantInfo info;
  MutantFactory make;
};

std::vector<ExternalMutant>& ExternalMutants() {
  static std::vector<ExternalMutant> registry;
  return registry;
}

}  // namespace

bool RegisterExternalMutant(std::string family, MutantInfo info, MutantFactory make) {
  if (FindMutant(info.name) != nullptr || !make) return false;
  ExternalMutants().push_back({std::move(family), std::move(info), std::move(make)});
  return true;
}

std::vector<MutantInfo> MutantFamily(std::string_view family) {
  std::vector<MutantInfo> members;
  if (family == "cpu") {
    members.push_back(*FindMutant(kControlMutant));
    for (const MutantInfo& m : ListMutants()) members.push_back(m);
    return members;
  }
  for (const ExternalMutant& m : ExternalMutants()) {
    if (m.family == family) members.push_back(m.info);
  }
  return members;
}

const MutantInfo* FindMutant(std::string_view name) {
  for (const mutants::MutantDef& def : mutants::MutantDefs()) {
    if (def.info.name == name) return &def.info;
  }
  for (const ExternalMutant& m : ExternalMutants()) {
    if (m.info.name == name) return &m.info;
  }
  return nullptr;
}

Result<std::unique_ptr<Sampler>> MakeMutantSampler(std::string_view name, const SamplerOptions& options) {
  Result<const Profile*> found = ProfileByName(options.profile);
  if (!found.ok()) return found.error().WithContext("mutant:" + std::string(name));
  const Profile* profile = *found;
  for (const mutants::MutantDef& def : mutants::MutantDefs()) {
    if (def.info.name == name) return std::unique_ptr<Sampler>(std::make_unique<mutants::MutantSampler>(def, *profile));
  }
  std::string external;
  for (const ExternalMutant& m : ExternalMutants()) {
    if (m.info.name == name) return m.make(options);
    external += ", " + m.info.name;
  }
  return InvalidArgument("no mutant named '" + std::string(name) + "'; known mutants: " + mutants::KnownMutants() +
                         external);
}

}  // namespace samplecheck::harness
