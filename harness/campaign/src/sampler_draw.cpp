// The Draw stage of sampler campaigns (sampler_draw.h).
#include "sampler_draw.h"

#include <algorithm>
#include <chrono>


namespace samplecheck::harness {
namespace {

using Clock = std::chrono::steady_clock;

// Tokens [lo, hi) of `sequence` into a histogram of `vocab` tokens (invalid ones counted apart).
void Tally(const std::vector<int32_t>& sequence, uint64_t lo, uint64_t hi, std::vector<uint64_t>& histogram,
           uint64_t& invalid) {
  for (uint64_t i = lo; i < hi; ++i) {
    const int32_t t = sequence[i];
    if (t >= 0 && static_cast<size_t>(t) < histogram.size()) {
      ++histogram[static_cast<size_t>(t)];
    } else {
      ++invalid;
    }
  }
}

// A deterministic sampler whose two paths differ: the first differing draw, by bisection over CountDraws of
// prefixes against the sampled sequence.
void FirstDifference(Sampler& sampler, std::span<const float> row, const SamplingParams& params,
                     const std::vector<int32_t>& sequence, Agreement& a) {
  const size_t vocab = row.size();
  uint64_t lo = 0, hi = sequence.size();  // the first differing draw lies in [lo, hi)
  while (hi - lo > 1) {
    const uint64_t mid = lo + (hi - lo) / 2;
    SamplingParams prefix = params;
    prefix.offset = params.offset + lo;
    std::vector<uint64_t> counted(vocab, 0), drawn(vocab, 0);
    uint64_t counted_invalid = 0, drawn_invalid = 0;
    if (!sampler.CountDraws(row, prefix, mid - lo, counted, &counted_invalid).ok()) break;
    Tally(sequence, lo, mid, drawn, drawn_invalid);
    if (counted != drawn || counted_invalid != drawn_invalid) {
      hi = mid;
    } else {
      lo = mid;
    }
  }
  SamplingParams one = params;
  one.offset = params.offset + lo;
  std::vector<uint64_t> counted(vocab, 0);
  uint64_t counted_invalid = 0;
  (void)sampler.CountDraws(row, one, 1, counted, &counted_invalid);
  const auto at = std::max_element(counted.begin(), counted.end());
  a.evidence.first_difference = static_cast<int64_t>(lo);
  a.evidence.fast_token = counted_invalid > 0 || *at == 0 ? kInvalidToken : static_cast<int32_t>(at - counted.begin());
  a.evidence.sampled_token = sequence[lo];
  std::vector<int32_t> alone(1, kInvalidToken);
  if (sampler.SampleRepeated(row, one, alone).ok()) a.evidence.sampled_alone_token = alone[0];
}

}  // namespace

// The case's first draws (at most 2^16 on a GPU; a CPU sampler, a plugin or a process, computes a row's
// distribution in every sampling call, so 4 MiB of replicated rows at most: 1024 draws up to V = 1024, 64 at least)
// counted by CountDraws and drawn by SampleRepeated at the same seeds and offsets.
Agreement MeasureAgreement(Sampler& sampler, const PreparedCase& pc, bool deterministic, bool gpu) {
  Agreement a;
  const std::span<const float> row = pc.row;
  const SamplingParams& params = pc.result.params;
  const uint64_t by_bytes = (uint64_t{1} << 22) / (4 * std::max<size_t>(row.size(), 1));
  const uint64_t m = std::min<uint64_t>(pc.result.draws,
                                        gpu ? uint64_t{1} << 16 : std::clamp<uint64_t>(by_bytes, 64, 1024));
  a.fast.assign(row.size(), 0);
  a.sampled.assign(row.size(), 0);
  uint64_t fast_invalid = 0, sampled_invalid = 0;
  if (a.status = sampler.CountDraws(row, params, m, a.fast, &fast_invalid); !a.status.ok()) return a;
  std::vector<int32_t> sequence(m, kInvalidToken);  // draw i at offset + i
  if (a.status = sampler.SampleRepeated(row, params, sequence); !a.status.ok()) return a;
  Tally(sequence, 0, m, a.sampled, sampled_invalid);
  a.evidence.draws = m;
  a.evidence.deterministic = deterministic;
  if (deterministic && (a.fast != a.sampled || fast_invalid != sampled_invalid)) {
    FirstDifference(sampler, row, params, sequence, a);
  }
  a.evidence.fast = a.fast;
  a.evidence.sampled = a.sampled;
  return a;
}

namespace {

// Every row of a batch through SampleReplicated (Sample on K copies of the batch): each call holds K replicas
// (draws c*K .. c*K + K - 1 of every row, replica k at offset + c*K + k), at most 4096 rows and 64 MiB of copied
// logits per call.
void DrawReplicated(Sampler& sampler, const std::vector<PreparedCase*>& rows, CaseSink& sink, BatchDraws& out) {
  const size_t b = rows.size();
  const size_t vocab = rows.front()->row.size();
  const uint64_t draws = rows.front()->result.draws;
  out.sequence.assign(b, std::vector<int32_t>(draws, kInvalidToken));
  constexpr uint64_t kMaxRows = 4096;
  constexpr uint64_t kMaxBytes = uint64_t{64} << 20;
  const uint64_t by_memory = std::max<uint64_t>(1, kMaxBytes / (sizeof(float) * b * std::max<size_t>(vocab, 1)));
  const uint64_t replicas = std::max<uint64_t>(1, std::min({kMaxRows / b, by_memory, draws}));
  std::vector<float> logits(b * vocab);
  for (size_t r = 0; r < b; ++r) std::copy(rows[r]->row.begin(), rows[r]->row.end(), logits.begin() + r * vocab);
  std::vector<SamplingParams> params(replicas * b);
  std::vector<int32_t> tokens(replicas * b);
  const RowBatch batch{logits.data(), static_cast<int64_t>(b), static_cast<int64_t>(vocab),
                       static_cast<int64_t>(vocab)};
  for (uint64_t done = 0; done < draws && !sink.Halted();) {
    const uint64_t n = std::min(replicas, draws - done);
    for (uint64_t k = 0; k < n; ++k) {
      for (size_t r = 0; r < b; ++r) {
        params[k * b + r] = rows[r]->result.params;
        params[k * b + r].offset = rows[r]->result.params.offset + done + k;
      }
    }
    Status st = sampler.SampleReplicated(batch, n, std::span(params).first(n * b), std::span(tokens).first(n * b));
    if (!st.ok()) {
      out.sampler_error = st.error().ToString();
      return;
    }
    for (uint64_t k = 0; k < n; ++k) {
      for (size_t r = 0; r < b; ++r) out.sequence[r][done + k] = tokens[k * b + r];
    }
    done += n;
    sink.progress().AddDraws(n * b);
  }
}

// The rows alone: deterministic samplers draw the first draws of each row in calls of one row (batch size 1) at
// the same offsets; the others count as many draws of the row alone at offsets after the batch's.
void DrawAlone(Sampler& sampler, const std::vector<PreparedCase*>& rows, bool deterministic, const CaseSink& sink,
               BatchDraws& out) {
  const size_t b = rows.size();
  const size_t vocab = rows.front()->row.size();
  const uint64_t draws = rows.front()->result.draws;
  if (deterministic) {
    const uint64_t m = std::min<uint64_t>(draws, std::clamp<uint64_t>(4096 / b, 8, 256));
    out.alone.assign(b, std::vector<int32_t>(m, kInvalidToken));
    for (size_t r = 0; r < b && !sink.Halted(); ++r) {
      const RowBatch single{rows[r]->row.data(), 1, static_cast<int64_t>(vocab), static_cast<int64_t>(vocab)};
      if (Status st = sampler.SampleSteps(single, std::span(&rows[r]->result.params, 1), m, out.alone[r]); !st.ok()) {
        out.sampler_error = st.error().ToString();
        return;
      }
    }
    return;
  }
  out.alone_histogram.assign(b, std::vector<uint64_t>(vocab, 0));
  for (size_t r = 0; r < b && !sink.Halted(); ++r) {
    SamplingParams later = rows[r]->result.params;
    later.offset += draws;  // independent of the batch's draws
    uint64_t invalid = 0;
    if (Status st = sampler.CountDraws(rows[r]->row, later, draws, out.alone_histogram[r], &invalid); !st.ok()) {
      out.sampler_error = st.error().ToString();
      return;
    }
  }
}

SparseCounts ToSparse(const std::vector<uint64_t>& dense) {
  SparseCounts out;
  for (size_t t = 0; t < dense.size(); ++t) {
    if (dense[t] != 0) out.emplace_back(static_cast<int32_t>(t), dense[t]);
  }
  return out;
}

// A shard's evidence of a row case: its pieces, counts and agreement draws, for merge to add up.
ShardRowEvidence ShardEvidence(const std::string& name, const RowDraws& d) {
  ShardRowEvidence e;
  e.name = name;
  e.pieces = d.pieces;
  std::sort(e.pieces.begin(), e.pieces.end());
  e.histogram = ToSparse(d.histogram);
  e.invalid_draws = d.invalid;
  e.sampler_error = d.sampler_error;
  if (d.has_agreement) {
    const AgreementEvidence& a = d.agreement.evidence;
    e.has_agreement = true;
    e.agreement_draws = a.draws;
    e.agreement_deterministic = a.deterministic;
    e.agreement_fast = ToSparse(d.agreement.fast);
    e.agreement_sampled = ToSparse(d.agreement.sampled);
    e.agreement_first_difference = a.first_difference;
    e.agreement_fast_token = a.fast_token;
    e.agreement_sampled_token = a.sampled_token;
    e.agreement_sampled_alone_token = a.sampled_alone_token;
  }
  return e;
}

class SamplerDrawer final : public ItemDrawer {
 public:
  SamplerDrawer(Sampler& sampler, SamplerRun& run) : sampler_(sampler), run_(run), fresh_(run.make_fresh) {}

  void Draw(const WorkItem& item) override {
    const std::vector<size_t>& unit = run_.work.units[item.unit];
    if (std::all_of(unit.begin(), unit.end(), [&](size_t i) { return run_.work.resumed[i]; })) return;
    const auto c0 = Clock::now();
    if (item.end > item.begin) {
      DrawRange(item, unit.front(), c0);
    } else if (unit.size() == 1 && run_.work.prepared[unit.front()].result.batch.size == 0) {
      DrawNothing(unit.front(), c0);
    } else {
      DrawBatchUnit(unit, c0);
    }
    if (!run_.sink.Halted() && run_.item_done) run_.item_done(item);
  }

 private:
  // Draws [begin, end) of a row case (cut short when the plan was lowered before the case started).
  void DrawRange(const WorkItem& item, size_t i, Clock::time_point c0);
  void DrawNothing(size_t i, Clock::time_point c0);
  void DrawBatchUnit(const std::vector<size_t>& unit, Clock::time_point c0);
  void RowCaseDrawn(size_t i, RowDraws& d);

  Sampler& sampler_;
  SamplerRun& run_;
  FreshSampler fresh_;  // this worker's second instance (the stream checks), opened on first use
};

void SamplerDrawer::DrawRange(const WorkItem& item, size_t i, Clock::time_point c0) {
  PreparedCase& pc = run_.work.prepared[i];
  RowDraws& d = run_.rows[i];
  uint64_t end = item.end;
  {
    std::lock_guard<std::mutex> lock(d.mu);
    d.started = true;
    end = std::min(end, pc.result.draws);
  }
  if (item.begin >= end) return;  // re-planned away
  const CaseResult& r = pc.result;
  std::vector<uint64_t> histogram(pc.row.size(), 0);
  uint64_t invalid = 0;
  std::string sampler_error;
  SamplingParams params = r.params;
  for (uint64_t done = item.begin; done < end && !run_.sink.Halted();) {
    const uint64_t n = std::min(kDrawChunk, end - done);
    params.offset = r.params.offset + done;
    if (Status st = sampler_.CountDraws(pc.row, params, n, histogram, &invalid); !st.ok()) {
      sampler_error = st.error().ToString();
      break;
    }
    done += n;
    run_.sink.progress().AddDraws(n);
  }
  // Stopped mid-case: the case is left out (a signal also kills the sampler's children, which then fail).
  if (run_.sink.Halted()) return;
  // A counting fast path is judged against the sampling call that ships (not for an unsamplable row), on the case's
  // first draws: by the item that holds them.
  Agreement agreement;
  const bool compare = run_.count_draws && item.begin == 0 && sampler_error.empty() && !r.unsamplable;
  if (compare) {
    agreement = MeasureAgreement(sampler_, pc, run_.deterministic && !run_.count_distributional, run_.gpu);
    if (run_.sink.Halted()) return;
  }
  // The stream checks, by the item that holds the case's first draws (in a shard too: it keeps their judged fields).
  const bool stream = item.begin == 0 && sampler_error.empty() && !r.unsamplable;
  StreamDraws streams;
  if (stream) {
    streams = MeasureRowStream(sampler_, fresh_, pc, run_.deterministic, run_.gpu);
    if (run_.sink.Halted()) return;
  }
  bool last = false;
  {
    std::lock_guard<std::mutex> lock(d.mu);
    if (d.histogram.empty()) d.histogram.assign(pc.row.size(), 0);
    for (size_t t = 0; t < histogram.size(); ++t) d.histogram[t] += histogram[t];
    d.invalid += invalid;
    if (d.sampler_error.empty()) d.sampler_error = sampler_error;
    d.pieces.emplace_back(item.begin, end);
    if (compare) {
      d.agreement = std::move(agreement);
      d.has_agreement = true;
      if (!d.agreement.status.ok() && d.sampler_error.empty()) d.sampler_error = d.agreement.status.error().ToString();
    }
    if (stream) {
      d.stream = std::move(streams);
      d.stream.Bind();
      d.has_stream = true;
      if (!d.stream.sampler_error.empty() && d.sampler_error.empty()) d.sampler_error = d.stream.sampler_error;
    }
    d.seconds += SecondsSince(c0);
    last = --d.pending == 0;
  }
  if (last) {
    RowCaseDrawn(i, d);
    std::vector<uint64_t>().swap(d.histogram);
  }
}

// A case without draws (skipped): the checks' fields for no evidence.
void SamplerDrawer::DrawNothing(size_t i, Clock::time_point c0) {
  PreparedCase& pc = run_.work.prepared[i];
  if (pc.skip) {
    JudgeNothing(pc.result);
  } else if (pc.refusal) {
    const StreamDraws refusal = DrawRefusal(sampler_, pc);
    EvaluateCase(pc, {}, 0, "", nullptr, nullptr, &refusal.evidence);
  } else {
    EvaluateCase(pc, std::vector<uint64_t>(pc.row.size(), 0), 0, "", nullptr, nullptr);
  }
  pc.result.seconds = SecondsSince(c0);
  run_.sink.Judged(i, pc.result, pc.skip);
}

// A batch: its rows drawn together, then each judged with the batch's evidence.
void SamplerDrawer::DrawBatchUnit(const std::vector<size_t>& unit, Clock::time_point c0) {
  std::vector<PreparedCase*> rows;
  for (size_t i : unit) {
    if (run_.work.prepared[i].skip) {
      JudgeNothing(run_.work.prepared[i].result);
    } else {
      rows.push_back(&run_.work.prepared[i]);
    }
  }
  BatchDraws draws;
  const bool decode = !rows.empty() && rows.front()->decode;
  if (!rows.empty()) {
    if (decode) {
      DrawDecode(sampler_, rows, run_.sink, draws);  // one call per step, as an engine's decode loop
    } else {
      DrawReplicated(sampler_, rows, run_.sink, draws);
    }
    if (!run_.sink.Halted() && draws.sampler_error.empty()) {
      DrawAlone(sampler_, rows, run_.deterministic, run_.sink, draws);
    }
  }
  if (run_.sink.Halted()) return;
  std::vector<StreamDraws> streams;
  std::vector<const StreamEvidence*> stream_of;
  if (draws.sampler_error.empty() && !rows.empty()) {
    streams = BatchStreams(rows, draws, decode, run_.deterministic, fresh_);
    for (const StreamDraws& s : streams) stream_of.push_back(&s.evidence);
  }
  JudgeBatch(rows, draws, run_.deterministic, stream_of);
  const double seconds = SecondsSince(c0) / double(unit.size());
  for (size_t i : unit) {
    run_.work.prepared[i].result.seconds = seconds;
    run_.sink.Judged(i, run_.work.prepared[i].result, run_.work.prepared[i].skip);
  }
}

// Every item of a row case drawn: a shard keeps the counts as evidence for merge, a whole run judges them.
void SamplerDrawer::RowCaseDrawn(size_t i, RowDraws& d) {
  PreparedCase& pc = run_.work.prepared[i];
  if (run_.sharded) {
    ShardRowEvidence e = ShardEvidence(pc.result.name, d);
    if (d.has_stream) e.stream = JudgeStreamFields(pc.result, d.stream.evidence);
    {
      std::lock_guard<std::mutex> lock(run_.evidence_mu);
      run_.work.report.shard->evidence.push_back(std::move(e));
    }
    run_.sink.Line(i, pc.result.name, "drawn", "draws=" + std::to_string(pc.result.draws), d.seconds);
    return;
  }
  if (d.has_agreement) {
    d.agreement.evidence.fast = d.agreement.fast;
    d.agreement.evidence.sampled = d.agreement.sampled;
  }
  const bool agreement_ok = d.has_agreement && d.agreement.status.ok();
  EvaluateCase(pc, d.histogram, d.invalid, d.sampler_error, nullptr, agreement_ok ? &d.agreement.evidence : nullptr,
               d.has_stream ? &d.stream.evidence : nullptr);
  pc.result.seconds = d.seconds;
  run_.sink.Judged(i, pc.result, false);
}

}  // namespace

void SamplerRun::Start(const std::vector<WorkItem>& items) {
  for (const WorkItem& item : items) {
    if (item.end > item.begin) ++rows[work.units[item.unit].front()].pending;
  }
  for (size_t i = 0; i < work.prepared.size(); ++i) {
    if (work.resumed[i]) sink.MarkFinished(i);
  }
}

std::unique_ptr<ItemDrawer> MakeSamplerDrawer(Sampler& sampler, SamplerRun& run) {
  return std::make_unique<SamplerDrawer>(sampler, run);
}

}  // namespace samplecheck::harness
