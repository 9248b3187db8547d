// Suites: named lists of cases, read from JSON (format: docs/suites.md). A case is a row source x sampling
// parameters x (optionally) a profile x a draw budget; the campaign (campaign.h) turns each into a verdict.
//
// Built-in suites (harness/suites/data/*.json, embedded in the program so an installed samplecheck finds them):
//   smoke     CI: seconds on a CPU with the exact sampler (small V, 2^18 draws at most per case)
//   standard  the gate: up to 2^26 draws per case, V up to 128256; a few minutes on 2 cores with `exact`
//   nightly   fresh seeds, 2^28 draws per case at most, larger rows
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "samplecheck/core/error.h"
#include "samplecheck/reference/params.h"
#include "samplecheck/suites/row_source.h"

namespace samplecheck::harness {

inline constexpr char kSuiteSchema[] = "samplecheck-suite/1";

// What a case does when its reference has ambiguous tokens (decisions that fp32 arithmetic could flip).
enum class AmbiguousAction {
  kPerturb,    // jitter the row's finite logits (docs/campaigns.md) until no token is ambiguous; if 8 attempts
               // fail, condition on the unambiguous tokens (kCondition) of the original row
  kCondition,  // judge the draws conditioned on the unambiguous tokens: draws of ambiguous tokens are set apart
               // (counted, never violations) and p0 is renormalized over the firm kept set
  kSkip,       // report the case as skipped
};
const char* AmbiguousActionName(AmbiguousAction action);

// One entry of a batch case: a row and its parameters, present `copies` times in the batch (each copy its own
// seed; the copies of an entry have consecutive seeds).
struct BatchEntry {
  RowSpec row;
  SamplingParams params;
  uint32_t copies = 1;
};

struct CaseSpec {
  std::string name;
  RowSpec row;                    // a row case; for a batch case the first entry's row (identity only)
  SamplingParams params;          // seed and offset are set by the campaign
  // A batch case (docs/suites.md): its rows drawn together through Sample, one token per row per call, in an order
  // shuffled by the case seed. Every batch row is judged against its own reference as the case "<name>/b<k>";
  // the batch adds checks of its own (independence across rows and draws, batch invariance). Empty: a row case.
  std::vector<BatchEntry> batch;
  std::string profile;            // "" = the campaign's judged profile
  uint64_t max_draws = 0;         // 0 = the suite's
  std::optional<double> tv;       // detectable TV; unset = the suite's
  std::optional<AmbiguousAction> ambiguous;
  // A batch case drawn as an engine's decode loop (docs/suites.md, "decode"): one Sample call per step holding every
  // row once, offsets advancing by one per step; its rows add the stream checks of adjacent steps.
  bool decode = false;
  // Parameters invalid under the judged profile make a refusal case (the sampler must refuse them) instead of a
  // skipped one: the corner cases (corners.h).
  bool refuse_invalid = false;
};

struct Suite {
  std::string name;
  std::string description;
  std::string source;             // "builtin:<name>" or the file path
  uint64_t seed = 1;              // default campaign seed (--seed overrides)
  bool fresh_seed = false;        // "seed": "fresh": a new seed per run (nightly); the report records it
  double alpha = 1e-4;            // family-wise false-alarm rate of the whole campaign (Holm over the cases)
  double tv = 1e-3;               // detectable total-variation distance the draws are planned for
  double power = 0.99;            // planned power at that TV
  uint64_t max_draws = uint64_t{1} << 24;  // cap per case
  uint64_t min_draws = 100000;    // floor per case
  std::string profile;            // default judged profile ("" = --profile, else the sampler's, else vllm)
  AmbiguousAction ambiguous = AmbiguousAction::kPerturb;
  std::vector<CaseSpec> cases;
  // "generated": {"count": n, "seed": s | "fresh", "max_draws": m}: n generated cases (generated.h) after `cases`,
  // from seed s, or from the campaign seed when "fresh" (new cases every run of a fresh-seed suite).
  // "budget_seconds": power by budget: when the sampler's measured throughput draws every row case's planned draws
  // (power `power` at `tv`, capped at budget_max_draws) within this many seconds, every case gets them; otherwise
  // max_draws caps them as without a budget. 0: no budget.
  double budget_seconds = 0;
  uint64_t budget_max_draws = uint64_t{1} << 30;
  size_t generated = 0;
  std::optional<uint64_t> generated_seed;
  uint64_t generated_max_draws = 0;  // 0: the suite's cap
  // "corners": {"seed": s | "fresh", "max_draws": m, "tv": t}: the corner cases of a pairwise covering design
  // (corners.h) after the generated ones, from design seed s, or the campaign seed when "fresh".
  bool corners = false;
  std::optional<uint64_t> corners_seed;
  uint64_t corners_max_draws = 8192;
  double corners_tv = 0.05;
};

// Parses a suite document; relative .npy paths resolve against base_dir. kParse names the case and field.
Result<Suite> ParseSuite(const nlohmann::json& json, const std::filesystem::path& base_dir, std::string source);
// A built-in suite name ("smoke"), a path to a suite file, or a name found as <name>.json in a folder of
// $SAMPLECHECK_SUITE_PATH (colon-separated). kInvalidArgument for an unknown name (the message lists the
// built-in suites), kIo for an unreadable file, kParse for a malformed one.
Result<Suite> LoadSuite(std::string_view name_or_path);

struct BuiltinSuiteInfo {
  std::string name;
  std::string description;
  size_t cases = 0;
};
std::vector<BuiltinSuiteInfo> BuiltinSuites();

// Parameters to and from their JSON form {"temperature":..,"top_k":..,"top_p":..,"min_p":..}; seed and offset
// are written only when `with_rng`.
Result<SamplingParams> ParseParams(const nlohmann::json& json);
nlohmann::json ParamsToJson(const SamplingParams& params, bool with_rng = false);
std::string DescribeParams(const SamplingParams& params);

}  // namespace samplecheck::harness
