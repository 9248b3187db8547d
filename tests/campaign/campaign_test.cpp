// Units of the campaign machinery: row sources, .npy parsing, suites, case planning and evaluation, verdicts.
// Deterministic (fixed seeds); the statistical tests state their alpha and power where they make one.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <fstream>
#include <limits>
#include <set>

#include "case_fixture.h"
#include "samplecheck/campaign/campaign.h"
#include "samplecheck/checks/checks.h"
#include "samplecheck/reference/exact_sampler.h"
#include "samplecheck/reference/logits.h"
#include "samplecheck/reference/profile.h"
#include "samplecheck/suites/case_seed.h"
#include "samplecheck/suites/row_source.h"
#include "samplecheck/suites/suite.h"

namespace samplecheck::harness {
namespace {

RowSpec Spec(const std::string& json) {
  auto spec = ParseRowSpec(nlohmann::json::parse(json));
  EXPECT_TRUE(spec.ok()) << (spec.ok() ? "" : spec.error().message);
  return spec.ok() ? *spec : RowSpec{};
}

std::string NpyBytes(const std::string& descr, const std::string& shape, const std::string& data,
                     const std::string& extra = "") {
  std::string header = "{'descr': '" + descr + "', 'fortran_order': False, 'shape': " + shape + ", " + extra + "}";
  while ((10 + header.size() + 1) % 64 != 0) header += ' ';
  header += '\n';
  std::string out = "\x93NUMPY";
  out += '\x01';
  out += '\x00';
  out += static_cast<char>(header.size() & 0xff);
  out += static_cast<char>(header.size() >> 8);
  return out + header + data;
}

std::string FloatBytes(const std::vector<float>& v) {
  std::string s(v.size() * 4, '\0');
  std::memcpy(s.data(), v.data(), s.size());
  return s;
}

TEST(RowSourceTest, SameSeedSameRowOtherSeedOtherRow) {
  for (const char* json : {R"({"kind":"gaussian","vocab":1000,"sigma":2})", R"({"kind":"zipf","vocab":1000})",
                           R"({"kind":"gumbel","vocab":1000})", R"({"kind":"near_flat","vocab":1000})",
                           R"({"kind":"tied","vocab":1000,"levels":3})",
                           R"({"kind":"many_tail","vocab":100000})"}) {
    const RowSpec spec = Spec(json);
    auto a = MakeRow(spec, 7);
    auto b = MakeRow(spec, 7);
    auto c = MakeRow(spec, 8);
    ASSERT_TRUE(a.ok() && b.ok() && c.ok()) << json;
    EXPECT_EQ(*a, *b) << json;
    EXPECT_NE(*a, *c) << json;
    EXPECT_EQ(a->size(), size_t(spec.vocab)) << json;
  }
}

TEST(RowSourceTest, GaussianHasTheStatedSigma) {
  // Sample sd of 1e5 normals: standard error sigma / sqrt(2n) = 0.0045 at sigma 2; tolerance 0.05 is > 10 s.e.
  auto row = MakeRow(Spec(R"({"kind":"gaussian","vocab":100000,"sigma":2})"), 1);
  ASSERT_TRUE(row.ok());
  double sum = 0, sq = 0;
  for (float x : *row) {
    sum += x;
    sq += double(x) * x;
  }
  const double mean = sum / row->size();
  EXPECT_NEAR(mean, 0.0, 0.05);
  EXPECT_NEAR(std::sqrt(sq / row->size() - mean * mean), 2.0, 0.05);
}

TEST(RowSourceTest, ZipfIsAPermutationOfTheRanks) {
  auto row = MakeRow(Spec(R"({"kind":"zipf","vocab":500,"exponent":1.0})"), 3);
  ASSERT_TRUE(row.ok());
  std::vector<float> sorted = *row;
  std::sort(sorted.begin(), sorted.end(), std::greater<>());
  for (size_t i = 0; i < sorted.size(); ++i) EXPECT_FLOAT_EQ(sorted[i], float(-std::log(double(i + 1))));
  EXPECT_FALSE(std::is_sorted(row->begin(), row->end(), std::greater<>()));
}

TEST(RowSourceTest, TiedRowHasOnlyTheLevels) {
  auto row = MakeRow(Spec(R"({"kind":"tied","vocab":2000,"levels":4,"spacing":0.5})"), 3);
  ASSERT_TRUE(row.ok());
  const std::set<float> values(row->begin(), row->end());
  EXPECT_EQ(values, (std::set<float>{0.0f, 0.5f, 1.0f, 1.5f}));
}

TEST(RowSourceTest, ManyTailRowHasItsTailInTheGapWindow) {
  auto row = MakeRow(Spec(R"({"kind":"many_tail","vocab":131072,"head":16})"), 5);
  ASSERT_TRUE(row.ok());
  const float max = *std::max_element(row->begin(), row->end());
  EXPECT_EQ(max, 0.0f);
  int64_t tail = 0;
  for (float x : *row) {
    if (max - x >= 14.0f) {
      EXPECT_LE(max - x, 22.0f);
      ++tail;
    }
  }
  EXPECT_EQ(tail, 131072 - 16);
}

TEST(RowSourceTest, DyadicVectorsAreExactLogsOfTheProbabilities) {
  auto row = MakeRow(Spec(R"({"kind":"dyadic","vector":"V4"})"), 0);
  ASSERT_TRUE(row.ok());
  ASSERT_EQ(row->size(), 4u);
  EXPECT_EQ((*row)[0], static_cast<float>(std::log(0.4)));
  auto v5 = DyadicVector("V5");
  ASSERT_TRUE(v5.ok());
  double sum = 0;
  for (double p : *v5) sum += p;
  EXPECT_NEAR(sum, 1.0, 1e-12);
  EXPECT_FALSE(DyadicVector("V9").ok());
}

TEST(RowSourceTest, MaskFractionMasksExactlyThatManyButNeverTheArgmax) {
  auto plain = MakeRow(Spec(R"({"kind":"gaussian","vocab":1000})"), 9);
  auto masked = MakeRow(Spec(R"({"kind":"gaussian","vocab":1000,"mask_fraction":0.9})"), 9);
  ASSERT_TRUE(plain.ok() && masked.ok());
  const auto argmax = std::max_element(plain->begin(), plain->end()) - plain->begin();
  EXPECT_TRUE(std::isfinite((*masked)[argmax]));
  EXPECT_EQ(std::count(masked->begin(), masked->end(), -std::numeric_limits<float>::infinity()), 900);
}

TEST(RowSourceTest, OutOfRangeFieldsAreInvalidArguments) {
  EXPECT_EQ(MakeRow(Spec(R"({"kind":"gaussian","vocab":0})"), 1).error().code, ErrorCode::kInvalidArgument);
  EXPECT_EQ(MakeRow(Spec(R"({"kind":"gaussian","sigma":-1})"), 1).error().code, ErrorCode::kInvalidArgument);
  EXPECT_EQ(MakeRow(Spec(R"({"kind":"gaussian","mask_fraction":1.0})"), 1).error().code,
            ErrorCode::kInvalidArgument);
  EXPECT_FALSE(ParseRowSpec(nlohmann::json::parse(R"({"kind":"warped"})")).ok());
  EXPECT_FALSE(ParseRowSpec(nlohmann::json::parse(R"({"kind":"gaussian","sigmaa":1})")).ok());
  EXPECT_FALSE(ParseRowSpec(nlohmann::json::parse(R"({"kind":"gaussian","vocab":1.5})")).ok());
}

TEST(NpyTest, ParsesFp32TwoDimensional) {
  const std::vector<float> values{1.0f, -2.5f, 3.25f, -std::numeric_limits<float>::infinity(), 0.5f, 7.0f};
  auto a = ParseNpy(NpyBytes("<f4", "(2, 3)", FloatBytes(values)), "t.npy");
  ASSERT_TRUE(a.ok()) << a.error().message;
  EXPECT_EQ(a->shape, (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(a->rows(), 2);
  EXPECT_EQ(a->cols(), 3);
  EXPECT_EQ(a->data, values);
}

TEST(NpyTest, WidensFp16OneDimensional) {
  std::string data;
  for (float v : {1.0f, -0.5f, 65504.0f}) {
    const uint16_t bits = FloatToFloat16(v);
    data += static_cast<char>(bits & 0xff);
    data += static_cast<char>(bits >> 8);
  }
  auto a = ParseNpy(NpyBytes("<f2", "(3,)", data), "h.npy");
  ASSERT_TRUE(a.ok()) << a.error().message;
  EXPECT_EQ(a->data, (std::vector<float>{1.0f, -0.5f, 65504.0f}));
  EXPECT_EQ(a->rows(), 1);
}

TEST(NpyTest, RejectsMalformedFilesWithAMessage) {
  const std::string four = FloatBytes({1, 2, 3, 4});
  struct Bad {
    std::string bytes;
    std::string needle;
  } cases[] = {
      {"not numpy", "magic"},
      {NpyBytes("<f8", "(4,)", four + four), "dtype"},
      {NpyBytes(">f4", "(4,)", four), "dtype"},
      {NpyBytes("<f4", "(4,)", four.substr(0, 12)), "bytes"},
      {NpyBytes("<f4", "(1, 2, 2)", four), "dimensions"},
      {NpyBytes("<f4", "(0,)", ""), "empty"},
      {NpyBytes("<f4", "(4,)", four, "'extra': 1"), "unexpected header key"},
  };
  for (const Bad& b : cases) {
    auto a = ParseNpy(b.bytes, "bad.npy");
    ASSERT_FALSE(a.ok()) << b.needle;
    EXPECT_EQ(a.error().code, ErrorCode::kParse);
    EXPECT_NE(a.error().message.find(b.needle), std::string::npos) << a.error().message;
    EXPECT_NE(a.error().message.find("bad.npy"), std::string::npos);
  }
  std::string fortran = NpyBytes("<f4", "(4,)", four);
  fortran.replace(fortran.find("False"), 5, "True ");
  EXPECT_FALSE(ParseNpy(fortran, "f.npy").ok());
  EXPECT_EQ(LoadNpy("/nonexistent/x.npy").error().code, ErrorCode::kIo);
}

TEST(NpyTest, RowSourceReadsTheRequestedRow) {
  const std::string path = std::string(SAMPLECHECK_TEST_TMP) + "/rows.npy";
  {
    std::ofstream out(path, std::ios::binary);
    out << NpyBytes("<f4", "(2, 3)", FloatBytes({1, 2, 3, 4, 5, 6}));
  }
  RowSpec spec = Spec(R"({"kind":"npy","path":"rows.npy","row":1})");
  spec.base_dir = SAMPLECHECK_TEST_TMP;
  auto row = MakeRow(spec, 0);
  ASSERT_TRUE(row.ok()) << row.error().message;
  EXPECT_EQ(*row, (std::vector<float>{4, 5, 6}));
  spec.row = 2;
  EXPECT_EQ(MakeRow(spec, 0).error().code, ErrorCode::kInvalidArgument);
}

TEST(SuiteTest, BuiltinSuitesParseAndHaveUniqueNames) {
  for (const char* name : {"smoke", "standard", "nightly"}) {
    auto suite = LoadSuite(name);
    ASSERT_TRUE(suite.ok()) << suite.error().message;
    EXPECT_EQ(suite->name, name);
    EXPECT_GT(suite->cases.size(), 10u);
    std::set<std::string> names;
    for (const auto& c : suite->cases) EXPECT_TRUE(names.insert(c.name).second) << c.name;
  }
  EXPECT_TRUE(LoadSuite("nightly")->fresh_seed);
}

TEST(SuiteTest, ExpandsRowsTimesParams) {
  auto suite = ParseSuite(nlohmann::json::parse(R"({"schema":"samplecheck-suite/1","cases":[
      {"name":"x","rows":[{"kind":"zipf"},{"kind":"gumbel"}],"params":[{"top_p":0.5},{"top_k":3},{}]}]})"),
                          {}, "t.json");
  ASSERT_TRUE(suite.ok()) << suite.error().message;
  ASSERT_EQ(suite->cases.size(), 6u);
  EXPECT_EQ(suite->cases[0].name, "x/r0/p0");
  EXPECT_EQ(suite->cases[5].name, "x/r1/p2");
  EXPECT_EQ(suite->cases[4].params.top_k, 3);
}

TEST(SuiteTest, MalformedSuitesNameTheProblem) {
  const std::pair<const char*, const char*> bad[] = {
      {R"({"cases":[]})", "schema"},
      {R"({"schema":"samplecheck-suite/1","cases":[]})", "non-empty"},
      {R"({"schema":"samplecheck-suite/1","bogus":1,"cases":[{"name":"a","row":{"kind":"zipf"}}]})", "bogus"},
      {R"({"schema":"samplecheck-suite/1","cases":[{"name":"a","row":{"kind":"zipf"},"params":{"top_p":1.5}}]})",
       "top_p"},
      {R"({"schema":"samplecheck-suite/1","cases":[{"name":"a","row":{"kind":"zipf"},"params":{"topp":0.5}}]})",
       "topp"},
      {R"({"schema":"samplecheck-suite/1","cases":[{"name":"a","row":{"kind":"zipf"}},{"name":"a","row":{"kind":"zipf"}}]})",
       "duplicate"},
      {R"({"schema":"samplecheck-suite/1","alpha":2,"cases":[{"name":"a","row":{"kind":"zipf"}}]})", "alpha"},
      {R"({"schema":"samplecheck-suite/1","cases":[{"name":"a","row":{"kind":"zipf"},"profile":"nope"}]})", "profile"},
  };
  for (const auto& [json, needle] : bad) {
    auto suite = ParseSuite(nlohmann::json::parse(json), {}, "bad.json");
    ASSERT_FALSE(suite.ok()) << json;
    EXPECT_NE(suite.error().message.find(needle), std::string::npos) << suite.error().message;
  }
  EXPECT_EQ(LoadSuite("no-such-suite").error().code, ErrorCode::kInvalidArgument);
}

TEST(CampaignTest, SeedsAreStableAndDistinctPerCase) {
  EXPECT_EQ(CaseSeed(1, "a"), CaseSeed(1, "a"));
  EXPECT_NE(CaseSeed(1, "a"), CaseSeed(1, "b"));
  EXPECT_NE(CaseSeed(1, "a"), CaseSeed(2, "a"));
}

}  // namespace
}  // namespace samplecheck::harness
