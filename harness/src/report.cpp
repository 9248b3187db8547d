#include "samplecheck/harness/report.h"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <sstream>

#include "samplecheck/harness/suite.h"
#include "samplecheck/stats/multiple_testing.h"

namespace samplecheck::harness {
namespace {

using nlohmann::json;

Error ParseError(std::string message) { return {ErrorCode::kParse, std::move(message)}; }

// Doubles that JSON cannot hold (inf, NaN) are written as strings so a report always round-trips.
json Number(double v) {
  if (std::isfinite(v)) return v;
  if (std::isnan(v)) return "nan";
  return v > 0 ? "inf" : "-inf";
}
double ReadNumber(const json& j) {
  if (j.is_number()) return j.get<double>();
  if (j.is_string()) {
    const std::string s = j.get<std::string>();
    if (s == "inf") return INFINITY;
    if (s == "-inf") return -INFINITY;
    if (s == "nan") return NAN;
  }
  throw std::runtime_error("expected a number, got " + j.dump());
}

CaseStatus StatusFromName(const std::string& s) {
  if (s == "pass") return CaseStatus::kPass;
  if (s == "fail") return CaseStatus::kFail;
  if (s == "skipped") return CaseStatus::kSkipped;
  if (s == "error") return CaseStatus::kError;
  throw std::runtime_error("status \"" + s + "\" is not pass, fail, skipped or error");
}

json BinningToJson(const BinningResult& b) {
  json j{{"name", b.name},
         {"cells", b.expected.size()},
         {"dof", b.dof},
         {"pearson", Number(b.pearson)},
         {"pearson_p", Number(b.pearson_p)},
         {"g", Number(b.g)},
         {"g_p", Number(b.g_p)},
         {"min_expected", Number(b.min_expected)},
         {"observed", b.observed}};
  json expected = json::array();
  for (double e : b.expected) expected.push_back(Number(e));
  j["expected"] = std::move(expected);
  if (!b.cell_token.empty()) j["cell_token"] = b.cell_token;
  return j;
}

BinningResult BinningFromJson(const json& j) {
  BinningResult b;
  b.name = j.at("name").get<std::string>();
  b.dof = j.at("dof").get<uint64_t>();
  b.pearson = ReadNumber(j.at("pearson"));
  b.pearson_p = ReadNumber(j.at("pearson_p"));
  b.g = ReadNumber(j.at("g"));
  b.g_p = ReadNumber(j.at("g_p"));
  b.min_expected = ReadNumber(j.at("min_expected"));
  b.observed = j.at("observed").get<std::vector<uint64_t>>();
  for (const auto& e : j.at("expected")) b.expected.push_back(ReadNumber(e));
  if (j.contains("cell_token")) b.cell_token = j["cell_token"].get<std::vector<int32_t>>();
  if (b.observed.size() != b.expected.size()) throw std::runtime_error("observed and expected differ in length");
  if (!b.cell_token.empty() && b.cell_token.size() != b.expected.size()) {
    throw std::runtime_error("cell_token and expected differ in length");
  }
  return b;
}

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
  j["perturb_scale"] = Number(c.perturb_scale);
  j["conditioned"] = c.conditioned;
  j["ambiguous_draws"] = c.ambiguous_draws;
  j["plan"] = {{"tv", Number(c.tv)},
               {"alpha_per_test", Number(c.alpha_plan)},
               {"planned_draws", c.planned_draws},
               {"max_draws", c.max_draws},
               {"achieved_power", Number(c.achieved_power)}};
  j["draws"] = c.draws;
  json violations = json::array();
  for (const auto& v : c.violation_tokens) violations.push_back({{"token", v.token}, {"count", v.count}});
  j["support"] = {{"violations", c.support_violations},
                  {"invalid_draws", c.invalid_draws},
                  {"tokens", violations},
                  {"sampler_error", c.sampler_error}};
  json binnings = json::array();
  for (const auto& b : c.binnings) binnings.push_back(BinningToJson(b));
  j["binnings"] = binnings;
  j["max_abs_z"] = {{"value", Number(c.max_abs_z)},
                    {"token", c.max_z_token},
                    {"threshold", Number(c.max_z_threshold)},
                    {"p_value", Number(c.max_z_p)}};
  j["tests"] = c.tests;
  j["p_value"] = Number(c.p_value);
  j["holm_adjusted_p"] = Number(c.holm_adjusted_p);
  json residuals = json::array();
  for (const auto& r : c.top_residuals) {
    residuals.push_back({{"token", r.token}, {"observed", r.observed}, {"expected", Number(r.expected)},
                         {"z", Number(r.z)}});
  }
  j["top_residuals"] = residuals;
  j["seconds"] = c.seconds;
  return j;
}

CaseResult CaseFromJson(const json& j) {
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
  c.perturb_scale = ReadNumber(j.at("perturb_scale"));
  c.conditioned = j.at("conditioned").get<bool>();
  c.ambiguous_draws = j.at("ambiguous_draws").get<uint64_t>();
  const json& plan = j.at("plan");
  c.tv = ReadNumber(plan.at("tv"));
  c.alpha_plan = ReadNumber(plan.at("alpha_per_test"));
  c.planned_draws = plan.at("planned_draws").get<uint64_t>();
  c.max_draws = plan.at("max_draws").get<uint64_t>();
  c.achieved_power = ReadNumber(plan.at("achieved_power"));
  c.draws = j.at("draws").get<uint64_t>();
  const json& support = j.at("support");
  c.support_violations = support.at("violations").get<uint64_t>();
  c.invalid_draws = support.at("invalid_draws").get<uint64_t>();
  for (const auto& v : support.at("tokens")) {
    c.violation_tokens.push_back({v.at("token").get<int32_t>(), v.at("count").get<uint64_t>()});
  }
  c.sampler_error = support.at("sampler_error").get<std::string>();
  for (const auto& b : j.at("binnings")) c.binnings.push_back(BinningFromJson(b));
  const json& mz = j.at("max_abs_z");
  c.max_abs_z = ReadNumber(mz.at("value"));
  c.max_z_token = mz.at("token").get<int32_t>();
  c.max_z_threshold = ReadNumber(mz.at("threshold"));
  c.max_z_p = ReadNumber(mz.at("p_value"));
  c.tests = j.at("tests").get<uint32_t>();
  c.p_value = ReadNumber(j.at("p_value"));
  c.holm_adjusted_p = ReadNumber(j.at("holm_adjusted_p"));
  for (const auto& r : j.at("top_residuals")) {
    c.top_residuals.push_back({r.at("token").get<int32_t>(), r.at("observed").get<uint64_t>(),
                               ReadNumber(r.at("expected")), ReadNumber(r.at("z"))});
  }
  c.seconds = ReadNumber(j.at("seconds"));
  return c;
}

}  // namespace

const char* CaseStatusName(CaseStatus status) {
  switch (status) {
    case CaseStatus::kPass: return "pass";
    case CaseStatus::kFail: return "fail";
    case CaseStatus::kSkipped: return "skipped";
    case CaseStatus::kError: return "error";
  }
  return "error";
}

bool CampaignReport::Passed() const {
  return std::none_of(cases.begin(), cases.end(), [](const CaseResult& c) {
    return c.status == CaseStatus::kFail || c.status == CaseStatus::kError;
  });
}

size_t CampaignReport::Count(CaseStatus status) const {
  return static_cast<size_t>(
      std::count_if(cases.begin(), cases.end(), [&](const CaseResult& c) { return c.status == status; }));
}

void ApplyCampaignVerdict(CampaignReport& report) {
  std::vector<double> p_values;
  std::vector<size_t> judged;
  for (size_t i = 0; i < report.cases.size(); ++i) {
    const CaseResult& c = report.cases[i];
    if (c.status == CaseStatus::kSkipped || c.status == CaseStatus::kError) continue;
    if (c.tests == 0) continue;  // support-only case (a single kept token): no p-value
    judged.push_back(i);
    p_values.push_back(std::clamp(c.p_value, 0.0, 1.0));
  }
  const stats::MultipleTestingDecision holm = stats::HolmBonferroni(p_values, report.alpha);
  for (size_t i = 0; i < report.cases.size(); ++i) {
    CaseResult& c = report.cases[i];
    if (c.status == CaseStatus::kSkipped || c.status == CaseStatus::kError) continue;
    c.status = CaseStatus::kPass;
    c.reason.clear();
    c.holm_adjusted_p = 1.0;
  }
  for (size_t k = 0; k < judged.size(); ++k) {
    CaseResult& c = report.cases[judged[k]];
    if (!holm.ok()) break;
    c.holm_adjusted_p = holm.adjusted_p_values[k];
    if (holm.rejected[k]) {
      std::ostringstream os;
      os << "goodness of fit rejected: p = " << c.p_value << ", Holm-adjusted " << c.holm_adjusted_p
         << " <= alpha " << report.alpha;
      c.status = CaseStatus::kFail;
      c.reason = os.str();
    }
  }
  for (CaseResult& c : report.cases) {
    if (c.status == CaseStatus::kSkipped || c.status == CaseStatus::kError) continue;
    std::string hard;
    if (!c.sampler_error.empty()) hard = "sampler error: " + c.sampler_error;
    if (c.support_violations > 0) {
      if (!hard.empty()) hard += "; ";
      hard += std::to_string(c.support_violations) + " support violation(s)";
      if (c.invalid_draws > 0) hard += " (" + std::to_string(c.invalid_draws) + " invalid token(s))";
      if (!c.violation_tokens.empty()) {
        hard += ", e.g. token " + std::to_string(c.violation_tokens.front().token) + " drawn " +
                std::to_string(c.violation_tokens.front().count) + "x outside the kept set";
      }
    }
    if (!hard.empty()) {
      c.status = CaseStatus::kFail;
      c.reason = c.reason.empty() ? hard : hard + "; " + c.reason;
    }
  }
  if (!holm.ok()) {
    for (size_t idx : judged) {
      report.cases[idx].status = CaseStatus::kError;
      report.cases[idx].reason = "Holm: " + holm.error;
    }
  }
}

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
    for (const auto& c : j.at("cases")) {
      r.cases.push_back(CaseFromJson(c));
      ++case_index;
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
     << r.alpha << " (Holm), TV " << r.tv << ", " << double(draws) << " draws in " << r.seconds << " s\n";
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
  os << "VERDICT: " << (r.Passed() ? "PASS" : "FAIL") << "\n";
  return os.str();
}

Status SaveReport(const CampaignReport& report, const std::filesystem::path& path) {
  std::ofstream out(path);
  if (!out) return Error{ErrorCode::kIo, "cannot write report " + path.string()};
  out << ReportToJson(report).dump(1) << "\n";
  if (!out) return Error{ErrorCode::kIo, "error writing report " + path.string()};
  return Status::Ok();
}

Result<CampaignReport> LoadReport(const std::filesystem::path& path) {
  std::ifstream in(path);
  if (!in) return Error{ErrorCode::kIo, "cannot read report " + path.string()};
  json j;
  try {
    j = json::parse(in);
  } catch (const json::parse_error& e) {
    return ParseError(path.string() + ": not valid JSON: " + e.what());
  }
  auto r = ReportFromJson(j);
  if (!r.ok()) return ParseError(path.string() + ": " + r.error().message);
  return r;
}

}  // namespace samplecheck::harness
