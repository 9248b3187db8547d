// exact_tests.h against hand-worked examples and R's documented binom.test output. Deterministic (the
// Monte-Carlo test uses a fixed seed; its tolerance of 5 standard errors would be exceeded with probability
// < 1e-6 for a random seed).

#include "samplecheck/stats/exact_tests.h"

#include <cmath>
#include <functional>
#include <vector>

#include <gtest/gtest.h>

namespace samplecheck::stats {
namespace {

TEST(ExactMultinomialTest, HandEnumeratedThreeCellsTwoDraws) {
  // p = {1/2, 1/4, 1/4}, n = 2: P(2,0,0) = P(1,1,0) = P(1,0,1) = 1/4, P(0,1,1) = 1/8, P(0,2,0) = P(0,0,2) = 1/16.
  const std::vector<double> p = {0.5, 0.25, 0.25};
  const auto a = ExactMultinomialTest(std::vector<std::uint64_t>{0, 2, 0}, p);
  ASSERT_TRUE(a.ok()) << a.error().message;
  EXPECT_EQ(a->outcomes, 6u);
  EXPECT_NEAR(a->p_value, 0.125, 1e-12);
  const auto b = ExactMultinomialTest(std::vector<std::uint64_t>{0, 1, 1}, p);
  const auto c = ExactMultinomialTest(std::vector<std::uint64_t>{1, 1, 0}, p);
  ASSERT_TRUE(b.ok()) << b.error().message;
  ASSERT_TRUE(c.ok()) << c.error().message;
  EXPECT_NEAR(b->p_value, 0.25, 1e-12);
  EXPECT_NEAR(c->p_value, 1.0, 1e-12);
}

TEST(ExactMultinomialTest, TwoCellsEqualsExactBinomial) {
  // 3 of 10 at p = 1/2: 2 (1 + 10 + 45 + 120) / 1024 = 0.34375.
  const auto m = ExactMultinomialTest(std::vector<std::uint64_t>{3, 7}, std::vector<double>{0.5, 0.5});
  ASSERT_TRUE(m.ok()) << m.error().message;
  EXPECT_NEAR(m->p_value, 0.34375, 1e-12);
  const auto b = ExactBinomialPValue(3, 10, 0.5);
  ASSERT_TRUE(b.ok()) << b.error().message;
  EXPECT_NEAR(*b, 0.34375, 1e-12);
  const auto m2 = ExactMultinomialTest(std::vector<std::uint64_t>{13, 87}, std::vector<double>{0.2, 0.8});
  const auto b2 = ExactBinomialPValue(13, 100, 0.2);
  ASSERT_TRUE(m2.ok()) << m2.error().message;
  ASSERT_TRUE(b2.ok()) << b2.error().message;
  EXPECT_NEAR(m2->p_value, *b2, 1e-10);
}

TEST(ExactMultinomialTest, SupportViolationIsReportedApartAndTooLargeIsAnError) {
  const auto r = ExactMultinomialTest(std::vector<std::uint64_t>{3, 7, 2}, std::vector<double>{0.5, 0.5, 0.0});
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r->support_violations, 2u);
  EXPECT_NEAR(r->p_value, 0.34375, 1e-12);
  EXPECT_FALSE(r->Passes(0.01));
  const auto big = ExactMultinomialTest(std::vector<std::uint64_t>(10, 1000), std::vector<double>(10, 0.1));
  ASSERT_FALSE(big.ok());
  EXPECT_NE(big.error().message.find("MonteCarloPearsonTest"), std::string::npos) << big.error().message;
}

TEST(MonteCarloPearsonTest, AgreesWithExactPearsonTailByEnumeration) {
  const std::vector<double> p = {0.5, 0.25, 0.25};
  const std::vector<std::uint64_t> observed = {10, 2, 8};
  const std::uint64_t n = 20;
  auto pearson = [&](std::uint64_t a, std::uint64_t b, std::uint64_t c) {
    const double x[3] = {static_cast<double>(a), static_cast<double>(b), static_cast<double>(c)};
    double s = 0;
    for (int i = 0; i < 3; ++i) {
      const double e = n * p[static_cast<std::size_t>(i)];
      s += (x[i] - e) * (x[i] - e) / e;
    }
    return s;
  };
  // Exact P(X^2 >= X^2_obs) by enumeration.
  const double t_obs = pearson(10, 2, 8);
  double exact = 0;
  for (std::uint64_t a = 0; a <= n; ++a) {
    for (std::uint64_t b = 0; a + b <= n; ++b) {
      const std::uint64_t c = n - a - b;
      if (pearson(a, b, c) >= t_obs - 1e-9) {
        exact += std::exp(std::lgamma(n + 1.0) - std::lgamma(a + 1.0) - std::lgamma(b + 1.0) -
                          std::lgamma(c + 1.0) + a * std::log(0.5) + (b + c) * std::log(0.25));
      }
    }
  }
  const std::uint64_t B = 20000;
  const auto mc = MonteCarloPearsonTest(observed, p, B, /*seed=*/0x5eed0001);
  ASSERT_TRUE(mc.ok()) << mc.error().message;
  EXPECT_EQ(mc->outcomes, B);
  EXPECT_NEAR(mc->p_value, exact, 5 * std::sqrt(exact * (1 - exact) / B) + 1.0 / B);
  // Same seed, same answer.
  const auto again = MonteCarloPearsonTest(observed, p, B, 0x5eed0001);
  ASSERT_TRUE(again.ok()) << again.error().message;
  EXPECT_EQ(again->p_value, mc->p_value);
}

TEST(ExactBinomialTest, MatchesRBinomTestDocumentedExample) {
  // R: binom.test(c(682, 243), p = 3/4) -> p-value = 0.3825, 95% CI 0.7076683 0.7654066.
  const auto p = ExactBinomialPValue(682, 925, 0.75);
  ASSERT_TRUE(p.ok()) << p.error().message;
  EXPECT_NEAR(*p, 0.3825, 5e-5);
  const auto ci = ClopperPearsonInterval(682, 925, 0.95);
  ASSERT_TRUE(ci.ok()) << ci.error().message;
  EXPECT_NEAR(ci->lower, 0.7076683, 1e-7);
  EXPECT_NEAR(ci->upper, 0.7654066, 1e-7);
}

TEST(ExactBinomialTest, HandWorkedTailsAndEdges) {
  // k = 0, n = 10, p = 0.1: every j except j = 1 has P(j) <= P(0) = 0.9^10, so p = 1 - P(1).
  const double p1 = 10 * 0.1 * std::pow(0.9, 9);
  const auto k0 = ExactBinomialPValue(0, 10, 0.1);
  const auto k1 = ExactBinomialPValue(1, 10, 0.1);
  const auto k10 = ExactBinomialPValue(10, 10, 0.5);
  ASSERT_TRUE(k0.ok()) << k0.error().message;
  ASSERT_TRUE(k1.ok()) << k1.error().message;
  ASSERT_TRUE(k10.ok()) << k10.error().message;
  EXPECT_NEAR(*k0, 1 - p1, 1e-12);
  EXPECT_NEAR(*k1, 1.0, 1e-12);  // the mode
  EXPECT_NEAR(*k10, 2.0 / 1024, 1e-15);
  // Clopper-Pearson at the edges: k = 0 -> [0, 1 - 0.025^(1/n)], k = n -> [0.025^(1/n), 1].
  const auto zero = ClopperPearsonInterval(0, 10, 0.95);
  ASSERT_TRUE(zero.ok()) << zero.error().message;
  EXPECT_EQ(zero->lower, 0.0);
  EXPECT_NEAR(zero->upper, 1 - std::pow(0.025, 0.1), 1e-12);
  const auto all = ClopperPearsonInterval(10, 10, 0.95);
  ASSERT_TRUE(all.ok()) << all.error().message;
  EXPECT_NEAR(all->lower, std::pow(0.025, 0.1), 1e-12);
  EXPECT_EQ(all->upper, 1.0);
  EXPECT_FALSE(ExactBinomialPValue(11, 10, 0.5).ok());
  EXPECT_FALSE(ExactBinomialPValue(1, 10, 1.0).ok());
  EXPECT_FALSE(ClopperPearsonInterval(1, 0, 0.95).ok());
  const auto bad_confidence = ClopperPearsonInterval(1, 10, 1.5);
  ASSERT_FALSE(bad_confidence.ok());
  EXPECT_NE(bad_confidence.error().message.find("confidence = 1.5"), std::string::npos)
      << bad_confidence.error().message;
}

}  // namespace
}  // namespace samplecheck::stats
