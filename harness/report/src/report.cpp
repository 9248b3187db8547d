#include "samplecheck/report/report.h"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <cstdio>
#include <limits>
#include <type_traits>
#include <sstream>
#include <stdexcept>
#include <string>

#include "json_fields.h"
#include "samplecheck/campaign/report_check.h"
#include "samplecheck/checks/checks.h"
#include "samplecheck/core/files.h"
#include "samplecheck/core/format.h"
#include "samplecheck/suites/suite.h"

namespace samplecheck::harness {
namespace {

using nlohmann::json;

CaseStatus StatusFromName(const std::string& s) {
  if (s == "pass") return CaseStatus::kPass;
  if (s == "fail") return CaseStatus::kFail;
  if (s == "skipped") return CaseStatus::kSkipped;
  if (s == "error") return CaseStatus::kError;
  throw std::runtime_error("status \"" + s + "\" is not pass, fail, skipped or error");
}

}  // namespace

json CaseToJson(const CaseResult& c) {
  json j;
  j["name"] = c.name;
  j["status"] = CaseStatusName(c.status);
  j["reason"] = c.reason;
  j["row"] = RowSpecToJson(c.row);
  j["row_description"] = DescribeRowSpec(c.row);
  j["row_seed"] = c.row_seed;
  j["params"] = ParamsToJson(c.params, true);
  j["profile"] = c.profile;
  j["vocab"] = c.vocab;
  j["kept"] = c.kept;
  j["greedy"] = c.greedy;
  j["ambiguous"] = c.ambiguous;
  j["perturbed"] = c.perturbed;
  j["perturb_attempts"] = c.perturb_attempts;
  j["perturb_scale"] = JsonNumber(c.perturb_scale);
  j["conditioned"] = c.conditioned;
  j["ambiguous_draws"] = c.ambiguous_draws;
  j["unsamplable"] = c.unsamplable;
  j["numeric_drift"] = {{"tokens", c.numeric_drift}, {"draws", c.drift_draws}};
  j["batch"] = c.batch.size == 0 ? json(nullptr)
                                 : json{{"case", c.batch.batch}, {"position", c.batch.position},
                                        {"size", c.batch.size}, {"entry", c.batch.entry}, {"copy", c.batch.copy},
                                        {"partner", c.batch.partner}};
  j["plan"] = {{"tv", JsonNumber(c.tv)},
               {"alpha_per_test", JsonNumber(c.alpha_plan)},
               {"planned_draws", c.planned_draws},
               {"max_draws", c.max_draws},
               {"achieved_power", JsonNumber(c.achieved_power)}};
  if (c.recorded_cut) j["plan"]["recorded_cut"] = true;
  j["draws"] = c.draws;
  for (const auto& [key, value] : c.checks.items()) j[key] = value;
  j["tests"] = c.tests;
  j["p_value"] = JsonNumber(c.p_value);
  j["holm_adjusted_p"] = JsonNumber(c.holm_adjusted_p);
  j["seconds"] = c.seconds;
  return j;
}

namespace {

CaseResult CaseFromJsonOrThrow(const json& j, const std::string& at) {
  CaseResult c;
  c.name = Field<std::string>(j, at, "name");
  try {
    c.status = StatusFromName(Field<std::string>(j, at, "status"));
  } catch (const std::runtime_error& e) {
    throw std::runtime_error(at + "/" + e.what());
  }
  c.reason = Field<std::string>(j, at, "reason");
  auto row = ParseRowSpec(Child(j, at, "row"));
  if (!row.ok()) throw std::runtime_error(at + "/row: " + row.error().message);
  c.row = *row;
  c.row_seed = Field<uint64_t>(j, at, "row_seed");
  auto params = ParseParams(Child(j, at, "params"));
  if (!params.ok()) throw std::runtime_error(at + "/params: " + params.error().message);
  c.params = *params;
  c.profile = Field<std::string>(j, at, "profile");
  c.vocab = Field<int64_t>(j, at, "vocab");
  c.kept = Field<int64_t>(j, at, "kept");
  c.greedy = Field<bool>(j, at, "greedy");
  for (const json& t : Child(j, at, "ambiguous")) {
    c.ambiguous.push_back(Field<int32_t>(json{{"token", t}}, at + "/ambiguous", "token"));
  }
  c.perturbed = Field<bool>(j, at, "perturbed");
  c.perturb_attempts = Field<uint32_t>(j, at, "perturb_attempts");
  c.perturb_scale = NumberField(j, at, "perturb_scale");
  c.conditioned = Field<bool>(j, at, "conditioned");
  c.ambiguous_draws = Field<uint64_t>(j, at, "ambiguous_draws");
  c.unsamplable = j.contains("unsamplable") && Field<bool>(j, at, "unsamplable");
  if (j.contains("numeric_drift")) {
    const json& d = j["numeric_drift"];
    for (const json& t : Child(d, at + "/numeric_drift", "tokens")) {
      c.numeric_drift.push_back(Field<int32_t>(json{{"token", t}}, at + "/numeric_drift/tokens", "token"));
    }
    c.drift_draws = Field<uint64_t>(d, at + "/numeric_drift", "draws");
  }
  if (j.contains("batch") && !j["batch"].is_null()) {
    const json& b = j["batch"];
    const std::string bat = at + "/batch";
    c.batch = {Field<std::string>(b, bat, "case"), Field<uint32_t>(b, bat, "position"), Field<uint32_t>(b, bat, "size"),
               Field<uint32_t>(b, bat, "entry"),   Field<uint32_t>(b, bat, "copy"),     Field<std::string>(b, bat, "partner")};
  }
  const json& plan = Child(j, at, "plan");
  const std::string pat = at + "/plan";
  c.tv = NumberField(plan, pat, "tv");
  c.alpha_plan = NumberField(plan, pat, "alpha_per_test");
  c.planned_draws = Field<uint64_t>(plan, pat, "planned_draws");
  c.max_draws = Field<uint64_t>(plan, pat, "max_draws");
  c.achieved_power = NumberField(plan, pat, "achieved_power");
  if (plan.contains("recorded_cut")) c.recorded_cut = Field<bool>(plan, pat, "recorded_cut");
  c.draws = Field<uint64_t>(j, at, "draws");
  c.tests = Field<uint32_t>(j, at, "tests");
  c.p_value = NumberField(j, at, "p_value");
  c.holm_adjusted_p = NumberField(j, at, "holm_adjusted_p");
  c.seconds = NumberField(j, at, "seconds");
  if (Status st = ReadCaseChecks(j, c); !st.ok()) throw std::runtime_error(at + ": " + st.error().message);
  return c;
}

}  // namespace

Result<CaseResult> CaseFromJson(const json& j) {
  try {
    CaseResult c = CaseFromJsonOrThrow(j, "case");
    if (Status st = CheckCaseConsistency(c); !st.ok()) return ParseError("inconsistent case: " + st.error().message);
    return c;
  } catch (const std::exception& e) {
    return ParseError("malformed case: " + JsonErrorText(e));
  }
}

namespace {

json SparseToJson(const SparseCounts& counts) {
  json out = json::array();
  for (const auto& [token, n] : counts) out.push_back({token, n});
  return out;
}

// [[token, draws], ...]: tokens ascending and distinct, in [0, 2^31), draws whole numbers > 0 (a merge adds them).
SparseCounts SparseFromJson(const json& j, const std::string& at) {
  SparseCounts out;
  if (!j.is_array()) throw std::runtime_error(at + " must be an array of [token, draws]");
  for (const json& e : j) {
    if (!e.is_array() || e.size() != 2) throw std::runtime_error(at + ": a sparse count is [token, draws]");
    const json pair{{"token", e[0]}, {"draws", e[1]}};
    const int32_t token = Field<int32_t>(pair, at, "token");
    const uint64_t draws = Field<uint64_t>(pair, at, "draws");
    if (token < 0 || draws == 0 || (!out.empty() && token <= out.back().first)) {
      throw std::runtime_error(at + ": [" + e[0].dump() + ", " + e[1].dump() +
                               "]: tokens are ids >= 0 in ascending order, each with at least one draw");
    }
    out.emplace_back(token, draws);
  }
  return out;
}

// 16 hex digits: a JSON number would lose bits in readers that hold numbers as doubles (jq, JavaScript).
std::string FingerprintText(uint64_t v) {
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(v));
  return buf;
}

json ShardToJson(const ShardInfo& s) {
  json evidence = json::array();
  for (const ShardRowEvidence& e : s.evidence) {
    json pieces = json::array();
    for (const auto& [b, end] : e.pieces) pieces.push_back({b, end});
    json row = {{"case", e.name},
                {"pieces", pieces},
                {"histogram", SparseToJson(e.histogram)},
                {"invalid_draws", e.invalid_draws},
                {"sampler_error", e.sampler_error}};
    if (e.has_agreement) {
      row["agreement"] = {{"draws", e.agreement_draws},
                          {"deterministic", e.agreement_deterministic},
                          {"fast", SparseToJson(e.agreement_fast)},
                          {"sampled", SparseToJson(e.agreement_sampled)},
                          {"first_difference", e.agreement_first_difference},
                          {"fast_token", e.agreement_fast_token},
                          {"sampled_token", e.agreement_sampled_token},
                          {"sampled_alone_token", e.agreement_sampled_alone_token}};
    } else {
      row["agreement"] = nullptr;
    }
    row["stream"] = e.stream;
    evidence.push_back(std::move(row));
  }
  return {{"index", s.index},
          {"count", s.count},
          {"source", s.source},
          {"plan_fingerprint", FingerprintText(s.plan_fingerprint)},
          {"tv", s.tv ? json(*s.tv) : json(nullptr)},
          {"max_draws", s.max_draws ? json(*s.max_draws) : json(nullptr)},
          {"generated", s.generated},
          {"items", s.items},
          {"evidence", std::move(evidence)}};
}

ShardInfo ShardFromJson(const json& j) {
  ShardInfo s;
  const std::string at = "/shard";
  s.index = Field<uint32_t>(j, at, "index");
  s.count = Field<uint32_t>(j, at, "count");
  s.source = Field<std::string>(j, at, "source");
  const std::string fingerprint = Field<std::string>(j, at, "plan_fingerprint");
  if (fingerprint.size() != 16 || fingerprint.find_first_not_of("0123456789abcdef") != std::string::npos) {
    throw std::runtime_error("/shard/plan_fingerprint is 16 lowercase hex digits");
  }
  s.plan_fingerprint = std::stoull(fingerprint, nullptr, 16);
  if (!Child(j, at, "tv").is_null()) s.tv = Field<double>(j, at, "tv");
  if (!Child(j, at, "max_draws").is_null()) s.max_draws = Field<uint64_t>(j, at, "max_draws");
  s.generated = Field<uint64_t>(j, at, "generated");
  s.items = Field<uint64_t>(j, at, "items");
  size_t k = 0;
  for (const json& row : Child(j, at, "evidence")) {
    const std::string rat = at + "/evidence/" + std::to_string(k++);
    ShardRowEvidence e;
    e.name = Field<std::string>(row, rat, "case");
    for (const json& piece : Child(row, rat, "pieces")) {
      if (!piece.is_array() || piece.size() != 2) throw std::runtime_error(rat + "/pieces: a piece is [begin, end)");
      const json pair{{"begin", piece[0]}, {"end", piece[1]}};
      const uint64_t b = Field<uint64_t>(pair, rat + "/pieces", "begin"), end = Field<uint64_t>(pair, rat + "/pieces", "end");
      if (b >= end) throw std::runtime_error(rat + "/pieces: [" + std::to_string(b) + ", " + std::to_string(end) + ") is empty");
      e.pieces.emplace_back(b, end);
    }
    e.histogram = SparseFromJson(Child(row, rat, "histogram"), rat + "/histogram");
    e.invalid_draws = Field<uint64_t>(row, rat, "invalid_draws");
    e.sampler_error = Field<std::string>(row, rat, "sampler_error");
    if (!Child(row, rat, "agreement").is_null()) {
      const json& a = row["agreement"];
      const std::string aat = rat + "/agreement";
      e.has_agreement = true;
      e.agreement_draws = Field<uint64_t>(a, aat, "draws");
      e.agreement_deterministic = Field<bool>(a, aat, "deterministic");
      e.agreement_fast = SparseFromJson(Child(a, aat, "fast"), aat + "/fast");
      e.agreement_sampled = SparseFromJson(Child(a, aat, "sampled"), aat + "/sampled");
      e.agreement_first_difference = Field<int64_t>(a, aat, "first_difference");
      e.agreement_fast_token = Field<int32_t>(a, aat, "fast_token");
      e.agreement_sampled_token = Field<int32_t>(a, aat, "sampled_token");
      // Written since the agreement check says which path is not a function of (seed, offset); absent before.
      if (a.contains("sampled_alone_token")) {
        e.agreement_sampled_alone_token = Field<int32_t>(a, aat, "sampled_alone_token");
      }
    }
    // Written since the stream checks (issue 31): absent or null where the shard judged no stream.
    if (row.contains("stream") && !row["stream"].is_null()) {
      if (!row["stream"].is_object()) throw std::runtime_error(rat + "/stream must be an object or null");
      e.stream = row["stream"];
    }
    s.evidence.push_back(std::move(e));
  }
  if (s.count == 0 || s.index >= s.count) throw std::runtime_error("shard index must be below its count");
  return s;
}

}  // namespace

json ReportToJson(const CampaignReport& r) {
  json j;
  j["schema"] = r.schema;
  j["samplecheck_version"] = r.samplecheck_version;
  j["suite"] = {{"name", r.suite}, {"source", r.suite_source}};
  j["sampler"] = {{"name", r.sampler}, {"spec", r.sampler_spec}};
  if (!r.sampler_counts.empty()) j["sampler"]["counts"] = r.sampler_counts;
  j["profile"] = r.profile;
  j["seed"] = r.seed;
  j["draw_seed"] = r.draw_seed;
  j["alpha"] = r.alpha;
  j["tv"] = r.tv;
  j["power"] = r.power;
  j["machine"] = {{"hostname", r.machine.hostname},
                  {"os", r.machine.os},
                  {"cpu", r.machine.cpu},
                  {"cores", r.machine.cores}};
  j["gpu"] = r.gpu ? json(*r.gpu) : json(nullptr);
  j["git_revision"] = r.git_revision ? json(*r.git_revision) : json(nullptr);
  j["started"] = r.started;
  j["seconds"] = r.seconds;
  j["command_line"] = r.command_line;
  j["evidence"] = {{"min_judged_cases", r.evidence.min_judged_cases},
                   {"min_draws", r.evidence.min_draws},
                   {"allow_skipped", r.evidence.allow_skipped},
                   {"allow_underpowered", r.evidence.allow_underpowered}};
  if (r.lossy) j["lossy"] = true;  // written only for a lossy sampler (result.h): other reports are unchanged
  j["interrupted"] = r.interrupted;
  j["max_draws_override"] = r.max_draws_override ? json(*r.max_draws_override) : json(nullptr);
  j["budget"] = r.budget_seconds > 0 ? json{{"seconds", r.budget_seconds},
                                            {"draws_per_second", JsonNumber(r.measured_draws_per_second)},
                                            {"full_power", r.full_power}}
                                     : json(nullptr);
  if (r.equivalence_eps > 0) {
    size_t certified = 0, inconclusive = 0, lacking = 0, no_bound = 0;
    double largest = 0.0;
    std::string worst;
    for (const CaseResult& c : r.cases) {
      const StoredEquivalence e = StoredEquivalenceOf(c);
      if (!e.present || c.batch.size > 0) continue;  // the verdict is the row cases'
      if (!e.bound.ok()) {
        ++no_bound;
      } else if (e.certified) {
        ++certified;
      } else {
        ++inconclusive;
        lacking += e.lacks_draws;
      }
      if (e.bound.ok() && e.tv_upper >= largest) {
        largest = e.tv_upper;
        worst = c.name;
      }
    }
    j["equivalence"] = {{"eps", r.equivalence_eps},
                        {"chi2_eps", r.equivalence_chi2_eps},
                        {"certified", certified},
                        {"inconclusive", inconclusive},
                        {"lacking_draws", lacking},
                        {"no_bound", no_bound},
                        {"largest_tv_upper", JsonNumber(largest)},
                        {"largest_case", worst}};
  } else {
    j["equivalence"] = nullptr;
  }
  j["planned_cases"] = r.planned_cases;
  j["draw_plan"] = DrawPlanToJson(r.draw_plan);  // null: no plan recorded (merged, or a report before the record)
  if (r.properties_run) {
    json props = json::array();
    for (const PropertyOutcome& p : r.properties) {
      props.push_back({{"name", p.name}, {"status", p.status}, {"ok", p.ok}, {"cases", p.cases},
                       {"message", p.message}, {"replay", p.replay}});
    }
    j["properties"] = {{"seed", r.property_seed}, {"results", props}};
  } else {
    j["properties"] = nullptr;
  }
  j["shard"] = r.shard ? ShardToJson(*r.shard) : json(nullptr);
  j["merged_shards"] = r.merged_shards;
  j["verdict_problems"] = r.VerdictProblems();
  j["verdict"] = r.Passed() ? "pass" : "fail";
  j["counts"] = {{"cases", r.cases.size()},
                 {"pass", r.Count(CaseStatus::kPass)},
                 {"fail", r.Count(CaseStatus::kFail)},
                 {"skipped", r.Count(CaseStatus::kSkipped)},
                 {"error", r.Count(CaseStatus::kError)}};
  json cases = json::array();
  for (const auto& c : r.cases) {
    cases.push_back(CaseToJson(c));
    // A failing case's reproduce line (derived from "reproduce": not read back).
    const bool failing = c.status == CaseStatus::kFail || c.status == CaseStatus::kError;
    if (failing && !r.reproduce.empty()) cases.back()["reproduce"] = r.ReproduceLine(c);
  }
  j["cases"] = std::move(cases);
  if (!r.selected_cases.empty()) j["selected_cases"] = r.selected_cases;
  if (!r.reproduce.empty()) j["reproduce"] = r.reproduce;
  return j;
}

Result<CampaignReport> ReportFromJson(const json& j) {
  CampaignReport r;
  if (!j.is_object()) return ParseError("a report is a JSON object");
  if (!j.contains("schema") || !j["schema"].is_string()) return ParseError("not a samplecheck report: no \"schema\"");
  r.schema = j["schema"].get<std::string>();
  if (r.schema != kReportSchema) {
    return ParseError("report schema \"" + r.schema + "\" is not supported (this samplecheck reads \"" +
                      std::string(kReportSchema) + "\")");
  }
  try {
    r.samplecheck_version = Field<std::string>(j, "", "samplecheck_version");
    const json& suite = Child(j, "", "suite");
    r.suite = Field<std::string>(suite, "/suite", "name");
    r.suite_source = Field<std::string>(suite, "/suite", "source");
    const json& sampler = Child(j, "", "sampler");
    r.sampler = Field<std::string>(sampler, "/sampler", "name");
    r.sampler_spec = Field<std::string>(sampler, "/sampler", "spec");
    if (sampler.contains("counts")) {
      r.sampler_counts = Field<std::string>(sampler, "/sampler", "counts");
      if (r.sampler_counts != "distributional") {
        throw std::runtime_error("/sampler/counts \"" + r.sampler_counts + "\" is not \"distributional\"");
      }
    }
    r.profile = Field<std::string>(j, "", "profile");
    r.seed = Field<uint64_t>(j, "", "seed");
    r.draw_seed = Field<uint64_t>(j, "", "draw_seed");
    r.alpha = Field<double>(j, "", "alpha");
    r.tv = Field<double>(j, "", "tv");
    r.power = Field<double>(j, "", "power");
    const json& m = Child(j, "", "machine");
    r.machine = {Field<std::string>(m, "/machine", "hostname"), Field<std::string>(m, "/machine", "os"),
                 Field<std::string>(m, "/machine", "cpu"), Field<uint32_t>(m, "/machine", "cores")};
    if (!Child(j, "", "gpu").is_null()) r.gpu = Field<std::string>(j, "", "gpu");
    if (!Child(j, "", "git_revision").is_null()) r.git_revision = Field<std::string>(j, "", "git_revision");
    r.started = Field<std::string>(j, "", "started");
    r.seconds = Field<double>(j, "", "seconds");
    r.command_line = Field<std::string>(j, "", "command_line");
    // Written since the evidence floors (reports before them judged every case they hold): defaults when absent.
    if (j.contains("evidence")) {
      const json& e = j["evidence"];
      r.evidence.min_judged_cases = Field<uint64_t>(e, "/evidence", "min_judged_cases");
      r.evidence.min_draws = Field<uint64_t>(e, "/evidence", "min_draws");
      r.evidence.allow_skipped = Field<bool>(e, "/evidence", "allow_skipped");
      // Written since the power floor: a report before it is judged by it (allow_underpowered false).
      if (e.contains("allow_underpowered")) {
        r.evidence.allow_underpowered = Field<bool>(e, "/evidence", "allow_underpowered");
      }
    }
    r.interrupted = j.contains("interrupted") && Field<bool>(j, "", "interrupted");
    // Written since the power floor (UnderpoweredCases); the gate checks every case's cap against it. A report
    // written before it says --max-draws in its command line only.
    if (j.contains("max_draws_override")) {
      if (!j["max_draws_override"].is_null()) r.max_draws_override = Field<uint64_t>(j, "", "max_draws_override");
    } else if (const size_t at = r.command_line.find(" --max-draws "); at != std::string::npos) {
      const std::string digits = r.command_line.substr(at + 13, r.command_line.find(' ', at + 13) - (at + 13));
      if (!digits.empty() && digits.size() < 20 && digits.find_first_not_of("0123456789") == std::string::npos) {
        r.max_draws_override = std::stoull(digits);
      }
    }
    if (j.contains("budget") && !j["budget"].is_null()) {
      r.budget_seconds = Field<double>(j["budget"], "/budget", "seconds");
      r.measured_draws_per_second = NumberField(j["budget"], "/budget", "draws_per_second");
      r.full_power = Field<bool>(j["budget"], "/budget", "full_power");
    }
    const json& cases = Child(j, "", "cases");
    if (!cases.is_array()) throw std::runtime_error("/cases must be an array");
    for (size_t i = 0; i < cases.size(); ++i) r.cases.push_back(CaseFromJsonOrThrow(cases[i], "/cases/" + std::to_string(i)));
    if (j.contains("equivalence") && !j["equivalence"].is_null()) {
      r.equivalence_eps = Field<double>(j["equivalence"], "/equivalence", "eps");
      r.equivalence_chi2_eps = Field<double>(j["equivalence"], "/equivalence", "chi2_eps");
      if (!(r.equivalence_eps > 0 && r.equivalence_eps < 1) || !(r.equivalence_chi2_eps >= 0)) {
        return ParseError("/equivalence: eps must be in (0, 1) and chi2_eps >= 0");
      }
    }
    r.lossy = j.contains("lossy") && Field<bool>(j, "", "lossy");
    r.planned_cases = j.contains("planned_cases") ? Field<size_t>(j, "", "planned_cases") : r.cases.size();
    // Written since --case: absent in older reports and in reports of a whole suite.
    if (j.contains("selected_cases")) {
      if (!j["selected_cases"].is_array()) return ParseError("/selected_cases must be an array of case names");
      for (const json& name : j["selected_cases"]) {
        if (!name.is_string()) return ParseError("/selected_cases: every entry must be a case name (a string)");
        r.selected_cases.push_back(name.get<std::string>());
      }
    }
    if (j.contains("reproduce")) r.reproduce = Field<std::string>(j, "", "reproduce");
    // Written since sharding (docs/scale.md): absent in older reports.
    if (j.contains("shard") && !j["shard"].is_null()) r.shard = ShardFromJson(j["shard"]);
    if (j.contains("merged_shards")) r.merged_shards = Field<uint32_t>(j, "", "merged_shards");
    // Written since plans are recorded (campaign.h, --plan-from): absent or null in older reports.
    if (j.contains("draw_plan") && !j["draw_plan"].is_null()) {
      auto plan = DrawPlanFromJson(j["draw_plan"]);
      if (!plan.ok()) return ParseError("malformed report: " + plan.error().message);
      r.draw_plan = std::move(*plan);
    }
    if (j.contains("properties") && !j["properties"].is_null()) {
      r.properties_run = true;
      const json& props = j["properties"];
      r.property_seed = Field<uint64_t>(props, "/properties", "seed");
      size_t k = 0;
      for (const json& p : Child(props, "/properties", "results")) {
        const std::string at = "/properties/results/" + std::to_string(k++);
        r.properties.push_back({Field<std::string>(p, at, "name"), Field<std::string>(p, at, "status"),
                                Field<bool>(p, at, "ok"), Field<int>(p, at, "cases"), Field<std::string>(p, at, "message"),
                                Field<std::string>(p, at, "replay")});
      }
    }
  } catch (const std::exception& e) {
    return ParseError("malformed report: " + JsonErrorText(e));
  }
  if (!(r.alpha > 0 && r.alpha < 1)) return ParseError("malformed report: /alpha " + std::to_string(r.alpha) + " is outside (0, 1)");
  if (Status st = CheckReportConsistency(r); !st.ok()) return ParseError("inconsistent report: " + st.error().message);
  return r;
}

namespace {
constexpr const char* kReplayFields[] = {"replay_engine", "replay_trainer", "replay_aggregate"};
}  // namespace

std::string TvChosenBy(const CampaignReport& r) {
  const DrawPlan& plan = r.draw_plan;
  if (!(plan.tv_chosen_budget_seconds > 0)) return "";
  return "chosen by the " + FormatSignificant(plan.tv_chosen_budget_seconds) + " s budget at " +
         FormatCount(plan.tv_chosen_draws_per_second) + " draws/s";
}

std::string FormatSummary(const CampaignReport& r) {
  std::ostringstream os;
  os.precision(3);
  uint64_t draws = 0;
  for (const auto& c : r.cases) draws += c.status == CaseStatus::kSkipped ? 0 : c.draws;
  os << "suite " << r.suite << " (" << r.suite_source << "), sampler " << r.sampler << " judged as " << r.profile
     << ", seed " << r.seed;
  if (r.draw_seed != r.seed) os << " (draw seed " << r.draw_seed << ")";
  if (r.sampler_counts == "distributional") {
    os << "\n  counted draws from the sampler's distributional count path (not Sample's tokens at the same seeds: "
          "agreement is a two-sample test; the seeded checks draw through Sample)";
  }
  os << "\n";
  os << "  " << r.machine.hostname << " (" << (r.machine.cpu.empty() ? "cpu ?" : r.machine.cpu) << ", "
     << r.machine.cores << " cores), gpu " << r.gpu.value_or("none") << ", git "
     << r.git_revision.value_or("unknown").substr(0, 19) << "\n";
  os << "  " << r.cases.size() << " cases: " << r.Count(CaseStatus::kPass) << " pass, " << r.Count(CaseStatus::kFail)
     << " fail, " << r.Count(CaseStatus::kSkipped) << " skipped, " << r.Count(CaseStatus::kError) << " error;  ";
  // A replay's checks are exact comparisons (no sampling test): no alpha or TV to state (its TV reads 0). Every
  // case holds the replay fields; a replay's are set (a sampler run's are null).
  const bool replay = std::any_of(r.cases.begin(), r.cases.end(), [](const CaseResult& c) {
    if (!c.checks.is_object()) return false;
    return std::any_of(std::begin(kReplayFields), std::end(kReplayFields),
                       [&](const char* key) { return c.checks.contains(key) && !c.checks[key].is_null(); });
  });
  if (replay) {
    os << "checks exact (fp32 tolerance, no sampling test)";
  } else {
    os << "alpha " << r.alpha << " (Holm), TV " << r.tv;
    if (r.draw_plan.tv_chosen_budget_seconds > 0) os << " (" << TvChosenBy(r) << ")";
  }
  os << ", " << FormatCount(double(draws)) << " draws in " << r.seconds << " s"
     << (r.interrupted ? "  INTERRUPTED" : "") << "\n";
  uint64_t drift_tokens = 0, drift_draws = 0;
  for (const auto& c : r.cases) {
    drift_tokens += c.numeric_drift.size();
    drift_draws += c.drift_draws;
  }
  if (drift_tokens > 0) {
    os << "  numeric boundary drift (reported apart, never a violation): " << drift_tokens
       << " token(s) an fp32 engine may keep or drop, " << drift_draws << " draw(s) on them\n";
  }
  {
    size_t bounded = 0, certified = 0, lacking = 0;
    double largest = 0.0;
    const CaseResult* worst = nullptr;
    for (const auto& c : r.cases) {
      const StoredEquivalence e = StoredEquivalenceOf(c);
      if (!e.present || !e.bound.ok() || c.batch.size > 0) continue;  // the verdict is the row cases'
      ++bounded;
      certified += e.certified;
      lacking += e.lacks_draws;
      if (worst == nullptr || e.tv_upper > largest) {
        largest = e.tv_upper;
        worst = &c;
      }
    }
    if (worst != nullptr) {
      os << "  equivalence: largest binned TV upper bound " << largest << " (" << worst->name << ", alpha "
         << worst->alpha_plan << " per case)";
      if (r.equivalence_eps > 0) {
        os << "; " << certified << " of " << bounded << " row cases certified within TV " << r.equivalence_eps;
        if (r.equivalence_chi2_eps > 0) os << " and chi-square divergence " << r.equivalence_chi2_eps;
        if (lacking > 0) os << ", " << lacking << " inconclusive for lack of draws";
      }
      os << "\n";
    }
  }
  size_t listed = 0;
  for (const auto& c : r.cases) {
    if (c.status == CaseStatus::kPass) continue;
    if (++listed > 12) continue;
    os << "  " << (c.status == CaseStatus::kFail ? "FAIL   " : c.status == CaseStatus::kError ? "ERROR  " : "skipped")
       << " " << c.name << ": " << c.reason << "\n";
    if (c.status != CaseStatus::kSkipped && !r.reproduce.empty())
      os << "          reproduce: " << r.ReproduceLine(c) << "\n";
  }
  if (listed > 12) os << "  ... and " << listed - 12 << " more (see the report)\n";
  std::vector<const CaseResult*> judged;
  for (const auto& c : r.cases) {
    if (c.status != CaseStatus::kSkipped && c.status != CaseStatus::kError && c.tests > 0) judged.push_back(&c);
  }
  std::sort(judged.begin(), judged.end(), [](auto* a, auto* b) { return a->p_value < b->p_value; });
  if (!judged.empty()) {
    os << "  smallest p-values:";
    for (size_t i = 0; i < std::min<size_t>(3, judged.size()); ++i) {
      os << "  " << judged[i]->name << " " << judged[i]->p_value << " (Holm " << judged[i]->holm_adjusted_p << ")";
    }
    os << "\n";
    const CaseResult* weakest = *std::min_element(judged.begin(), judged.end(), [](auto* a, auto* b) {
      return a->achieved_power < b->achieved_power;
    });
    os << "  lowest achieved power at TV " << weakest->tv << ": " << weakest->achieved_power << " ("
       << weakest->name << ", " << weakest->draws << " draws, planned " << weakest->planned_draws << "; target "
       << r.power << ")\n";
  }
  if (r.properties_run) {
    size_t passed = 0, skipped = 0, failed = 0;
    for (const PropertyOutcome& p : r.properties) {
      if (!p.ok) {
        ++failed;
      } else if (p.status == "skipped") {
        ++skipped;
      } else {
        ++passed;
      }
    }
    os << "  properties (seed " << r.property_seed << "): " << passed << " passed, " << failed << " failed, "
       << skipped << " skipped\n";
    for (const PropertyOutcome& p : r.properties) {
      if (!p.ok) os << "  FAIL    property " << p.name << (p.replay.empty() ? "" : ": replay: " + p.replay) << "\n";
    }
  }
  for (const std::string& problem : r.VerdictProblems()) os << "  not a pass: " << problem << "\n";
  os << "VERDICT: " << (r.Passed() ? "PASS" : "FAIL");
  if (r.draw_plan.tv_chosen_budget_seconds > 0)
    os << " at TV " << FormatSignificant(r.tv) << " (" << TvChosenBy(r) << ")";
  os << "\n";
  return os.str();
}

Status SaveReport(const CampaignReport& report, const std::filesystem::path& path, const WriteOptions& options) {
  return WriteFileAtomically(path, JsonText(ReportToJson(report)) + "\n", options);
}

Result<CampaignReport> LoadReport(const std::filesystem::path& path) {
  constexpr uint64_t kMaxReportBytes = uint64_t{1} << 30;
  Result<std::string> text = ReadFileCapped(path, kMaxReportBytes, "a report");
  if (!text.ok()) return text.error();
  Result<json> j = ParseJsonStrict(*text, path.string());
  if (!j.ok()) return j.error();
  auto r = ReportFromJson(*j);
  if (!r.ok()) return ParseError(path.string() + ": " + r.error().message);
  return r;
}

}  // namespace samplecheck::harness
