// samplecheck explain: the reference's processed distribution of one row, with margins and ambiguous tokens;
// --all-profiles shows where the semantics profiles disagree on that row.
//
//   samplecheck explain --logits "1.0,2.0,-inf" --top-p 0.9 --profile vllm
//   samplecheck explain --logits-file row.npy --row 3 --top-k 50 --all-profiles
#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <iomanip>
#include <iostream>
#include <limits>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "command_registry.h"
#include "samplecheck/harness/row_source.h"
#include "samplecheck/reference/distribution.h"
#include "samplecheck/reference/profile.h"

namespace samplecheck::tools {
namespace {

struct ExplainOptions {
  std::string logits;
  std::string logits_file;
  int64_t row = 0;
  double temperature = 1.0;
  int64_t top_k = -1;
  double top_p = 1.0;
  double min_p = 0.0;
  std::string profile = "vllm";
  bool all_profiles = false;
  std::string ambiguous = "computed";
  int64_t max_tokens = 40;
};

std::string KnownProfiles() {
  std::string names;
  for (const Profile* p : AllProfiles()) names += (names.empty() ? "" : ", ") + std::string(p->name);
  return names;
}

// One value: a decimal number, inf, -inf (nan is parsed so that the reference reports the row as invalid).
Result<float> ParseLogit(const std::string& text, const std::string& where) {
  const char* begin = text.c_str();
  char* end = nullptr;
  errno = 0;
  const double value = std::strtod(begin, &end);
  if (end == begin || *end != '\0') {
    return Error{ErrorCode::kParse, where + ": '" + text + "' is not a number (allowed: decimal, inf, -inf)"};
  }
  if (std::isfinite(value) && std::fabs(value) > std::numeric_limits<float>::max()) {
    return Error{ErrorCode::kParse, where + ": " + text + " overflows fp32 (|logit| <= 3.4028235e38, or inf)"};
  }
  return static_cast<float>(value);
}

Result<std::vector<float>> ParseList(const std::string& text, const std::string& what) {
  std::vector<float> values;
  std::string token;
  std::istringstream in(text);
  int64_t index = 0;
  auto flush = [&]() -> Status {
    if (token.empty()) return Status::Ok();
    Result<float> value = ParseLogit(token, what + " value " + std::to_string(index));
    if (!value.ok()) return value.status();
    values.push_back(*value);
    ++index;
    token.clear();
    return Status::Ok();
  };
  for (char c : text) {
    if (c == ',' || c == ' ' || c == '\n' || c == '\t' || c == '\r' || c == ';') {
      if (Status s = flush(); !s.ok()) return s.error();
    } else {
      token.push_back(c);
    }
  }
  if (Status s = flush(); !s.ok()) return s.error();
  if (values.empty()) return Error{ErrorCode::kParse, what + " has no values"};
  return values;
}

Result<std::vector<float>> LoadRow(const ExplainOptions& o) {
  if (o.logits.empty() == o.logits_file.empty()) {
    return InvalidArgument("give exactly one of --logits \"v0,v1,...\" or --logits-file <path (.npy or text)>");
  }
  if (!o.logits.empty()) return ParseList(o.logits, "--logits");
  const std::string& path = o.logits_file;
  if (path.size() >= 4 && path.substr(path.size() - 4) == ".npy") {
    Result<harness::NpyArray> array = harness::LoadNpy(path);
    if (!array.ok()) return array.error();
    if (o.row < 0 || o.row >= array->rows()) {
      return InvalidArgument("--row " + std::to_string(o.row) + " is outside [0, " + std::to_string(array->rows()) +
                             ") for " + path);
    }
    const auto first = array->data.begin() + o.row * array->cols();
    return std::vector<float>(first, first + array->cols());
  }
  std::ifstream in(path);
  if (!in) return Error{ErrorCode::kIo, "cannot read --logits-file " + path};
  std::stringstream text;
  text << in.rdbuf();
  return ParseList(text.str(), path);
}

std::string Num(long double value, int digits = 10) {
  std::ostringstream out;
  out << std::setprecision(digits) << static_cast<double>(value);
  return out.str();
}

const char* FilterName(Filter f) {
  switch (f) {
    case Filter::kMinP: return "min-p";
    case Filter::kTopK: return "top-k";
    case Filter::kTopP: return "top-p";
  }
  return "?";
}

void PrintOne(const std::vector<float>& row, const SamplingParams& params, const Profile& profile,
              const ProcessedDistribution& dist, int64_t max_tokens) {
  std::cout << "profile " << profile.name << ": " << profile.summary << "\n"
            << "  source: " << profile.source << "\n"
            << "row: vocab " << row.size() << "; temperature " << params.temperature << ", top_k " << params.top_k
            << ", top_p " << params.top_p << ", min_p " << params.min_p << "\n";
  std::cout << (dist.greedy ? "greedy (the profile's greedy path): " : "") << "kept " << dist.kept.size() << " of "
            << row.size() << " tokens\n";
  std::vector<size_t> by_prob(dist.kept.size());
  for (size_t i = 0; i < by_prob.size(); ++i) by_prob[i] = i;
  std::stable_sort(by_prob.begin(), by_prob.end(), [&](size_t a, size_t b) { return dist.prob[a] > dist.prob[b]; });
  std::cout << "  " << std::left << std::setw(10) << "token" << std::setw(16) << "logit" << std::setw(24)
            << "probability" << "ambiguous\n";
  const size_t shown = std::min<size_t>(by_prob.size(), static_cast<size_t>(std::max<int64_t>(0, max_tokens)));
  for (size_t n = 0; n < shown; ++n) {
    const size_t i = by_prob[n];
    std::cout << "  " << std::setw(10) << dist.kept[i] << std::setw(16) << Num(row[dist.kept[i]], 8) << std::setw(24)
              << Num(dist.prob[i], 17) << (dist.IsAmbiguous(dist.kept[i]) ? "yes" : "") << "\n";
  }
  if (shown < by_prob.size()) std::cout << "  ... " << by_prob.size() - shown << " more (--max-tokens)\n";
  if (!dist.boundary.empty()) {
    std::cout << "boundary decisions (margin: distance to flipping in fp32 ulps of the compared quantity; "
              << "ambiguous below " << kAmbiguousMarginUlps << "):\n";
    std::cout << "  " << std::setw(10) << "token" << std::setw(8) << "filter" << std::setw(10) << "decision"
              << "margin_ulps\n";
    size_t printed = 0;
    for (const Decision& d : dist.boundary) {
      if (static_cast<int64_t>(printed++) >= max_tokens) {
        std::cout << "  ... " << dist.boundary.size() - printed + 1 << " more\n";
        break;
      }
      std::cout << "  " << std::setw(10) << d.token << std::setw(8) << FilterName(d.filter) << std::setw(10)
                << (d.kept ? "kept" : "dropped") << Num(d.margin_ulps, 6) << "\n";
    }
  }
  std::cout << "ambiguous tokens: " << dist.ambiguous.size();
  for (size_t i = 0; i < dist.ambiguous.size() && static_cast<int64_t>(i) < max_tokens; ++i) {
    std::cout << (i ? ", " : " (") << dist.ambiguous[i];
  }
  if (!dist.ambiguous.empty()) std::cout << (static_cast<int64_t>(dist.ambiguous.size()) > max_tokens ? ", ...)" : ")");
  std::cout << "\n";
}

long double TotalVariation(const ProcessedDistribution& a, const ProcessedDistribution& b) {
  long double sum = 0;
  size_t i = 0, j = 0;
  while (i < a.kept.size() || j < b.kept.size()) {
    if (j == b.kept.size() || (i < a.kept.size() && a.kept[i] < b.kept[j])) {
      sum += a.prob[i++];
    } else if (i == a.kept.size() || b.kept[j] < a.kept[i]) {
      sum += b.prob[j++];
    } else {
      sum += std::fabs(a.prob[i++] - b.prob[j++]);
    }
  }
  return sum / 2;
}

int PrintAll(const std::vector<float>& row, const SamplingParams& params, const Profile& anchor,
             const ReferenceOptions& ref, int64_t max_tokens) {
  struct Entry {
    const Profile* profile;
    Result<ProcessedDistribution> dist;
  };
  std::vector<Entry> entries;
  for (const Profile* p : AllProfiles()) {
    entries.push_back({p, ComputeDistribution(LogitsView::Fp32(row), params, *p, ref)});
  }
  const ProcessedDistribution* base = nullptr;
  for (const Entry& e : entries) {
    if (e.profile == &anchor && e.dist.ok()) base = &*e.dist;
  }
  std::cout << "row: vocab " << row.size() << "; temperature " << params.temperature << ", top_k " << params.top_k
            << ", top_p " << params.top_p << ", min_p " << params.min_p << "\n";
  std::cout << std::left << std::setw(24) << "profile" << std::setw(8) << "kept" << std::setw(11) << "ambiguous"
            << std::setw(18) << ("TV vs " + std::string(anchor.name)) << "greedy\n";
  for (const Entry& e : entries) {
    std::cout << std::setw(24) << e.profile->name;
    if (!e.dist.ok()) {
      std::cout << e.dist.error().message << "\n";
      continue;
    }
    std::cout << std::setw(8) << e.dist->kept.size() << std::setw(11) << e.dist->ambiguous.size() << std::setw(18)
              << (base ? Num(TotalVariation(*base, *e.dist), 6) : "-") << (e.dist->greedy ? "yes" : "") << "\n";
  }
  // Tokens kept by some profiles and not by others.
  std::vector<int32_t> disputed;
  for (size_t t = 0; t < row.size(); ++t) {
    int kept = 0, valid = 0;
    for (const Entry& e : entries) {
      if (!e.dist.ok()) continue;
      ++valid;
      kept += e.dist->IsKept(static_cast<int32_t>(t)) ? 1 : 0;
    }
    if (kept != 0 && kept != valid) disputed.push_back(static_cast<int32_t>(t));
  }
  std::cout << "\ntokens kept by some profiles and not others: " << disputed.size() << "\n";
  if (disputed.empty()) return kExitOk;
  std::cout << std::setw(10) << "token" << std::setw(14) << "logit";
  for (const Entry& e : entries) {
    if (e.dist.ok()) std::cout << std::setw(std::max<int>(12, static_cast<int>(e.profile->name.size()) + 2)) << e.profile->name;
  }
  std::cout << "\n";
  for (size_t n = 0; n < disputed.size() && static_cast<int64_t>(n) < max_tokens; ++n) {
    const int32_t t = disputed[n];
    std::cout << std::setw(10) << t << std::setw(14) << Num(row[t], 7);
    for (const Entry& e : entries) {
      if (!e.dist.ok()) continue;
      const int width = std::max<int>(12, static_cast<int>(e.profile->name.size()) + 2);
      std::string cell = e.dist->IsKept(t) ? Num(e.dist->Prob(t), 5) : "-";
      if (e.dist->IsAmbiguous(t)) cell += "*";
      std::cout << std::setw(width) << cell;
    }
    std::cout << "\n";
  }
  if (static_cast<int64_t>(disputed.size()) > max_tokens) std::cout << "... (--max-tokens)\n";
  std::cout << "(probability where kept, - where dropped, * ambiguous)\n";
  return kExitOk;
}

int Explain(const ExplainOptions& o) {
  const Profile* profile = FindProfile(o.profile);
  if (profile == nullptr) {
    std::cerr << "samplecheck explain: --profile '" << o.profile << "' is unknown; allowed: " << KnownProfiles() << "\n";
    return kExitUsage;
  }
  ReferenceOptions ref;
  if (o.ambiguous == "computed") {
    ref.ambiguous = AmbiguousPolicy::kAsComputed;
  } else if (o.ambiguous == "in") {
    ref.ambiguous = AmbiguousPolicy::kAllIn;
  } else if (o.ambiguous == "out") {
    ref.ambiguous = AmbiguousPolicy::kAllOut;
  } else {
    std::cerr << "samplecheck explain: --ambiguous '" << o.ambiguous << "' is unknown; allowed: computed, in, out\n";
    return kExitUsage;
  }
  Result<std::vector<float>> row = LoadRow(o);
  if (!row.ok()) {
    std::cerr << "samplecheck explain: " << row.error().message << "\n";
    return kExitUsage;
  }
  SamplingParams params;
  params.temperature = o.temperature;
  params.top_k = o.top_k;
  params.top_p = o.top_p;
  params.min_p = o.min_p;
  if (o.all_profiles) return PrintAll(*row, params, *profile, ref, o.max_tokens);
  Result<ProcessedDistribution> dist = ComputeDistribution(LogitsView::Fp32(*row), params, *profile, ref);
  if (!dist.ok()) {
    std::cerr << "samplecheck explain: " << dist.error().ToString() << "\n";
    return kExitUsage;
  }
  PrintOne(*row, params, *profile, *dist, o.max_tokens);
  return kExitOk;
}

const bool registered = RegisterCommand(
    {"explain", "the reference distribution of one row: kept set, margins, ambiguous tokens", [](CLI::App& cmd) {
       auto o = std::make_shared<ExplainOptions>();
       cmd.add_option("--logits", o->logits, "inline logits, comma separated (inf, -inf allowed)");
       cmd.add_option("--logits-file", o->logits_file, ".npy (fp32/fp16, 1-D or 2-D) or text, one value per line");
       cmd.add_option("--row", o->row, "row of a 2-D .npy file")->capture_default_str();
       cmd.add_option("--temperature", o->temperature, "temperature")->capture_default_str();
       cmd.add_option("--top-k", o->top_k, "top-k (-1 or 0 disables, per profile)")->capture_default_str();
       cmd.add_option("--top-p", o->top_p, "top-p (1 disables)")->capture_default_str();
       cmd.add_option("--min-p", o->min_p, "min-p (0 disables)")->capture_default_str();
       cmd.add_option("--profile", o->profile, "semantics profile (samplecheck list --profiles)")->capture_default_str();
       cmd.add_flag("--all-profiles", o->all_profiles, "a table of every profile and the tokens they disagree on");
       cmd.add_option("--ambiguous", o->ambiguous, "ambiguous tokens: computed, in, out")->capture_default_str();
       cmd.add_option("--max-tokens", o->max_tokens, "rows printed per table")->capture_default_str();
       return [o]() { return Explain(*o); };
     }});

}  // namespace
}  // namespace samplecheck::tools
