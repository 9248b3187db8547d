#include "samplecheck/campaign/identify.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <iomanip>
#include <iterator>
#include <sstream>

#include "engine.h"
#include "samplecheck/core/format.h"
#include "samplecheck/core/splitmix.h"
#include "samplecheck/reference/distribution.h"
#include "samplecheck/reference/logits.h"
#include "samplecheck/reference/profile.h"
#include "samplecheck/samplers/sampler_registry.h"
#include "samplecheck/stats/binning.h"
#include "samplecheck/stats/goodness_of_fit.h"
#include "samplecheck/suites/suite.h"

namespace samplecheck::harness {
namespace {

struct ProbeSpec {
  const char* name;
  const char* purpose;
  const char* vector;
  SamplingParams params;
};

SamplingParams P(double t, int64_t k, double p, double min_p) {
  SamplingParams s;
  s.temperature = t;
  s.top_k = k;
  s.top_p = p;
  s.min_p = min_p;
  return s;
}

const ProbeSpec kProbes[] = {
    {"V1 p=0.5", "strict vs non-strict top-p (mass above == p)", "V1", P(1, -1, 0.5, 0)},
    {"V1 p=0.875", "strict vs non-strict top-p (mass above == p)", "V1", P(1, -1, 0.875, 0)},
    {"V2 k=2", "top-k ties kept vs exactly k", "V2", P(1, 2, 1, 0)},
    {"V2' p=0.5", "top-p tie group kept vs cut by position", "V2'", P(1, -1, 0.5, 0)},
    {"V3 p=0.75", "renormalized nucleus vs truncated CDF (TRT legacy)", "V3", P(1, -1, 0.75, 0)},
    {"V4 p=0.75 min_p=0.3", "min-p before vs after top-p", "V4", P(1, -1, 0.75, 0.3)},
    {"V5 k=4 p=0.82", "joint vs top_k_first", "V5", P(1, 4, 0.82, 0)},
    {"V4 k=0", "top_k = 0: disabled vs invalid", "V4", P(1, 0, 1, 0)},
    {"V4 p=0", "top_p = 0: greedy vs invalid", "V4", P(1, -1, 0, 0)},
    {"V4 T=0", "T = 0: greedy vs invalid", "V4", P(0, -1, 1, 0)},
    {"V2 T=5e-6", "greedy temperature threshold (argmax of a tie vs uniform)", "V2", P(5e-6, -1, 1, 0)},
    {"V2 T=5e-5", "greedy temperature threshold (argmax of a tie vs uniform)", "V2", P(5e-5, -1, 1, 0)},
    {"V2 k=1", "top_k = 1: greedy (first id) vs every tied token", "V2", P(1, 1, 1, 0)},
    {"V3 T=0.5 p=0.6", "temperature before vs after the filters (llama.cpp: V6)", "V3", P(0.5, -1, 0.6, 0)},
};

// Consistency of a histogram with dense probabilities p0 (kept: the kept token ids, for the evidence).
ProbeVerdict JudgeDense(const std::vector<uint64_t>& hist, const std::vector<double>& p0,
                        const std::vector<int32_t>& kept, uint64_t draws, double alpha, std::string& evidence) {
  uint64_t outside = 0;
  int32_t worst = -1;
  uint64_t worst_count = 0;
  for (size_t t = 0; t < hist.size(); ++t) {
    if (hist[t] > 0 && !(p0[t] > 0)) {
      outside += hist[t];
      if (hist[t] > worst_count) {
        worst_count = hist[t];
        worst = static_cast<int32_t>(t);
      }
    }
  }
  std::ostringstream os;
  os.precision(3);
  if (outside > 0) {
    os << "token " << worst << " drawn " << worst_count << "x, dropped by this profile";
    evidence = os.str();
    return ProbeVerdict::kInconsistent;
  }
  const Result<stats::BinningPlan> plan = stats::PlanBinnings(p0, double(draws));
  if (!plan.ok() || !plan->head.usable()) {
    os << "kept set {";
    for (size_t i = 0; i < kept.size(); ++i) os << (i ? "," : "") << kept[i];
    os << "} matches; no draw outside";
    evidence = os.str();
    return ProbeVerdict::kConsistent;
  }
  const Result<stats::BinnedCounts> counts = stats::BinCounts(plan->head, hist);
  if (!counts.ok()) {
    evidence = "binning: " + counts.error().message;
    return ProbeVerdict::kUndecided;
  }
  const Result<stats::GoodnessOfFit> fit =
      stats::PearsonChiSquareTest(counts->observed, stats::CellProbabilities(plan->head));
  if (!fit.ok()) {
    evidence = "goodness of fit: " + fit.error().message;
    return ProbeVerdict::kUndecided;
  }
  os << "X2 = " << fit->statistic << " (dof " << fit->dof << "), p = " << fit->p_value;
  evidence = os.str();
  return fit->p_value >= alpha ? ProbeVerdict::kConsistent : ProbeVerdict::kInconsistent;
}

// Consistency of a histogram with one reference distribution.
ProbeVerdict Judge(const std::vector<uint64_t>& hist, const ProcessedDistribution& dist, uint64_t draws, double alpha,
                   std::string& evidence) {
  return JudgeDense(hist, dist.Dense(), dist.kept, draws, alpha, evidence);
}

// "{0: 0.5, 1: 0.375}": token ids and their probabilities (3 digits), the tokens of nonzero probability in id order.
std::string TokenProbabilities(const std::vector<double>& p) {
  std::string text = "{";
  for (size_t t = 0; t < p.size(); ++t) {
    if (!(p[t] > 0)) continue;
    text += (text.size() > 1 ? ", " : "") + std::to_string(t) + ": " + FormatSignificant(p[t], 3);
  }
  return text + "}";
}

// The draws' frequencies (the histogram over its total); empty when nothing was drawn.
std::vector<double> Frequencies(const std::vector<uint64_t>& hist) {
  uint64_t total = 0;
  for (uint64_t c : hist) total += c;
  std::vector<double> f;
  if (total == 0) return f;
  f.reserve(hist.size());
  for (uint64_t c : hist) f.push_back(double(c) / double(total));
  return f;
}

// Total variation between the draws' frequencies and p; -1 when nothing was drawn.
double DrawsTv(const std::vector<uint64_t>& hist, const std::vector<double>& p) {
  const std::vector<double> f = Frequencies(hist);
  if (f.empty() || f.size() != p.size()) return -1;
  double sum = 0;
  for (size_t t = 0; t < f.size(); ++t) sum += std::fabs(f[t] - p[t]);
  return 0.5 * sum;
}

// The reading "a tie group cut by position": tokens of equal fp32 logit are interchangeable, so an engine whose
// sort cuts an ambiguous tie group (torch.sort is not stable) may keep other members of it than the reference's
// lowest ids, as many of them as the reference keeps. For each ambiguous tie group of which the as-computed reading
// keeps some but not all members, the members the sampler drew take the kept members' places (then undrawn members,
// lowest id first) with the same probability each; more drawn members than kept ones rule the reading out. False
// when no such group exists or the reading is ruled out; else the verdict of the rearranged probabilities.
bool JudgeTieGroupsByPosition(const std::vector<uint64_t>& hist, const ProcessedDistribution& dist,
                              const std::vector<float>& row, uint64_t draws, double alpha, ProbeVerdict& verdict,
                              std::string& evidence) {
  std::vector<double> p = dist.Dense();
  std::vector<uint8_t> done(row.size(), 0);
  bool any = false;
  for (int32_t head : dist.ambiguous) {
    if (done[static_cast<size_t>(head)]) continue;
    std::vector<int32_t> group;
    for (int32_t t : dist.ambiguous) {
      if (row[static_cast<size_t>(t)] == row[static_cast<size_t>(head)]) group.push_back(t);
    }
    for (int32_t t : group) done[static_cast<size_t>(t)] = 1;
    size_t kept = 0;
    double each = 0;
    for (int32_t t : group) {
      if (p[static_cast<size_t>(t)] > 0) {
        ++kept;
        each = std::max(each, p[static_cast<size_t>(t)]);
      }
    }
    if (group.size() < 2 || kept == 0 || kept == group.size()) continue;
    std::vector<int32_t> chosen;
    for (int32_t t : group) {
      if (hist[static_cast<size_t>(t)] > 0) chosen.push_back(t);
    }
    if (chosen.size() > kept) return false;  // the sampler kept more of the group than the profile does
    for (int32_t t : group) {
      if (chosen.size() < kept && hist[static_cast<size_t>(t)] == 0) chosen.push_back(t);
    }
    for (int32_t t : group) p[static_cast<size_t>(t)] = 0;
    for (int32_t t : chosen) p[static_cast<size_t>(t)] = each;
    any = true;
  }
  if (!any) return false;
  std::vector<int32_t> kept_tokens;
  for (size_t t = 0; t < p.size(); ++t) {
    if (p[t] > 0) kept_tokens.push_back(static_cast<int32_t>(t));
  }
  verdict = JudgeDense(hist, p, kept_tokens, draws, alpha, evidence);
  return true;
}

}  // namespace

const char* ProbeVerdictName(ProbeVerdict v) {
  switch (v) {
    case ProbeVerdict::kConsistent: return "consistent";
    case ProbeVerdict::kInconsistent: return "inconsistent";
    case ProbeVerdict::kUndecided: return "undecided";
  }
  return "undecided";
}

namespace {

// One probe's draws judged under one profile: consistent, inconsistent or undecided, with the evidence.
ProbeEvidence JudgeProbe(const Probe& probe, const std::vector<float>& row, uint64_t invalid, const Profile* profile,
                         const IdentifyOptions& options) {
  ProbeEvidence ev;
  ev.profile = std::string(profile->name);
  const auto bad = ValidateParams(probe.params, *profile);
  if (bad) ev.prediction = "rejects the params";
  if (probe.sampler_failed) {
    // No profile fails: every one either rejects the params or draws.
    ev.verdict = ProbeVerdict::kInconsistent;
    ev.evidence = "the sampler failed, which no profile does (its error is the probe's, below the matrix)";
    if (!bad) {
      if (auto dist = ComputeDistribution(LogitsView::Fp32(row), probe.params, *profile); dist.ok()) {
        ev.prediction = TokenProbabilities(dist->Dense());
      }
    }
    return ev;
  }
  if (probe.sampler_rejected || bad) {
    ev.tv = probe.sampler_rejected && bad ? 0 : 1;
    if (probe.sampler_rejected && bad) {
      ev.verdict = ProbeVerdict::kConsistent;
      ev.evidence = "both reject these params";
    } else if (probe.sampler_rejected) {
      ev.verdict = ProbeVerdict::kInconsistent;
      ev.evidence = "the sampler rejected params this profile accepts (" + probe.sampler_message + ")";
      if (auto dist = ComputeDistribution(LogitsView::Fp32(row), probe.params, *profile); dist.ok()) {
        ev.prediction = TokenProbabilities(dist->Dense());
      }
    } else {
      ev.verdict = ProbeVerdict::kInconsistent;
      ev.evidence = "the profile rejects these params (" + bad->message + "); the sampler drew";
    }
    return ev;
  }
  if (invalid > 0) {
    ev.verdict = ProbeVerdict::kInconsistent;
    ev.evidence = std::to_string(invalid) + " invalid token(s) drawn";
    return ev;
  }
  auto dist = ComputeDistribution(LogitsView::Fp32(row), probe.params, *profile);
  if (!dist.ok()) {
    ev.verdict = ProbeVerdict::kUndecided;
    ev.evidence = "reference: " + dist.error().message;
    return ev;
  }
  ev.prediction = TokenProbabilities(dist->Dense());
  ev.tv = DrawsTv(probe.histogram, dist->Dense());
  ev.verdict = Judge(probe.histogram, *dist, options.draws, options.alpha, ev.evidence);
  if (ev.verdict != ProbeVerdict::kConsistent && !dist->ambiguous.empty()) {
    // The profile's fp32 implementations may keep or drop the ambiguous tokens: any of the readings fits.
    for (AmbiguousPolicy policy : {AmbiguousPolicy::kAllIn, AmbiguousPolicy::kAllOut}) {
      ReferenceOptions ro;
      ro.ambiguous = policy;
      auto alt = ComputeDistribution(LogitsView::Fp32(row), probe.params, *profile, ro);
      if (!alt.ok()) continue;
      std::string alt_evidence;
      if (Judge(probe.histogram, *alt, options.draws, options.alpha, alt_evidence) == ProbeVerdict::kConsistent) {
        ev.verdict = ProbeVerdict::kConsistent;
        ev.evidence = alt_evidence + " with ambiguous tokens " +
                      (policy == AmbiguousPolicy::kAllIn ? "kept" : "dropped");
        break;
      }
    }
    ProbeVerdict pooled_verdict = ProbeVerdict::kUndecided;
    std::string pooled_evidence;
    if (ev.verdict != ProbeVerdict::kConsistent &&
        JudgeTieGroupsByPosition(probe.histogram, *dist, row, options.draws, options.alpha, pooled_verdict,
                                 pooled_evidence) &&
        pooled_verdict == ProbeVerdict::kConsistent) {
      ev.verdict = ProbeVerdict::kConsistent;
      ev.evidence = std::move(pooled_evidence);
      ev.evidence += " with another member of an ambiguous tie group kept (cut by position)";
    }
  }
  if (!dist->ambiguous.empty()) ev.evidence += " [" + std::to_string(dist->ambiguous.size()) + " ambiguous]";
  return ev;
}

// Draw and Judge of the one worker: a probe's draws, judged by every profile.
class ProbeDrawer final : public ItemDrawer {
 public:
  ProbeDrawer(Sampler& sampler, std::vector<Probe>& probes, std::vector<std::vector<float>>& rows,
              const IdentifyOptions& options, CaseSink& sink)
      : sampler_(sampler), probes_(probes), rows_(rows), options_(options), sink_(sink) {}

  void Draw(const WorkItem& item) override {
    const auto started = std::chrono::steady_clock::now();
    Probe& probe = probes_[item.unit];
    const std::vector<float>& row = rows_[item.unit];
    probe.histogram.assign(row.size(), 0);
    uint64_t invalid = 0;
    Status st = sampler_.CountDraws(row, probe.params, options_.draws, probe.histogram, &invalid);
    if (!st.ok() && sink_.Halted()) return;  // the stop signal killed the sampler mid-request: not its answer
    if (!st.ok()) {
      // A refusal of the params (invalid argument, or a parameter the sampler does not support) is an answer some
      // profiles give; anything else (a crash, a broken protocol, a CUDA error) is a failure, and no profile's.
      const ErrorCode code = st.error().code;
      (code == ErrorCode::kInvalidArgument || code == ErrorCode::kUnsupported ? probe.sampler_rejected
                                                                              : probe.sampler_failed) = true;
      probe.sampler_message = st.error().ToString();
    }
    for (const Profile* profile : AllProfiles()) {
      probe.profiles.push_back(JudgeProbe(probe, row, invalid, profile, options_));
    }
    const double seconds = SecondsSince(started);
    sink_.Line(item.unit, probe.name,
               probe.sampler_failed     ? "FAILED"
               : probe.sampler_rejected ? "refused"
                                        : "done",
               probe.sampler_failed     ? probe.sampler_message
               : probe.sampler_rejected ? "params rejected"
                                        : std::to_string(options_.draws) + " draws",
               seconds);
    if (options_.on_probe) options_.on_probe(probe, item.unit + 1, probes_.size(), seconds);
  }

 private:
  Sampler& sampler_;
  std::vector<Probe>& probes_;
  std::vector<std::vector<float>>& rows_;
  const IdentifyOptions& options_;
  CaseSink& sink_;
};

// Every profile with its distance to the draws of `probes`, nearest first: fewest probes against it, then the
// smallest TV summed over the probes (ties keep AllProfiles' order).
std::vector<NearProfile> RankProfiles(const std::vector<Probe>& probes) {
  std::vector<NearProfile> near;
  for (const Profile* profile : AllProfiles()) {
    NearProfile n;
    n.profile = std::string(profile->name);
    for (const Probe& probe : probes) {
      for (const ProbeEvidence& ev : probe.profiles) {
        if (ev.profile != n.profile) continue;
        if (ev.verdict == ProbeVerdict::kInconsistent) {
          ++n.probes_against;
          n.against.push_back(probe.name);
        }
        if (ev.tv >= 0) n.tv_sum += ev.tv;
      }
    }
    near.push_back(std::move(n));
  }
  std::stable_sort(near.begin(), near.end(), [](const NearProfile& a, const NearProfile& b) {
    return a.probes_against != b.probes_against ? a.probes_against < b.probes_against : a.tv_sum < b.tv_sum;
  });
  return near;
}

// identify as a kind of the engine (engine.h): the probes are its cases, one worker draws them in order (one
// sampler), and the result keeps the finished ones.
class IdentifyCampaign final : public CampaignKind {
 public:
  explicit IdentifyCampaign(const IdentifyOptions& options) : options_(options) {}

  Result<KindPlan> Plan() override {
    SamplerOptions so;
    so.profile = options_.sampler_profile;
    auto sampler = MakeSampler(options_.sampler_spec, so);
    if (!sampler.ok()) return sampler.error();
    sampler_ = std::move(*sampler);
    result_.sampler = sampler_->Name();
    result_.claimed_profile = sampler_->GetCapabilities().profile;
    result_.draws = options_.draws;
    result_.alpha = options_.alpha;
    result_.planned_probes = std::size(kProbes);
    uint64_t probe_index = 0;
    for (const ProbeSpec& spec : kProbes) {
      Probe probe;
      probe.name = spec.name;
      probe.purpose = spec.purpose;
      probe.row.kind = "dyadic";
      probe.row.vector = spec.vector;
      probe.params = spec.params;
      probe.params.seed = SplitMix64(options_.seed ^ (0xA0 + probe_index++));
      auto row = MakeRow(probe.row, 0);
      if (!row.ok()) return row.error();
      probes_.push_back(std::move(probe));
      rows_.push_back(std::move(*row));
    }
    KindPlan plan;
    plan.items.resize(probes_.size());
    for (size_t k = 0; k < plan.items.size(); ++k) plan.items[k].unit = k;
    plan.cases = plan.to_draw = probes_.size();
    plan.draws = options_.draws * probes_.size();
    plan.progress = options_.progress;
    return plan;
  }

  Result<std::unique_ptr<ItemDrawer>> Drawer(unsigned, CaseSink& sink) override {
    return std::unique_ptr<ItemDrawer>(std::make_unique<ProbeDrawer>(*sampler_, probes_, rows_, options_, sink));
  }

  Status Collect(const CaseSink& sink) override {
    for (size_t k = 0; k < probes_.size() && sink.Finished(k); ++k) result_.probes.push_back(std::move(probes_[k]));
    result_.interrupted = result_.probes.size() < result_.planned_probes;
    for (const Profile* profile : AllProfiles()) {
      bool consistent = true;
      for (const Probe& probe : result_.probes) {
        for (const ProbeEvidence& ev : probe.profiles) {
          if (ev.profile == profile->name && ev.verdict == ProbeVerdict::kInconsistent) consistent = false;
        }
      }
      if (consistent) result_.consistent_profiles.emplace_back(profile->name);
    }
    result_.nearest = RankProfiles(result_.probes);
    return Status::Ok();
  }

  IdentifyResult TakeResult() { return std::move(result_); }

 private:
  const IdentifyOptions& options_;
  std::unique_ptr<Sampler> sampler_;
  std::vector<Probe> probes_;
  std::vector<std::vector<float>> rows_;
  IdentifyResult result_;
};

}  // namespace

Result<IdentifyResult> IdentifySampler(const IdentifyOptions& options) {
  IdentifyCampaign kind(options);
  if (Status st = RunKind(kind, options.stop); !st.ok()) return st.error();
  return kind.TakeResult();
}

namespace {

// One probe as the reader checks it: its row (the logits and their softmax), its parameters, what the sampler drew,
// and each distinct prediction with the profiles that make it.
void FormatProbe(std::ostream& os, const Probe& probe) {
  os << "  " << probe.name << ": " << probe.purpose << "\n";
  if (auto row = MakeRow(probe.row, 0); row.ok()) {
    std::vector<double> softmax(row->size());
    double total = 0;
    for (size_t t = 0; t < row->size(); ++t) total += softmax[t] = std::exp(double((*row)[t]));
    os << "    logits [";
    for (size_t t = 0; t < row->size(); ++t) os << (t ? ", " : "") << FormatSignificant((*row)[t], 3);
    for (double& p : softmax) p /= total;
    os << "] (softmax " << TokenProbabilities(softmax) << "), " << DescribeParams(probe.params) << "\n";
  }
  os << "    drawn      ";
  if (probe.sampler_failed) {
    os << "FAILED: " << probe.sampler_message;
  } else if (probe.sampler_rejected) {
    os << "rejected the params: " << probe.sampler_message;
  } else {
    os << TokenProbabilities(Frequencies(probe.histogram));
  }
  os << "\n";
  std::vector<std::pair<std::string, std::string>> predictions;  // prediction, its profiles
  for (const ProbeEvidence& ev : probe.profiles) {
    const std::string said = ev.prediction.empty() ? "(the reference could not say)" : ev.prediction;
    auto it = std::find_if(predictions.begin(), predictions.end(), [&](const auto& e) { return e.first == said; });
    if (it == predictions.end()) {
      predictions.emplace_back(said, ev.profile);
    } else {
      it->second += ", " + ev.profile;
    }
  }
  size_t width = 0;
  for (const auto& [said, _] : predictions) width = std::max(width, std::min<size_t>(said.size(), 40));
  for (size_t i = 0; i < predictions.size(); ++i) {
    os << "    " << std::left << std::setw(11) << (i == 0 ? "predicted" : "") << std::setw(int(width))
       << predictions[i].first << "  " << predictions[i].second << "\n";
  }
}

}  // namespace

std::string FormatIdentify(const IdentifyResult& r) {
  std::ostringstream os;
  os << "sampler " << r.sampler;
  if (!r.claimed_profile.empty()) os << " (claims profile " << r.claimed_profile << ")";
  os << ": " << r.probes.size() << " probes x " << r.draws << " draws, alpha " << r.alpha
     << " per probe and profile\n";
  if (r.interrupted) {
    os << "INTERRUPTED after " << r.probes.size() << " of " << r.planned_probes
       << " probes: not a verdict; below, what the finished probes exclude\n";
  }
  os << "\n";
  // Matrix: probes x profiles.
  std::vector<std::string> profiles;
  for (const Profile* p : AllProfiles()) profiles.emplace_back(p->name);
  os << std::left << std::setw(22) << "probe";
  for (size_t i = 0; i < profiles.size(); ++i) os << std::setw(4) << (std::string(1, 'P') += std::to_string(i + 1));
  os << "\n";
  for (const Probe& probe : r.probes) {
    os << std::left << std::setw(22) << probe.name;
    for (const ProbeEvidence& ev : probe.profiles) {
      os << std::setw(4)
         << (ev.verdict == ProbeVerdict::kConsistent ? "ok" : ev.verdict == ProbeVerdict::kInconsistent ? "NO" : "?");
    }
    os << (probe.sampler_failed     ? "  (the sampler FAILED: not a rejection)"
           : probe.sampler_rejected ? "  (sampler rejected the params)"
                                    : "")
       << "\n";
  }
  os << "\nprobes (token: probability; drawn: the sampler's frequencies; each profile's prediction):\n";
  for (const Probe& probe : r.probes) FormatProbe(os, probe);
  os << "\n";
  for (size_t i = 0; i < profiles.size(); ++i) {
    const bool ok = std::find(r.consistent_profiles.begin(), r.consistent_profiles.end(), profiles[i]) !=
                    r.consistent_profiles.end();
    os << "  P" << std::left << std::setw(3) << (i + 1) << std::setw(22) << profiles[i]
       << (ok ? (r.interrupted ? "not excluded yet" : "consistent") : "excluded");
    if (!ok) {
      for (const Probe& probe : r.probes) {
        for (const ProbeEvidence& ev : probe.profiles) {
          if (ev.profile == profiles[i] && ev.verdict == ProbeVerdict::kInconsistent) {
            os << " by " << probe.name << ": " << ev.evidence;
            goto next;
          }
        }
      }
    }
  next:
    os << "\n";
  }
  const bool all_failed = !r.probes.empty() && std::all_of(r.probes.begin(), r.probes.end(),
                                                           [](const Probe& p) { return p.sampler_failed; });
  if (all_failed) {
    os << "\nnearest profiles: none (the sampler failed on every probe)\n";
  } else {
    os << "\nnearest profiles (probes against; total variation between the draws and the prediction, summed over "
          "the probes):\n";
  }
  for (size_t i = 0; i < r.nearest.size() && i < 5 && !all_failed; ++i) {
    const NearProfile& n = r.nearest[i];
    os << "  " << (i + 1) << ". " << std::left << std::setw(22) << n.profile << n.probes_against << " against";
    if (!n.against.empty()) {
      os << " (" << n.against.front() << (n.against.size() > 1 ? ", ..." : "") << ")";
    }
    os << ", TV " << FormatSignificant(n.tv_sum, 3) << "\n";
  }
  os << (r.interrupted ? "\nnot excluded by the finished probes: " : "\nconsistent with: ");
  if (r.consistent_profiles.empty()) {
    os << "no profile";
    if (all_failed) {
      os << " (the sampler failed on every probe: a crash or a broken contract, not a profile)";
    } else if (!r.nearest.empty() && !r.interrupted) {
      os << " (nearest: " << r.nearest.front().profile << ")";
    }
  } else {
    for (size_t i = 0; i < r.consistent_profiles.size(); ++i) os << (i ? ", " : "") << r.consistent_profiles[i];
  }
  os << "\n";
  return os.str();
}

nlohmann::json IdentifyToJson(const IdentifyResult& r) {
  nlohmann::json j;
  j["sampler"] = r.sampler;
  j["claimed_profile"] = r.claimed_profile;
  j["draws_per_probe"] = r.draws;
  j["alpha"] = r.alpha;
  j["consistent_profiles"] = r.consistent_profiles;
  j["interrupted"] = r.interrupted;
  j["probes_planned"] = r.planned_probes;
  for (const Probe& p : r.probes) {
    nlohmann::json pj{{"name", p.name},
                      {"purpose", p.purpose},
                      {"row", RowSpecToJson(p.row)},
                      {"params", ParamsToJson(p.params, true)},
                      {"sampler_rejected", p.sampler_rejected},
                      {"sampler_failed", p.sampler_failed},
                      {"sampler_message", p.sampler_message},
                      {"histogram", p.histogram}};
    for (const ProbeEvidence& ev : p.profiles) {
      pj["profiles"][ev.profile] = {{"verdict", ProbeVerdictName(ev.verdict)},
                                    {"evidence", ev.evidence},
                                    {"prediction", ev.prediction},
                                    {"tv", ev.tv >= 0 ? nlohmann::json(ev.tv) : nlohmann::json(nullptr)}};
    }
    j["probes"].push_back(pj);
  }
  j["nearest"] = nlohmann::json::array();
  for (const NearProfile& n : r.nearest) {
    j["nearest"].push_back(
        {{"profile", n.profile}, {"probes_against", n.probes_against}, {"against", n.against}, {"tv_sum", n.tv_sum}});
  }
  return j;
}

}  // namespace samplecheck::harness
