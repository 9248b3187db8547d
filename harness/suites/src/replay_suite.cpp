// Replay suites (replay_campaign.h): parsing, the generated cases, the built-in replay suites, loading by name or
// path.
#include <filesystem>
#include <fstream>
#include <initializer_list>
#include <set>
#include <sstream>

#include "samplecheck/core/splitmix.h"
#include "samplecheck/suites/generated.h"
#include "samplecheck/suites/json_text.h"
#include "samplecheck/suites/replay_suite.h"
#include "samplecheck/suites/suite_file.h"

namespace samplecheck::harness {
namespace {

// A field of one of a few names: the index of `text` in `names`, or kParse naming the field and what is allowed.
template <class E, size_t N>
Result<E> Choice(const nlohmann::json& c, const char* field, const char* const (&names)[N], E fallback,
                 const std::string& where) {
  if (!c.contains(field)) return fallback;
  const std::string text = c[field].is_string() ? c[field].get<std::string>() : c[field].dump();
  std::string allowed;
  for (size_t i = 0; i < N; ++i) {
    if (text == names[i]) return static_cast<E>(i);
    allowed += (i ? ", " : "") + std::string(names[i]);
  }
  return ParseError(where + ": " + field + " '" + text + "' is unknown; allowed: " + allowed);
}

// Every key of `object` is one of `allowed`: a typo ("trainer_logit", "max_ratio_bais") is refused, never read as
// the field's default.
Status KnownFields(const nlohmann::json& object, std::initializer_list<const char*> allowed, const std::string& where) {
  for (const auto& [key, value] : object.items()) {
    bool known = false;
    for (const char* a : allowed) known = known || key == a;
    if (known) continue;
    std::string list;
    for (const char* a : allowed) list += (list.empty() ? "" : ", ") + std::string(a);
    return ParseError(where + ": unknown field \"" + key + "\"; allowed: " + list);
  }
  return Status::Ok();
}

constexpr const char* kDTypes[] = {"fp32", "bf16"};
constexpr const char* kTrainerLogits[] = {"same", "bf16", "bf16_jitter"};
constexpr const char* kLabelChoices[] = {"sampled", "boundary"};

Result<ReplayEntry> ParseEntry(const nlohmann::json& e, const std::string& where) {
  if (!e.is_object() || !e.contains("row")) return ParseError(where + ": needs \"row\" (a row spec)");
  if (e.contains("copies") && e.contains("rows")) {
    return ParseError(where + ": \"rows\" and \"copies\" are the same field; give one");
  }
  auto row = ParseRowSpec(e["row"]);
  if (!row.ok()) return row.error().WithContext(where + " row");
  if (!row->poison.empty()) {
    return ParseError(where + ": a poisoned row (" + row->poison + ") has no processed logprobs to replay");
  }
  auto params = ParseParams(e.contains("params") ? e["params"] : nlohmann::json::object());
  if (!params.ok()) return params.error().WithContext(where + " params");
  ReplayEntry entry{*row, *params, 1};
  const char* count = e.contains("copies") ? "copies" : "rows";
  if (e.contains(count)) {
    if (!e[count].is_number_unsigned() || e[count].get<uint64_t>() < 1 || e[count].get<uint64_t>() > 4096) {
      return ParseError(where + ": " + count + " = " + e[count].dump() + "; allowed: an integer in 1..4096");
    }
    entry.copies = e[count].get<uint32_t>();
  }
  return entry;
}

Result<ReplayCaseSpec> ParseCase(const nlohmann::json& c) {
  ReplayCaseSpec cs;
  if (!c.is_object()) return ParseError("a case must be an object, not " + c.dump());
  cs.name = c.at("name").get<std::string>();
  const std::string where = "case " + cs.name;
  if (cs.name.empty() || cs.name == kReplayAggregateCase) {
    return ParseError(where + ": the name \"" + cs.name + "\" is reserved or empty");
  }
  Status known =
      c.contains("batch")
          ? KnownFields(c, {"name", "batch", "dtype", "trainer_logits", "label"}, where)
          : KnownFields(c, {"name", "row", "params", "rows", "copies", "dtype", "trainer_logits", "label"}, where);
  if (!known.ok()) return known.error();
  if (c.contains("batch")) {
    if (!c["batch"].is_array()) return ParseError(where + ": \"batch\" must be an array of entries");
    size_t k = 0;
    for (const nlohmann::json& e : c["batch"]) {
      const std::string at = where + " entry " + std::to_string(k++);
      if (e.is_object()) {
        if (Status st = KnownFields(e, {"row", "params", "rows", "copies"}, at); !st.ok()) return st.error();
      }
      auto entry = ParseEntry(e, at);
      if (!entry.ok()) return entry.error();
      cs.entries.push_back(*entry);
    }
    if (cs.entries.empty()) return ParseError(where + ": an empty batch");
  } else {
    auto entry = ParseEntry(c, where);
    if (!entry.ok()) return entry.error();
    cs.entries.push_back(*entry);
  }
  auto dtype = Choice(c, "dtype", kDTypes, ReplayDType::kFloat32, where);
  auto trainer = Choice(c, "trainer_logits", kTrainerLogits, TrainerLogits::kSame, where);
  auto label = Choice(c, "label", kLabelChoices, LabelChoice::kSampled, where);
  for (const Status& st : {dtype.status(), trainer.status(), label.status()}) {
    if (!st.ok()) return st.error();
  }
  cs.dtype = *dtype;
  cs.trainer_logits = *trainer;
  cs.label = *label;
  return cs;
}

Result<ReplaySuite> ParseText(const std::string& text, std::string source, const std::filesystem::path& base_dir = {}) {
  auto j = ParseJsonStrict(text, source);
  if (!j.ok()) return j.error();
  return ParseReplaySuite(*j, std::move(source), base_dir);
}

// A splitmix stream for the generated cases' replay fields (generated.cpp makes their rows and parameters).
uint64_t Draw(uint64_t& state) {
  state += 0x9E3779B97F4A7C15ULL;
  return SplitMix64(state);
}

}  // namespace

const char* TrainerLogitsName(TrainerLogits t) { return kTrainerLogits[static_cast<int>(t)]; }
const char* LabelChoiceName(LabelChoice l) { return kLabelChoices[static_cast<int>(l)]; }

Result<ReplaySuite> ParseReplaySuite(const nlohmann::json& j, std::string source,
                                     const std::filesystem::path& base_dir) {
  ReplaySuite s;
  s.source = std::move(source);
  try {
    if (!j.is_object() || j.value("schema", "") != kReplaySuiteSchema) {
      return ParseError(s.source + ": \"schema\" must be \"" + std::string(kReplaySuiteSchema) + "\"");
    }
    if (Status st = KnownFields(
            j, {"schema", "name", "description", "seed", "profile", "rollout", "max_ratio_bias", "generated", "cases"},
            s.source);
        !st.ok()) {
      return st.error();
    }
    s.name = j.at("name").get<std::string>();
    s.description = j.value("description", "");
    s.seed = j.value("seed", uint64_t{1});
    s.profile = j.value("profile", "");
    s.rollout = j.value("rollout", s.rollout);
    s.max_ratio_bias = j.value("max_ratio_bias", s.max_ratio_bias);
    if (s.rollout < 1 || s.rollout > (uint64_t{1} << 20)) {
      return ParseError(s.source + ": rollout = " + std::to_string(s.rollout) + "; allowed: 1..2^20 tokens per row");
    }
    if (!(s.max_ratio_bias >= 0 && s.max_ratio_bias < 1)) {
      return ParseError(s.source + ": max_ratio_bias = " + FormatValue(s.max_ratio_bias) + "; allowed: [0, 1)");
    }
    if (j.contains("generated")) {
      const nlohmann::json& g = j["generated"];
      if (!g.is_object()) return ParseError(s.source + ": \"generated\" must be an object {\"count\": N, \"seed\": S}");
      if (Status st = KnownFields(g, {"count", "seed"}, s.source + ": generated"); !st.ok()) return st.error();
      s.generated = g.at("count").get<size_t>();
      s.generated_seed = g.value("seed", s.seed);
    }
    std::set<std::string> names;
    for (const nlohmann::json& c : j.at("cases")) {
      auto cs = ParseCase(c);
      if (!cs.ok()) return cs.error().WithContext(s.source);
      if (!names.insert(cs->name).second) {
        return ParseError(s.source + ": duplicate case name \"" + cs->name +
                          "\" (a case's result is found by its name)");
      }
      for (ReplayEntry& e : cs->entries) e.row.base_dir = base_dir;  // a relative .npy path is beside the suite
      s.cases.push_back(std::move(*cs));
    }
  } catch (const std::exception& e) {
    return ParseError(s.source + ": " + e.what());
  }
  return s;
}

std::vector<ReplayCaseSpec> GenerateReplayCases(uint64_t seed, size_t count, const Profile& profile) {
  std::vector<ReplayCaseSpec> out;
  uint64_t state = SplitMix64(seed ^ 0x7265706C6179ULL);
  for (CaseSpec& g : GenerateCases(seed, count, profile)) {
    ReplayCaseSpec cs;
    cs.name = g.name;
    // A rollout is sampled: a greedy temperature (T = 0, or below the profile's greedy threshold) becomes 1.
    if (g.params.temperature <= profile.greedy_temperature_below) g.params.temperature = 1.0;
    const uint64_t bits = Draw(state);
    cs.entries.push_back({g.row, g.params, (bits & 3) == 0 ? 8u : 1u});  // 8 rows: vLLM's batch-size path switch
    cs.dtype = (bits >> 2) & 1 ? ReplayDType::kBFloat16 : ReplayDType::kFloat32;
    cs.trainer_logits = static_cast<TrainerLogits>(((bits >> 3) & 0xFF) % 3);
    cs.label = (bits >> 11) & 1 ? LabelChoice::kBoundary : LabelChoice::kSampled;
    out.push_back(std::move(cs));
  }
  return out;
}

std::vector<BuiltinSuiteInfo> BuiltinReplaySuites() {
  std::vector<BuiltinSuiteInfo> out;
  for (const BuiltinSuiteText& b : BuiltinSuiteTexts(SuiteKind::kReplay)) {
    auto s = ParseText(b.json, std::string("builtin:") + b.name);
    out.push_back({b.name, s.ok() ? s->description : "BROKEN: " + s.error().message,
                   s.ok() ? s->cases.size() + s->generated : 0});
  }
  return out;
}

Result<ReplaySuite> LoadReplaySuite(std::string_view name_or_path) {
  auto text = ReadSuiteText(name_or_path, SuiteKind::kReplay);
  if (!text.ok()) return text.error();
  return ParseText(text->text, text->source, text->base_dir);
}

}  // namespace samplecheck::harness
