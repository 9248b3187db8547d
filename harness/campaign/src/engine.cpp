// The pipeline of every campaign kind (engine.h): the workers and the Report stage's sink.
#include "engine.h"

#include <algorithm>
#include <sstream>
#include <thread>

namespace samplecheck::harness {

CaseSink::CaseSink(size_t cases, size_t to_draw, uint64_t draws, Progress::Mode mode, CampaignObserver* observer,
                   const std::atomic<bool>* stop)
    : progress_(draws, to_draw, mode), observer_(observer), stop_(stop), finished_(cases, 0) {}

void CaseSink::Judged(size_t index, const CaseResult& r, bool skipped) {
  std::ostringstream detail;
  bool hard_failure = false;
  if (skipped || r.status == CaseStatus::kError) {
    detail << r.reason;
  } else {
    std::string failures;
    for (const CheckOutcome& o : r.outcomes) {
      if (!o.Fails()) continue;
      hard_failure = true;
      failures += "  " + o.test + " FAILED (" + std::to_string(o.violations) + ")";
    }
    detail << "p=" << r.p_value << "  draws=" << r.draws << failures;
  }
  const char* status = skipped ? "skipped" : (hard_failure || r.status == CaseStatus::kError) ? "FAIL" : "done";
  progress_.CaseDone(r.name, status, detail.str(), r.seconds);
  std::lock_guard<std::mutex> lock(mu_);
  finished_[index] = 1;
  if (observer_ != nullptr && error_.ok()) {
    error_ = observer_->OnCaseDone(r);
    if (!error_.ok()) failed_ = true;
  }
}

void CaseSink::Line(size_t index, const std::string& name, const std::string& status, const std::string& detail,
                    double seconds) {
  MarkFinished(index);
  progress_.CaseDone(name, status, detail, seconds);
}

void CaseSink::MarkFinished(size_t index) {
  std::lock_guard<std::mutex> lock(mu_);
  finished_[index] = 1;
}

Status CaseSink::error() const {
  std::lock_guard<std::mutex> lock(mu_);
  return error_;
}

void RunWorkers(const std::vector<WorkItem>& items, const std::vector<std::unique_ptr<ItemDrawer>>& drawers,
                const CaseSink& sink) {
  std::atomic<size_t> next{0};
  auto worker = [&](ItemDrawer& drawer) {
    for (size_t k = next++; k < items.size() && !sink.Halted(); k = next++) drawer.Draw(items[k]);
  };
  std::vector<std::thread> threads;
  for (size_t j = 1; j < drawers.size(); ++j) threads.emplace_back(worker, std::ref(*drawers[j]));
  if (!drawers.empty()) worker(*drawers.front());
  for (std::thread& t : threads) t.join();
}

Status RunKind(CampaignKind& kind, const std::atomic<bool>* stop) {
  Result<KindPlan> plan = kind.Plan();
  if (!plan.ok()) return plan.error();
  CaseSink sink(plan->cases, plan->to_draw, plan->draws, plan->progress, plan->observer, stop);
  if (!plan->note.empty()) sink.progress().Note(plan->note);
  std::vector<std::unique_ptr<ItemDrawer>> drawers;
  const size_t workers = std::min<size_t>(std::max(plan->workers, 1u), std::max<size_t>(plan->items.size(), 1));
  for (size_t j = 0; j < workers; ++j) {
    Result<std::unique_ptr<ItemDrawer>> drawer = kind.Drawer(static_cast<unsigned>(j), sink);
    if (!drawer.ok()) return drawer.error();
    drawers.push_back(std::move(*drawer));
  }
  RunWorkers(plan->items, drawers, sink);
  sink.progress().Finish();
  if (Status st = sink.error(); !st.ok()) return st;
  return kind.Collect(sink);
}

Result<CampaignReport> RunForReport(ReportKind& kind, const std::atomic<bool>* stop) {
  const auto started = std::chrono::steady_clock::now();
  if (Status st = RunKind(kind, stop); !st.ok()) return st.error();
  CampaignReport report = std::move(kind.report);
  report.seconds = SecondsSince(started);
  return report;
}

unsigned WorkerCount(unsigned requested, bool parallel_instances, size_t units) {
  unsigned jobs = requested;
  if (jobs == 0) jobs = parallel_instances ? std::max(1u, std::thread::hardware_concurrency()) : 1u;
  return std::clamp<unsigned>(jobs, 1, static_cast<unsigned>(std::max<size_t>(units, 1)));
}

double SecondsSince(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

}  // namespace samplecheck::harness
