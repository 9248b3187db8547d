#include "samplecheck/suites/suite.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <set>

#include "samplecheck/core/files.h"
#include "samplecheck/core/format.h"
#include "samplecheck/reference/profile.h"
#include "samplecheck/suites/json_text.h"
#include "samplecheck/suites/suite_file.h"

namespace samplecheck::harness {
namespace {

Result<AmbiguousAction> ParseAmbiguous(const nlohmann::json& j, const std::string& where) {
  if (!j.is_string()) return ParseError(where + ": \"ambiguous\" must be \"perturb\", \"condition\" or \"skip\"");
  const std::string s = j.get<std::string>();
  if (s == "perturb") return AmbiguousAction::kPerturb;
  if (s == "skip") return AmbiguousAction::kSkip;
  if (s == "condition") return AmbiguousAction::kCondition;
  return ParseError(where + ": \"ambiguous\" = \"" + s + "\" (allowed: perturb, condition, skip)");
}

Result<uint64_t> ParseDraws(const nlohmann::json& j, const std::string& where, const char* key) {
  if (!j.is_number() || j.get<double>() < 1 || j.get<double>() > 1e13) {
    return ParseError(where + ": \"" + key + "\" must be a number of draws in [1, 1e13]");
  }
  return static_cast<uint64_t>(std::llround(j.get<double>()));
}

// "seed" of a block: a non-negative integer, or "fresh" (nullopt: the campaign seed).
Result<std::optional<uint64_t>> ParseSeedOrFresh(const nlohmann::json& j, const std::string& where) {
  if (j.is_number_unsigned()) return std::optional<uint64_t>(j.get<uint64_t>());
  if (j.is_string() && j == "fresh") return std::optional<uint64_t>();
  return ParseError(where + ": \"seed\" must be a non-negative integer or \"fresh\"");
}

// "tv" of a case or a block: a total variation in (0, 0.5].
Result<double> ParseTv(const nlohmann::json& j, const std::string& where) {
  if (!j.is_number() || !(j.get<double>() > 0 && j.get<double>() <= 0.5)) {
    return ParseError(where + ": \"tv\" must be in (0, 0.5]");
  }
  return j.get<double>();
}

// Valid under at least one profile (a suite is shared by every profile; a case invalid under the judged profile
// only is skipped at run time, one invalid under every profile is a broken suite).
std::optional<std::string> InvalidEverywhere(const SamplingParams& params) {
  std::string first;
  for (const Profile* p : AllProfiles()) {
    auto bad = ValidateParams(params, *p);
    if (!bad) return std::nullopt;
    if (first.empty()) first = bad->message;
  }
  return first.empty() ? std::nullopt : std::optional<std::string>(first);
}

// A batch case: "batch": [{"row": {...}, "params": {...}, "copies": n}, ...]; every row of one vocabulary size.
Result<CaseSpec> ParseBatchCase(const nlohmann::json& c, const CaseSpec& proto, const std::string& name,
                                const std::string& where, const std::filesystem::path& base_dir) {
  constexpr size_t kMaxBatchRows = 256;
  if (c.contains("row") || c.contains("rows") || c.contains("params")) {
    return ParseError(where + ": a batch case lists its rows and params in \"batch\" only");
  }
  const auto& entries = c["batch"];
  if (!entries.is_array() || entries.empty()) return ParseError(where + ": \"batch\" must be a non-empty array");
  CaseSpec cs = proto;
  cs.name = name;
  size_t rows = 0;
  for (size_t ei = 0; ei < entries.size(); ++ei) {
    const auto& e = entries[ei];
    const std::string at = where + ": batch entry " + std::to_string(ei);
    if (!e.is_object()) return ParseError(at + " is not an object");
    for (const auto& [key, value] : e.items()) {
      if (key != "row" && key != "params" && key != "copies") return ParseError(at + ": unknown field \"" + key + "\"");
    }
    if (!e.contains("row")) return ParseError(at + ": \"row\" is missing");
    BatchEntry entry;
    auto row = ParseRowSpec(e["row"]);
    if (!row.ok()) return ParseError(at + ": " + row.error().message);
    entry.row = *row;
    entry.row.base_dir = base_dir;
    auto p = ParseParams(e.contains("params") ? e["params"] : nlohmann::json::object());
    if (!p.ok()) return ParseError(at + ": " + p.error().message);
    if (auto bad = InvalidEverywhere(*p)) return ParseError(at + ": invalid params under every profile: " + *bad);
    entry.params = *p;
    if (e.contains("copies")) {
      if (!e["copies"].is_number_unsigned() || e["copies"].get<uint64_t>() < 1 ||
          e["copies"].get<uint64_t>() > kMaxBatchRows) {
        return ParseError(at + ": \"copies\" must be an integer in [1, " + std::to_string(kMaxBatchRows) + "]");
      }
      entry.copies = e["copies"].get<uint32_t>();
    }
    rows += entry.copies;
    cs.batch.push_back(std::move(entry));
  }
  if (rows > kMaxBatchRows) {
    return ParseError(where + ": the batch has " + std::to_string(rows) + " rows, more than " +
                      std::to_string(kMaxBatchRows));
  }
  cs.row = cs.batch.front().row;
  cs.params = cs.batch.front().params;
  if (c.contains("decode")) {
    if (!c["decode"].is_boolean()) return ParseError(where + ": \"decode\" must be true or false");
    cs.decode = c["decode"].get<bool>();
    if (cs.decode && rows < 2) return ParseError(where + ": a decode case needs two or more requests (rows)");
  }
  return cs;
}

Result<Suite> ParseSuiteText(const std::string& text, const std::filesystem::path& base_dir, std::string source) {
  Result<nlohmann::json> json = ParseJsonStrict(text, source);  // a duplicate key is an error, not "last wins"
  if (!json.ok()) return json.error();
  return ParseSuite(*json, base_dir, source);
}

}  // namespace

const char* AmbiguousActionName(AmbiguousAction action) {
  switch (action) {
    case AmbiguousAction::kPerturb: return "perturb";
    case AmbiguousAction::kCondition: return "condition";
    case AmbiguousAction::kSkip: return "skip";
  }
  return "perturb";
}

Result<SamplingParams> ParseParams(const nlohmann::json& json) {
  if (!json.is_object()) return ParseError("params must be a JSON object");
  SamplingParams p;
  for (const auto& [key, value] : json.items()) {
    if (key == "temperature" || key == "top_p" || key == "min_p") {
      if (!value.is_number()) return ParseError("params: \"" + key + "\" must be a number");
      const double v = value.get<double>();
      (key == "temperature" ? p.temperature : key == "top_p" ? p.top_p : p.min_p) = v;
    } else if (key == "top_k") {
      if (!value.is_number_integer()) return ParseError("params: \"top_k\" must be an integer");
      p.top_k = value.get<int64_t>();
    } else if (key == "seed" || key == "offset") {
      if (!value.is_number_unsigned()) return ParseError("params: \"" + key + "\" must be a non-negative integer");
      (key == "seed" ? p.seed : p.offset) = value.get<uint64_t>();
    } else {
      return ParseError("params: unknown field \"" + key + "\" (allowed: temperature, top_k, top_p, min_p)");
    }
  }
  return p;
}

nlohmann::json ParamsToJson(const SamplingParams& params, bool with_rng) {
  nlohmann::json j{{"temperature", params.temperature},
                   {"top_k", params.top_k},
                   {"top_p", params.top_p},
                   {"min_p", params.min_p}};
  if (with_rng) {
    j["seed"] = params.seed;
    j["offset"] = params.offset;
  }
  return j;
}

std::string DescribeParams(const SamplingParams& p) {
  std::string s = "T=" + FormatSignificant(p.temperature);
  if (p.top_k != -1) s += " k=" + std::to_string(p.top_k);
  if (p.top_p != 1.0) s += " p=" + FormatSignificant(p.top_p);
  if (p.min_p != 0.0) s += " min_p=" + FormatSignificant(p.min_p);
  return s;
}

namespace {

// The suite's own fields (every key known, the schema, name, seed, alpha / TV / power, caps, ambiguity, budget).
Status ParseSuiteFields(const nlohmann::json& json, const std::string& source, Suite& suite) {
  static const std::set<std::string> kTopKeys = {"schema", "name", "description", "seed", "alpha", "tv", "power",
                                                 "max_draws", "min_draws", "profile", "ambiguous", "cases",
                                                 "generated", "budget_seconds", "budget_max_draws", "corners"};
  for (const auto& [key, value] : json.items()) {
    if (!kTopKeys.count(key)) return ParseError(source + ": unknown field \"" + key + "\"");
  }
  if (!json.contains("schema") || json["schema"] != kSuiteSchema) {
    return ParseError(source + ": \"schema\" must be \"" + std::string(kSuiteSchema) + "\"");
  }
  try {
    if (json.contains("name")) suite.name = json["name"].get<std::string>();
    if (json.contains("description")) suite.description = json["description"].get<std::string>();
    if (json.contains("profile")) suite.profile = json["profile"].get<std::string>();
  } catch (const std::exception& e) {
    return ParseError(source + ": " + JsonErrorText(e));
  }
  if (suite.name.empty()) suite.name = std::filesystem::path(source).stem().string();
  if (json.contains("seed")) {
    const auto& s = json["seed"];
    if (s.is_string() && s == "fresh") {
      suite.fresh_seed = true;
    } else if (s.is_number_unsigned()) {
      suite.seed = s.get<uint64_t>();
    } else {
      return ParseError(source + ": \"seed\" must be a non-negative integer or \"fresh\"");
    }
  }
  auto unit_interval = [&](const char* key, double& out, double lo, double hi) -> Status {
    if (!json.contains(key)) return Status::Ok();
    if (!json[key].is_number() || !(json[key].get<double>() > lo && json[key].get<double>() < hi)) {
      return ParseError(source + ": \"" + key + "\" must be a number in (" + FormatSignificant(lo) + ", " +
                        FormatSignificant(hi) + ")");
    }
    out = json[key].get<double>();
    return Status::Ok();
  };
  if (Status st = unit_interval("alpha", suite.alpha, 0, 1); !st.ok()) return st;
  if (Status st = unit_interval("tv", suite.tv, 0, 0.5 + 1e-12); !st.ok()) return st;
  if (Status st = unit_interval("power", suite.power, 0, 1); !st.ok()) return st;
  if (json.contains("max_draws")) {
    auto d = ParseDraws(json["max_draws"], source, "max_draws");
    if (!d.ok()) return d.error();
    suite.max_draws = *d;
  }
  if (json.contains("min_draws")) {
    auto d = ParseDraws(json["min_draws"], source, "min_draws");
    if (!d.ok()) return d.error();
    suite.min_draws = *d;
  }
  if (suite.min_draws > suite.max_draws) return ParseError(source + ": min_draws > max_draws");
  if (json.contains("ambiguous")) {
    auto a = ParseAmbiguous(json["ambiguous"], source);
    if (!a.ok()) return a.error();
    suite.ambiguous = *a;
  }
  if (json.contains("budget_seconds")) {
    if (!json["budget_seconds"].is_number() || !(json["budget_seconds"].get<double>() >= 0) ||
        !(json["budget_seconds"].get<double>() <= 7 * 86400)) {
      return ParseError(source + ": \"budget_seconds\" must be a number of seconds in [0, 604800]");
    }
    suite.budget_seconds = json["budget_seconds"].get<double>();
  }
  if (json.contains("budget_max_draws")) {
    auto d = ParseDraws(json["budget_max_draws"], source, "budget_max_draws");
    if (!d.ok()) return d.error();
    suite.budget_max_draws = *d;
  }
  return Status::Ok();
}

// "generated": {"count": n, "seed": s | "fresh", "max_draws": m}.
Status ParseGeneratedBlock(const nlohmann::json& json, const std::string& source, Suite& suite) {
  const auto& g = json["generated"];
  const std::string at = source + ": \"generated\"";
  if (!g.is_object()) return ParseError(at + " must be an object {\"count\": n, \"seed\": s or \"fresh\"}");
  for (const auto& [key, value] : g.items()) {
    if (key != "count" && key != "seed" && key != "max_draws") return ParseError(at + ": unknown field \"" + key + "\"");
  }
  if (!g.contains("count") || !g["count"].is_number_unsigned() || g["count"].get<uint64_t>() > 10000) {
    return ParseError(at + ": \"count\" must be an integer in [0, 10000]");
  }
  suite.generated = g["count"].get<size_t>();
  suite.generated_seed = 0;
  if (g.contains("seed")) {
    auto seed = ParseSeedOrFresh(g["seed"], at);
    if (!seed.ok()) return seed.error();
    suite.generated_seed = *seed;
  }
  if (g.contains("max_draws")) {
    auto d = ParseDraws(g["max_draws"], at, "max_draws");
    if (!d.ok()) return d.error();
    suite.generated_max_draws = *d;
  }
  return Status::Ok();
}

// "corners": {"seed": s | "fresh", "max_draws": m, "tv": t} (corners.h).
Status ParseCornersBlock(const nlohmann::json& json, const std::string& source, Suite& suite) {
  const auto& c = json["corners"];
  const std::string at = source + ": \"corners\"";
  if (!c.is_object()) return ParseError(at + " must be an object {\"seed\": s or \"fresh\", \"max_draws\": m, \"tv\": t}");
  for (const auto& [key, value] : c.items()) {
    if (key != "seed" && key != "max_draws" && key != "tv") return ParseError(at + ": unknown field \"" + key + "\"");
  }
  suite.corners = true;
  suite.corners_seed = 0;
  if (c.contains("seed")) {
    auto seed = ParseSeedOrFresh(c["seed"], at);
    if (!seed.ok()) return seed.error();
    suite.corners_seed = *seed;
  }
  if (c.contains("max_draws")) {
    auto d = ParseDraws(c["max_draws"], at, "max_draws");
    if (!d.ok()) return d.error();
    suite.corners_max_draws = *d;
  }
  if (c.contains("tv")) {
    auto tv = ParseTv(c["tv"], at);
    if (!tv.ok()) return tv.error();
    suite.corners_tv = *tv;
  }
  return Status::Ok();
}

// A case's own fields (profile, cap, TV, ambiguity), common to its rows x params or to its batch.
Result<CaseSpec> ParseCaseFields(const nlohmann::json& c, const std::string& where) {
  CaseSpec proto;
  if (c.contains("profile")) {
    if (!c["profile"].is_string()) return ParseError(where + ": profile " + c["profile"].dump() + " is not a string");
    if (Result<const Profile*> p = ProfileByName(c["profile"].get<std::string>()); !p.ok()) {
      return ParseError(where + ": " + p.error().message);
    }
    proto.profile = c["profile"].get<std::string>();
  }
  if (c.contains("max_draws")) {
    auto d = ParseDraws(c["max_draws"], where, "max_draws");
    if (!d.ok()) return d.error();
    proto.max_draws = *d;
  }
  if (c.contains("tv")) {
    auto tv = ParseTv(c["tv"], where);
    if (!tv.ok()) return tv.error();
    proto.tv = *tv;
  }
  if (c.contains("ambiguous")) {
    auto a = ParseAmbiguous(c["ambiguous"], where);
    if (!a.ok()) return a.error();
    proto.ambiguous = *a;
  }
  if (c.contains("refuse")) {
    if (!c["refuse"].is_boolean()) return ParseError(where + ": \"refuse\" must be true or false");
    proto.refuse_invalid = c["refuse"].get<bool>();
  }
  return proto;
}

// rows x params, each given as one object or an array of objects: one case each ("<name>/r<i>/p<j>").
Status ParseRowCases(const nlohmann::json& c, const CaseSpec& proto, const std::string& base_name,
                     const std::string& where, const std::filesystem::path& base_dir, const std::string& source,
                     std::set<std::string>& names, Suite& suite) {
  std::vector<nlohmann::json> rows;
  if (c.contains("row") == c.contains("rows")) return ParseError(where + ": give exactly one of \"row\", \"rows\"");
  const auto& rj = c.contains("row") ? c["row"] : c["rows"];
  if (rj.is_array()) {
    rows.assign(rj.begin(), rj.end());
  } else {
    rows.push_back(rj);
  }
  std::vector<nlohmann::json> params;
  if (!c.contains("params")) {
    params.push_back(nlohmann::json::object());
  } else if (c["params"].is_array()) {
    params.assign(c["params"].begin(), c["params"].end());
  } else {
    params.push_back(c["params"]);
  }
  if (rows.empty() || params.empty()) return ParseError(where + ": empty \"rows\" or \"params\" list");
  const bool expand = rows.size() * params.size() > 1;
  for (size_t ri = 0; ri < rows.size(); ++ri) {
    auto row = ParseRowSpec(rows[ri]);
    if (!row.ok()) return ParseError(where + ": " + row.error().message);
    row->base_dir = base_dir;
    for (size_t pi = 0; pi < params.size(); ++pi) {
      auto p = ParseParams(params[pi]);
      if (!p.ok()) return ParseError(where + ": " + p.error().message);
      if (auto bad = InvalidEverywhere(*p); bad && !proto.refuse_invalid) {
        return ParseError(where + ": invalid params under every profile: " + *bad + " (\"refuse\": true makes a case "
                          "that the sampler must refuse them)");
      }
      if (!proto.profile.empty() && !proto.refuse_invalid) {
        if (auto bad = ValidateParams(*p, *FindProfile(proto.profile))) {
          return ParseError(where + ": " + bad->message);
        }
      }
      CaseSpec cs = proto;
      cs.row = *row;
      cs.params = *p;
      cs.name = base_name;
      if (expand) {
        if (rows.size() > 1) cs.name += "/r" + std::to_string(ri);
        if (params.size() > 1) cs.name += "/p" + std::to_string(pi);
      }
      if (!names.insert(cs.name).second) return ParseError(source + ": duplicate case name \"" + cs.name + "\"");
      suite.cases.push_back(std::move(cs));
    }
  }
  return Status::Ok();
}

Status ParseCase(const nlohmann::json& json, size_t ci, const std::filesystem::path& base_dir,
                 const std::string& source, std::set<std::string>& names, Suite& suite) {
  static const std::set<std::string> kCaseKeys = {"name", "row", "rows", "params", "profile", "max_draws", "tv",
                                                  "ambiguous", "note", "batch", "decode", "refuse"};
  const auto& c = json["cases"][ci];
  std::string where = source + ": case " + std::to_string(ci);
  if (!c.is_object()) return ParseError(where + " is not an object");
  for (const auto& [key, value] : c.items()) {
    if (!kCaseKeys.count(key)) return ParseError(where + ": unknown field \"" + key + "\"");
  }
  if (!c.contains("name") || !c["name"].is_string()) return ParseError(where + ": \"name\" (a string) is missing");
  const std::string base_name = c["name"].get<std::string>();
  if (base_name.empty() || base_name.find_first_not_of(" \t") == std::string::npos) {
    return ParseError(where + ": \"name\" is empty (a case needs a name: reports and --resume find it by name)");
  }
  where = source + ": case \"" + base_name + "\"";
  auto proto = ParseCaseFields(c, where);
  if (!proto.ok()) return proto.error();
  if (c.contains("refuse") && c.contains("batch")) {
    return ParseError(where + ": \"refuse\" applies to a row case (a batch is drawn whole)");
  }
  if (c.contains("decode") && !c.contains("batch")) {
    return ParseError(where + ": \"decode\" applies to a batch case (its requests are the batch's rows)");
  }
  if (c.contains("batch")) {
    Result<CaseSpec> batch = ParseBatchCase(c, *proto, base_name, where, base_dir);
    if (!batch.ok()) return batch.error();
    if (!names.insert(base_name).second) return ParseError(source + ": duplicate case name \"" + base_name + "\"");
    suite.cases.push_back(std::move(*batch));
    return Status::Ok();
  }
  return ParseRowCases(c, *proto, base_name, where, base_dir, source, names, suite);
}

}  // namespace

Result<Suite> ParseSuite(const nlohmann::json& json, const std::filesystem::path& base_dir, std::string source) {
  if (!json.is_object()) return ParseError(source + ": a suite is a JSON object");
  Suite suite;
  suite.source = source;
  if (Status st = ParseSuiteFields(json, source, suite); !st.ok()) return st.error();
  if (json.contains("generated")) {
    if (Status st = ParseGeneratedBlock(json, source, suite); !st.ok()) return st.error();
  }
  if (json.contains("corners")) {
    if (Status st = ParseCornersBlock(json, source, suite); !st.ok()) return st.error();
  }
  if (!suite.profile.empty()) {
    if (Result<const Profile*> p = ProfileByName(suite.profile); !p.ok())
      return ParseError(source + ": " + p.error().message);
  }
  if (!json.contains("cases") || !json["cases"].is_array() ||
      (json["cases"].empty() && suite.generated == 0 && !suite.corners)) {
    return ParseError(source + ": \"cases\" must be a non-empty array");
  }
  std::set<std::string> names;
  for (size_t ci = 0; ci < json["cases"].size(); ++ci) {
    if (Status st = ParseCase(json, ci, base_dir, source, names, suite); !st.ok()) return st.error();
  }
  return suite;
}

std::vector<BuiltinSuiteInfo> BuiltinSuites() {
  std::vector<BuiltinSuiteInfo> out;
  for (const BuiltinSuiteText& b : BuiltinSuiteTexts(SuiteKind::kSampler)) {
    BuiltinSuiteInfo info;
    info.name = b.name;
    auto suite = ParseSuiteText(b.json, {}, std::string("builtin:") + b.name);
    if (suite.ok()) {
      info.description = suite->description;
      info.cases = suite->cases.size();
    } else {
      info.description = "BROKEN: " + suite.error().message;
    }
    out.push_back(std::move(info));
  }
  return out;
}

Result<Suite> LoadSuite(std::string_view name_or_path) {
  auto text = ReadSuiteText(name_or_path, SuiteKind::kSampler);
  if (!text.ok()) return text.error();
  return ParseSuiteText(text->text, text->base_dir, text->source);
}

}  // namespace samplecheck::harness
