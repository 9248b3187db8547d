// RL replay suites (docs/replay.md): rows, their parameters, the dtype the engine answers in, the trainer's logits
// (the engine's, or re-rounded to bf16) and the label choice, as row cases or batches sent in one call; generated
// replay cases; the built-in replay suites (replay-smoke, replay-standard) and replay suite files (schema
// samplecheck-replay-suite/1). The campaign that judges them is campaign/replay_campaign.h.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "samplecheck/core/error.h"
#include "samplecheck/reference/params.h"
#include "samplecheck/reference/profile.h"
#include "samplecheck/samplers/replay_source.h"
#include "samplecheck/suites/row_source.h"
#include "samplecheck/suites/suite.h"

namespace samplecheck::harness {

inline constexpr char kReplaySuiteSchema[] = "samplecheck-replay-suite/1";
inline constexpr char kReplayAggregateCase[] = "aggregate";

enum class TrainerLogits { kSame, kBf16, kBf16Jitter };
enum class LabelChoice { kSampled, kBoundary };
const char* TrainerLogitsName(TrainerLogits t);
const char* LabelChoiceName(LabelChoice l);

struct ReplayEntry {
  RowSpec row;
  SamplingParams params;
  uint32_t copies = 1;  // rows of this spec (consecutive row seeds)
};

struct ReplayCaseSpec {
  std::string name;
  std::vector<ReplayEntry> entries;  // one entry of one copy: a row case; otherwise a batch sent in one call
  ReplayDType dtype = ReplayDType::kFloat32;
  TrainerLogits trainer_logits = TrainerLogits::kSame;
  LabelChoice label = LabelChoice::kSampled;
};

struct ReplaySuite {
  std::string name;
  std::string description;
  std::string source;
  uint64_t seed = 1;
  std::string profile;
  uint64_t rollout = 1024;       // synthetic rollout tokens per row
  double max_ratio_bias = 0.01;  // the aggregate's bound on |mean importance ratio - 1|
  size_t generated = 0;          // generated cases after `cases` ("generated": {"count": n, "seed": s})
  uint64_t generated_seed = 0;
  std::vector<ReplayCaseSpec> cases;
};

// A relative .npy path of a row resolves against `base_dir` (the suite file's folder; LoadReplaySuite gives it).
Result<ReplaySuite> ParseReplaySuite(const nlohmann::json& json, std::string source,
                                     const std::filesystem::path& base_dir = {});
// A built-in replay suite (replay-smoke, replay-standard) or a path to a replay suite file.
Result<ReplaySuite> LoadReplaySuite(std::string_view name_or_path);
std::vector<BuiltinSuiteInfo> BuiltinReplaySuites();

// `count` generated replay cases "gen/<i>" (generated.h's rows and parameters, valid under `profile`, never greedy),
// each with a dtype, trainer logits, label choice and batch size of its own, deterministic in `seed`.
std::vector<ReplayCaseSpec> GenerateReplayCases(uint64_t seed, size_t count, const Profile& profile);

}  // namespace samplecheck::harness
