// Inside the campaign library: the pipeline every campaign kind runs through. A kind is a CampaignKind (sampler
// campaigns: campaign.cpp; speculative decoding: spec_campaign.cpp; RL replay: replay_campaign.cpp; identify:
// identify.cpp): it plans its cases into work items (Plan), gives each worker an ItemDrawer that draws an item and
// judges the cases it completes through the check objects (Draw, Judge), hands every finished case to the CaseSink
// (Report: progress, journal, stop) and collects its result. RunKind is the one skeleton around them, RunWorkers
// the only place that starts threads, the sink the only place that journals.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "samplecheck/campaign/options.h"
#include "samplecheck/campaign/progress.h"
#include "samplecheck/checks/result.h"
#include "samplecheck/core/error.h"

namespace samplecheck::harness {

// What a worker draws at once: a whole unit (a batch, a spec case, a case without draws), or the draws
// [begin, end) of a unit's one case. Ranges are whole chunks from the case's first draw, so a case drawn in pieces
// (by workers, shards or devices) makes exactly the calls of the case drawn at once, and the same counts.
struct WorkItem {
  size_t unit = 0;
  uint64_t begin = 0, end = 0;  // a case's draws; 0, 0 for a whole unit
  double cost = 0.0;            // estimated seconds (shards' balance, the workers' order, the time budget)
};

// The Report stage as cases finish: one progress line each, then the observer (the journal; serialized), and the
// stop flag.
class CaseSink {
 public:
  // `cases`: the kind's list of cases (Judged's index); `to_draw` of them and `draws` are this run's (progress).
  CaseSink(size_t cases, size_t to_draw, uint64_t draws, Progress::Mode mode, CampaignObserver* observer,
           const std::atomic<bool>* stop);

  Progress& progress() { return progress_; }
  // A stop signal, or a journal that failed: no item starts, a case being drawn stops at its next chunk.
  bool Halted() const { return (stop_ != nullptr && stop_->load()) || failed_.load(); }
  // A judged case `index` of the kind's list: its line (p, draws, failures; or the reason), then the journal.
  void Judged(size_t index, const CaseResult& r, bool skipped);
  // A line without a judged case of its own (a shard's drawn evidence, a speculative case's judged cases).
  void Line(size_t index, const std::string& name, const std::string& status, const std::string& detail,
            double seconds);
  void MarkFinished(size_t index);
  bool Finished(size_t index) const { return finished_[index] != 0; }
  // The journal's first error (then the campaign stops and returns it).
  Status error() const;

 private:
  Progress progress_;
  CampaignObserver* observer_;
  const std::atomic<bool>* stop_;
  std::vector<uint8_t> finished_;  // bytes, not bits: workers write their own entries
  mutable std::mutex mu_;
  Status error_;
  std::atomic<bool> failed_{false};
};

// The Draw (and Judge) stage of one worker: draws an item and judges the cases it completes.
class ItemDrawer {
 public:
  virtual ~ItemDrawer() = default;
  virtual void Draw(const WorkItem& item) = 0;
};

// Runs the items on one thread per drawer (the first on this thread): each worker takes the next item in order
// until none is left or the sink halts.
void RunWorkers(const std::vector<WorkItem>& items, const std::vector<std::unique_ptr<ItemDrawer>>& drawers,
                const CaseSink& sink);

// How many workers: `requested` (--jobs), else one per core when the instances may run in parallel, else one; never
// more than the units to draw.
unsigned WorkerCount(unsigned requested, bool parallel_instances, size_t units);

// What a kind's Plan stage hands the engine: the items in the order the workers take them, the sink's sizes and
// how many workers draw.
struct KindPlan {
  std::vector<WorkItem> items;
  size_t cases = 0;      // the kind's list of cases (the sink's index range)
  size_t to_draw = 0;    // of them, drawn by this run (progress)
  uint64_t draws = 0;    // draws this run makes (progress; 0 when the kind counts none)
  unsigned workers = 1;  // drawers (never more than the items)
  Progress::Mode progress = Progress::Mode::kAuto;
  CampaignObserver* observer = nullptr;  // told each finished case (the journal)
  std::string note;                      // one line before the first draw ("" for none)
};

// A campaign kind: the four stages of the engine, configured for its sources.
class CampaignKind {
 public:
  virtual ~CampaignKind() = default;
  // Plan: opens the sources, plans the cases and their work items. Errors stop the campaign before any draw.
  virtual Result<KindPlan> Plan() = 0;
  // Draw: after Plan, with the run's sink; worker j's drawer, j in [0, workers).
  virtual Result<std::unique_ptr<ItemDrawer>> Drawer(unsigned worker, CaseSink& sink) = 0;
  // Report: once the workers are done (every item drawn, or the sink halted): the finished cases into the result.
  virtual Status Collect(const CaseSink& sink) = 0;
};

// The skeleton every kind runs: Plan, the sink, one drawer per worker, RunWorkers, the progress's end, the
// journal's first error (then it is returned and nothing is collected), Collect.
Status RunKind(CampaignKind& kind, const std::atomic<bool>* stop);

// A kind whose result is a campaign report (sampler, speculative decoding, replay): Plan stamps `report`, Collect
// puts the finished cases into it.
class ReportKind : public CampaignKind {
 public:
  CampaignReport report;
};
// RunKind, then the report with its seconds (from the start of Plan).
Result<CampaignReport> RunForReport(ReportKind& kind, const std::atomic<bool>* stop);

// Seconds since `start`.
double SecondsSince(std::chrono::steady_clock::time_point start);

}  // namespace samplecheck::harness
