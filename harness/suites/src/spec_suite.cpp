// Speculative-decoding suites (spec_campaign.h): parsing, the built-in spec suites, loading by name or path.
#include <filesystem>
#include <fstream>
#include <sstream>

#include "samplecheck/samplers/verifier.h"
#include "samplecheck/suites/json_text.h"
#include "samplecheck/suites/spec_suite.h"
#include "samplecheck/suites/suite_file.h"

namespace samplecheck::harness {
namespace {

Result<DraftForm> ParseForm(const std::string& s) {
  if (s == "probabilities") return DraftForm::kProbabilities;
  if (s == "logits") return DraftForm::kLogits;
  if (s == "one-hot") return DraftForm::kOneHot;
  return ParseError("draft form '" + s + "' is unknown; allowed: probabilities, logits, one-hot");
}

Result<SpecRequestSpec> ParseRequest(const nlohmann::json& e, const std::string& where,
                                     const std::filesystem::path& base_dir) {
  SpecRequestSpec r;
  if (!e.is_object() || !e.contains("target")) return ParseError(where + ": needs \"target\" (a row spec)");
  auto row = ParseRowSpec(e["target"]);
  if (!row.ok()) return row.error().WithContext(where + " target");
  r.target = *row;
  r.target.base_dir = base_dir;  // a relative .npy path names a file beside the suite
  auto params = ParseParams(e.contains("params") ? e["params"] : nlohmann::json::object());
  if (!params.ok()) return params.error().WithContext(where + " params");
  r.params = *params;
  if (e.contains("g")) {
    if (!e["g"].is_number_integer() || e["g"].get<int64_t>() < 1 || e["g"].get<int64_t>() > kMaxSpecDraft) {
      return ParseError(where + ": g = " + e["g"].dump() + "; allowed: an integer in 1.." + std::to_string(kMaxSpecDraft));
    }
    r.g = e["g"].get<int32_t>();
  }
  const nlohmann::json d = e.contains("draft") ? e["draft"] : nlohmann::json::object();
  if (!d.is_object()) return ParseError(where + ": \"draft\" must be an object");
  if (d.contains("form")) {
    auto form = ParseForm(d["form"].get<std::string>());
    if (!form.ok()) return form.error().WithContext(where);
    r.draft.form = *form;
  }
  if (d.contains("relation")) {
    r.draft.relation = d["relation"].get<std::string>();
    if (r.draft.relation != "close" && r.draft.relation != "far" && r.draft.relation != "same") {
      return ParseError(where + ": draft relation '" + r.draft.relation + "' is unknown; allowed: close, far, same");
    }
  }
  if (d.contains("noise")) {
    if (!d["noise"].is_number() || !(d["noise"].get<double>() > 0) || !(d["noise"].get<double>() <= 100)) {
      return ParseError(where + ": draft noise = " + d["noise"].dump() + "; allowed: (0, 100]");
    }
    r.draft.noise = d["noise"].get<double>();
  }
  if (d.contains("row")) {
    auto draft_row = ParseRowSpec(d["row"]);
    if (!draft_row.ok()) return draft_row.error().WithContext(where + " draft row");
    r.draft.row = *draft_row;
    r.draft.row.base_dir = base_dir;
  } else {
    r.draft.row = r.target;
  }
  r.draft.row.vocab = r.target.vocab;
  auto dparams = ParseParams(d.contains("params") ? d["params"] : nlohmann::json::object());
  if (!dparams.ok()) return dparams.error().WithContext(where + " draft params");
  r.draft.params = *dparams;
  return r;
}

Result<SpecSuite> ParseText(const std::string& text, std::string source, const std::filesystem::path& base_dir = {}) {
  Result<nlohmann::json> j = ParseJsonStrict(text, source);  // depth-limited, duplicate keys refused
  if (!j.ok()) return j.error();
  return ParseSpecSuite(*j, std::move(source), base_dir);
}

}  // namespace

Result<SpecSuite> ParseSpecSuite(const nlohmann::json& j, std::string source, const std::filesystem::path& base_dir) {
  SpecSuite s;
  s.source = std::move(source);
  try {
    if (!j.is_object() || j.value("schema", "") != kSpecSuiteSchema) {
      return ParseError(s.source + ": \"schema\" must be \"" + std::string(kSpecSuiteSchema) + "\"");
    }
    s.name = j.at("name").get<std::string>();
    s.description = j.value("description", "");
    s.seed = j.value("seed", uint64_t{1});
    s.alpha = j.value("alpha", 1e-4);
    s.tv = j.value("tv", 0.02);
    s.power = j.value("power", 0.99);
    s.max_trials = j.value("max_trials", s.max_trials);
    s.min_trials = j.value("min_trials", s.min_trials);
    s.batch_max_trials = j.value("batch_max_trials", s.batch_max_trials);
    s.profile = j.value("profile", "");
    if (!(s.alpha > 0 && s.alpha < 1)) return ParseError(s.source + ": alpha = " + FormatValue(s.alpha) + "; allowed: (0, 1)");
    if (!(s.tv > 0 && s.tv <= 0.5)) return ParseError(s.source + ": tv = " + FormatValue(s.tv) + "; allowed: (0, 0.5]");
    if (!(s.power > s.alpha && s.power < 1)) return ParseError(s.source + ": power = " + FormatValue(s.power) + "; allowed: (alpha, 1)");
    if (s.min_trials < 1 || s.max_trials < s.min_trials) {
      return ParseError(s.source + ": min_trials " + std::to_string(s.min_trials) + ", max_trials " +
                        std::to_string(s.max_trials) + "; allowed: 1 <= min_trials <= max_trials");
    }
    for (const nlohmann::json& c : j.at("cases")) {
      SpecCaseSpec cs;
      cs.name = c.at("name").get<std::string>();
      cs.max_trials = c.value("max_trials", uint64_t{0});
      cs.min_trials = c.value("min_trials", uint64_t{0});
      if (c.contains("batch")) {
        size_t k = 0;
        for (const nlohmann::json& e : c["batch"]) {
          auto r = ParseRequest(e, "case " + cs.name + " entry " + std::to_string(k++), base_dir);
          if (!r.ok()) return r.error();
          const uint32_t copies = e.value("copies", 1u);
          for (uint32_t i = 0; i < copies; ++i) cs.requests.push_back(*r);
        }
        if (cs.requests.size() < 2) return ParseError("case " + cs.name + ": a batch needs two or more requests");
      } else {
        auto r = ParseRequest(c, "case " + cs.name, base_dir);
        if (!r.ok()) return r.error();
        cs.requests.push_back(*r);
      }
      s.cases.push_back(std::move(cs));
    }
  } catch (const std::exception& e) {
    return ParseError(s.source + ": " + JsonErrorText(e));
  }
  return s;
}

bool IsBuiltinSpecSuite(std::string_view name) {
  for (const BuiltinSuiteText& b : BuiltinSuiteTexts(SuiteKind::kSpec)) {
    if (name == b.name) return true;
  }
  return false;
}

std::vector<BuiltinSuiteInfo> BuiltinSpecSuites() {
  std::vector<BuiltinSuiteInfo> out;
  for (const BuiltinSuiteText& b : BuiltinSuiteTexts(SuiteKind::kSpec)) {
    auto s = ParseText(b.json, std::string("builtin:") + b.name);
    out.push_back({b.name, s.ok() ? s->description : "BROKEN: " + s.error().message, s.ok() ? s->cases.size() : 0});
  }
  return out;
}

Result<SpecSuite> LoadSpecSuite(std::string_view name_or_path) {
  auto text = ReadSuiteText(name_or_path, SuiteKind::kSpec);
  if (!text.ok()) return text.error();
  return ParseText(text->text, text->source, text->base_dir);
}
}  // namespace samplecheck::harness
