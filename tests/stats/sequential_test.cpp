// sequential.h: closed forms and bookkeeping. Its validity (Ville) is checked by simulation in
// calibration_test.cpp. Deterministic.

#include "samplecheck/stats/sequential.h"

#include <cmath>
#include <vector>

#include <gtest/gtest.h>

namespace samplecheck::stats {
namespace {

TEST(EProcessTest, PerDrawKtProductEqualsClosedFormMixture) {
  const std::vector<double> p0 = {0.5, 0.3, 0.2};
  auto created = EProcess::Create(p0, 1e-6);
  ASSERT_TRUE(created.ok()) << created.error().message;
  EProcess e = *created;
  // A draw sequence; the predictive KT product over it, factor by factor.
  const int sequence[] = {0, 0, 2, 1, 0, 2, 2, 0, 1, 0, 0, 2};
  double log_product = 0;
  std::vector<double> counts(3, 0);
  for (int i = 0; i < 12; ++i) {
    const auto c = static_cast<std::size_t>(sequence[i]);
    const double q = (counts[c] + 0.5) / (i + 1.5);
    log_product += std::log(q / p0[c]);
    counts[c] += 1;
  }
  // The process only sees the counts, in two batches.
  const Status first = e.Observe(std::vector<std::uint64_t>{2, 0, 1});
  ASSERT_TRUE(first.ok()) << first.error().message;
  const Status second = e.Observe(std::vector<std::uint64_t>{4, 2, 3});
  ASSERT_TRUE(second.ok()) << second.error().message;
  EXPECT_NEAR(e.log_e_value(), log_product, 1e-12);
  EXPECT_EQ(e.draws(), 12u);
  EXPECT_EQ(e.batches(), 2u);
  EXPECT_FALSE(e.rejected());
}

TEST(EProcessTest, PerDrawUpdateDoesNotDependOnBatching) {
  const std::vector<double> p0 = {0.25, 0.25, 0.25, 0.25};
  auto created_one = EProcess::Create(p0, 0.01);
  auto created_many = EProcess::Create(p0, 0.01);
  ASSERT_TRUE(created_one.ok()) << created_one.error().message;
  ASSERT_TRUE(created_many.ok()) << created_many.error().message;
  EProcess one = *created_one;
  EProcess many = *created_many;
  ASSERT_TRUE(one.Observe(std::vector<std::uint64_t>{300, 200, 260, 240}).ok());
  for (int i = 0; i < 10; ++i) ASSERT_TRUE(many.Observe(std::vector<std::uint64_t>{30, 20, 26, 24}).ok());
  EXPECT_NEAR(one.log_e_value(), many.log_e_value(), 1e-9);
}

TEST(EProcessTest, PerBatchPlugInUsesOnlyEarlierBatches) {
  const std::vector<double> p0 = {0.5, 0.5};
  auto created = EProcess::Create(p0, 0.05, Estimator::kLaplace, Update::kPerBatch);
  ASSERT_TRUE(created.ok()) << created.error().message;
  EProcess e = *created;
  // First batch: q_hat = (0 + 1) / (0 + 2) = p0, so no evidence whatever the counts.
  ASSERT_TRUE(e.Observe(std::vector<std::uint64_t>{10, 0}).ok());
  EXPECT_NEAR(e.log_e_value(), 0.0, 1e-15);
  // Second batch: q_hat = (11/12, 1/12).
  ASSERT_TRUE(e.Observe(std::vector<std::uint64_t>{5, 1}).ok());
  EXPECT_NEAR(e.log_e_value(), 5 * std::log((11.0 / 12) / 0.5) + std::log((1.0 / 12) / 0.5), 1e-12);
}

TEST(EProcessTest, GrossDeviationRejectsAndStaysRejected) {
  const std::vector<double> p0 = {0.25, 0.25, 0.25, 0.25};
  auto created = EProcess::Create(p0, 1e-6);
  ASSERT_TRUE(created.ok()) << created.error().message;
  EProcess e = *created;
  ASSERT_TRUE(e.Observe(std::vector<std::uint64_t>{25, 25, 25, 25}).ok());
  EXPECT_FALSE(e.rejected());
  EXPECT_LT(e.log_e_value(), 0.0);  // data that fit p0 cost the mixture its regret
  ASSERT_TRUE(e.Observe(std::vector<std::uint64_t>{100, 0, 0, 0}).ok());
  EXPECT_TRUE(e.rejected());
  EXPECT_EQ(e.draws_at_rejection(), 200u);
  EXPECT_GE(e.log_e_value(), e.log_threshold());
  EXPECT_LE(e.anytime_p_value(), 1e-6);
  ASSERT_TRUE(e.Observe(std::vector<std::uint64_t>{1000, 1000, 1000, 1000}).ok());
  EXPECT_TRUE(e.rejected());
  EXPECT_EQ(e.draws_at_rejection(), 200u);
}

TEST(EProcessTest, InvalidInputIsAnErrorValue) {
  EXPECT_FALSE(EProcess::Create(std::vector<double>{1.0}, 0.01).ok());
  const auto zero_cell = EProcess::Create(std::vector<double>{0.5, 0.0}, 0.01);
  ASSERT_FALSE(zero_cell.ok());
  EXPECT_NE(zero_cell.error().message.find("p0[1] = 0"), std::string::npos) << zero_cell.error().message;
  const auto bad_alpha = EProcess::Create(std::vector<double>{0.5, 0.5}, 2.0);
  ASSERT_FALSE(bad_alpha.ok());
  EXPECT_NE(bad_alpha.error().message.find("alpha = 2"), std::string::npos) << bad_alpha.error().message;
  auto created = EProcess::Create(std::vector<double>{0.5, 0.5}, 0.01);
  ASSERT_TRUE(created.ok()) << created.error().message;
  EProcess e = *created;
  const Status wrong_size = e.Observe(std::vector<std::uint64_t>{1, 2, 3});
  ASSERT_FALSE(wrong_size.ok());
  EXPECT_NE(wrong_size.error().message, "");
}

}  // namespace
}  // namespace samplecheck::stats
