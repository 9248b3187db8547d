#include "samplecheck/report/report.h"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <cstdio>
#include <sstream>
#include <stdexcept>
#include <string>

#include "samplecheck/campaign/checks.h"
#include "samplecheck/campaign/suite.h"
#include "samplecheck/core/files.h"
#include "samplecheck/core/format.h"

namespace samplecheck::harness {
namespace {

using nlohmann::json;

Error ParseError(std::string message) { return {ErrorCode::kParse, std::move(message)}; }

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
  j["draws"] = c.draws;
  for (const auto& [key, value] : c.checks.items()) j[key] = value;
  j["tests"] = c.tests;
  j["p_value"] = JsonNumber(c.p_value);
  j["holm_adjusted_p"] = JsonNumber(c.holm_adjusted_p);
  j["seconds"] = c.seconds;
  return j;
}

namespace {

CaseResult CaseFromJsonOrThrow(const json& j) {
  CaseResult c;
  c.name = j.at("name").get<std::string>();
  c.status = StatusFromName(j.at("status").get<std::string>());
  c.reason = j.at("reason").get<std::string>();
  auto row = ParseRowSpec(j.at("row"));
  if (!row.ok()) throw std::runtime_error(row.error().message);
  c.row = *row;
  c.row_seed = j.at("row_seed").get<uint64_t>();
  auto params = ParseParams(j.at("params"));
  if (!params.ok()) throw std::runtime_error(params.error().message);
  c.params = *params;
  c.profile = j.at("profile").get<std::string>();
  c.vocab = j.at("vocab").get<int64_t>();
  c.kept = j.at("kept").get<int64_t>();
  c.greedy = j.at("greedy").get<bool>();
  c.ambiguous = j.at("ambiguous").get<std::vector<int32_t>>();
  c.perturbed = j.at("perturbed").get<bool>();
  c.perturb_attempts = j.at("perturb_attempts").get<uint32_t>();
  c.perturb_scale = ReadJsonNumber(j.at("perturb_scale"));
  c.conditioned = j.at("conditioned").get<bool>();
  c.ambiguous_draws = j.at("ambiguous_draws").get<uint64_t>();
  c.unsamplable = j.contains("unsamplable") && j["unsamplable"].get<bool>();
  if (j.contains("numeric_drift")) {
    c.numeric_drift = j["numeric_drift"].at("tokens").get<std::vector<int32_t>>();
    c.drift_draws = j["numeric_drift"].at("draws").get<uint64_t>();
  }
  if (j.contains("batch") && !j["batch"].is_null()) {
    const json& b = j["batch"];
    c.batch = {b.at("case").get<std::string>(), b.at("position").get<uint32_t>(), b.at("size").get<uint32_t>(),
               b.at("entry").get<uint32_t>(), b.at("copy").get<uint32_t>(), b.at("partner").get<std::string>()};
  }
  const json& plan = j.at("plan");
  c.tv = ReadJsonNumber(plan.at("tv"));
  c.alpha_plan = ReadJsonNumber(plan.at("alpha_per_test"));
  c.planned_draws = plan.at("planned_draws").get<uint64_t>();
  c.max_draws = plan.at("max_draws").get<uint64_t>();
  c.achieved_power = ReadJsonNumber(plan.at("achieved_power"));
  c.draws = j.at("draws").get<uint64_t>();
  c.tests = j.at("tests").get<uint32_t>();
  c.p_value = ReadJsonNumber(j.at("p_value"));
  c.holm_adjusted_p = ReadJsonNumber(j.at("holm_adjusted_p"));
  c.seconds = ReadJsonNumber(j.at("seconds"));
  if (Status st = ReadCaseChecks(j, c); !st.ok()) throw std::runtime_error(st.error().message);
  return c;
}

}  // namespace

Result<CaseResult> CaseFromJson(const json& j) {
  try {
    return CaseFromJsonOrThrow(j);
  } catch (const std::exception& e) {
    return ParseError(std::string("malformed case: ") + e.what());
  }
}

namespace {

json SparseToJson(const SparseCounts& counts) {
  json out = json::array();
  for (const auto& [token, n] : counts) out.push_back({token, n});
  return out;
}

SparseCounts SparseFromJson(const json& j) {
  SparseCounts out;
  for (const json& e : j) {
    if (!e.is_array() || e.size() != 2) throw std::runtime_error("a sparse count is [token, draws]");
    out.emplace_back(e[0].get<int32_t>(), e[1].get<uint64_t>());
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
                          {"sampled_token", e.agreement_sampled_token}};
    } else {
      row["agreement"] = nullptr;
    }
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
  s.index = j.at("index").get<uint32_t>();
  s.count = j.at("count").get<uint32_t>();
  s.source = j.at("source").get<std::string>();
  const std::string fingerprint = j.at("plan_fingerprint").get<std::string>();
  if (fingerprint.size() != 16 || fingerprint.find_first_not_of("0123456789abcdef") != std::string::npos) {
    throw std::runtime_error("plan_fingerprint is 16 lowercase hex digits");
  }
  s.plan_fingerprint = std::stoull(fingerprint, nullptr, 16);
  if (!j.at("tv").is_null()) s.tv = j["tv"].get<double>();
  if (!j.at("max_draws").is_null()) s.max_draws = j["max_draws"].get<uint64_t>();
  s.generated = j.at("generated").get<uint64_t>();
  s.items = j.at("items").get<uint64_t>();
  for (const json& row : j.at("evidence")) {
    ShardRowEvidence e;
    e.name = row.at("case").get<std::string>();
    for (const json& piece : row.at("pieces")) {
      if (!piece.is_array() || piece.size() != 2) throw std::runtime_error("a piece is [begin, end)");
      e.pieces.emplace_back(piece[0].get<uint64_t>(), piece[1].get<uint64_t>());
    }
    e.histogram = SparseFromJson(row.at("histogram"));
    e.invalid_draws = row.at("invalid_draws").get<uint64_t>();
    e.sampler_error = row.at("sampler_error").get<std::string>();
    if (!row.at("agreement").is_null()) {
      const json& a = row["agreement"];
      e.has_agreement = true;
      e.agreement_draws = a.at("draws").get<uint64_t>();
      e.agreement_deterministic = a.at("deterministic").get<bool>();
      e.agreement_fast = SparseFromJson(a.at("fast"));
      e.agreement_sampled = SparseFromJson(a.at("sampled"));
      e.agreement_first_difference = a.at("first_difference").get<int64_t>();
      e.agreement_fast_token = a.at("fast_token").get<int32_t>();
      e.agreement_sampled_token = a.at("sampled_token").get<int32_t>();
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
                   {"allow_skipped", r.evidence.allow_skipped}};
  if (r.lossy) j["lossy"] = true;  // written only for a lossy sampler (result.h): other reports are unchanged
  j["interrupted"] = r.interrupted;
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
  for (const auto& c : r.cases) cases.push_back(CaseToJson(c));
  j["cases"] = std::move(cases);
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
  size_t case_index = 0;
  try {
    r.samplecheck_version = j.at("samplecheck_version").get<std::string>();
    r.suite = j.at("suite").at("name").get<std::string>();
    r.suite_source = j.at("suite").at("source").get<std::string>();
    r.sampler = j.at("sampler").at("name").get<std::string>();
    r.sampler_spec = j.at("sampler").at("spec").get<std::string>();
    r.profile = j.at("profile").get<std::string>();
    r.seed = j.at("seed").get<uint64_t>();
    r.draw_seed = j.at("draw_seed").get<uint64_t>();
    r.alpha = j.at("alpha").get<double>();
    r.tv = j.at("tv").get<double>();
    r.power = j.at("power").get<double>();
    const json& m = j.at("machine");
    r.machine = {m.at("hostname").get<std::string>(), m.at("os").get<std::string>(), m.at("cpu").get<std::string>(),
                 m.at("cores").get<uint32_t>()};
    if (!j.at("gpu").is_null()) r.gpu = j["gpu"].get<std::string>();
    if (!j.at("git_revision").is_null()) r.git_revision = j["git_revision"].get<std::string>();
    r.started = j.at("started").get<std::string>();
    r.seconds = j.at("seconds").get<double>();
    r.command_line = j.at("command_line").get<std::string>();
    // Written since the evidence floors (reports before them judged every case they hold): defaults when absent.
    if (j.contains("evidence")) {
      const json& e = j["evidence"];
      r.evidence.min_judged_cases = e.at("min_judged_cases").get<uint64_t>();
      r.evidence.min_draws = e.at("min_draws").get<uint64_t>();
      r.evidence.allow_skipped = e.at("allow_skipped").get<bool>();
    }
    r.interrupted = j.contains("interrupted") && j["interrupted"].get<bool>();
    if (j.contains("budget") && !j["budget"].is_null()) {
      r.budget_seconds = j["budget"].at("seconds").get<double>();
      r.measured_draws_per_second = ReadJsonNumber(j["budget"].at("draws_per_second"));
      r.full_power = j["budget"].at("full_power").get<bool>();
    }
    for (const auto& c : j.at("cases")) {
      r.cases.push_back(CaseFromJsonOrThrow(c));
      ++case_index;
    }
    if (j.contains("equivalence") && !j["equivalence"].is_null()) {
      r.equivalence_eps = j["equivalence"].at("eps").get<double>();
      r.equivalence_chi2_eps = j["equivalence"].at("chi2_eps").get<double>();
      if (!(r.equivalence_eps > 0 && r.equivalence_eps < 1) || !(r.equivalence_chi2_eps >= 0)) {
        return ParseError("\"equivalence\": eps must be in (0, 1) and chi2_eps >= 0");
      }
    }
    r.lossy = j.contains("lossy") && j["lossy"].get<bool>();
    r.planned_cases = j.contains("planned_cases") ? j["planned_cases"].get<size_t>() : r.cases.size();
    // Written since sharding (docs/scale.md): absent in older reports.
    if (j.contains("shard") && !j["shard"].is_null()) r.shard = ShardFromJson(j["shard"]);
    if (j.contains("merged_shards")) r.merged_shards = j["merged_shards"].get<uint32_t>();
    // Written since plans are recorded (campaign.h, --plan-from): absent or null in older reports.
    if (j.contains("draw_plan") && !j["draw_plan"].is_null()) {
      auto plan = DrawPlanFromJson(j["draw_plan"]);
      if (!plan.ok()) return ParseError("malformed report: " + plan.error().message);
      r.draw_plan = std::move(*plan);
    }
    if (j.contains("properties") && !j["properties"].is_null()) {
      r.properties_run = true;
      r.property_seed = j["properties"].at("seed").get<uint64_t>();
      for (const json& p : j["properties"].at("results")) {
        r.properties.push_back({p.at("name").get<std::string>(), p.at("status").get<std::string>(),
                                p.at("ok").get<bool>(), p.at("cases").get<int>(), p.at("message").get<std::string>(),
                                p.at("replay").get<std::string>()});
      }
    }
  } catch (const std::exception& e) {
    std::string where = case_index < (j.contains("cases") && j["cases"].is_array() ? j["cases"].size() : 0)
                            ? " (case " + std::to_string(case_index) + ")"
                            : "";
    return ParseError("malformed report" + where + ": " + e.what());
  }
  if (!(r.alpha > 0 && r.alpha < 1)) return ParseError("malformed report: alpha outside (0, 1)");
  return r;
}

std::string FormatCount(double count) {
  if (!(count >= 0) || !std::isfinite(count)) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "%g", count);
    return buf;
  }
  if (count < 1e5) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.0f", count);
    return buf;
  }
  return FormatMantissaExponent(count, 3);
}

std::string FormatSummary(const CampaignReport& r) {
  std::ostringstream os;
  os.precision(3);
  uint64_t draws = 0;
  for (const auto& c : r.cases) draws += c.status == CaseStatus::kSkipped ? 0 : c.draws;
  os << "suite " << r.suite << " (" << r.suite_source << "), sampler " << r.sampler << " judged as " << r.profile
     << ", seed " << r.seed;
  if (r.draw_seed != r.seed) os << " (draw seed " << r.draw_seed << ")";
  os << "\n";
  os << "  " << r.machine.hostname << " (" << (r.machine.cpu.empty() ? "cpu ?" : r.machine.cpu) << ", "
     << r.machine.cores << " cores), gpu " << r.gpu.value_or("none") << ", git "
     << r.git_revision.value_or("unknown").substr(0, 19) << "\n";
  os << "  " << r.cases.size() << " cases: " << r.Count(CaseStatus::kPass) << " pass, " << r.Count(CaseStatus::kFail)
     << " fail, " << r.Count(CaseStatus::kSkipped) << " skipped, " << r.Count(CaseStatus::kError) << " error;  alpha "
     << r.alpha << " (Holm), TV " << r.tv << ", " << FormatCount(double(draws)) << " draws in " << r.seconds << " s"
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
  os << "VERDICT: " << (r.Passed() ? "PASS" : "FAIL") << "\n";
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
