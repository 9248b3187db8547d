#include <algorithm>
#include <cstdlib>
#include <set>
#include <sstream>

#include "campaign_work.h"
#include "samplecheck/campaign/checks.h"
#include "samplecheck/campaign/shard.h"

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

Result<CampaignReport> MergeShards(const Suite& suite, const std::vector<CampaignReport>& shards,
                                   const std::vector<std::string>& names, const std::string& command_line) {
  if (shards.empty()) return InvalidArgument("merge needs the reports of every shard (none given)");
  auto name_of = [&](size_t k) { return k < names.size() ? names[k] : "shard report " + std::to_string(k); };
  for (size_t k = 0; k < shards.size(); ++k) {
    if (!shards[k].shard) {
      return InvalidArgument(name_of(k) + " is not a shard's report (it has no \"shard\" block): merge takes the "
                                          "reports of samplecheck run --shard I/N");
    }
    if (shards[k].interrupted) {
      return InvalidArgument(name_of(k) + " (shard " + std::to_string(shards[k].shard->index) + "/" +
                             std::to_string(shards[k].shard->count) +
                             ") was interrupted before its draws were made: run that shard again");
    }
  }
  // One campaign: every shard planned and drew with the same identity.
  const CampaignReport& a = shards.front();
  for (size_t k = 1; k < shards.size(); ++k) {
    const CampaignReport& b = shards[k];
    auto differ = [&](const std::string& field, const std::string& x, const std::string& y) -> Status {
      if (x == y) return Status::Ok();
      return InvalidArgument(name_of(k) + " is not a shard of the campaign of " + name_of(0) + ": its " + field +
                             " is " + y + ", not " + x);
    };
    auto num = [](double v) {
      std::ostringstream os;
      os.precision(17);
      os << v;
      return os.str();
    };
    const std::pair<std::string, std::pair<std::string, std::string>> fields[] = {
        {"suite", {a.suite + " (" + a.suite_source + ")", b.suite + " (" + b.suite_source + ")"}},
        {"sampler", {a.sampler_spec, b.sampler_spec}},
        {"profile", {a.profile, b.profile}},
        {"seed", {std::to_string(a.seed), std::to_string(b.seed)}},
        {"draw seed", {std::to_string(a.draw_seed), std::to_string(b.draw_seed)}},
        {"alpha", {num(a.alpha), num(b.alpha)}},
        {"tv", {Optional(a.shard->tv), Optional(b.shard->tv)}},
        {"max draws", {Optional(a.shard->max_draws), Optional(b.shard->max_draws)}},
        {"generated cases", {std::to_string(a.shard->generated), std::to_string(b.shard->generated)}},
        {"equivalence", {num(a.equivalence_eps) + "/" + num(a.equivalence_chi2_eps),
                         num(b.equivalence_eps) + "/" + num(b.equivalence_chi2_eps)}},
        {"shard count", {std::to_string(a.shard->count), std::to_string(b.shard->count)}},
        {"samplecheck version", {a.samplecheck_version, b.samplecheck_version}},
        {"git revision", {a.git_revision.value_or("(none)"), b.git_revision.value_or("(none)")}},
        {"plan fingerprint", {std::to_string(a.shard->plan_fingerprint), std::to_string(b.shard->plan_fingerprint)}},
    };
    for (const auto& [field, values] : fields) {
      if (Status st = differ(field, values.first, values.second); !st.ok()) return st.error();
    }
  }
  const uint32_t count = a.shard->count;
  std::vector<int> holder(count, -1);
  for (size_t k = 0; k < shards.size(); ++k) {
    const uint32_t index = shards[k].shard->index;
    if (holder[index] >= 0) {
      return InvalidArgument("shard " + std::to_string(index) + "/" + std::to_string(count) + " is given twice: " +
                             name_of(static_cast<size_t>(holder[index])) + " and " + name_of(k));
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

  // The plan again, from the shards' identity: it must be the plan they drew.
  CampaignOptions options;
  options.sampler_spec = a.sampler_spec;
  options.profile = a.profile;
  options.seed = a.seed;
  options.draw_seed = a.draw_seed;
  options.tv = a.shard->tv;
  options.max_draws = a.shard->max_draws;
  options.generated = a.shard->generated;
  options.equivalence_eps = a.equivalence_eps;
  options.equivalence_chi2_eps = a.equivalence_chi2_eps;
  options.evidence = a.evidence;
  options.version = a.samplecheck_version;
  options.command_line = command_line;
  options.shard = ShardSpec{0, count, "merge"};
  if (!FindProfile(a.profile)) return InvalidArgument("the shards judge profile '" + a.profile + "', unknown here");
  auto work = PrepareWork(suite, options, a.profile, a.sampler);
  if (!work.ok()) return work.error();
  if (PlanFingerprint(work->prepared) != a.shard->plan_fingerprint) {
    return InvalidArgument("the plan of suite " + suite.name + " made now differs from the one the shards drew "
                           "(the suite file, its rows or samplecheck changed since they ran): run the shards again");
  }

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
  report.merged_shards = count;

  // Every case from the shards: a ranged row case from the counts of its pieces, the others as their shard judged
  // them (a batch is drawn whole by one shard).
  std::vector<CaseResult> cases;
  for (PreparedCase& pc : work->prepared) {
    const std::string& name = pc.result.name;
    if (!Ranged(pc, false)) {
      const CaseResult* found = nullptr;
      std::string found_in;
      for (size_t k = 0; k < shards.size(); ++k) {
        for (const CaseResult& c : shards[k].cases) {
          if (c.name != name) continue;
          if (found != nullptr) {
            return InvalidArgument("case " + name + " was judged by two shards: " + found_in + " and " + name_of(k));
          }
          found = &c;
          found_in = name_of(k);
        }
      }
      if (found == nullptr) return InvalidArgument("case " + name + " is in no shard's report");
      cases.push_back(*found);
      continue;
    }
    const size_t vocab = pc.row.size();
    std::vector<uint64_t> histogram(vocab, 0);
    uint64_t invalid = 0;
    std::string sampler_error;
    std::vector<std::pair<uint64_t, uint64_t>> pieces;
    std::vector<uint64_t> fast(vocab, 0), sampled(vocab, 0);
    AgreementEvidence agreement;
    bool has_agreement = false;
    for (size_t k = 0; k < shards.size(); ++k) {
      for (const ShardRowEvidence& e : shards[k].shard->evidence) {
        if (e.name != name) continue;
        auto add = [&](const SparseCounts& from, std::vector<uint64_t>& to) -> Status {
          for (const auto& [token, n] : from) {
            if (token < 0 || static_cast<size_t>(token) >= vocab) {
              return InvalidArgument(name_of(k) + ": case " + name + " counts token " + std::to_string(token) +
                                     ", outside its vocabulary of " + std::to_string(vocab));
            }
            if (__builtin_add_overflow(to[static_cast<size_t>(token)], n, &to[static_cast<size_t>(token)])) {
              return InvalidArgument(name_of(k) + ": case " + name + ": the draws of token " + std::to_string(token) +
                                     " sum to more than 2^64 - 1 over the shards");
            }
          }
          return Status::Ok();
        };
        if (Status st = add(e.histogram, histogram); !st.ok()) return st.error();
        invalid += e.invalid_draws;
        if (sampler_error.empty()) sampler_error = e.sampler_error;
        pieces.insert(pieces.end(), e.pieces.begin(), e.pieces.end());
        if (e.has_agreement) {
          if (has_agreement) return InvalidArgument("case " + name + ": two shards hold its first draws");
          has_agreement = true;
          if (Status st = add(e.agreement_fast, fast); !st.ok()) return st.error();
          if (Status st = add(e.agreement_sampled, sampled); !st.ok()) return st.error();
          agreement.draws = e.agreement_draws;
          agreement.deterministic = e.agreement_deterministic;
          agreement.first_difference = e.agreement_first_difference;
          agreement.fast_token = e.agreement_fast_token;
          agreement.sampled_token = e.agreement_sampled_token;
        }
      }
    }
    // The pieces must tile [0, draws): nothing missing, nothing drawn twice.
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
    if (at != pc.result.draws) {
      return InvalidArgument("case " + name + ": draws [" + std::to_string(at) + ", " +
                             std::to_string(pc.result.draws) + ") are in no shard's report");
    }
    agreement.fast = fast;
    agreement.sampled = sampled;
    EvaluateCase(pc, histogram, invalid, sampler_error, nullptr, has_agreement ? &agreement : nullptr);
    cases.push_back(std::move(pc.result));
  }
  // Nothing left over: every case a shard reports is one of the plan.
  std::set<std::string> planned;
  for (const CaseResult& c : cases) planned.insert(c.name);
  for (size_t k = 0; k < shards.size(); ++k) {
    for (const CaseResult& c : shards[k].cases) {
      if (!planned.count(c.name)) return InvalidArgument(name_of(k) + " holds case " + c.name + ", not in the plan");
    }
    for (const ShardRowEvidence& e : shards[k].shard->evidence) {
      if (!planned.count(e.name)) return InvalidArgument(name_of(k) + " holds draws of case " + e.name + ", not in the plan");
    }
  }
  report.cases = std::move(cases);
  report.interrupted = false;
  ApplyCampaignVerdict(report);
  return report;
}

}  // namespace samplecheck::harness
