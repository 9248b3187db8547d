// json_parsers_fuzzer: the readers of user files → a value or a typed error (kParse, kInvalidArgument, kIo),
// never a crash, an escaping exception or undefined behaviour. Covers the suite parser (harness/suite.h), the
// report parser and the gate's recomputation of a loaded report (harness/report.h), row specs and parameters
// (row_source.h, suite.h) and the .npy parser.
//
// Input: one selector byte, then the document. Selector bit 0 set: the bytes are a .npy file; else JSON text
// (inputs that are not JSON end at nlohmann's parser: the interesting inputs are well-formed JSON with wrong
// types, missing or extra fields, out-of-range numbers, huge arrays). With the dictionary, libFuzzer builds such
// documents from the seed suites and report.
//
// Invariants (docs/fuzzing.md):
//   errors       every failure has a typed code and a non-empty message; nothing throws (an exception that escapes
//                a parser aborts the target: libFuzzer reports it as a crash).
//   round trips  ReportFromJson(ReportToJson(r)) succeeds and writes back the same JSON; ParseParams and
//                ParseRowSpec round-trip through ParamsToJson / RowSpecToJson.
//   reports      ApplyCampaignVerdict and FormatSummary run on every parsed report (a malformed stored report must
//                not crash `samplecheck gate`).
//   rows         MakeRow on a parsed spec (V <= 4096, not npy) gives vocab values or an error.
//   npy          ParseNpy ok => 1 or 2 dims, data.size() == product of the shape, dtype <f4 or <f2.
#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "fuzz_check.h"
#include "fuzz_decode.h"
#include "samplecheck/checks/result.h"
#include "samplecheck/report/report.h"
#include "samplecheck/suites/row_source.h"
#include "samplecheck/suites/suite.h"

namespace samplecheck::fuzz {
namespace {

void FuzzNpy(const std::string& bytes) {
  const Result<harness::NpyArray> npy = harness::ParseNpy(bytes, "fuzz.npy");
  if (!npy.ok()) {
    CheckInputError(npy.error(), "ParseNpy");
    return;
  }
  const harness::NpyArray& a = *npy;
  FUZZ_CHECK(a.shape.size() == 1 || a.shape.size() == 2, "ParseNpy: %zu dims", a.shape.size());
  uint64_t elements = 1;
  for (int64_t d : a.shape) {
    FUZZ_CHECK(d >= 0, "ParseNpy: negative dimension %lld", static_cast<long long>(d));
    FUZZ_CHECK(!__builtin_mul_overflow(elements, static_cast<uint64_t>(d), &elements), "ParseNpy: shape overflows");
  }
  FUZZ_CHECK(a.data.size() == elements, "ParseNpy: %zu values for %llu elements", a.data.size(),
             static_cast<unsigned long long>(elements));
  FUZZ_CHECK(a.dtype == "<f4" || a.dtype == "<f2" || a.dtype == "|f4" || a.dtype == "|f2" || a.dtype == "=f4" ||
                 a.dtype == "=f2",
             "ParseNpy: dtype %s", a.dtype.c_str());
  FUZZ_CHECK(a.rows() >= 0 && a.cols() >= 0, "ParseNpy: rows/cols");
}

void FuzzReport(const nlohmann::json& json) {
  Result<harness::CampaignReport> report = harness::ReportFromJson(json);
  if (!report.ok()) {
    CheckInputError(report.error(), "ReportFromJson");
    return;
  }
  const nlohmann::json written = harness::ReportToJson(*report);
  const Result<harness::CampaignReport> again = harness::ReportFromJson(written);
  FUZZ_CHECK(again.ok(), "ReportFromJson rejects what ReportToJson wrote: %s", again.error().ToString().c_str());
  FUZZ_CHECK(harness::ReportToJson(*again) == written, "report round trip changes the JSON");
  // What `samplecheck gate` does with a loaded report.
  harness::CampaignReport judged = std::move(report).value();
  harness::ApplyCampaignVerdict(judged);
  for (const harness::CaseResult& c : judged.cases) {
    FUZZ_CHECK(!(c.holm_adjusted_p < 0 || c.holm_adjusted_p > 1) || std::isnan(c.p_value),
               "ApplyCampaignVerdict: Holm-adjusted p %.17g (case p %.17g)", c.holm_adjusted_p, c.p_value);
  }
  const std::string summary = harness::FormatSummary(judged);
  FUZZ_CHECK(summary.find("VERDICT: ") != std::string::npos, "FormatSummary has no verdict line");
  (void)judged.Passed();
}

void FuzzSuite(const nlohmann::json& json) {
  const Result<harness::Suite> suite = harness::ParseSuite(json, "/nonexistent/fuzz", "fuzz.json");
  if (!suite.ok()) {
    CheckInputError(suite.error(), "ParseSuite");
    return;
  }
  for (const harness::CaseSpec& c : suite->cases) {
    FUZZ_CHECK(!c.name.empty(), "ParseSuite: a case without a name");
    (void)harness::DescribeRowSpec(c.row);
    (void)harness::DescribeParams(c.params);
  }
}

void FuzzRowSpec(const nlohmann::json& json, uint64_t seed) {
  const Result<harness::RowSpec> spec = harness::ParseRowSpec(json);
  if (!spec.ok()) {
    CheckInputError(spec.error(), "ParseRowSpec");
    return;
  }
  const nlohmann::json written = harness::RowSpecToJson(*spec);
  const Result<harness::RowSpec> again = harness::ParseRowSpec(written);
  FUZZ_CHECK(again.ok(), "ParseRowSpec rejects what RowSpecToJson wrote (%s): %s", written.dump().c_str(),
             again.error().ToString().c_str());
  FUZZ_CHECK(harness::RowSpecToJson(*again) == written, "row spec round trip changes %s", written.dump().c_str());
  (void)harness::DescribeRowSpec(*spec);
  if (spec->kind != "npy" && spec->vocab >= 1 && spec->vocab <= 4096 && spec->probs.size() <= 4096) {
    const Result<std::vector<float>> row = harness::MakeRow(*spec, seed);
    if (row.ok()) {
      FUZZ_CHECK(static_cast<int64_t>(row->size()) == spec->vocab || spec->kind == "dyadic",
                 "MakeRow(%s) gave %zu values", written.dump().c_str(), row->size());
    } else {
      CheckInputError(row.error(), "MakeRow");
    }
  }
}

void FuzzParams(const nlohmann::json& json) {
  const Result<SamplingParams> params = harness::ParseParams(json);
  if (!params.ok()) {
    CheckInputError(params.error(), "ParseParams");
    return;
  }
  const nlohmann::json written = harness::ParamsToJson(*params, true);
  const Result<SamplingParams> again = harness::ParseParams(written);
  FUZZ_CHECK(again.ok(), "ParseParams rejects what ParamsToJson wrote (%s)", written.dump().c_str());
  FUZZ_CHECK(harness::ParamsToJson(*again, true) == written, "params round trip changes %s", written.dump().c_str());
}

}  // namespace
}  // namespace samplecheck::fuzz

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace samplecheck::fuzz;
  if (size == 0) return 0;
  const uint8_t selector = data[0];
  const std::string text(reinterpret_cast<const char*>(data + 1), size - 1);
  if (selector & 1) {
    FuzzNpy(text);
    return 0;
  }
  const nlohmann::json json = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (json.is_discarded()) return 0;
  // Every parser sees every document, and the first members of a top-level object or array once more (a row spec
  // or params nested in a suite case reach their parsers directly).
  FuzzSuite(json);
  FuzzReport(json);
  FuzzRowSpec(json, selector);
  FuzzParams(json);
  if (json.is_structured()) {
    int n = 0;
    for (const auto& member : json) {
      if (++n > 4) break;
      FuzzRowSpec(member, selector);
      FuzzParams(member);
      if (member.is_object() && member.contains("row")) FuzzRowSpec(member["row"], selector);
      if (member.is_object() && member.contains("params")) FuzzParams(member["params"]);
    }
  }
  return 0;
}
