// The work items of a sampler campaign, their costs and their assignment to shards or workers (work_items.h).
#include <algorithm>

#include "work_items.h"

namespace samplecheck::harness {

std::vector<WorkItem> MakeWorkItems(const CampaignWork& work, const CostModel& model,
                                    const std::vector<uint64_t>* draws_of) {
  std::vector<WorkItem> items;
  auto draws = [&](size_t i) { return draws_of ? (*draws_of)[i] : work.prepared[i].result.draws; };
  for (size_t u = 0; u < work.units.size(); ++u) {
    const std::vector<size_t>& unit = work.units[u];
    const PreparedCase& first = work.prepared[unit.front()];
    const double vocab = double(first.row.size());
    if (unit.size() == 1 && Ranged(first, work.resumed[unit.front()]) && draws(unit.front()) > 0) {
      const uint64_t n = draws(unit.front());
      for (uint64_t b = 0; b < n; b += kPieceDraws) {
        const uint64_t e = std::min(n, b + kPieceDraws);
        const double calls = double((e - b + kDrawChunk - 1) / kDrawChunk);
        items.push_back({u, b, e,
                         model.counted_draw * double(e - b) + model.call_per_token * vocab * calls +
                             (b == 0 ? (model.judge_per_token + model.row_checks_per_token) * vocab : 0.0)});
      }
      continue;
    }
    double cost = 0.0;
    for (size_t i : unit) {
      if (!work.prepared[i].skip && !work.resumed[i]) {
        cost += model.sampled_draw_per_token * double(draws(i)) * vocab + model.judge_per_token * vocab;
      }
    }
    // A decode batch makes one call per step: at least a call's cost each, however few its tokens.
    if (first.decode && !work.resumed[unit.front()])
      cost = std::max(cost, model.batch_call * double(draws(unit.front())));
    items.push_back({u, 0, 0, cost});
  }
  return items;
}

namespace {

// The largest items first, each to the least loaded of `count` parts; the parts' loads.
std::vector<double> Schedule(const std::vector<WorkItem>& items, uint32_t count, std::vector<uint32_t>* part_of) {
  std::vector<size_t> order(items.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return items[a].cost > items[b].cost; });
  std::vector<double> load(std::max<uint32_t>(count, 1), 0.0);
  for (size_t i : order) {
    const auto least = static_cast<uint32_t>(std::min_element(load.begin(), load.end()) - load.begin());
    if (part_of) (*part_of)[i] = least;
    load[least] += items[i].cost;
  }
  return load;
}

}  // namespace

std::vector<uint32_t> AssignShards(const std::vector<WorkItem>& items, uint32_t count) {
  std::vector<uint32_t> shard_of(items.size(), 0);
  Schedule(items, count, &shard_of);
  return shard_of;
}

double EstimateSeconds(const std::vector<WorkItem>& items, unsigned workers) {
  const std::vector<double> load = Schedule(items, workers, nullptr);
  return *std::max_element(load.begin(), load.end()) * 1e-9;
}

}  // namespace samplecheck::harness
