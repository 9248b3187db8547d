#include "samplecheck/properties/cases.h"

#include <cmath>
#include <cstdio>
#include <ostream>
#include <sstream>

namespace samplecheck::properties {
namespace {

std::string HexFloat(float value) {
  if (std::isnan(value)) return "nan";
  if (std::isinf(value)) return value > 0 ? "inf" : "-inf";
  char buffer[48];
  std::snprintf(buffer, sizeof(buffer), "%a", static_cast<double>(value));
  return buffer;
}

}  // namespace

std::string Describe(const SamplingParams& params) {
  std::ostringstream out;
  out.precision(17);
  out << "temperature=" << params.temperature << " top_k=" << params.top_k << " top_p=" << params.top_p
      << " min_p=" << params.min_p << " seed=" << params.seed << " offset=" << params.offset;
  return out.str();
}

std::string DescribeLogits(const std::vector<float>& logits) {
  std::string text = "[";
  for (size_t i = 0; i < logits.size(); ++i) {
    if (i > 0) text += ", ";
    text += HexFloat(logits[i]);
  }
  return text + "]";
}

void showValue(const Row& row, std::ostream& os) {
  os << "Row{kind=" << row.kind << " vocab=" << row.logits.size() << " logits=" << DescribeLogits(row.logits) << "}";
}

void showValue(const Params& params, std::ostream& os) { os << "Params{" << Describe(params) << "}"; }

void showValue(const Case& value, std::ostream& os) {
  os << "Case{";
  showValue(value.params, os);
  os << " ";
  showValue(value.row, os);
  os << "}";
}

}  // namespace samplecheck::properties
