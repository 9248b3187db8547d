// Properties of draws, through Sample / CountDraws only: they run against every sampler (exact, cuda, mutants,
// plugins, processes). Statistical ones state alpha (per generated case) and power next to their code; CI runs
// them with a fixed RapidCheck seed, so a CI verdict is reproducible.
#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <sstream>

#include "property_context.h"
#include "samplecheck/reference/params.h"
#include "samplecheck/properties/generators.h"
#include "samplecheck/stats/binning.h"
#include "samplecheck/stats/chi_square.h"
#include "samplecheck/stats/goodness_of_fit.h"

namespace samplecheck::properties {
namespace {

using harness::kInvalidToken;
using harness::RowBatch;

std::string Num(double value) { return FormatValue(value); }

// One Sample call over rows that share a vocab; fails the case when the call fails.
std::vector<int32_t> SampleRows(const Context& ctx, const std::vector<Row>& rows, const std::vector<Params>& params) {
  const int64_t vocab = rows.front().vocab();
  std::vector<float> logits;
  for (const Row& row : rows) logits.insert(logits.end(), row.logits.begin(), row.logits.end());
  std::vector<SamplingParams> plain(params.begin(), params.end());
  std::vector<int32_t> tokens(rows.size(), -2);
  const RowBatch batch{logits.data(), static_cast<int64_t>(rows.size()), vocab, vocab};
  const Status status = ctx.sampler->Sample(batch, plain, tokens);
  if (!status.ok()) {
    RC_FAIL("Sample failed on a batch of " + std::to_string(rows.size()) + " rows: " + status.error().ToString() +
            "; first row: " + CaseText(rows.front(), params.front()));
  }
  return tokens;
}

// The same row at offsets offset, offset + 1, ...: `count` draws in one call.
std::vector<int32_t> SampleSequence(const Context& ctx, const Row& row, Params params, int count) {
  std::vector<Row> rows(static_cast<size_t>(count), row);
  std::vector<Params> batch_params;
  for (int i = 0; i < count; ++i) {
    batch_params.push_back(params);
    ++params.offset;
  }
  return SampleRows(ctx, rows, batch_params);
}

// A row resized to `vocab` (truncated, or padded with dyadic logits cycled from the row itself).
Row Resized(Row row, int64_t vocab) {
  const size_t original = row.logits.size();
  row.logits.resize(static_cast<size_t>(vocab));
  for (size_t i = original; i < row.logits.size(); ++i) row.logits[i] = static_cast<float>(static_cast<int>(i % 17) - 8) / 4.0f;
  if (std::all_of(row.logits.begin(), row.logits.end(), [](float x) { return x == -std::numeric_limits<float>::infinity(); })) {
    row.logits[0] = 0.0f;
  }
  return row;
}

// ---------------------------------------------------------------------------------------------------------------

// Support containment: for any row and any parameters, 16 draws at consecutive offsets. Invalid parameters fail
// the call (kInvalidArgument) before anything is drawn; an unsamplable row (NaN, all -inf) gives kInvalidToken on
// every draw, never token 0; every other draw lies in the profile's kept set (ambiguous tokens allowed).
void SupportContainment(const Context& ctx) {
  const Row row = *gen::AnyRow();
  const Params params = *gen::AnyParams(row.vocab());
  constexpr int kDraws = 16;
  std::vector<SamplingParams> batch_params;
  std::vector<float> logits;
  for (int i = 0; i < kDraws; ++i) {
    SamplingParams p = params;
    p.offset = params.offset + static_cast<uint64_t>(i);
    batch_params.push_back(p);
    logits.insert(logits.end(), row.logits.begin(), row.logits.end());
  }
  std::vector<int32_t> tokens(kDraws, -2);
  const Status status = ctx.sampler->Sample(RowBatch{logits.data(), kDraws, row.vocab(), row.vocab()}, batch_params, tokens);
  const auto invalid = ValidateParams(params, *ctx.profile);
  if (invalid) {
    if (status.ok() || status.error().code != ErrorCode::kInvalidArgument) {
      RC_FAIL("invalid parameters (" + invalid->message + ") were not rejected with kInvalidArgument: " +
              (status.ok() ? std::string("the call succeeded") : status.error().ToString()));
    }
    RC_TAG("invalid params");
    return;
  }
  if (!status.ok()) RC_FAIL("Sample failed on valid parameters: " + status.error().ToString());
  ReferenceOptions options;
  options.ambiguous = AmbiguousPolicy::kAllIn;
  const auto reference = ComputeDistribution(LogitsView::Fp32(row.logits), params, *ctx.profile, options);
  for (int i = 0; i < kDraws; ++i) {
    const int32_t token = tokens[static_cast<size_t>(i)];
    const std::string where = "draw at offset " + std::to_string(batch_params[static_cast<size_t>(i)].offset);
    if (!reference.ok()) {
      if (token != kInvalidToken) {
        RC_FAIL(where + " returned token " + std::to_string(token) + " for an unsamplable row (" +
                reference.error().message + "); expected kInvalidToken");
      }
      continue;
    }
    if (token < 0 || token >= row.vocab()) {
      RC_FAIL(where + " returned token " + std::to_string(token) + ", outside [0, " + std::to_string(row.vocab()) + ")");
    }
    if (!reference->IsKept(token)) {
      RC_FAIL(where + " returned token " + std::to_string(token) + " (logit " + Num(row.logits[static_cast<size_t>(token)]) +
              "), outside profile " + std::string(ctx.profile->name) + "'s kept set of " +
              std::to_string(reference->kept.size()) + " tokens");
    }
  }
  RC_CLASSIFY(!reference.ok(), "unsamplable row");
}

// Tied tokens are drawn equally often: a tie group at the maximum, kept whole; Pearson X^2 of the counts inside
// the group against uniform, dof = g - 1.
//   alpha = 1e-6 per case (the group counts are multinomial given their total: exact conditioning, no nuisance).
//   power: >= 300 expected draws per tied token; against "all mass on the lowest id" X^2 = N (g - 1) >= 300, ~1.0;
//          against a 2:1 split of a pair, noncentrality 300 * 2 * (1/6)^2 / (1/2) * 2 = 67 vs critical 23.9: ~0.999.
//   assumption: independent draws (distinct offsets); expected count per cell >= 300 (>> 10).
void TiesDrawnEqually(const Context& ctx) {
  const Row row = *gen::TopTiesRow();
  Params params;
  params.temperature = *gen::PowerOfTwoTemperature(*ctx.profile);
  const int64_t beyond = row.vocab() + 1 < TopKEnd(*ctx.profile, row.vocab()) ? row.vocab() + 1 : 8;
  params.top_k = *rc::gen::element<int64_t>(NoTopK(*ctx.profile, row.vocab()), beyond, 8);
  params.top_p = *rc::gen::element(1.0, 0.99, 0.95);
  params.min_p = gen::MinPHeldAtZero() ? 0.0 : *rc::gen::element(0.0, 0.5);
  params.seed = *gen::Seed();
  params.offset = *rc::gen::inRange<uint64_t>(0, uint64_t{1} << 62);
  params = gen::MakeValid(params, *ctx.profile);
  const auto reference = Reference(ctx, row, params);
  float top = -std::numeric_limits<float>::infinity();
  for (float x : row.logits) top = std::max(top, x);
  std::vector<int32_t> group;
  long double group_mass = 0;
  for (int32_t t = 0; t < static_cast<int32_t>(row.logits.size()); ++t) {
    if (row.logits[static_cast<size_t>(t)] != top) continue;
    if (!reference.IsKept(t) || reference.IsAmbiguous(t)) {
      group.clear();
      break;
    }
    group.push_back(t);
    group_mass += reference.Prob(t);
  }
  // The truncated CDF (TensorRT-LLM legacy) gives the crossing token, the last kept one by rank (logit descending,
  // id ascending), top_p - mass above: by the profile's own rule it is not drawn like its tied peers.
  if (ctx.profile->top_p_mass == TopPMass::kTruncatedCdf && params.top_p < 1.0 && !reference.greedy) {
    int32_t crossing = reference.kept.front();
    for (int32_t t : reference.kept) {
      const float x = row.logits[static_cast<size_t>(t)], y = row.logits[static_cast<size_t>(crossing)];
      if (x < y || (x == y && t > crossing)) crossing = t;
    }
    if (!group.empty() && group.back() == crossing) {
      group_mass -= reference.Prob(crossing);
      group.pop_back();
    }
  }
  RC_PRE(group.size() >= 2 && !reference.greedy);
  const double g = static_cast<double>(group.size());
  const uint64_t draws = std::min<uint64_t>(200000, static_cast<uint64_t>(std::ceil(300.0 * g / static_cast<double>(group_mass))));
  std::vector<uint64_t> histogram(static_cast<size_t>(row.vocab()), 0);
  uint64_t invalid = 0;
  const Status status = ctx.sampler->CountDraws(row.logits, params, draws, histogram, &invalid);
  if (!status.ok()) RC_FAIL("CountDraws failed: " + status.error().ToString());
  if (invalid > 0) RC_FAIL(std::to_string(invalid) + " of " + std::to_string(draws) + " draws were invalid");
  uint64_t in_group = 0;
  for (int32_t t : group) in_group += histogram[static_cast<size_t>(t)];
  RC_PRE(in_group >= static_cast<uint64_t>(20 * g));
  const double expected = static_cast<double>(in_group) / g;
  double x2 = 0;
  std::string counts;
  for (int32_t t : group) {
    const double d = static_cast<double>(histogram[static_cast<size_t>(t)]) - expected;
    x2 += d * d / expected;
    counts += (counts.empty() ? "" : ", ") + std::to_string(t) + ":" + std::to_string(histogram[static_cast<size_t>(t)]);
  }
  constexpr double kAlpha = 1e-6;
  const auto p_value = stats::ChiSquarePValue(x2, group.size() - 1);
  if (!p_value.ok()) RC_FAIL("chi-square p-value: " + p_value.error().message);
  if (*p_value < kAlpha) {
    RC_FAIL("tied tokens are not drawn equally often: counts {" + counts + "} of " + std::to_string(draws) +
            " draws, X^2 = " + Num(x2) + " (dof " + std::to_string(group.size() - 1) + "), p = " + Num(*p_value) +
            " < alpha = 1e-6");
  }
}

// Seeded determinism: the same batch (8 rows, mixed parameters, their own seeds and offsets) sampled twice, with
// an unrelated call in between, gives the same tokens.
void SeededDeterminism(const Context& ctx) {
  const Row first = *gen::ValidRow();
  std::vector<Row> rows;
  std::vector<Params> params;
  for (int r = 0; r < 8; ++r) {
    rows.push_back(r == 0 ? first : Resized(*gen::ValidRow(), first.vocab()));
    params.push_back(*gen::ValidParams(first.vocab(), *ctx.profile));
  }
  const auto once = SampleRows(ctx, rows, params);
  const Row other = Resized(*gen::ValidRow(), first.vocab());
  SampleRows(ctx, {other}, {*gen::ValidParams(first.vocab(), *ctx.profile)});
  const auto twice = SampleRows(ctx, rows, params);
  for (size_t r = 0; r < rows.size(); ++r) {
    if (once[r] != twice[r]) {
      RC_FAIL("row " + std::to_string(r) + " gave token " + std::to_string(once[r]) + " then " + std::to_string(twice[r]) +
              " for the same (seed, offset): " + CaseText(rows[r], params[r]));
    }
  }
}

// Batch invariance: a row drawn alone (a batch of one) and at position j of a batch of 8 (other rows with their own
// parameters, seeds and offsets) gives the same token for each of 16 (seed, offset) pairs.
void BatchInvariance(const Context& ctx) {
  const Row target = *gen::ValidRow();
  const int64_t vocab = target.vocab();
  Params params = *gen::ValidParams(vocab, *ctx.profile);
  const int position = *rc::gen::inRange(0, 8);
  std::vector<Row> rows;
  std::vector<Params> others;
  for (int r = 0; r < 8; ++r) {
    rows.push_back(Resized(*gen::ValidRow(), vocab));
    others.push_back(*gen::ValidParams(vocab, *ctx.profile));
  }
  rows[static_cast<size_t>(position)] = target;
  for (int i = 0; i < 16; ++i) {
    Params p = params;
    p.offset = params.offset + static_cast<uint64_t>(i);
    others[static_cast<size_t>(position)] = p;
    const int32_t alone = SampleRows(ctx, {target}, {p})[0];
    const int32_t batched = SampleRows(ctx, rows, others)[static_cast<size_t>(position)];
    if (alone != batched) {
      RC_FAIL("draw at offset " + std::to_string(p.offset) + ": token " + std::to_string(alone) + " alone, " +
              std::to_string(batched) + " at position " + std::to_string(position) + " of a batch of 8: " +
              CaseText(target, p));
    }
    for (auto& other : others) ++other.offset;
  }
}

// Paired seeds across semantic no-ops: the disabled encodings of top_k (-1, 0, V, V + 1, 2^40) give the same
// token for the same (seed, offset) over 32 draws.
void PairedSeedNoOps(const Context& ctx) {
  const Case c = *gen::AnyValidCase(*ctx.profile);
  const auto encodings = DisabledTopK(*ctx.profile, c.row.vocab());
  Params base = c.params;
  base.top_k = encodings.front();
  const auto expected = SampleSequence(ctx, c.row, base, 32);
  for (int64_t k : encodings) {
    Params variant = base;
    variant.top_k = k;
    const auto got = SampleSequence(ctx, c.row, variant, 32);
    for (size_t i = 0; i < got.size(); ++i) {
      if (got[i] != expected[i]) {
        RC_FAIL("top_k = " + std::to_string(k) + " and top_k = " + std::to_string(base.top_k) +
                " (both disabled) drew tokens " + std::to_string(got[i]) + " and " + std::to_string(expected[i]) +
                " at offset " + std::to_string(base.offset + i) + ": " + CaseText(c.row, base));
      }
    }
  }
}

// Windows of `width` consecutive draws.
std::vector<std::vector<int32_t>> Windows(const std::vector<int32_t>& tokens, size_t width) {
  std::vector<std::vector<int32_t>> windows;
  for (size_t i = 0; i + width <= tokens.size(); ++i) windows.emplace_back(tokens.begin() + i, tokens.begin() + i + width);
  return windows;
}

double LagOneCorrelation(const std::vector<int32_t>& tokens) {
  const size_t n = tokens.size() - 1;
  double mx = 0, my = 0;
  for (size_t i = 0; i < n; ++i) {
    mx += tokens[i];
    my += tokens[i + 1];
  }
  mx /= n;
  my /= n;
  double sxy = 0, sxx = 0, syy = 0;
  for (size_t i = 0; i < n; ++i) {
    sxy += (tokens[i] - mx) * (tokens[i + 1] - my);
    sxx += (tokens[i] - mx) * (tokens[i] - mx);
    syy += (tokens[i + 1] - my) * (tokens[i + 1] - my);
  }
  return sxx > 0 && syy > 0 ? sxy / std::sqrt(sxx * syy) : 1.0;  // a constant sequence is perfectly dependent
}

// Distinct offsets, seeds and rows give independent streams. On a near-uniform row (V >= 256), 128 draws at
// consecutive offsets of seed s (stream A), the next 128 offsets of seed s (B), and the offsets of A under
// seed s + 1 in the same batch as A (C):
//   (a) no window of 5 consecutive draws repeats inside A (a sampler that ignores the offset, or reuses one
//       (seed, offset) across draws, repeats everything);
//   (b) no window of A appears in B (offsets not advanced across calls: B replays A);
//   (c) no window of A appears in C (the seed ignored, or row 0's seed used for every row);
//   (d) |lag-1 correlation of token ids| of A and of A+B below z(1e-6 two-sided) / sqrt(n - 1).
//   alpha: a 5-window matches another with probability ~V^-5 * 1.1 (near-uniform within 1.6%): with ~8e3 pairs in
//          (a) and ~1.6e4 in (b) and (c), < 1e-7 per case; (d) 2e-6. Per case about 2e-6 in all.
//   power: a repeated (seed, offset) or an ignored offset repeats every window: certain detection; a correlated
//          stream with lag-1 rho >= 0.5: ~1.
void StreamIndependence(const Context& ctx) {
  const Row row = *gen::NearUniformRow();
  Params params;
  params.top_k = NoTopK(*ctx.profile, row.vocab());
  params.seed = *gen::Seed();
  params.offset = *rc::gen::inRange<uint64_t>(0, uint64_t{1} << 62);
  constexpr int kLength = 128;
  constexpr size_t kWidth = 5;
  std::vector<Row> rows(2 * kLength, row);
  std::vector<Params> batch;
  for (int stream = 0; stream < 2; ++stream) {
    for (int i = 0; i < kLength; ++i) {
      Params p = params;
      p.seed = params.seed + static_cast<uint64_t>(stream);
      p.offset = params.offset + static_cast<uint64_t>(i);
      batch.push_back(p);
    }
  }
  const auto ac = SampleRows(ctx, rows, batch);
  const std::vector<int32_t> a(ac.begin(), ac.begin() + kLength), c(ac.begin() + kLength, ac.end());
  Params next = params;
  next.offset += kLength;
  const auto b = SampleSequence(ctx, row, next, kLength);
  std::map<std::vector<int32_t>, size_t> seen;
  for (size_t i = 0; i + kWidth <= a.size(); ++i) {
    std::vector<int32_t> window(a.begin() + i, a.begin() + i + kWidth);
    auto [it, inserted] = seen.emplace(window, i);
    if (!inserted) {
      RC_FAIL("draws at offsets " + std::to_string(params.offset + it->second) + " and " + std::to_string(params.offset + i) +
              " start the same window of 5 tokens (first token " + std::to_string(window[0]) +
              "): offsets are ignored or a (seed, offset) is reused");
    }
  }
  for (const auto& [name, other] : {std::pair<std::string, const std::vector<int32_t>*>{"the next 128 offsets (a later call)", &b},
                                    {"seed + 1 in the same batch", &c}}) {
    for (const auto& window : Windows(*other, kWidth)) {
      if (seen.count(window)) {
        RC_FAIL("a window of 5 draws of seed " + std::to_string(params.seed) + " at offset " +
                std::to_string(params.offset + seen[window]) + " reappears under " + name +
                ": the offset is not advanced or the seed is ignored");
      }
    }
  }
  const double threshold = stats::NormalUpperQuantile(0.5e-6).value();  // alpha in (0, 1): never an error
  std::vector<int32_t> ab = a;
  ab.insert(ab.end(), b.begin(), b.end());
  for (const std::vector<int32_t>* sequence : {&a, static_cast<const std::vector<int32_t>*>(&ab)}) {
    const double r = LagOneCorrelation(*sequence);
    const double z = std::fabs(r) * std::sqrt(static_cast<double>(sequence->size() - 1));
    if (!(z < threshold)) {
      RC_FAIL("lag-1 correlation of " + std::to_string(sequence->size()) + " consecutive draws is " + Num(r) +
              " (|z| = " + Num(z) + " >= " + Num(threshold) + ", alpha 1e-6)");
    }
  }
}

// Draw frequencies agree with the probabilities the sampler reports: 20,000 draws, Pearson X^2 over the head
// binning of stats/binning.h (every cell expected >= 10), and no draw of a token the sampler gives probability 0.
//   alpha = 1e-6 per case.
//   power: ~1 against errors of TV >= 0.05 on the head (e.g. the truncated CDF of TensorRT-LLM against nucleus,
//          TV 0.095 on V3; a sampler that ignores its own renormalization); low against +1% on one token
//          (noncentrality ~2): campaigns (harness/) carry that power, not this property.
//   assumption: independent draws; cells fixed from the reported probabilities before drawing.
void FrequencyMatchesProcessed(const Context& ctx) {
  const Case c = *gen::AnyValidCase(*ctx.profile);
  Params params = c.params;
  params.offset = *rc::gen::inRange<uint64_t>(0, uint64_t{1} << 62);
  const auto probabilities = Processed(ctx, c.row, params);
  constexpr uint64_t kDraws = 20000;
  std::vector<uint64_t> histogram(probabilities.size(), 0);
  uint64_t invalid = 0;
  const Status status = ctx.sampler->CountDraws(c.row.logits, params, kDraws, histogram, &invalid);
  if (!status.ok()) RC_FAIL("CountDraws failed: " + status.error().ToString());
  if (invalid > 0) RC_FAIL(std::to_string(invalid) + " of " + std::to_string(kDraws) + " draws were invalid");
  for (size_t t = 0; t < histogram.size(); ++t) {
    if (histogram[t] > 0 && !(probabilities[t] > 0)) {
      RC_FAIL("token " + std::to_string(t) + " was drawn " + std::to_string(histogram[t]) +
              " times but the sampler reports probability 0 for it");
    }
  }
  const auto planned = stats::PlanBinnings(probabilities, static_cast<double>(kDraws));
  if (!planned.ok()) RC_FAIL("binning: " + planned.error().message);
  const stats::BinningPlan& plan = *planned;
  if (!plan.head.usable()) {
    RC_TAG("one cell: support check only");
    return;
  }
  const auto counted = stats::BinCounts(plan.head, histogram);
  if (!counted.ok()) RC_FAIL("binning counts: " + counted.error().message);
  const stats::BinnedCounts& binned = *counted;
  const auto cell_probabilities = stats::CellProbabilities(plan.head);
  const auto fit = stats::PearsonChiSquareTest(binned.observed, cell_probabilities);
  if (!fit.ok()) RC_FAIL("chi-square: " + fit.error().message);
  const stats::GoodnessOfFit& test = *fit;
  constexpr double kAlpha = 1e-6;
  if (!test.Passes(kAlpha)) {
    std::string worst;
    const auto residuals = stats::StandardizedResiduals(binned.observed, cell_probabilities);
    size_t at = 0;
    for (size_t i = 0; i < residuals.size(); ++i) {
      if (std::fabs(residuals[i]) > std::fabs(residuals[at])) at = i;
    }
    RC_FAIL("draw frequencies disagree with the reported probabilities: X^2 = " + Num(test.statistic) + " (dof " +
            std::to_string(test.dof) + "), p = " + Num(test.p_value) + " < alpha = 1e-6; largest residual " +
            Num(residuals.empty() ? 0.0 : residuals[at]) + " in head cell " + std::to_string(at));
  }
}

}  // namespace

const std::vector<PropertyDef>& DrawProperties() {
  static const std::vector<PropertyDef> properties = {
      {{"support-containment", "every draw lies in the profile's kept set, for any row and parameters; invalid "
        "parameters are rejected; unsamplable rows give kInvalidToken", "leaks onto masked tokens; float cumsum "
        "shortfall (u past the end: last index); bad rows (silent token 0, id >= vocab); boundary one too many",
        Need::kSample}, SupportContainment},
      {{"ties-drawn-equally", "tokens tied at the maximum are drawn equally often (chi-square in the group, alpha "
        "1e-6)", "tie resolution by value: all mass of a tied group on the lowest id", Need::kSample, true, 0.3},
       TiesDrawnEqually},
      {{"seeded-determinism", "the same batch with the same (seed, offset) gives the same tokens, across calls",
        "RNG state kept between calls; nondeterministic reductions", Need::kDeterministic}, SeededDeterminism},
      {{"batch-invariance", "a row gives the same token alone and at any position of a batch of 8 with other rows",
        "code paths that consume randoms differently by batch size or position; per-row parameters read from the "
        "wrong row; a min-p array applied to rows that did not ask for it", Need::kDeterministic, false, 0.5},
       BatchInvariance},
      {{"paired-seed-no-ops", "disabled top_k encodings (-1, 0, V, V+1, 2^40) draw the same tokens for the same "
        "(seed, offset)", "disabled values that are not no-ops; a code path per parameter value that consumes "
        "randoms differently", Need::kDeterministic}, PairedSeedNoOps},
      {{"stream-independence", "distinct offsets, calls and seeds give different streams (5-window duplicate "
        "detector), lag-1 correlation within alpha 1e-6", "the same (seed, offset) reused across steps or rows; "
        "offsets not advanced; the seed of row 0 used for every row", Need::kSample, true, 0.3},
       StreamIndependence},
      {{"frequency-matches-processed", "draw frequencies agree with the probabilities the sampler reports "
        "(chi-square over the head binning, alpha 1e-6); no draw of a zero-probability token", "a draw path that "
        "differs from the reported distribution (not renormalized; truncated CDF; rejection fallback to argmax)",
        Need::kProcessedDistribution, true, 0.3}, FrequencyMatchesProcessed},
  };
  return properties;
}

}  // namespace samplecheck::properties
