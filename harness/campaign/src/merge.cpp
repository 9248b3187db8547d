#include <algorithm>
#include <cstdlib>
#include <set>
#include <sstream>

#include "campaign_work.h"
#include "samplecheck/campaign/shard.h"
#include "samplecheck/checks/checks.h"
#include "samplecheck/checks/evidence.h"
#include "samplecheck/core/format.h"

namespace samplecheck::harness {
namespace {

constexpr uint64_t kMaxShards = 65536;

Result<uint64_t> WholeNumber(std::string_view text, std::string_view what, uint64_t min, uint64_t max) {
  const std::string s(text);
  if (s.empty() || s.find_first_not_of("0123456789") != std::string::npos || s.size() > 18) {
    return InvalidArgument(std::string(what) + " '" + s + "' is not a whole non-negative number");
  }
  const uint64_t v = std::strtoull(s.c_str(), nullptr, 10);
  if (v < min || v > max) {
    return InvalidArgument(std::string(what) + " " + s + " is outside [" + std::to_string(min) + ", " +
                           std::to_string(max) + "]");
  }
  return v;
}

std::string Optional(const std::optional<double>& v) {
  if (!v) return "(none)";
  std::ostringstream os;
  os << *v;
  return os.str();
}
std::string Optional(const std::optional<uint64_t>& v) { return v ? std::to_string(*v) : "(none)"; }

}  // namespace

Result<ShardSpec> ParseShard(std::string_view text) {
  return ParseShard(text, [](const char* name) -> std::optional<std::string> {
    const char* v = std::getenv(name);
    if (v == nullptr) return std::nullopt;
    return std::string(v);
  });
}

Result<ShardSpec> ParseShard(std::string_view text,
                             const std::function<std::optional<std::string>(const char*)>& env) {
  const std::string allowed = " (allowed: I/N with 0 <= I < N, auto, or auto/N)";
  const size_t slash = text.find('/');
  const std::string_view head = text.substr(0, slash);
  std::optional<uint64_t> count;
  if (slash != std::string_view::npos) {
    auto n = WholeNumber(text.substr(slash + 1), "--shard count", 1, kMaxShards);
    if (!n.ok()) return InvalidArgument(n.error().message + allowed);
    count = *n;
  }
  ShardSpec spec;
  if (head != "auto") {
    if (!count) return InvalidArgument("--shard '" + std::string(text) + "' has no count" + allowed);
    auto i = WholeNumber(head, "--shard index", 0, kMaxShards);
    if (!i.ok()) return InvalidArgument(i.error().message + allowed);
    if (*i >= *count) {
      return InvalidArgument("--shard " + std::string(text) + ": the index runs from 0 to " +
                             std::to_string(*count - 1) + " (0-based, as GTEST_SHARD_INDEX)");
    }
    spec.index = static_cast<uint32_t>(*i);
    spec.count = static_cast<uint32_t>(*count);
    spec.source = "--shard";
    return spec;
  }
  // The schedulers' conventions, in order: GoogleTest, Slurm job arrays, Kubernetes indexed Jobs.
  struct Convention {
    const char* index;
    const char* count;  // nullptr: the scheduler does not export the count
    const char* min;    // Slurm: the array's first task id
  };
  const Convention conventions[] = {{"GTEST_SHARD_INDEX", "GTEST_TOTAL_SHARDS", nullptr},
                                    {"SLURM_ARRAY_TASK_ID", "SLURM_ARRAY_TASK_COUNT", "SLURM_ARRAY_TASK_MIN"},
                                    {"JOB_COMPLETION_INDEX", nullptr, nullptr}};
  for (const Convention& c : conventions) {
    const std::optional<std::string> index = env(c.index);
    if (!index) continue;
    auto i = WholeNumber(*index, c.index, 0, kMaxShards * 1024);
    if (!i.ok()) return i.error();
    uint64_t first = 0;
    if (c.min != nullptr) {
      if (const std::optional<std::string> m = env(c.min)) {
        auto v = WholeNumber(*m, c.min, 0, *i);
        if (!v.ok()) return InvalidArgument(v.error().message + " (it must not exceed " + c.index + ")");
        first = *v;
      }
    }
    std::optional<uint64_t> total;
    if (c.count != nullptr) {
      if (const std::optional<std::string> n = env(c.count)) {
        auto v = WholeNumber(*n, c.count, 1, kMaxShards);
        if (!v.ok()) return v.error();
        total = *v;
      }
    }
    if (count && total && *count != *total) {
      return InvalidArgument("--shard auto/" + std::to_string(*count) + " but " + c.count + " is " +
                             std::to_string(*total));
    }
    if (!count && !total) {
      return InvalidArgument(std::string(c.index) + " is set but the shard count is not: give it as --shard auto/N" +
                             (c.count ? std::string(" or set ") + c.count : std::string(" (Kubernetes does not export "
                                                                                        "the Job's completions)")));
    }
    const uint64_t n = count ? *count : *total;
    const uint64_t at = *i - first;
    if (at >= n) {
      return InvalidArgument(std::string(c.index) + " " + *index + " gives shard " + std::to_string(at) + " of " +
                             std::to_string(n) + ": the index runs from 0 to " + std::to_string(n - 1));
    }
    spec.index = static_cast<uint32_t>(at);
    spec.count = static_cast<uint32_t>(n);
    spec.source = c.index;
    return spec;
  }
  return InvalidArgument("--shard " + std::string(text) +
                         ": no scheduler's shard index in the environment (GTEST_SHARD_INDEX, SLURM_ARRAY_TASK_ID, "
                         "JOB_COMPLETION_INDEX); give --shard I/N");
}

namespace {

// The name of shard report k in messages (its file, as the CLI gives them).
std::string NameOf(const std::vector<std::string>& names, size_t k) {
  return k < names.size() ? names[k] : "shard report " + std::to_string(k);
}

// Shard k of one campaign with shard 0: every shard planned and drew with the same identity.
Status SameCampaign(const CampaignReport& a, const CampaignReport& b, const std::vector<std::string>& names,
                    size_t k) {
  const std::pair<std::string, std::pair<std::string, std::string>> fields[] = {
      {"suite", {a.suite + " (" + a.suite_source + ")", b.suite + " (" + b.suite_source + ")"}},
      {"sampler", {a.sampler_spec, b.sampler_spec}},
      {"sampler counts", {a.sampler_counts, b.sampler_counts}},
      {"profile", {a.profile, b.profile}},
      {"seed", {std::to_string(a.seed), std::to_string(b.seed)}},
      {"draw seed", {std::to_string(a.draw_seed), std::to_string(b.draw_seed)}},
      {"alpha", {FormatExact(a.alpha), FormatExact(b.alpha)}},
      {"tv", {Optional(a.shard->tv), Optional(b.shard->tv)}},
      {"max draws", {Optional(a.shard->max_draws), Optional(b.shard->max_draws)}},
      {"generated cases", {std::to_string(a.shard->generated), std::to_string(b.shard->generated)}},
      {"equivalence",
       {FormatExact(a.equivalence_eps) + "/" + FormatExact(a.equivalence_chi2_eps),
        FormatExact(b.equivalence_eps) + "/" + FormatExact(b.equivalence_chi2_eps)}},
      {"shard count", {std::to_string(a.shard->count), std::to_string(b.shard->count)}},
      {"samplecheck version", {a.samplecheck_version, b.samplecheck_version}},
      {"git revision", {a.git_revision.value_or("(none)"), b.git_revision.value_or("(none)")}},
      {"plan fingerprint", {std::to_string(a.shard->plan_fingerprint), std::to_string(b.shard->plan_fingerprint)}},
  };
  for (const auto& [field, values] : fields) {
    if (values.first == values.second) continue;
    return InvalidArgument(NameOf(names, k) + " is not a shard of the campaign of " + NameOf(names, 0) + ": its " +
                           field + " is " + values.second + ", not " + values.first);
  }
  return Status::Ok();
}

// Every report a finished shard of one campaign, each shard of it given once.
Status CheckShardSet(const std::vector<CampaignReport>& shards, const std::vector<std::string>& names) {
  for (size_t k = 0; k < shards.size(); ++k) {
    if (!shards[k].shard) {
      return InvalidArgument(NameOf(names, k) + " is not a shard's report (it has no \"shard\" block): merge takes "
                                                "the reports of samplecheck run --shard I/N");
    }
    if (shards[k].interrupted) {
      return InvalidArgument(NameOf(names, k) + " (shard " + std::to_string(shards[k].shard->index) + "/" +
                             std::to_string(shards[k].shard->count) +
                             ") was interrupted before its draws were made: run that shard again");
    }
  }
  for (size_t k = 1; k < shards.size(); ++k) {
    if (Status st = SameCampaign(shards.front(), shards[k], names, k); !st.ok()) return st;
  }
  const uint32_t count = shards.front().shard->count;
  std::vector<int> holder(count, -1);
  for (size_t k = 0; k < shards.size(); ++k) {
    const uint32_t index = shards[k].shard->index;
    if (holder[index] >= 0) {
      return InvalidArgument("shard " + std::to_string(index) + "/" + std::to_string(count) + " is given twice: " +
                             NameOf(names, static_cast<size_t>(holder[index])) + " and " + NameOf(names, k));
    }
    holder[index] = static_cast<int>(k);
  }
  std::string missing;
  for (uint32_t i = 0; i < count; ++i) {
    if (holder[i] < 0) missing += (missing.empty() ? "" : ", ") + std::to_string(i);
  }
  if (!missing.empty()) {
    return InvalidArgument("shard(s) " + missing + " of " + std::to_string(count) +
                           " missing: merge needs every shard's report (indices 0 to " + std::to_string(count - 1) +
                           ")");
  }
  return Status::Ok();
}

// The plan again, from the shards' identity: it must be the plan they drew.
Result<CampaignWork> ReplanShards(const Suite& suite, const CampaignReport& a, const std::string& command_line) {
  CampaignOptions options = OptionsOfReport(a);
  options.tv = a.shard->tv;
  options.max_draws = a.shard->max_draws;
  options.generated = a.shard->generated;
  options.evidence = a.evidence;
  options.command_line = command_line;
  options.shard = ShardSpec{0, a.shard->count, "merge"};
  if (!FindProfile(a.profile)) return InvalidArgument("the shards judge profile '" + a.profile + "', unknown here");
  auto work = PrepareWork(suite, options, a.profile, a.sampler);
  if (!work.ok()) return work.error();
  work->report.sampler_counts = a.sampler_counts;
  if (PlanFingerprint(work->prepared) != a.shard->plan_fingerprint) {
    return InvalidArgument("the plan of suite " + suite.name + " made now differs from the one the shards drew "
                           "(the suite file, its rows or samplecheck changed since they ran): run the shards again");
  }
  return work;
}

// A case drawn whole (a batch row, a case without draws) as the one shard that judged it.
Result<CaseResult> WholeCase(const std::string& name, const std::vector<CampaignReport>& shards,
                             const std::vector<std::string>& names) {
  const CaseResult* found = nullptr;
  size_t found_in = 0;
  for (size_t k = 0; k < shards.size(); ++k) {
    for (const CaseResult& c : shards[k].cases) {
      if (c.name != name) continue;
      if (found != nullptr) {
        return InvalidArgument("case " + name + " was judged by two shards: " + NameOf(names, found_in) + " and " +
                               NameOf(names, k));
      }
      found = &c;
      found_in = k;
    }
  }
  if (found == nullptr) return InvalidArgument("case " + name + " is in no shard's report");
  return *found;
}

// A ranged row case's counts over the shards (pieces of its draws, its first draws' agreement evidence).
struct RowCounts {
  std::vector<uint64_t> histogram, fast, sampled;
  uint64_t invalid = 0;
  std::string sampler_error;
  std::vector<std::pair<uint64_t, uint64_t>> pieces;
  AgreementEvidence agreement;
  bool has_agreement = false;
  nlohmann::json stream;  // the stream checks' fields, from the shard that held the first draws
  int stream_shards = 0;  // shards that judged them (one when the pieces tile)
};

// `from` added to `to`: every token in the vocabulary, no count past 2^64 - 1. `where` names the shard and case.
Status AddCounts(const SparseCounts& from, std::vector<uint64_t>& to, const std::string& where) {
  for (const auto& [token, n] : from) {
    if (token < 0 || static_cast<size_t>(token) >= to.size()) {
      return InvalidArgument(where + " counts token " + std::to_string(token) + ", outside its vocabulary of " +
                             std::to_string(to.size()));
    }
    if (__builtin_add_overflow(to[static_cast<size_t>(token)], n, &to[static_cast<size_t>(token)])) {
      return InvalidArgument(where + ": the draws of token " + std::to_string(token) +
                             " sum to more than 2^64 - 1 over the shards");
    }
  }
  return Status::Ok();
}

// One shard's evidence of a row case added to its counts. Its counts are its draws: the histogram and the invalid
// draws sum to the length of its pieces (a histogram with draws added is not this shard's).
Status AddEvidence(const ShardRowEvidence& e, RowCounts& rc, const std::string& where) {
  uint64_t drawn = 0, counted = e.invalid_draws;
  for (const auto& [b, end] : e.pieces) {
    if (end < b || __builtin_add_overflow(drawn, end - b, &drawn)) {
      return InvalidArgument(where + ": draw range [" + std::to_string(b) + ", " + std::to_string(end) +
                             ") is not a range of draws");
    }
  }
  for (const auto& [token, n] : e.histogram) {
    if (__builtin_add_overflow(counted, n, &counted)) {
      return InvalidArgument(where + ": its counts sum to more than 2^64 - 1");
    }
  }
  if (counted != drawn) {
    return InvalidArgument(where + ": its histogram and invalid draws count " + std::to_string(counted) +
                           " draws, its draw ranges hold " + std::to_string(drawn) +
                           " (a shard's counts are the draws it made)");
  }
  if (Status st = AddCounts(e.histogram, rc.histogram, where); !st.ok()) return st;
  rc.invalid += e.invalid_draws;
  if (rc.sampler_error.empty()) rc.sampler_error = e.sampler_error;
  rc.pieces.insert(rc.pieces.end(), e.pieces.begin(), e.pieces.end());
  if (!e.stream.is_null()) {
    rc.stream = e.stream;
    ++rc.stream_shards;
  }
  if (!e.has_agreement) return Status::Ok();
  if (rc.has_agreement) return InvalidArgument("case " + e.name + ": two shards hold its first draws");
  rc.has_agreement = true;
  if (Status st = AddCounts(e.agreement_fast, rc.fast, where); !st.ok()) return st;
  if (Status st = AddCounts(e.agreement_sampled, rc.sampled, where); !st.ok()) return st;
  rc.agreement.draws = e.agreement_draws;
  rc.agreement.deterministic = e.agreement_deterministic;
  rc.agreement.first_difference = e.agreement_first_difference;
  rc.agreement.fast_token = e.agreement_fast_token;
  rc.agreement.sampled_token = e.agreement_sampled_token;
  rc.agreement.sampled_alone_token = e.agreement_sampled_alone_token;
  return Status::Ok();
}

// The pieces must tile [0, draws): nothing missing, nothing drawn twice.
Status CheckPiecesTile(std::vector<std::pair<uint64_t, uint64_t>> pieces, uint64_t draws, const std::string& name) {
  std::sort(pieces.begin(), pieces.end());
  uint64_t at = 0;
  for (const auto& [b, e] : pieces) {
    if (b < at) {
      return InvalidArgument("case " + name + ": draws [" + std::to_string(b) + ", " + std::to_string(std::min(at, e)) +
                             ") were drawn by two shards");
    }
    if (b > at) {
      return InvalidArgument("case " + name + ": draws [" + std::to_string(at) + ", " + std::to_string(b) +
                             ") are in no shard's report");
    }
    at = e;
  }
  if (at != draws) {
    return InvalidArgument("case " + name + ": draws [" + std::to_string(at) + ", " + std::to_string(draws) +
                           ") are in no shard's report");
  }
  return Status::Ok();
}

// Whether a ranged row case's first draws came with the agreement check's evidence: the run draws it for every
// case of a sampler with a counting fast path, by the item holding draw 0, unless that item failed or the row is
// unsamplable (sampler_draw.cpp). Merge holds the shards to it (a shard with its agreement nulled must not pass).
struct FirstDraws {
  std::string name, shard;  // the case, the shard holding its draw 0
  bool agreement = false;   // that shard's evidence has the agreement draws
  bool eligible = false;    // ... and would have drawn them (no sampler error, a samplable row)
};

// A ranged row case judged from the counts of its pieces over the shards.
Status MergeRowCase(PreparedCase& pc, const std::vector<CampaignReport>& shards, const std::vector<std::string>& names,
                    std::vector<FirstDraws>& first) {
  const std::string& name = pc.result.name;
  RowCounts rc;
  rc.histogram.assign(pc.row.size(), 0);
  rc.fast.assign(pc.row.size(), 0);
  rc.sampled.assign(pc.row.size(), 0);
  FirstDraws f{name, "", false, false};
  for (size_t k = 0; k < shards.size(); ++k) {
    for (const ShardRowEvidence& e : shards[k].shard->evidence) {
      if (e.name != name) continue;
      if (Status st = AddEvidence(e, rc, NameOf(names, k) + ": case " + name); !st.ok()) return st;
      if (std::any_of(e.pieces.begin(), e.pieces.end(), [](const auto& piece) { return piece.first == 0; })) {
        f = {name, NameOf(names, k), e.has_agreement, e.sampler_error.empty() && !pc.result.unsamplable};
      }
    }
  }
  first.push_back(std::move(f));
  if (Status st = CheckPiecesTile(std::move(rc.pieces), pc.result.draws, name); !st.ok()) return st;
  if (rc.stream_shards > 1) {
    return InvalidArgument("case " + name + ": " + std::to_string(rc.stream_shards) +
                           " shards judged its stream checks (only the one holding its first draws does)");
  }
  rc.agreement.fast = rc.fast;
  rc.agreement.sampled = rc.sampled;
  StreamEvidence stream;
  stream.judged = &rc.stream;
  EvaluateCase(pc, rc.histogram, rc.invalid, rc.sampler_error, nullptr, rc.has_agreement ? &rc.agreement : nullptr,
               rc.stream.is_null() ? nullptr : &stream);
  return Status::Ok();
}

// Nothing left over: every case a shard reports is one of the plan.
Status CheckNothingLeftOver(const std::vector<CaseResult>& cases, const std::vector<CampaignReport>& shards,
                            const std::vector<std::string>& names) {
  std::set<std::string> planned;
  for (const CaseResult& c : cases) planned.insert(c.name);
  for (size_t k = 0; k < shards.size(); ++k) {
    for (const CaseResult& c : shards[k].cases) {
      if (!planned.count(c.name)) {
        return InvalidArgument(NameOf(names, k) + " holds case " + c.name + ", not in the plan");
      }
    }
    for (const ShardRowEvidence& e : shards[k].shard->evidence) {
      if (!planned.count(e.name)) {
        return InvalidArgument(NameOf(names, k) + " holds draws of case " + e.name + ", not in the plan");
      }
    }
  }
  return Status::Ok();
}

}  // namespace

Result<CampaignReport> MergeShards(const Suite& suite, const std::vector<CampaignReport>& shards,
                                   const std::vector<std::string>& names, const std::string& command_line) {
  if (shards.empty()) return InvalidArgument("merge needs the reports of every shard (none given)");
  if (Status st = CheckShardSet(shards, names); !st.ok()) return st.error();
  const CampaignReport& a = shards.front();
  auto work = ReplanShards(suite, a, command_line);
  if (!work.ok()) return work.error();

  CampaignReport report = std::move(work->report);
  report.machine = a.machine;
  report.gpu = a.gpu;
  report.git_revision = a.git_revision;
  report.started = a.started;
  report.seconds = 0.0;
  for (const CampaignReport& s : shards) {
    report.started = std::min(report.started, s.started);
    report.seconds += s.seconds;  // the shards' time, summed
  }
  report.merged_shards = a.shard->count;

  // Every case from the shards: a ranged row case from the counts of its pieces, the others as their shard judged
  // them (a batch is drawn whole by one shard).
  std::vector<CaseResult> cases;
  std::vector<FirstDraws> first;
  for (PreparedCase& pc : work->prepared) {
    if (!Ranged(pc, false)) {
      Result<CaseResult> whole = WholeCase(pc.result.name, shards, names);
      if (!whole.ok()) return whole.error();
      cases.push_back(std::move(*whole));
      continue;
    }
    if (Status st = MergeRowCase(pc, shards, names, first); !st.ok()) return st.error();
    cases.push_back(std::move(pc.result));
  }
  // One sampler drew every shard: with a counting fast path (some case has the agreement draws) every eligible case
  // has them; a shard without them hides the hard agreement check.
  const auto with = std::find_if(first.begin(), first.end(), [](const FirstDraws& f) { return f.agreement; });
  for (const FirstDraws& f : first) {
    if (with == first.end() || f.agreement || !f.eligible) continue;
    return InvalidArgument(f.shard + ": case " + f.name + " has no agreement evidence for its first draws, which " +
                           "the sampler's counting fast path gives every case (case " + with->name + " has it in " +
                           with->shard + "): an edited or truncated shard report");
  }
  if (Status st = CheckNothingLeftOver(cases, shards, names); !st.ok()) return st.error();
  report.cases = std::move(cases);
  report.interrupted = false;
  ApplyCampaignVerdict(report);
  return report;
}

}  // namespace samplecheck::harness
