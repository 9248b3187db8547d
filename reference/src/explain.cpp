// Text explanations of the reference (explain.h): one row under one profile, or every profile side by side.
#include "samplecheck/reference/explain.h"

#include <algorithm>
#include <cmath>
#include <iomanip>
#include <sstream>

#include "samplecheck/core/format.h"

namespace samplecheck {

std::string ExplainNumber(long double value, int digits) {
  return FormatSignificant(static_cast<double>(value), digits);
}

namespace {

const char* FilterName(Filter f) {
  switch (f) {
    case Filter::kMinP: return "min-p";
    case Filter::kTopK: return "top-k";
    case Filter::kTopP: return "top-p";
  }
  return "?";
}

}  // namespace

std::string ExplainDistribution(const std::vector<float>& row, const SamplingParams& params, const Profile& profile,
                                const ProcessedDistribution& dist, int64_t max_tokens) {
  std::ostringstream os;
  os << "profile " << profile.name << ": " << profile.summary << "\n"
            << "  source: " << profile.source << "\n"
            << "row: vocab " << row.size() << "; temperature " << params.temperature << ", top_k " << params.top_k
            << ", top_p " << params.top_p << ", min_p " << params.min_p << "\n";
  os << (dist.greedy ? "greedy (the profile's greedy path): " : "") << "kept " << dist.kept.size() << " of "
            << row.size() << " tokens\n";
  std::vector<size_t> by_prob(dist.kept.size());
  for (size_t i = 0; i < by_prob.size(); ++i) by_prob[i] = i;
  std::stable_sort(by_prob.begin(), by_prob.end(), [&](size_t a, size_t b) { return dist.prob[a] > dist.prob[b]; });
  os << "  " << std::left << std::setw(10) << "token" << std::setw(16) << "logit" << std::setw(24)
            << "probability" << "ambiguous\n";
  const size_t shown = std::min<size_t>(by_prob.size(), static_cast<size_t>(std::max<int64_t>(0, max_tokens)));
  for (size_t n = 0; n < shown; ++n) {
    const size_t i = by_prob[n];
    os << "  " << std::setw(10) << dist.kept[i] << std::setw(16) << ExplainNumber(row[dist.kept[i]], 8) << std::setw(24)
              << ExplainNumber(dist.prob[i], 17) << (dist.IsAmbiguous(dist.kept[i]) ? "yes" : "") << "\n";
  }
  if (shown < by_prob.size()) os << "  ... " << by_prob.size() - shown << " more (--max-tokens)\n";
  if (!dist.boundary.empty()) {
    os << "boundary decisions (margin: distance to flipping in fp32 ulps of the compared quantity; ambiguous "
              << "below the allowed margin: " << kAmbiguousMarginUlps << ", or the profile's numerics model):\n";
    os << "  " << std::setw(10) << "token" << std::setw(8) << "filter" << std::setw(10) << "decision"
              << std::setw(16) << "margin_ulps" << "allowed_ulps\n";
    size_t printed = 0;
    for (const Decision& d : dist.boundary) {
      if (static_cast<int64_t>(printed++) >= max_tokens) {
        os << "  ... " << dist.boundary.size() - printed + 1 << " more\n";
        break;
      }
      os << "  " << std::setw(10) << d.token << std::setw(8) << FilterName(d.filter) << std::setw(10)
                << (d.kept ? "kept" : "dropped") << std::setw(16) << ExplainNumber(d.margin_ulps, 6) << ExplainNumber(d.allowed_ulps, 6)
                << "\n";
    }
  }
  os << "ambiguous tokens: " << dist.ambiguous.size();
  for (size_t i = 0; i < dist.ambiguous.size() && static_cast<int64_t>(i) < max_tokens; ++i) {
    os << (i ? ", " : " (") << dist.ambiguous[i];
  }
  if (!dist.ambiguous.empty()) os << (static_cast<int64_t>(dist.ambiguous.size()) > max_tokens ? ", ...)" : ")");
  os << "\n";
  if (!dist.numeric_drift.empty()) {
    os << "of which numeric boundary drift (inside the profile's fp32 numerics model only): "
       << dist.numeric_drift.size() << "\n";
  }
  return os.str();
}

std::string DescribeTokenDrop(const TokenDrop& d, const SamplingParams& params) {
  const auto number = [](double v) { return FormatSignificant(v, 3); };
  switch (d.stage) {
    case DropStage::kKept: return "kept";
    case DropStage::kNoWeight:
      return "no filter drops it: its weight is 0 before them (a -inf logit, or underflow at temperature " +
             FormatSignificant(params.temperature) + ")";
    case DropStage::kGreedy: return "the greedy path keeps token " + std::to_string(d.greedy_token) + " alone";
    case DropStage::kMinP:
      return "min-p drops it: p / p_max = " + number(d.ratio_to_max) + " < min_p " + FormatSignificant(params.min_p);
    case DropStage::kTopK:
      return "top-k " + std::to_string(params.top_k) + " drops it (rank " + std::to_string(d.rank) +
             (d.top_k_tied ? ", tied with rank " + std::to_string(params.top_k) + " and trimmed by id)" : ")");
    case DropStage::kTopP:
      if (d.top_p_tie_cut) {
        return "top-p drops it: its tie group is cut by position (the mass ahead of it is " + number(d.mass_ahead) +
               (d.top_p_strict ? " < " : " <= ") + "top_p " + FormatSignificant(params.top_p) + ")";
      }
      return "top-p drops it: the mass ahead of it is " + number(d.mass_ahead) + (d.top_p_strict ? " >= " : " > ") +
             "top_p " + FormatSignificant(params.top_p);
    case DropStage::kNoMass: return "every filter keeps it, but it is drawn with no mass";
  }
  return "?";
}

long double TotalVariationBetween(const ProcessedDistribution& a, const ProcessedDistribution& b) {
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

std::string CompareProfiles(const std::vector<float>& row, const SamplingParams& params, const Profile& anchor,
                            const ReferenceOptions& ref, int64_t max_tokens) {
  std::ostringstream os;
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
  os << "row: vocab " << row.size() << "; temperature " << params.temperature << ", top_k " << params.top_k
            << ", top_p " << params.top_p << ", min_p " << params.min_p << "\n";
  os << std::left << std::setw(24) << "profile" << std::setw(8) << "kept" << std::setw(11) << "ambiguous"
            << std::setw(18) << ("TV vs " + std::string(anchor.name)) << "greedy\n";
  for (const Entry& e : entries) {
    os << std::setw(24) << e.profile->name;
    if (!e.dist.ok()) {
      os << e.dist.error().message << "\n";
      continue;
    }
    os << std::setw(8) << e.dist->kept.size() << std::setw(11) << e.dist->ambiguous.size() << std::setw(18)
              << (base ? ExplainNumber(TotalVariationBetween(*base, *e.dist), 6) : "-") << (e.dist->greedy ? "yes" : "") << "\n";
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
  os << "\ntokens kept by some profiles and not others: " << disputed.size() << "\n";
  if (disputed.empty()) return os.str();
  os << std::setw(10) << "token" << std::setw(14) << "logit";
  for (const Entry& e : entries) {
    if (e.dist.ok()) os << std::setw(std::max<int>(12, static_cast<int>(e.profile->name.size()) + 2)) << e.profile->name;
  }
  os << "\n";
  for (size_t n = 0; n < disputed.size() && static_cast<int64_t>(n) < max_tokens; ++n) {
    const int32_t t = disputed[n];
    os << std::setw(10) << t << std::setw(14) << ExplainNumber(row[t], 7);
    for (const Entry& e : entries) {
      if (!e.dist.ok()) continue;
      const int width = std::max<int>(12, static_cast<int>(e.profile->name.size()) + 2);
      std::string cell = e.dist->IsKept(t) ? ExplainNumber(e.dist->Prob(t), 5) : "-";
      if (e.dist->IsAmbiguous(t)) cell += "*";
      os << std::setw(width) << cell;
    }
    os << "\n";
  }
  if (static_cast<int64_t>(disputed.size()) > max_tokens) os << "... (--max-tokens)\n";
  os << "(probability where kept, - where dropped, * ambiguous)\n";
  return os.str();
}

}  // namespace samplecheck
