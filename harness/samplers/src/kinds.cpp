// The functions over any kinds table (kinds.h): the spec grammar, the help text and the errors, worded once.
#include "samplecheck/samplers/kinds.h"

#include <string>
#include <utility>

namespace samplecheck::harness {

KindSpec SplitKindSpec(std::string_view text) {
  const size_t colon = text.find(':');
  KindSpec spec;
  spec.text = text;
  spec.kind = text.substr(0, colon);
  spec.has_arg = colon != std::string_view::npos;
  spec.arg = spec.has_arg ? text.substr(colon + 1) : std::string_view();
  return spec;
}

bool CudaBuiltIn() {
#ifdef SAMPLECHECK_HAVE_CUDA
  return true;
#else
  return false;
#endif
}

std::string CudaKindSummary(std::string summary) {
  if (CudaBuiltIn()) return summary;
  return std::move(summary) +
         "; this samplecheck was built without CUDA (configure with -DSAMPLECHECK_CUDA=ON on a machine with nvcc)";
}

std::string KindUsages(const KindInfos& kinds, bool only_available) {
  std::string usages;
  for (const KindInfo* kind : kinds) {
    if (only_available && !kind->available) continue;
    usages += (usages.empty() ? "" : ", ") + kind->usage;
  }
  return usages;
}

std::string KindSpecHelp(std::string_view what, const KindInfos& kinds) {
  return std::string(what) + " spec: " + KindUsages(kinds);
}

Error MalformedKindSpec(std::string_view what, std::string_view spec, std::string_view why, const KindInfos& kinds) {
  return InvalidArgument("malformed " + std::string(what) + " spec '" + std::string(spec) + "': " + std::string(why) +
                         "; known kinds: " + KindUsages(kinds));
}

Result<size_t> FindKindIndex(std::string_view what, const KindSpec& spec, const KindInfos& kinds) {
  if (spec.text.empty()) return MalformedKindSpec(what, spec.text, "the spec is empty", kinds);
  for (size_t i = 0; i < kinds.size(); ++i) {
    if (kinds[i]->name == spec.kind) return i;
  }
  return InvalidArgument("unknown " + std::string(what) + " kind '" + std::string(spec.kind) + "' in spec '" +
                         std::string(spec.text) + "'; known kinds: " + KindUsages(kinds));
}

Error KindNotBuiltIn(std::string_view what, const KindSpec& spec, const KindInfo& kind, const KindInfos& kinds) {
  return Unsupported(std::string(what) + " kind '" + kind.name + "' in spec '" + std::string(spec.text) +
                     "' is not built into this program: " + kind.summary +
                     "; built-in kinds: " + KindUsages(kinds, true));
}

}  // namespace samplecheck::harness
