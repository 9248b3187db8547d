// Deterministic random variates for simulations (calibration tests, Monte-Carlo p-values).
//
// std::*_distribution differ between standard libraries, so a seeded simulation would give different numbers
// under libstdc++ and libc++. Everything here is built only on the raw 64-bit outputs of std::mt19937_64, whose
// output sequence the C++ standard fixes, plus log/sqrt from libm: the same seed gives the same draws everywhere
// (up to last-bit libm differences).
//
// Binomial(n, p): inversion when min(p, 1 - p) * n < 30; otherwise exact recursive splitting on the order
// statistic U_(i) ~ Beta(i, n + 1 - i), i = n / 2 + 1 (Devroye, "Non-Uniform Random Variate Generation",
// ch. X): O(log n) beta variates, so n up to 1e12 is cheap. Beta from two Marsaglia-Tsang gammas.
// Multinomial: sequential conditional binomials.
#pragma once

#include <cstdint>
#include <random>
#include <span>
#include <vector>

namespace samplecheck::stats {

// Uniform on the open interval (0, 1) from the top 53 bits of one output: (k + 0.5) / 2^53.
double UniformOpen01(std::mt19937_64& rng);

// N(0, 1) by Marsaglia's polar method.
double StandardNormal(std::mt19937_64& rng);

// Gamma(shape, 1), shape > 0 (Marsaglia-Tsang; shape < 1 via the U^(1/shape) boost).
double GammaVariate(std::mt19937_64& rng, double shape);

// Beta(a, b), a, b > 0.
double BetaVariate(std::mt19937_64& rng, double a, double b);

// Binomial(n, p), p in [0, 1].
std::uint64_t BinomialVariate(std::mt19937_64& rng, std::uint64_t n, double p);

// Multinomial(n, probabilities) into `counts` (same size as probabilities). Probabilities are non-negative
// weights, normalized by their sum; zero-weight cells always get 0.
void MultinomialVariate(std::mt19937_64& rng, std::uint64_t n, std::span<const double> probabilities,
                        std::span<std::uint64_t> counts);
std::vector<std::uint64_t> MultinomialVariate(std::mt19937_64& rng, std::uint64_t n,
                                              std::span<const double> probabilities);

}  // namespace samplecheck::stats
