// Inside the campaign library: the Draw stage of sampler campaigns. A worker's SamplerDrawer draws a work item
// through its Sampler (a row case's range by CountDraws, its first draws again through Sample for the agreement
// check, a batch through SampleReplicated), hands what completes a case to the Judge stage (judge.h) and the case
// to the sink; a shard keeps its row cases' counts as evidence instead.
#pragma once

#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "campaign_work.h"
#include "engine.h"
#include "judge.h"
#include "samplecheck/samplers/sampler.h"
#include "stream_draw.h"
#include "work_items.h"

namespace samplecheck::harness {

// The shipped sampling call behind the counting fast path: the case's first draws counted by CountDraws and drawn
// by Sample on the repeated row at the same seeds and offsets.
struct Agreement {
  AgreementEvidence evidence;
  std::vector<uint64_t> fast, sampled;
  Status status;  // not ok: the sampler failed on one of the two paths
};
// The agreement draws of a row case (sampler_draw.cpp; the probe of the time budget times them too).
Agreement MeasureAgreement(Sampler& sampler, const PreparedCase& pc, bool deterministic, bool gpu);

// The draws of one row case as they arrive from its items (possibly on several workers).
struct RowDraws {
  std::mutex mu;
  bool started = false;              // an item of it was taken (the re-plan leaves it alone)
  size_t pending = 0;                // items of this case still to draw (in this process)
  std::vector<uint64_t> histogram;   // allocated by the first item to finish
  uint64_t invalid = 0;
  std::string sampler_error;
  std::vector<std::pair<uint64_t, uint64_t>> pieces;
  Agreement agreement;
  bool has_agreement = false;
  StreamDraws stream;      // seeds and handles (stream_draw.h), by the item holding the first draws
  bool has_stream = false;
  double seconds = 0.0;
};

// What the workers of one sampler campaign share.
struct SamplerRun {
  CampaignWork& work;
  CaseSink& sink;
  bool deterministic = false;
  bool count_draws = false;  // a native counting fast path: the agreement check runs
  bool count_distributional = false;  // ... judged as two samples (Capabilities::count_distributional)
  bool gpu = false;
  bool sharded = false;      // keep the row cases' counts (ShardRowEvidence) for merge, judge nothing of them
  std::vector<RowDraws> rows;  // per prepared case
  std::mutex evidence_mu;
  // Opens a fresh instance of the campaign's sampler (the stream checks' second handle; one per worker).
  FreshSampler::Factory make_fresh;
  // The time budget's watch (null without one): told of every finished item, it may re-plan the rest once.
  std::function<void(const WorkItem&)> item_done;

  SamplerRun(CampaignWork& w, CaseSink& s) : work(w), sink(s), rows(w.prepared.size()) {}
  // Counts the items of every row case (RowDraws::pending) and marks the journal's cases finished.
  void Start(const std::vector<WorkItem>& items);
};

std::unique_ptr<ItemDrawer> MakeSamplerDrawer(Sampler& sampler, SamplerRun& run);

}  // namespace samplecheck::harness
