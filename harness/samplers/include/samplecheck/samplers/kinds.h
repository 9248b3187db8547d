// The one shape of the kinds tables behind `--sampler`, `--verifier` and the replay sources (`--engine`,
// `--trainer`): one spec grammar, one table entry (Kind<Made, Context>) and one set of functions over any table, so
// the three say the same things the same way. The tables are SamplerKinds() (sampler_registry.h), VerifierKinds()
// (verifier.h) and ReplaySourceKinds() (replay_source.h); `samplecheck list`, the help texts and the errors are
// printed from them.
//
//   spec := kind [":" argument]     the kind is the text before the first ':'; the argument is the rest, which a
//                                   kind's factory parses (it may hold more ':')
//
// The errors (kInvalidArgument unless said), <what> being the table's "sampler", "verifier", "replay source":
//   unknown <what> kind '<kind>' in spec '<spec>'; known kinds: <usage>, <usage>, ...
//   malformed <what> spec '<spec>': <why>; known kinds: <usage>, <usage>, ...        (an empty spec; a factory's)
//   <what> kind '<kind>' in spec '<spec>' is not built into this program: <summary>; built-in kinds: <usage>, ...
//                                                                                    (kUnsupported)
// and the help text: "<what> spec: <usage>, <usage>, ...".
#pragma once

#include <cstddef>
#include <functional>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include "samplecheck/core/error.h"

namespace samplecheck::harness {

// A spec split at its first ':'.
struct KindSpec {
  std::string_view text;  // the whole spec
  std::string_view kind;  // before the first ':'
  std::string_view arg;   // after it ("" when there is none)
  bool has_arg = false;   // the spec has a ':'
};
KindSpec SplitKindSpec(std::string_view text);

// What a table entry says about its kind: what `list`, the help texts and the errors print.
struct KindInfo {
  std::string name;       // "exact"
  std::string usage;      // "exact[:profile]"; starts with the name
  std::string summary;    // one line; for a kind not available, why (CudaKindSummary)
  bool available = true;  // false: not built into this program (cuda without CUDA)
};

// One entry of a kinds table: its texts and its factory. Made is what the kind makes (std::unique_ptr<Sampler>),
// Context what the factory gets besides the spec (SamplerOptions, the judged profile). `make` is only called for an
// available kind (it may be empty for one that is not).
template <class Made, class Context>
struct Kind : KindInfo {
  std::function<Result<Made>(const KindSpec& spec, const Context& context)> make;
};

// Whether this program has CUDA (the kinds that need it are available exactly then), and the summary of such a
// kind: `summary` as given in a CUDA build, with why it is missing and how to build it in any other.
bool CudaBuiltIn();
std::string CudaKindSummary(std::string summary);

// The texts of a table's entries, in its order: what the functions below read.
using KindInfos = std::vector<const KindInfo*>;
template <class Entry>
KindInfos InfosOf(const std::vector<Entry>& table) {
  KindInfos infos;
  infos.reserve(table.size());
  for (const KindInfo& entry : table) infos.push_back(&entry);
  return infos;
}

// "exact[:profile], cuda[:profile], ...": every usage, or only those of the available kinds.
std::string KindUsages(const KindInfos& kinds, bool only_available = false);

// "<what> spec: exact[:profile], cuda[:profile], ...": the help text of an option that takes a spec.
std::string KindSpecHelp(std::string_view what, const KindInfos& kinds);

// kInvalidArgument "malformed <what> spec '<spec>': <why>; known kinds: ...": for factories.
Error MalformedKindSpec(std::string_view what, std::string_view spec, std::string_view why, const KindInfos& kinds);

// The index of the entry named by the spec's kind (available or not); kInvalidArgument for an empty spec
// (malformed) or an unknown kind.
Result<size_t> FindKindIndex(std::string_view what, const KindSpec& spec, const KindInfos& kinds);

// kUnsupported "<what> kind '<kind>' in spec '<spec>' is not built into this program: <summary>; built-in kinds:
// ...": the answer for an entry that is not available.
Error KindNotBuiltIn(std::string_view what, const KindSpec& spec, const KindInfo& kind, const KindInfos& kinds);

// The entry of a table the spec names (FindKindIndex's errors).
template <class Made, class Context>
Result<const Kind<Made, Context>*> FindKind(std::string_view what, const std::vector<Kind<Made, Context>>& table,
                                            std::string_view spec) {
  Result<size_t> index = FindKindIndex(what, SplitKindSpec(spec), InfosOf(table));
  if (!index.ok()) return index.error();
  return &table[*index];
}

// What the spec makes: its entry's factory, given the split spec and the context; FindKind's errors, and
// KindNotBuiltIn for a kind that is not available.
template <class Made, class Context>
Result<Made> MakeKind(std::string_view what, const std::vector<Kind<Made, Context>>& table, std::string_view spec,
                      const std::type_identity_t<Context>& context) {
  const KindSpec split = SplitKindSpec(spec);
  const KindInfos infos = InfosOf(table);
  Result<size_t> index = FindKindIndex(what, split, infos);
  if (!index.ok()) return index.error();
  const Kind<Made, Context>& kind = table[*index];
  if (!kind.available || !kind.make) return KindNotBuiltIn(what, split, kind, infos);
  return kind.make(split, context);
}

}  // namespace samplecheck::harness
