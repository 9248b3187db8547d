// The Draw stage of replay campaigns (replay_draw.h).
#include "replay_draw.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>

#include "judge.h"
#include "samplecheck/core/splitmix.h"
#include "samplecheck/reference/logits.h"
#include "samplecheck/reference/philox.h"
#include "samplecheck/suites/row_source.h"

namespace samplecheck::harness {
namespace {

// x moved by one bf16 ulp up or down (x a bf16 value; +-0 step to the smallest subnormals); x itself when the step
// would leave the finite range.
float Bf16Step(float x, bool up) {
  uint16_t bits = FloatToBFloat16(x);
  if (x == 0.0f) {
    bits = up ? 0x0001 : 0x8001;
  } else if ((x > 0) == up) {
    ++bits;  // away from zero
  } else {
    --bits;  // toward zero
  }
  const float y = BFloat16ToFloat(bits);
  return std::isfinite(y) ? y : x;
}

// One side's answer for the live rows of a case: rows x vocab logprobs, its guard flags, or why it has none.
struct SideAnswer {
  std::vector<float> logprobs;
  std::vector<uint8_t> guarded;
  std::string skip;   // the source cannot replay these rows (its semantics reject them): the rows are skipped
  std::string error;  // the source failed: the rows are errors
};

SideAnswer Ask(ReplaySource& source, const std::string& side, const std::vector<const std::vector<float>*>& rows,
               ReplayDType dtype, const std::vector<SamplingParams>& params, const std::vector<int32_t>& labels) {
  SideAnswer a;
  const size_t vocab = rows.front()->size();
  std::vector<float> logits;
  logits.reserve(rows.size() * vocab);
  for (const std::vector<float>* r : rows) logits.insert(logits.end(), r->begin(), r->end());
  ReplayBatch batch;
  batch.rows = RowBatch{logits.data(), static_cast<int64_t>(rows.size()), static_cast<int64_t>(vocab),
                        static_cast<int64_t>(vocab)};
  batch.dtype = dtype;
  batch.params = params;
  batch.labels = labels;
  auto answer = source.Logprobs(batch);
  if (!answer.ok()) {
    const ErrorCode code = answer.error().code;
    const std::string& message = answer.error().message;
    const std::string why = side + " " + (message.rfind(source.Name(), 0) == 0 ? "" : source.Name() + ": ") + message;
    (code == ErrorCode::kInvalidArgument || code == ErrorCode::kUnsupported ? a.skip : a.error) = why;
    return a;
  }
  if (answer->logprobs.size() != rows.size() * vocab || answer->guarded.size() != rows.size()) {
    a.error = side + " " + source.Name() + " answered " + std::to_string(answer->logprobs.size()) + " logprobs and " +
              std::to_string(answer->guarded.size()) + " guard flags for " + std::to_string(rows.size()) +
              " rows of " + std::to_string(vocab) + " tokens";
    return a;
  }
  a.logprobs = std::move(answer->logprobs);
  a.guarded = std::move(answer->guarded);
  return a;
}

// The label of a row: the rollout's first token, or the engine's least probable kept token (the highest id among
// equals): where a replay's boundary breaks.
int32_t LabelOf(LabelChoice choice, std::span<const float> engine_lp, const std::vector<int32_t>& rollout) {
  if (rollout.empty()) return kNoLabel;
  if (choice == LabelChoice::kSampled) return rollout.front();
  int32_t label = kNoLabel;
  for (size_t t = 0; t < engine_lp.size(); ++t) {
    if (std::isfinite(engine_lp[t]) && (label == kNoLabel || engine_lp[t] <= engine_lp[static_cast<size_t>(label)])) {
      label = static_cast<int32_t>(t);
    }
  }
  return label;
}

// What the rows of a case share when they are judged: the two answers, the sources' names and what was sent.
struct CaseJudge {
  const Profile& profile;
  const ReplayCaseSpec& spec;
  std::string engine_name, trainer_name;
  bool engine_given, trainer_given;
  const SideAnswer& engine;
  const SideAnswer& trainer;
  size_t vocab;
  bool labels_sent;

  // Row i of the answers: its evidence through the checks.
  CaseResult Row(CaseResult cr, const ReplayRow& row, const SamplingParams& params, const std::vector<int32_t>& rollout,
                 int32_t label, size_t i) const;
};

}  // namespace

void JudgeReplay(const ReplayEvidence& evidence, CaseResult& result) {
  const stats::BinningPlan none;
  JudgeEvidence(CaseEvidence{.planned = result, .p0 = {}, .binning = none, .histogram = {}, .sampler_error = {},
                             .replay = &evidence},
                result);
}

CaseResult CaseJudge::Row(CaseResult cr, const ReplayRow& row, const SamplingParams& params,
                          const std::vector<int32_t>& rollout, int32_t label, size_t i) const {
  ReplayEvidence ev;
  ev.profile = &profile;
  ev.params = params;
  ev.dtype = ReplayDTypeName(spec.dtype);
  ev.trainer_logits = TrainerLogitsName(spec.trainer_logits);
  ev.engine = {engine_given, engine_name, row.engine_row,
               std::span<const float>(engine.logprobs.data() + i * vocab, vocab), &row.engine_ref, false};
  ev.trainer = {trainer_given, trainer_name, row.trainer_row,
                std::span<const float>(trainer.logprobs.data() + i * vocab, vocab), &row.trainer_ref,
                trainer.guarded[i] != 0};
  ev.label = label;
  ev.label_choice = LabelChoiceName(spec.label);
  ev.labels_sent = labels_sent;
  ev.rollout = rollout;
  cr.kept = static_cast<int64_t>(row.engine_ref.kept.size());
  cr.greedy = row.engine_ref.greedy;
  cr.ambiguous = row.engine_ref.ambiguous;
  cr.numeric_drift = row.engine_ref.numeric_drift;
  cr.draws = rollout.size();
  JudgeReplay(ev, cr);
  return cr;
}

std::vector<float> TrainerRow(const std::vector<float>& engine_row, TrainerLogits mode, uint64_t seed) {
  std::vector<float> row = engine_row;
  if (mode == TrainerLogits::kSame) return row;
  uint64_t state = seed;
  for (float& x : row) {
    x = BFloat16ToFloat(FloatToBFloat16(x));
    if (mode != TrainerLogits::kBf16Jitter || !std::isfinite(x)) continue;
    state += 0x9E3779B97F4A7C15ULL;
    const uint64_t r = SplitMix64(state) & 7;
    if (r < 2) x = Bf16Step(x, r == 1);
  }
  return row;
}

std::vector<int32_t> DrawRollout(std::span<const float> logprobs, uint64_t seed, uint64_t offset, uint64_t n) {
  std::vector<int32_t> tokens;
  std::vector<long double> cdf;
  long double sum = 0;
  for (size_t t = 0; t < logprobs.size(); ++t) {
    if (!std::isfinite(logprobs[t])) continue;
    sum += std::exp(static_cast<long double>(logprobs[t]));
    tokens.push_back(static_cast<int32_t>(t));
    cdf.push_back(sum);
  }
  std::vector<int32_t> out;
  if (tokens.empty()) return out;
  out.reserve(n);
  for (uint64_t i = 0; i < n; ++i) {
    const long double u = static_cast<long double>(UniformForDraw(seed, offset + i)) * sum;
    const size_t k = static_cast<size_t>(std::upper_bound(cdf.begin(), cdf.end(), u) - cdf.begin());
    out.push_back(tokens[std::min(k, tokens.size() - 1)]);
  }
  return out;
}

Result<ReplayRow> BuildReplayRow(const CaseResult& row, const ReplayCaseSpec& spec, const Profile& profile) {
  auto logits = MakeRow(row.row, row.row_seed);
  if (!logits.ok()) return logits.error();
  ReplayRow r;
  r.engine_row = std::move(*logits);
  if (spec.dtype == ReplayDType::kBFloat16) {
    for (float& x : r.engine_row) x = BFloat16ToFloat(FloatToBFloat16(x));
  }
  r.trainer_row = TrainerRow(r.engine_row, spec.trainer_logits, SplitMix64(row.row_seed ^ 0xB16B16ULL));
  for (auto [logits_row, ref] : {std::pair{&r.engine_row, &r.engine_ref}, std::pair{&r.trainer_row, &r.trainer_ref}}) {
    auto dist = ComputeDistribution(LogitsView::Fp32(*logits_row), row.params, profile);
    if (!dist.ok()) return dist.error();
    *ref = std::move(*dist);
  }
  return r;
}

void ReplayDrawer::Draw(const WorkItem& item) {
  const ReplayCaseWork& w = work_[item.unit];
  const auto start = std::chrono::steady_clock::now();
  CaseSink& sink = *context_.sink;
  std::vector<size_t> live;
  for (size_t k = 0; k < w.rows.size(); ++k) {
    if (!w.rows[k].skipped) live.push_back(k);
  }
  auto finish = [&](size_t k, CaseResult cr, bool skipped) {
    cr.seconds = SecondsSince(start);
    sink.progress().AddDraws(cr.draws);
    (*context_.results)[w.first_row + k] = cr;
    sink.Judged(w.first_row + k, cr, skipped);
  };
  // A side that failed: its rows skipped or errors. Not when a stop signal came meanwhile: the signal killed the
  // side's process (KillSamplerChildren), which is samplecheck's doing, not the side's; the rows are left out
  // unjudged (the report is interrupted), as run leaves out the case being drawn.
  auto give_up = [&](const std::string& skip, const std::string& error) {
    if (sink.Halted()) return;
    for (size_t k : live) {
      CaseResult cr = w.rows[k].result;
      cr.status = skip.empty() ? CaseStatus::kError : CaseStatus::kSkipped;
      cr.reason = skip.empty() ? error : skip;
      JudgeNothing(cr);
      finish(k, std::move(cr), !skip.empty());
    }
  };
  for (size_t k = 0; k < w.rows.size(); ++k) {
    if (!w.rows[k].skipped) continue;
    CaseResult cr = w.rows[k].result;
    JudgeNothing(cr);
    finish(k, std::move(cr), true);
  }
  const ReplayCaseSpec& spec = *w.spec;
  std::vector<ReplayRow> built;
  for (size_t k : live) {
    auto r = BuildReplayRow(w.rows[k].result, spec, *context_.profile);
    if (!r.ok()) return give_up("", "row " + w.rows[k].result.name + ": " + r.error().message);
    built.push_back(std::move(*r));
  }
  if (live.empty()) return;
  std::vector<const std::vector<float>*> engine_rows, trainer_rows;
  std::vector<SamplingParams> params;
  for (size_t i = 0; i < live.size(); ++i) {
    engine_rows.push_back(&built[i].engine_row);
    trainer_rows.push_back(&built[i].trainer_row);
    params.push_back(w.rows[live[i]].result.params);
  }
  const size_t vocab = engine_rows.front()->size();
  const SideAnswer engine = Ask(*engine_, "engine", engine_rows, spec.dtype, params, {});
  if (!engine.skip.empty() || !engine.error.empty()) return give_up(engine.skip, engine.error);
  std::vector<std::vector<int32_t>> rollouts;
  std::vector<int32_t> labels;
  for (size_t i = 0; i < live.size(); ++i) {
    const std::span<const float> lp(engine.logprobs.data() + i * vocab, vocab);
    const SamplingParams& p = params[i];
    rollouts.push_back(DrawRollout(lp, p.seed, p.offset, context_.rollout));
    labels.push_back(LabelOf(spec.label, lp, rollouts.back()));
  }
  const bool labels_sent = trainer_->GetCapabilities().labels;
  const ReplayDType trainer_dtype =
      spec.dtype == ReplayDType::kBFloat16 || spec.trainer_logits != TrainerLogits::kSame ? ReplayDType::kBFloat16
                                                                                          : ReplayDType::kFloat32;
  const SideAnswer trainer = Ask(*trainer_, "trainer", trainer_rows, trainer_dtype, params,
                                 labels_sent ? labels : std::vector<int32_t>{});
  if (!trainer.skip.empty() || !trainer.error.empty()) return give_up(trainer.skip, trainer.error);
  const CaseJudge judge{*context_.profile, spec, engine_given_ ? engine_->Name() : "reference",
                        trainer_given_ ? trainer_->Name() : "reference", engine_given_, trainer_given_, engine,
                        trainer, vocab, labels_sent};
  for (size_t i = 0; i < live.size(); ++i) {
    finish(live[i], judge.Row(w.rows[live[i]].result, built[i], params[i], rollouts[i], labels[i], i), false);
  }
}

}  // namespace samplecheck::harness
