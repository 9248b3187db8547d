// The stream draws of sampler campaigns (stream_draw.h).
#include "stream_draw.h"

#include <algorithm>

#include "engine.h"
#include "samplecheck/core/splitmix.h"
#include "samplecheck/reference/params.h"
#include "samplecheck/stats/matches.h"

namespace samplecheck::harness {
namespace {

constexpr uint64_t kMinSeedPairs = 64;
constexpr uint64_t kCpuStreamBytes = uint64_t{32} << 20;  // replicated logits per sequence on a CPU sampler
constexpr uint64_t kFreshBatch = 256;                     // results compared in one batch of a fresh instance
constexpr uint64_t kFreshCalls = 16;                      // results compared one call each
constexpr uint64_t kSeedSalt = 0x5EED0F31ULL;             // the second seed: splitmix of the first ^ this

// Draws `n` tokens of the row at offsets offset .. offset + n through the sampling call.
std::string Sequence(Sampler& sampler, const PreparedCase& pc, const SamplingParams& params, uint64_t n,
                     std::vector<int32_t>& out) {
  out.assign(n, kInvalidToken);
  if (Status st = sampler.SampleRepeated(pc.row, params, out); !st.ok()) return st.error().ToString();
  return "";
}

// One call per draw, a batch of one row (SampleSteps: Sample after Sample, at offsets offset .. offset + n).
std::string Calls(Sampler& sampler, std::span<const float> row, const SamplingParams& params, uint64_t n,
                  std::vector<int32_t>& out) {
  out.assign(n, kInvalidToken);
  const RowBatch single{row.data(), 1, static_cast<int64_t>(row.size()), static_cast<int64_t>(row.size())};
  if (Status st = sampler.SampleSteps(single, std::span(&params, 1), n, out); !st.ok()) return st.error().ToString();
  return "";
}

// The steps of a decode loop drawn per SampleSteps call: a stop is seen and progress shown at least this often.
constexpr uint64_t kDecodeStepsPerCall = 256;

// The pairs of the seed test: enough for power 1 against a stream that ignores its seed (twice the least, at least
// 64), at most 4096 (65536 on a GPU) and, on a CPU, 32 MiB of replicated row.
uint64_t SeedPairs(double collision, double alpha, size_t vocab, bool gpu) {
  const uint64_t cap = gpu ? uint64_t{1} << 16
                           : std::clamp<uint64_t>(kCpuStreamBytes / (4 * std::max<size_t>(vocab, 1)), kMinSeedPairs, 4096);
  const uint64_t needed = stats::MatchesNeededForPower(collision, alpha);
  return needed >= cap / 2 ? cap : std::clamp<uint64_t>(2 * needed, kMinSeedPairs, cap);
}

}  // namespace

void StreamDraws::Bind() {
  evidence.under_a = under_a;
  evidence.under_b = under_b;
  evidence.match_probability = match;
  evidence.reference = reference.empty() ? std::span<const int32_t>(under_a) : std::span<const int32_t>(reference);
  evidence.fresh_handle = fresh_batch;
  evidence.fresh_calls = fresh_calls;
  evidence.steps = steps;
}

double CollisionProbability(std::span<const double> p) {
  long double c = 0;
  for (double x : p) c += static_cast<long double>(x) * x;
  return static_cast<double>(c);
}

StreamDraws MeasureRowStream(Sampler& sampler, FreshSampler& fresh, const PreparedCase& pc, bool deterministic,
                             bool gpu) {
  StreamDraws d;
  StreamEvidence& e = d.evidence;
  const CaseResult& r = pc.result;
  const double c = CollisionProbability(pc.p0);
  e.seed_a = r.params.seed;
  e.seed_b = SplitMix64(r.params.seed ^ kSeedSalt);
  const uint64_t pairs = SeedPairs(c, r.alpha_plan, pc.row.size(), gpu);
  // The reference sequence: this instance, the case's seed, one batch (also what a fresh instance must repeat).
  if (std::string err = Sequence(sampler, pc, r.params, pairs, d.under_a); !err.empty()) {
    d.sampler_error = err;
    return d;
  }
  if (r.conditioned) {
    e.seed_untested = "the case is conditioned on its unambiguous tokens: the match probability is not known";
  } else if (r.kept < 2) {
    e.seed_untested = "one kept token: every seed draws it";
  } else {
    SamplingParams other = r.params;
    other.seed = e.seed_b;
    if (std::string err = Sequence(sampler, pc, other, pairs, d.under_b); !err.empty()) {
      d.sampler_error = err;
      return d;
    }
    d.match.assign(1, c);
    e.seed_run = true;
  }
  if (!deterministic) {
    e.handles_untested = "the sampler does not claim a deterministic stream";
  } else if (Sampler* f = fresh.Get(); f == nullptr) {
    e.handles_untested = fresh.why();
  } else {
    std::string err = Sequence(*f, pc, r.params, std::min(pairs, kFreshBatch), d.fresh_batch);
    if (err.empty()) err = Calls(*f, pc.row, r.params, std::min(pairs, kFreshCalls), d.fresh_calls);
    if (!err.empty()) {
      d.sampler_error = "a fresh instance: " + err;
      return d;
    }
    e.handles_run = true;
  }
  d.Bind();
  return d;
}

StreamDraws DrawRefusal(Sampler& sampler, const PreparedCase& pc) {
  StreamDraws d;
  StreamEvidence& e = d.evidence;
  e.refusal_run = true;
  e.refusal_field = pc.refusal_field;
  e.refusal_value = pc.refusal_value;
  int32_t token = kInvalidToken;
  const RowBatch single{pc.row.data(), 1, static_cast<int64_t>(pc.row.size()), static_cast<int64_t>(pc.row.size())};
  const Status st = sampler.Sample(single, std::span(&pc.result.params, 1), std::span(&token, 1));
  e.refused = !st.ok();
  e.refusal_message = st.ok() ? "token " + std::to_string(token) : st.error().message;
  d.Bind();
  return d;
}

void DrawDecode(Sampler& sampler, const std::vector<PreparedCase*>& rows, CaseSink& sink, BatchDraws& out) {
  const size_t b = rows.size();
  const size_t vocab = rows.front()->row.size();
  const uint64_t steps = rows.front()->result.draws;
  out.sequence.assign(b, std::vector<int32_t>(steps, kInvalidToken));
  std::vector<float> logits(b * vocab);
  for (size_t r = 0; r < b; ++r) std::copy(rows[r]->row.begin(), rows[r]->row.end(), logits.begin() + r * vocab);
  const RowBatch batch{logits.data(), static_cast<int64_t>(b), static_cast<int64_t>(vocab), static_cast<int64_t>(vocab)};
  std::vector<SamplingParams> params(b);
  std::vector<int32_t> tokens(std::min(steps, kDecodeStepsPerCall) * b);
  for (uint64_t done = 0; done < steps && !sink.Halted();) {
    const uint64_t n = std::min(kDecodeStepsPerCall, steps - done);
    for (size_t r = 0; r < b; ++r) {
      params[r] = rows[r]->result.params;
      params[r].offset += done;
    }
    if (Status st = sampler.SampleSteps(batch, params, n, std::span(tokens).first(n * b)); !st.ok()) {
      out.sampler_error = st.error().ToString();
      return;
    }
    for (uint64_t s = 0; s < n; ++s) {
      for (size_t r = 0; r < b; ++r) out.sequence[r][done + s] = tokens[s * b + r];
    }
    done += n;
    sink.progress().AddDraws(n * b);
  }
}

std::vector<StreamDraws> BatchStreams(const std::vector<PreparedCase*>& rows, const BatchDraws& draws, bool decode,
                                      bool deterministic, FreshSampler& fresh) {
  std::vector<StreamDraws> out(rows.size());
  for (size_t r = 0; r < rows.size() && r < draws.sequence.size(); ++r) {
    if (rows[r]->result.unsamplable) continue;  // every draw is the invalid marker
    out[r].steps = draws.sequence[r];
    out[r].evidence.repeat_probability = CollisionProbability(rows[r]->p0);
    out[r].evidence.unit = decode ? "step" : "draw";
  }
  if (decode && deterministic && !rows.empty() && !draws.sequence.empty()) {
    // The first steps of the loop again, on a fresh instance: one batch per step, then each request alone.
    Sampler* f = fresh.Get();
    const uint64_t k = std::min<uint64_t>(draws.sequence.front().size(), kFreshBatch);
    BatchDraws replay;
    std::vector<PreparedCase> first;
    std::string err = f == nullptr ? fresh.why() : "";
    if (f != nullptr) {
      std::vector<PreparedCase*> prefix;
      for (PreparedCase* pc : rows) {
        first.push_back(*pc);
        first.back().result.draws = k;
      }
      for (PreparedCase& pc : first) prefix.push_back(&pc);
      CaseSink quiet(0, 0, 0, Progress::Mode::kQuiet, nullptr, nullptr);
      DrawDecode(*f, prefix, quiet, replay);
      err = replay.sampler_error;
    }
    for (size_t r = 0; r < rows.size(); ++r) {
      StreamDraws& d = out[r];
      if (!err.empty()) {
        d.evidence.handles_untested = err;
        continue;
      }
      d.under_a.assign(draws.sequence[r].begin(), draws.sequence[r].begin() + static_cast<ptrdiff_t>(k));
      d.fresh_batch = replay.sequence[r];
      const std::string calls = Calls(*f, rows[r]->row, rows[r]->result.params, std::min(k, kFreshCalls), d.fresh_calls);
      if (!calls.empty()) {
        d.evidence.handles_untested = "a fresh instance failed: " + calls;
        continue;
      }
      d.evidence.handles_run = true;
    }
  }
  for (StreamDraws& d : out) d.Bind();
  return out;
}

}  // namespace samplecheck::harness
