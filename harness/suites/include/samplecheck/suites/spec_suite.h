// Speculative-decoding suites (docs/speculative.md, "Spec suites"): requests of a target row, its processing, the
// draft's relation to it and its form, verified as a case (one request) or a batch (several verified together); the
// built-in spec suites (spec-smoke, spec-standard) and spec suite files (schema samplecheck-spec-suite/1). The
// campaign that verifies them is campaign/spec_campaign.h.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "samplecheck/core/error.h"
#include "samplecheck/reference/params.h"
#include "samplecheck/reference/speculative.h"
#include "samplecheck/suites/row_source.h"
#include "samplecheck/suites/suite.h"

namespace samplecheck::harness {

inline constexpr char kSpecSuiteSchema[] = "samplecheck-spec-suite/1";

struct SpecDraftSpec {
  DraftForm form = DraftForm::kProbabilities;
  std::string relation = "close";  // close | far | same
  double noise = 0.3;              // close: sigma of the noise added to the target logits
  RowSpec row;                     // far: the draft row's kind (its vocab is the target's)
  SamplingParams params;           // the draft's processing (default: temperature 1, no filter)
};

struct SpecRequestSpec {
  RowSpec target;
  SamplingParams params;  // the target's processing
  int32_t g = 4;
  SpecDraftSpec draft;
};

struct SpecCaseSpec {
  std::string name;
  std::vector<SpecRequestSpec> requests;  // one: a request case; several: a batch case (verified together)
  uint64_t max_trials = 0;                // 0: the suite's
  uint64_t min_trials = 0;                // 0: the suite's (a case whose rejections are rare asks for more)
};

struct SpecSuite {
  std::string name;
  std::string description;
  std::string source;
  uint64_t seed = 1;
  double alpha = 1e-4;
  double tv = 0.02;  // detectable TV per position
  double power = 0.99;
  uint64_t max_trials = uint64_t{1} << 20;
  uint64_t min_trials = 20000;
  uint64_t batch_max_trials = uint64_t{1} << 14;  // cap of batch cases (one Verify call per trial)
  std::string profile;
  std::vector<SpecCaseSpec> cases;
};

// A relative .npy path of a row resolves against `base_dir` (the suite file's folder; LoadSpecSuite gives it).
Result<SpecSuite> ParseSpecSuite(const nlohmann::json& json, std::string source,
                                 const std::filesystem::path& base_dir = {});
// A built-in spec suite (spec-smoke, spec-standard) or a path to a spec suite file.
Result<SpecSuite> LoadSpecSuite(std::string_view name_or_path);
std::vector<BuiltinSuiteInfo> BuiltinSpecSuites();
// Whether `name` names a built-in spec suite.
bool IsBuiltinSpecSuite(std::string_view name);

}  // namespace samplecheck::harness
