// The three kinds tables (kinds.h: samplers, verifiers, replay sources) say the same things the same way: one
// grammar, one message for an unknown kind and for a malformed spec, every kind reachable by its name, a help text
// that names every usage.
#include "samplecheck/samplers/kinds.h"

#include <gtest/gtest.h>

#include <functional>
#include <string>
#include <vector>

#include "samplecheck/samplers/replay_source.h"
#include "samplecheck/samplers/sampler_registry.h"
#include "samplecheck/samplers/verifier.h"

namespace samplecheck::harness {
namespace {

// One table as the tests below see it: what its kinds are of, their texts, its help, and what a spec makes (Ok, or
// the error).
struct Table {
  std::string what;
  KindInfos kinds;
  std::string help;
  std::function<Status(const std::string& spec)> make;
};

std::vector<Table> Tables() {
  return {
      {"sampler", InfosOf(SamplerKinds()), SamplerSpecHelp(),
       [](const std::string& spec) { return MakeSampler(spec, {}).status(); }},
      {"verifier", InfosOf(VerifierKinds()), VerifierSpecHelp(),
       [](const std::string& spec) { return MakeVerifier(spec, "vllm").status(); }},
      {"replay source", InfosOf(ReplaySourceKinds()), ReplaySourceSpecHelp(),
       [](const std::string& spec) { return MakeReplaySource(spec, "vllm").status(); }},
  };
}

std::string Usages(const Table& t) {
  std::string usages;
  for (const KindInfo* k : t.kinds) usages += (usages.empty() ? "" : ", ") + k->usage;
  return usages;
}

TEST(Kinds, TheGrammarSplitsAtTheFirstColon) {
  const KindSpec plain = SplitKindSpec("exact");
  EXPECT_EQ(plain.text, "exact");
  EXPECT_EQ(plain.kind, "exact");
  EXPECT_EQ(plain.arg, "");
  EXPECT_FALSE(plain.has_arg);
  const KindSpec empty_arg = SplitKindSpec("exact:");
  EXPECT_EQ(empty_arg.kind, "exact");
  EXPECT_EQ(empty_arg.arg, "");
  EXPECT_TRUE(empty_arg.has_arg);
  const KindSpec nested = SplitKindSpec("lossy:plugin:/x.so:cfg");
  EXPECT_EQ(nested.kind, "lossy");
  EXPECT_EQ(nested.arg, "plugin:/x.so:cfg");
  EXPECT_TRUE(nested.has_arg);
  const KindSpec none = SplitKindSpec("");
  EXPECT_EQ(none.kind, "");
  EXPECT_FALSE(none.has_arg);
}

TEST(Kinds, EveryTableGivesTheOneUnknownKindMessage) {
  for (const Table& t : Tables()) {
    for (const std::string spec : {"bogus", "bogus:thing", ":x"}) {
      const Status st = t.make(spec);
      ASSERT_FALSE(st.ok()) << t.what << " " << spec;
      EXPECT_EQ(st.error().code, ErrorCode::kInvalidArgument) << t.what << " " << spec;
      const std::string kind = spec.substr(0, spec.find(':'));
      EXPECT_EQ(st.error().message,
                "unknown " + t.what + " kind '" + kind + "' in spec '" + spec + "'; known kinds: " + Usages(t));
    }
  }
}

TEST(Kinds, EveryTableGivesTheOneMalformedSpecMessage) {
  for (const Table& t : Tables()) {
    const Status empty = t.make("");
    ASSERT_FALSE(empty.ok()) << t.what;
    EXPECT_EQ(empty.error().code, ErrorCode::kInvalidArgument) << t.what;
    EXPECT_EQ(empty.error().message, "malformed " + t.what + " spec '': the spec is empty; known kinds: " + Usages(t));
    // A factory's malformed spec (every table has process:<command>) reads the same, its reason in the middle.
    for (const std::string spec : {"process:", "process: \t"}) {
      const Status st = t.make(spec);
      ASSERT_FALSE(st.ok()) << t.what << " " << spec;
      EXPECT_EQ(st.error().code, ErrorCode::kInvalidArgument) << t.what << " " << spec;
      EXPECT_EQ(st.error().message, "malformed " + t.what + " spec '" + spec +
                                        "': a process needs a command (process:<command>); known kinds: " + Usages(t));
    }
  }
}

// A kind's name alone reaches its entry: made, or refused by the kind itself (a missing argument, not built in),
// never as an unknown kind.
TEST(Kinds, EveryListedKindIsReachableByItsName) {
  for (const Table& t : Tables()) {
    ASSERT_FALSE(t.kinds.empty()) << t.what;
    for (const KindInfo* k : t.kinds) {
      EXPECT_FALSE(k->summary.empty()) << t.what << " " << k->name;
      EXPECT_EQ(k->usage.rfind(k->name, 0), 0u) << k->usage << " does not start with its kind " << k->name;
      const Status st = t.make(k->name);
      if (st.ok()) continue;
      EXPECT_EQ(st.error().message.find("unknown " + t.what + " kind"), std::string::npos) << st.error().message;
      if (!k->available) {
        EXPECT_EQ(st.error().code, ErrorCode::kUnsupported) << t.what << " " << k->name;
        EXPECT_EQ(st.error().message.rfind(t.what + " kind '" + k->name + "' in spec '" + k->name +
                                               "' is not built into this program: " + k->summary + "; built-in kinds: ",
                                           0),
                  0u)
            << st.error().message;
      }
    }
  }
}

TEST(Kinds, FindKindFindsEveryEntryOfATable) {
  for (const SamplerKind& k : SamplerKinds()) {
    auto found = FindKind("sampler", SamplerKinds(), k.name + ":x");
    ASSERT_TRUE(found.ok()) << found.error().ToString();
    EXPECT_EQ(*found, &k);
  }
  for (const VerifierKind& k : VerifierKinds()) {
    auto found = FindKind("verifier", VerifierKinds(), k.name);
    ASSERT_TRUE(found.ok()) << found.error().ToString();
    EXPECT_EQ(*found, &k);
  }
  for (const ReplaySourceKind& k : ReplaySourceKinds()) {
    auto found = FindKind("replay source", ReplaySourceKinds(), k.name);
    ASSERT_TRUE(found.ok()) << found.error().ToString();
    EXPECT_EQ(*found, &k);
  }
  EXPECT_FALSE(FindKind("sampler", SamplerKinds(), "exact-ish").ok());
}

TEST(Kinds, EveryHelpTextListsEveryUsage) {
  for (const Table& t : Tables()) {
    EXPECT_EQ(t.help, t.what + " spec: " + Usages(t));
    for (const KindInfo* k : t.kinds) EXPECT_NE(t.help.find(k->usage), std::string::npos) << t.what << " " << k->usage;
  }
}

// The kinds that need CUDA are available exactly in a build with CUDA, in all three tables.
TEST(Kinds, CudaIsAvailableExactlyWhenBuiltInEveryTable) {
  for (const Table& t : Tables()) {
    bool listed = false;
    for (const KindInfo* k : t.kinds) {
      if (k->name != "cuda") continue;
      listed = true;
      EXPECT_EQ(k->available, CudaBuiltIn()) << t.what;
      if (!CudaBuiltIn()) {
        EXPECT_NE(k->summary.find("built without CUDA"), std::string::npos) << k->summary;
      }
    }
    EXPECT_TRUE(listed) << t.what;
  }
}

}  // namespace
}  // namespace samplecheck::harness
