// samplecheck explain: the reference's processed distribution of one row, with margins and ambiguous tokens;
// --all-profiles shows where the semantics profiles disagree on that row.
//
//   samplecheck explain --logits "1.0,2.0,-inf" --top-p 0.9 --profile vllm
//   samplecheck explain --logits-file row.npy --row 3 --top-k 50 --all-profiles
//   samplecheck explain --logits "2,1,0.5,-inf" --spec-draft-probs "0.1,0.2,0.7,0" --spec-draft-probs "0.25,0.25,0.5,0"
//       the laws of chain speculative sampling (reference/speculative.h): the row is every target position
//       (g + 1 of them, g = the draft rows given), the draft rows are q_1..q_g (--spec-draft-logits: draft logits
//       processed under the same parameters; --spec-one-hot "t1,t2": one-hot drafts); --spec-drafts K shows the
//       recursive-rejection law of K drafts from q_1 at one position instead
//   samplecheck explain --suite smoke --case V4-minp-order
//       a suite case's row(s) as the campaign judges them (its seed, its perturbation), its parameters and what the
//       judged profile and every other profile keep; --suite alone lists the case names
#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <iomanip>
#include <iostream>
#include <limits>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "command_registry.h"
#include "options.h"
#include "samplecheck/campaign/campaign.h"
#include "samplecheck/campaign/prepare.h"
#include "samplecheck/checks/case_spec.h"
#include "samplecheck/core/files.h"
#include "samplecheck/reference/distribution.h"
#include "samplecheck/reference/explain.h"
#include "samplecheck/reference/profile.h"
#include "samplecheck/reference/speculative.h"
#include "samplecheck/suites/case_selection.h"
#include "samplecheck/suites/row_source.h"
#include "samplecheck/suites/suite.h"

namespace samplecheck::tools {
namespace {

struct ExplainOptions {
  std::string logits;
  std::string logits_file;
  int64_t row = 0;
  double temperature = 1.0;
  int64_t top_k = -1;
  double top_p = 1.0;
  double min_p = 0.0;
  std::string profile;  // "" = vllm (with --suite: the suite's, else vllm)
  bool all_profiles = false;
  std::string ambiguous = "computed";
  int64_t max_tokens = 40;
  std::vector<std::string> spec_draft_probs;
  std::vector<std::string> spec_draft_logits;
  std::string spec_one_hot;
  int64_t spec_drafts = 0;
  std::string suite;               // --suite: explain its cases
  std::vector<std::string> cases;  // --case
  std::optional<uint64_t> seed;    // --seed: the campaign seed the rows come from
};

std::string KnownProfiles() {
  std::string names;
  for (const Profile* p : AllProfiles()) names += (names.empty() ? "" : ", ") + std::string(p->name);
  return names;
}

// One value: a decimal number, inf, -inf (nan is parsed so that the reference reports the row as invalid).
Result<float> ParseLogit(const std::string& text, const std::string& where) {
  const char* begin = text.c_str();
  char* end = nullptr;
  errno = 0;
  const double value = std::strtod(begin, &end);
  if (end == begin || *end != '\0') {
    return Error{ErrorCode::kParse, where + ": '" + text + "' is not a number (allowed: decimal, inf, -inf)"};
  }
  if (errno == ERANGE && std::isinf(value)) {  // 1e400: strtod's inf is not the number written
    return Error{ErrorCode::kParse, where + ": " + text + " overflows a double (|logit| <= 3.4028235e38, or inf)"};
  }
  if (std::isfinite(value) && std::fabs(value) > std::numeric_limits<float>::max()) {
    return Error{ErrorCode::kParse, where + ": " + text + " overflows fp32 (|logit| <= 3.4028235e38, or inf)"};
  }
  return static_cast<float>(value);
}

Result<std::vector<float>> ParseList(const std::string& text, const std::string& what) {
  std::vector<float> values;
  std::string token;
  std::istringstream in(text);
  int64_t index = 0;
  auto flush = [&]() -> Status {
    if (token.empty()) return Status::Ok();
    Result<float> value = ParseLogit(token, what + " value " + std::to_string(index));
    if (!value.ok()) return value.status();
    values.push_back(*value);
    ++index;
    token.clear();
    return Status::Ok();
  };
  for (char c : text) {
    if (c == ',' || c == ' ' || c == '\n' || c == '\t' || c == '\r' || c == ';') {
      if (Status s = flush(); !s.ok()) return s.error();
    } else {
      token.push_back(c);
    }
  }
  if (Status s = flush(); !s.ok()) return s.error();
  if (values.empty()) return Error{ErrorCode::kParse, what + " has no values"};
  return values;
}

Result<std::vector<float>> LoadRow(const ExplainOptions& o) {
  if (o.logits.empty() == o.logits_file.empty()) {
    return InvalidArgument("give exactly one of --logits \"v0,v1,...\" or --logits-file <path (.npy or text)>");
  }
  if (!o.logits.empty()) return ParseList(o.logits, "--logits");
  const std::string& path = o.logits_file;
  if (path.size() >= 4 && path.substr(path.size() - 4) == ".npy") {
    Result<harness::NpyArray> array = harness::LoadNpy(path);
    if (!array.ok()) return array.error();
    if (o.row < 0 || o.row >= array->rows()) {
      return InvalidArgument("--row " + std::to_string(o.row) + " is outside [0, " + std::to_string(array->rows()) +
                             ") for " + path);
    }
    const auto first = array->data.begin() + o.row * array->cols();
    return std::vector<float>(first, first + array->cols());
  }
  constexpr uint64_t kMaxTextBytes = uint64_t{256} << 20;  // 256 MiB: far above a 2^20-token row as text
  Result<std::string> text = ReadFileCapped(path, kMaxTextBytes, "a --logits-file");
  if (!text.ok()) return text.error();
  return ParseList(*text, path);
}

// --spec-one-hot: the draft's tokens, each a token id of the row's `vocab`.
Result<std::vector<int32_t>> OneHotTokens(const std::string& text, size_t vocab) {
  Result<std::vector<float>> tokens = ParseList(text, "--spec-one-hot");
  if (!tokens.ok()) return tokens.error();
  std::vector<int32_t> ids;
  for (float t : *tokens) {
    if (!(t >= 0 && t < float(vocab)) || t != std::floor(t)) {
      std::ostringstream message;
      message << "--spec-one-hot token " << t << " is not a token id in [0, " << vocab << ")";
      return InvalidArgument(message.str());
    }
    ids.push_back(static_cast<int32_t>(t));
  }
  return ids;
}

// The laws of chain speculative sampling on the row (every target position) and the given drafts.
int ExplainSpeculative(const ExplainOptions& o, const std::vector<float>& row, const SamplingParams& params,
                       const Profile& profile) {
  const int forms = (!o.spec_draft_probs.empty()) + (!o.spec_draft_logits.empty()) + (!o.spec_one_hot.empty());
  if (forms != 1) {
    std::cerr << "samplecheck explain: give exactly one draft form: --spec-draft-probs, --spec-draft-logits or "
                 "--spec-one-hot\n";
    return kExitUsage;
  }
  std::vector<std::vector<float>> drafts;
  ChainInput in;
  in.params = params;
  in.profile = &profile;
  in.draft_params = params;
  const auto& rows = !o.spec_draft_probs.empty() ? o.spec_draft_probs : o.spec_draft_logits;
  for (size_t i = 0; i < rows.size(); ++i) {
    Result<std::vector<float>> r = ParseList(rows[i], "draft row " + std::to_string(i));
    if (!r.ok()) {
      std::cerr << "samplecheck explain: " << r.error().message << "\n";
      return kExitUsage;
    }
    drafts.push_back(std::move(*r));
  }
  if (!o.spec_one_hot.empty()) {
    Result<std::vector<int32_t>> tokens = OneHotTokens(o.spec_one_hot, row.size());
    if (!tokens.ok()) {
      std::cerr << "samplecheck explain: " << tokens.error().message << "\n";
      return kExitUsage;
    }
    in.draft_form = DraftForm::kOneHot;
    in.draft_tokens = std::move(*tokens);
  } else {
    in.draft_form = o.spec_draft_probs.empty() ? DraftForm::kLogits : DraftForm::kProbabilities;
    for (const auto& d : drafts) in.draft_rows.emplace_back(d);
  }
  const size_t g = in.draft_form == DraftForm::kOneHot ? in.draft_tokens.size() : drafts.size();
  for (size_t j = 0; j <= g; ++j) in.target.push_back(LogitsView::Fp32(row));
  Result<ChainLaws> laws = ComputeChainLaws(in);
  if (!laws.ok()) {
    std::cerr << "samplecheck explain: " << laws.error().ToString() << "\n";
    return kExitUsage;
  }
  if (o.spec_drafts > 0) {
    if (laws->g < 1) {
      std::cerr << "samplecheck explain: --spec-drafts needs one draft row (q of the position)\n";
      return kExitUsage;
    }
    const PositionLaw& first = laws->positions[0];
    const MultiDraftLaw multi = ComputeMultiDraftLaw(first.p, first.q, static_cast<int32_t>(o.spec_drafts));
    std::cout << ExplainMultiDraftLaw(multi, first.p, first.q, o.max_tokens);
    return kExitOk;
  }
  std::cout << ExplainChainLaws(*laws, in, o.max_tokens);
  return kExitOk;
}

int ExplainFailed(const std::string& message) {
  std::cerr << "samplecheck explain: " << message << "\n";
  return kExitUsage;
}

// --suite S [--case NAME]: the case names, or each named case as the campaign prepares it: its identity, its row and
// parameters, the judged profile's kept set (ExplainDistribution) and every profile beside it (CompareProfiles).
int ExplainSuiteCases(const ExplainOptions& o, const ReferenceOptions& ref) {
  auto suite = harness::LoadSuite(o.suite);
  if (!suite.ok()) return ExplainFailed(suite.error().message);
  harness::CampaignOptions options;
  options.seed = o.seed;
  const std::string profile = !o.profile.empty() ? o.profile : !suite->profile.empty() ? suite->profile : "vllm";
  if (o.cases.empty()) {
    auto names = harness::SuiteCaseNames(*suite, options, profile);
    if (!names.ok()) return ExplainFailed(names.error().message);
    std::cout << "suite " << suite->name << ": " << names->size() << " case names (explain one with --case NAME)\n";
    for (const std::string& name : *names) std::cout << "  " << name << "\n";
    return kExitOk;
  }
  auto selected = harness::ParseCaseNames(o.cases);
  if (!selected.ok()) return ExplainFailed(selected.error().message);
  options.only_cases = *selected;
  auto prepared = harness::PrepareSuiteCases(*suite, options, profile);
  if (!prepared.ok()) return ExplainFailed(prepared.error().message);
  for (const harness::PreparedCase& pc : *prepared) {
    const harness::CaseResult& c = pc.result;
    std::cout << "case " << c.name << " of suite " << suite->name << " (seed " << o.seed.value_or(suite->seed)
              << "): " << harness::DescribeCaseRow(c) << "; draw seed " << c.params.seed << ", offset "
              << c.params.offset << ", " << c.draws << " draws planned\n";
    if (c.perturbed)
      std::cout << "  the row is jittered by up to " << c.perturb_scale << " (ambiguous tokens cleared)\n";
    if (c.conditioned) std::cout << "  judged on its firm tokens (" << pc.excluded.size() << " ambiguous set apart)\n";
    if (pc.skip) std::cout << "  skipped: " << c.reason << "\n";
    const Profile& judged = *FindProfile(c.profile);
    Result<ProcessedDistribution> dist = ComputeDistribution(LogitsView::Fp32(pc.row), c.params, judged, ref);
    if (!dist.ok()) {
      std::cout << "  the reference refuses it: " << dist.error().ToString() << "\n";
      continue;
    }
    std::cout << ExplainDistribution(pc.row, c.params, judged, *dist, o.max_tokens);
    std::cout << CompareProfiles(pc.row, c.params, judged, ref, o.max_tokens);
  }
  return kExitOk;
}

int Explain(const ExplainOptions& o) {
  const Profile* profile = FindProfile(o.profile.empty() ? "vllm" : o.profile);
  if (profile == nullptr) {
    std::cerr << "samplecheck explain: --profile '" << o.profile << "' is unknown; allowed: " << KnownProfiles() << "\n";
    return kExitUsage;
  }
  ReferenceOptions ref;
  if (o.ambiguous == "computed") {
    ref.ambiguous = AmbiguousPolicy::kAsComputed;
  } else if (o.ambiguous == "in") {
    ref.ambiguous = AmbiguousPolicy::kAllIn;
  } else if (o.ambiguous == "out") {
    ref.ambiguous = AmbiguousPolicy::kAllOut;
  } else {
    std::cerr << "samplecheck explain: --ambiguous '" << o.ambiguous << "' is unknown; allowed: computed, in, out\n";
    return kExitUsage;
  }
  if (!o.suite.empty()) {
    if (!o.logits.empty() || !o.logits_file.empty()) {
      return ExplainFailed("--suite explains a suite's cases: give it without --logits / --logits-file");
    }
    return ExplainSuiteCases(o, ref);
  }
  if (!o.cases.empty()) return ExplainFailed("--case names a case of --suite: give the suite too");
  Result<std::vector<float>> row = LoadRow(o);
  if (!row.ok()) {
    std::cerr << "samplecheck explain: " << row.error().message << "\n";
    return kExitUsage;
  }
  SamplingParams params;
  params.temperature = o.temperature;
  params.top_k = o.top_k;
  params.top_p = o.top_p;
  params.min_p = o.min_p;
  if (!o.spec_draft_probs.empty() || !o.spec_draft_logits.empty() || !o.spec_one_hot.empty() || o.spec_drafts > 0) {
    return ExplainSpeculative(o, *row, params, *profile);
  }
  if (o.all_profiles) {
    std::cout << CompareProfiles(*row, params, *profile, ref, o.max_tokens);
    return kExitOk;
  }
  Result<ProcessedDistribution> dist = ComputeDistribution(LogitsView::Fp32(*row), params, *profile, ref);
  if (!dist.ok()) {
    std::cerr << "samplecheck explain: " << dist.error().ToString() << "\n";
    return kExitUsage;
  }
  std::cout << ExplainDistribution(*row, params, *profile, *dist, o.max_tokens);
  return kExitOk;
}

const bool registered = RegisterCommand(
    {"explain", "the reference distribution of one row: kept set, margins, ambiguous tokens", [](CLI::App& cmd) {
       auto o = std::make_shared<ExplainOptions>();
       cmd.add_option("--logits", o->logits, "inline logits, comma separated (inf, -inf allowed)");
       cmd.add_option("--logits-file", o->logits_file, ".npy (fp32/fp16, 1-D or 2-D) or text, one value per line");
       AddInteger(cmd, "--row", o->row, "row of a 2-D .npy file (default 0)", 0, INT64_MAX);
       AddFiniteReal(cmd, "--temperature", o->temperature, "temperature (default 1; the profile judges the value)");
       AddInteger(cmd, "--top-k", o->top_k, "top-k (default -1; -1 or 0 disables, per profile)", INT64_MIN, INT64_MAX);
       AddFiniteReal(cmd, "--top-p", o->top_p, "top-p (default 1: disabled)");
       AddFiniteReal(cmd, "--min-p", o->min_p, "min-p (default 0: disabled)");
       cmd.add_option("--profile", o->profile,
                      "semantics profile (samplecheck list --profiles; default vllm, with --suite the suite's)");
       cmd.add_flag("--all-profiles", o->all_profiles, "a table of every profile and the tokens they disagree on");
       cmd.add_option("--ambiguous", o->ambiguous, "ambiguous tokens: computed, in, out")->capture_default_str();
       cmd.add_option("--spec-draft-probs", o->spec_draft_probs,
                      "speculative sampling: one draft probability row per draft position (repeat; g = count): "
                      "the laws of chain verification with --logits as every target position");
       cmd.add_option("--spec-draft-logits", o->spec_draft_logits,
                      "speculative sampling: one draft logits row per draft position (processed like the target)");
       cmd.add_option("--spec-one-hot", o->spec_one_hot, "speculative sampling: one-hot draft tokens \"t1,t2,...\"");
       AddInteger(cmd, "--spec-drafts", o->spec_drafts,
                  "speculative sampling, second mode: K drafts from q_1 at one position (recursive rejection)", 1, 64);
       AddInteger(cmd, "--max-tokens", o->max_tokens, "rows printed per table (default 40)", 0, INT64_MAX);
       cmd.add_option("--suite", o->suite,
                      "explain cases of this suite (built-in name or file) as a campaign judges them; alone: list "
                      "its case names");
       cmd.add_option("--case", o->cases, "with --suite: the case(s) to explain (repeatable, or separated by commas)")
           ->type_name("NAME");
       AddUnsigned(cmd, "--seed", o->seed, "with --suite: the campaign seed its rows come from (default the suite's)");
       return [o]() { return Explain(*o); };
     }});

}  // namespace
}  // namespace samplecheck::tools
