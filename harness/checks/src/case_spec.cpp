#include "samplecheck/checks/case_spec.h"

#include <nlohmann/json.hpp>

#include "samplecheck/core/format.h"
#include "samplecheck/core/splitmix.h"
#include "samplecheck/suites/json_text.h"
#include "samplecheck/suites/row_source.h"
#include "samplecheck/suites/suite.h"

namespace samplecheck::harness {
namespace {

using nlohmann::json;

json BatchJson(const BatchPosition& b) { return {b.batch, b.position, b.size, b.entry, b.copy, b.partner}; }

}  // namespace

uint64_t CaseSpecHash(const CaseResult& c) {
  const json spec{{"name", c.name},
                  {"row", RowSpecToJson(c.row)},
                  {"row_seed", c.row_seed},
                  {"profile", c.profile},
                  {"params", ParamsToJson(c.params, true)},
                  {"batch", BatchJson(c.batch)}};
  return Fnv1a64(JsonText(spec, -1));  // over the canonical text (keys sorted)
}

std::string CaseSpecDifference(const CaseResult& stored, const CaseResult& planned) {
  if (stored.name != planned.name) return "its name (" + stored.name + ", planned " + planned.name + ")";
  if (RowSpecToJson(stored.row) != RowSpecToJson(planned.row)) {
    return "its row (" + JsonText(RowSpecToJson(stored.row), -1) + ", planned " +
           JsonText(RowSpecToJson(planned.row), -1) + ")";
  }
  if (stored.row_seed != planned.row_seed) {
    return "its row seed (" + std::to_string(stored.row_seed) + ", planned " + std::to_string(planned.row_seed) + ")";
  }
  if (ParamsToJson(stored.params, true) != ParamsToJson(planned.params, true)) {
    return "its parameters (" + JsonText(ParamsToJson(stored.params, true), -1) + ", planned " +
           JsonText(ParamsToJson(planned.params, true), -1) + ")";
  }
  if (stored.profile != planned.profile) return "its profile (" + stored.profile + ", planned " + planned.profile + ")";
  if (BatchJson(stored.batch) != BatchJson(planned.batch)) return "its place in a batch";
  return "";
}

std::string DescribeCaseRow(const CaseResult& c) {
  // The batch's name quoted: a batch case named "batch" read "batch batch row 4 of 12".
  std::string s = c.batch.size > 0 ? "row " + std::to_string(c.batch.position) + " of " + std::to_string(c.batch.size) +
                                         " of batch '" + c.batch.batch + "', "
                                   : "row ";
  s += DescribeRowSpec(c.row) + "; T " + FormatSignificant(c.params.temperature) + ", top_k " +
       std::to_string(c.params.top_k) + ", top_p " + FormatSignificant(c.params.top_p) + ", min_p " +
       FormatSignificant(c.params.min_p);
  return s;
}

}  // namespace samplecheck::harness
