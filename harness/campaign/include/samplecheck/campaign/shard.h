// Campaigns split over processes, GPUs and nodes (docs/scale.md).
//
// `run --shard I/N` draws a deterministic part of a campaign: whole cases, and chunk-aligned draw ranges of big row
// cases (each case's draws come from its own seed at fixed offsets, so no two shards share a stream), assigned from
// the plan and N alone. A shard's report keeps the counts of its row cases as evidence; `merge` adds them (counts
// are sufficient statistics) and judges once: the verdict, p-values and report are those of the unsharded run of
// the same seeds and plan.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "samplecheck/campaign/options.h"
#include "samplecheck/checks/result.h"
#include "samplecheck/core/error.h"
#include "samplecheck/suites/suite.h"

namespace samplecheck::harness {

// "I/N" (0 <= I < N <= 65536), "auto" (index and count from the environment: GTEST_SHARD_INDEX and
// GTEST_TOTAL_SHARDS; SLURM_ARRAY_TASK_ID - SLURM_ARRAY_TASK_MIN and SLURM_ARRAY_TASK_COUNT) or "auto/N" (the
// index from the environment, also a Kubernetes indexed Job's JOB_COMPLETION_INDEX, and the count N). `env` looks a
// variable up (nullopt when unset). kInvalidArgument naming the value or variable and what is allowed.
Result<ShardSpec> ParseShard(std::string_view text,
                             const std::function<std::optional<std::string>(const char*)>& env);
// The same with this process's environment.
Result<ShardSpec> ParseShard(std::string_view text);

// Judges the shards of one campaign together. `names` label the shards in messages (their file names). kInvalidArgument
// (the CLI exits 2) naming the shard and field when: a report is not a shard's, or was interrupted; two differ in
// suite, sampler, profile, seeds, TV, caps, equivalence, shard count, samplecheck version or git revision; a shard
// index is missing or given twice; the suite planned now is not the plan the shards drew; a case's draws are
// missing or drawn twice.
Result<CampaignReport> MergeShards(const Suite& suite, const std::vector<CampaignReport>& shards,
                                   const std::vector<std::string>& names, const std::string& command_line);

}  // namespace samplecheck::harness
