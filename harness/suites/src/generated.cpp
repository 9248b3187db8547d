#include "samplecheck/suites/generated.h"
#include "samplecheck/core/splitmix.h"

#include <algorithm>
#include <cmath>
#include <utility>

#include "samplecheck/suites/row_source.h"
#include "splitmix_stream.h"

namespace samplecheck::harness {
namespace {

using Stream = SplitMixStream;  // the same on every platform

RowSpec GenerateRow(Stream& s) {
  RowSpec row;
  // V log-uniform in [1, 262144], with the small sizes where boundary rules bite weighted up.
  const double log_v = s.Chance(0.3) ? s.Between(0.0, std::log(64.0)) : s.Between(std::log(2.0), std::log(262144.0));
  row.vocab = std::max<int64_t>(1, static_cast<int64_t>(std::exp(log_v)));
  const uint64_t kind = s.Below(6);
  if (kind == 0) {
    row.kind = "gaussian";
    row.sigma = s.Between(0.3, 6.0);
  } else if (kind == 1) {
    row.kind = "zipf";
    row.exponent = s.Between(0.7, 1.8);
  } else if (kind == 2) {
    row.kind = "gumbel";
    row.scale = s.Between(0.5, 3.0);
  } else if (kind == 3) {
    row.kind = "near_flat";
    row.sigma = std::pow(10.0, s.Between(-4.0, -1.0));
  } else if (kind == 4) {
    row.kind = "tied";
    row.levels = std::clamp<int64_t>(static_cast<int64_t>(s.Between(1.0, 12.0)), 1, row.vocab);
    row.spacing = s.Between(0.1, 2.0);
  } else if (row.vocab >= 4096) {
    row.kind = "many_tail";
    row.head = std::clamp<int64_t>(static_cast<int64_t>(s.Between(2.0, 64.0)), 1, row.vocab - 1);
  } else {
    row.kind = "gaussian";
    row.sigma = s.Between(0.3, 6.0);
  }
  if (row.vocab > 1 && s.Chance(0.3)) row.mask_fraction = s.Between(0.05, 0.95);
  return row;
}

// Parameters with every filter and sentinel value alone and combined, and the corners no hand-picked case visits.
SamplingParams GenerateParams(Stream& s, int64_t vocab) {
  SamplingParams p;
  const double t = s.Uniform();
  p.temperature = t < 0.45 ? 1.0 : t < 0.85 ? s.Between(0.2, 2.5) : t < 0.93 ? 0.0 : s.Between(1e-4, 0.05);
  if (s.Chance(0.5)) {
    const uint64_t k = s.Below(5);
    // 0 and -1 are the sentinels; k >= V (the corner: a top-k that keeps everything) and k = 1.
    p.top_k = k == 0 ? 0 : k == 1 ? 1 : k == 2 ? vocab + static_cast<int64_t>(s.Below(3))
                                               : 1 + static_cast<int64_t>(s.Below(static_cast<uint64_t>(vocab)));
  }
  if (s.Chance(0.5)) {
    const uint64_t k = s.Below(4);
    p.top_p = k == 0 ? 1.0 : k == 1 ? s.Between(0.05, 0.99) : k == 2 ? 1e-6 : s.Between(0.9, 0.999999);
  }
  if (s.Chance(0.35)) p.min_p = s.Chance(0.2) ? 0.0 : std::pow(10.0, s.Between(-3.0, -0.3));
  return p;
}

}  // namespace

namespace {

constexpr std::pair<CaseOrigin, std::string_view> kOriginPrefixes[] = {
    {CaseOrigin::kGenerated, "gen/"},
    {CaseOrigin::kCommandLine, "cli-gen/"},
    {CaseOrigin::kCorner, "corner/"},
};

}  // namespace

std::string CaseName(CaseOrigin origin, std::string_view rest) {
  for (const auto& [o, prefix] : kOriginPrefixes) {
    if (o == origin) return std::string(prefix) + std::string(rest);
  }
  return std::string(rest);
}

CaseOrigin OriginOfCase(std::string_view name) {
  for (const auto& [origin, prefix] : kOriginPrefixes) {
    if (name.starts_with(prefix)) return origin;
  }
  return CaseOrigin::kSuite;
}

std::vector<CaseSpec> GenerateCases(uint64_t seed, size_t count, const Profile& profile, CaseOrigin origin) {
  std::vector<CaseSpec> cases;
  Stream s(SplitMix64(seed ^ 0x6E6E7261746564ULL));
  for (size_t i = 0; i < count; ++i) {
    CaseSpec cs;
    cs.name = CaseName(origin, std::to_string(i));
    cs.row = GenerateRow(s);
    // Redraw until the judged profile accepts the parameters (a generated case is judged, never skipped).
    for (int attempt = 0; attempt < 64; ++attempt) {
      cs.params = GenerateParams(s, cs.row.vocab);
      if (!ValidateParams(cs.params, profile)) break;
      cs.params = SamplingParams{};
    }
    cases.push_back(std::move(cs));
  }
  return cases;
}

}  // namespace samplecheck::harness
