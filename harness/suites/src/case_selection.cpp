// --case NAME: the selected cases of a suite (case_selection.h).
#include "samplecheck/suites/case_selection.h"

#include <algorithm>
#include <numeric>

namespace samplecheck::harness {
namespace {

size_t EditDistance(const std::string& a, const std::string& b) {
  std::vector<size_t> previous(b.size() + 1), current(b.size() + 1);
  std::iota(previous.begin(), previous.end(), size_t{0});
  for (size_t i = 1; i <= a.size(); ++i) {
    current[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      current[j] = std::min({previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1)});
    }
    std::swap(previous, current);
  }
  return previous[b.size()];
}

std::string Join(const std::vector<std::string>& names) {
  std::string s;
  for (const std::string& n : names) s += (s.empty() ? "" : ", ") + n;
  return s;
}

}  // namespace

Result<std::vector<std::string>> ParseCaseNames(const std::vector<std::string>& given) {
  std::vector<std::string> names;
  for (const std::string& text : given) {
    size_t start = 0;
    while (start <= text.size()) {
      const size_t comma = std::min(text.find(',', start), text.size());
      std::string name = text.substr(start, comma - start);
      if (name.empty()) {
        return InvalidArgument("--case '" + text + "' holds an empty name: give case names separated by commas");
      }
      if (std::find(names.begin(), names.end(), name) == names.end()) names.push_back(std::move(name));
      start = comma + 1;
    }
  }
  return names;
}

bool EntrySelected(const std::vector<std::string>& selection, const std::string& entry) {
  if (selection.empty()) return true;
  // "a/b" is below "a": a batch's row below its batch, an expanded case ("c/r0/p1") below its suite entry.
  const auto below = [](const std::string& inner, const std::string& outer) {
    return inner.size() > outer.size() && inner.compare(0, outer.size(), outer) == 0 && inner[outer.size()] == '/';
  };
  return std::any_of(selection.begin(), selection.end(), [&](const std::string& name) {
    return name == entry || below(name, entry) || below(entry, name);
  });
}

Status CheckSelection(const std::vector<std::string>& selection, const std::vector<std::string>& entries,
                      const std::string& suite) {
  for (const std::string& name : selection) {
    const bool found =
        std::any_of(entries.begin(), entries.end(), [&](const std::string& e) { return EntrySelected({name}, e); });
    if (found) continue;
    return InvalidArgument("--case " + name + ": suite " + suite +
                           " has no case of that name (nearest: " + Join(NearestNames(name, entries)) +
                           "; samplecheck explain --suite " + suite + " lists them)");
  }
  return Status::Ok();
}

std::vector<std::string> NearestNames(const std::string& name, const std::vector<std::string>& candidates,
                                      size_t limit) {
  std::vector<std::pair<size_t, size_t>> scored;  // distance, index
  for (size_t i = 0; i < candidates.size(); ++i) scored.emplace_back(EditDistance(name, candidates[i]), i);
  std::stable_sort(scored.begin(), scored.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  std::vector<std::string> out;
  for (size_t k = 0; k < scored.size() && out.size() < limit; ++k) out.push_back(candidates[scored[k].second]);
  return out;
}

}  // namespace samplecheck::harness
