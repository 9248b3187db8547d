// The batch and independence family (checks_batch.cpp), on hand-built batch evidence over a top-k row's p0: a row
// whose draws alone differ from its draws in the batch fails batch invariance at the first differing draw; a
// partner that shares the row's stream, and a stream that repeats each token, are rejected; independent streams
// are not. Fixed seeds; each p-value test here has a false-alarm rate below 1e-6 at the thresholds used.
#include <gtest/gtest.h>

#include <random>

#include "case_fixture.h"
#include "samplecheck/campaign/campaign.h"
#include "samplecheck/checks/checks.h"

namespace samplecheck::harness {
namespace {

using testing::Stream;

std::vector<uint64_t> Counts(const std::vector<int32_t>& tokens, size_t vocab) {
  std::vector<uint64_t> h(vocab, 0);
  for (int32_t t : tokens) ++h[static_cast<size_t>(t)];
  return h;
}

struct BatchRow {
  PreparedCase pc = testing::Drawn(4096).pc;
  std::vector<int32_t> sequence = Stream(pc.p0, 4096, 7);

  CaseResult Judge(const BatchEvidence& batch) {
    pc.result.batch = {"batch", 0, 2, 0, 0, "batch/b1"};
    const std::vector<uint64_t> histogram = Counts(sequence, pc.row.size());
    CaseResult r = pc.result;
    EXPECT_TRUE(RunCaseChecks(CaseEvidence{pc.result, pc.p0, pc.binning, histogram, 0, "", &batch}, r).ok());
    return r;
  }
};

TEST(BatchChecksTest, ADrawThatDiffersAloneFailsBatchInvarianceAtThatDraw) {
  BatchRow row;
  std::vector<int32_t> alone(row.sequence.begin(), row.sequence.begin() + 64);
  alone[17] = (alone[17] + 1) % 50;
  BatchEvidence batch;
  batch.deterministic = true;
  batch.sequence = row.sequence;
  batch.alone = alone;
  const CaseResult r = row.Judge(batch);
  const auto outcome = r.OutcomesOf("batch-invariance");
  ASSERT_EQ(outcome.size(), 1u);
  EXPECT_EQ(outcome[0]->violations, 1u);
  EXPECT_NE(outcome[0]->finding.find("first at draw 17"), std::string::npos) << outcome[0]->finding;
  alone[17] = row.sequence[17];
  batch.alone = alone;
  EXPECT_FALSE(row.Judge(batch).OutcomesOf("batch-invariance")[0]->Fails());
}

TEST(BatchChecksTest, APartnerSharingTheStreamAndARepeatingStreamAreRejected) {
  BatchRow row;
  const std::vector<int32_t> independent = Stream(row.pc.p0, 4096, 8);
  BatchEvidence batch;
  batch.sequence = row.sequence;
  batch.partner_sequence = row.sequence;  // the partner drew from the same stream
  batch.partner_p0 = row.pc.p0;
  CaseResult r = row.Judge(batch);
  ASSERT_EQ(r.OutcomesOf("independence").size(), 1u);
  EXPECT_LT(r.OutcomesOf("independence")[0]->p_value, 1e-30);
  EXPECT_GT(r.OutcomesOf("serial")[0]->p_value, 1e-6);
  batch.partner_sequence = independent;
  r = row.Judge(batch);
  EXPECT_GT(r.OutcomesOf("independence")[0]->p_value, 1e-6);
  // An offset not advanced: every token twice in a row.
  for (size_t i = 0; i + 1 < row.sequence.size(); i += 2) row.sequence[i + 1] = row.sequence[i];
  batch.sequence = row.sequence;
  r = row.Judge(batch);
  ASSERT_EQ(r.OutcomesOf("serial").size(), 1u);
  EXPECT_LT(r.OutcomesOf("serial")[0]->p_value, 1e-30);
}

TEST(BatchChecksTest, FieldsAreNullOutsideBatchRows) {
  testing::DrawnCase d = testing::Drawn(20000);
  EvaluateCase(d.pc, d.histogram, 0);
  for (const char* key : {"batch_invariance", "independence", "serial", "alone_vs_batch"}) {
    EXPECT_TRUE(d.pc.result.checks.at(key).is_null()) << key;
  }
}

}  // namespace
}  // namespace samplecheck::harness
