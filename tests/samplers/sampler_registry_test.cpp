// MakeSampler's spec grammar: every kind, its malformed forms, and the messages that name what is known.
#include "samplecheck/samplers/sampler_registry.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace samplecheck::harness {
namespace {

Error SpecError(const std::string& spec, SamplerOptions options = {}) {
  auto sampler = MakeSampler(spec, options);
  EXPECT_FALSE(sampler.ok()) << "spec '" << spec << "' made " << (*sampler)->Name();
  return sampler.ok() ? Error{} : sampler.error();
}

TEST(SamplerRegistry, UnknownKindListsEveryKnownKind) {
  const Error error = SpecError("bogus:thing");
  EXPECT_EQ(error.code, ErrorCode::kInvalidArgument);
  for (const char* word : {"bogus", "exact", "cuda", "mutant:<name>", "plugin:<path.so>[:config]",
                           "plugin-inproc:<path.so>[:config]", "process:<command>"}) {
    EXPECT_NE(error.message.find(word), std::string::npos) << "'" << word << "' missing from: " << error.message;
  }
}

// A build without CUDA says cuda is not built in before it reads the profile (CudaIsAvailableExactlyWhenBuilt).
TEST(SamplerRegistry, MalformedSpecsAreInvalidArgument) {
  std::vector<std::string> specs = {
      "",         "exact:",      "mutant:", "plugin:", "plugin::cfg", "plugin-inproc:", "plugin-inproc::cfg",
      "process:", "process:   ", "lossy:"};
  if (CudaBuiltIn()) specs.push_back("cuda:");
  for (const std::string& spec : specs) {
    const Error error = SpecError(spec);
    EXPECT_EQ(error.code, ErrorCode::kInvalidArgument) << "spec '" << spec << "': " << error.ToString();
    EXPECT_EQ(error.message.rfind("malformed sampler spec '" + spec + "': ", 0), 0u) << error.message;
    EXPECT_NE(error.message.find("known kinds"), std::string::npos) << "spec '" << spec << "': " << error.message;
  }
}

TEST(SamplerRegistry, ExactTakesItsProfileFromTheOptions) {
  auto sampler = MakeSampler("exact", {.profile = "hf"});
  ASSERT_TRUE(sampler.ok()) << sampler.error().ToString();
  EXPECT_EQ((*sampler)->Name(), "exact:hf");
  EXPECT_EQ((*sampler)->GetCapabilities().profile, "hf");
}

// `--sampler exact:hf --profile vllm` checks the hf sampler against vllm semantics: the spec's profile wins.
TEST(SamplerRegistry, ProfileInTheSpecOverridesTheOptions) {
  auto sampler = MakeSampler("exact:sglang-torch", {.profile = "vllm"});
  ASSERT_TRUE(sampler.ok()) << sampler.error().ToString();
  EXPECT_EQ((*sampler)->Name(), "exact:sglang-torch");
}

TEST(SamplerRegistry, ExactWithUnknownProfileListsProfiles) {
  const Error error = SpecError("exact", {.profile = "vllm-v0"});
  EXPECT_EQ(error.code, ErrorCode::kInvalidArgument);
  EXPECT_NE(error.message.find("vllm-v0"), std::string::npos) << error.message;
  EXPECT_NE(error.message.find("hf"), std::string::npos) << error.message;
}

TEST(SamplerRegistry, UnknownMutantIsInvalidArgumentNamingIt) {
  const Error error = SpecError("mutant:no-such-mutant");
  EXPECT_EQ(error.code, ErrorCode::kInvalidArgument);
  EXPECT_NE(error.message.find("no-such-mutant"), std::string::npos) << error.message;
}

TEST(SamplerRegistry, CudaIsAvailableExactlyWhenBuilt) {
  bool listed = false;
  for (const SamplerKind& kind : SamplerKinds()) {
    if (kind.name != "cuda") continue;
    listed = true;
#ifdef SAMPLECHECK_HAVE_CUDA
    EXPECT_TRUE(kind.available);
#else
    EXPECT_FALSE(kind.available);
    for (const char* spec : {"cuda", "cuda:", "cuda:hf"}) {
      const Error error = SpecError(spec);
      EXPECT_EQ(error.code, ErrorCode::kUnsupported) << spec;
      EXPECT_NE(error.message.find("is not built into this program"), std::string::npos) << error.message;
      EXPECT_NE(error.message.find("without CUDA"), std::string::npos) << error.message;
    }
#endif
  }
  EXPECT_TRUE(listed);
}

TEST(SamplerRegistry, ListsEveryKindWithASummaryAndTheHelpNamesEveryUsage) {
  const auto& kinds = SamplerKinds();
  ASSERT_EQ(kinds.size(), 7u);
  const std::string help = SamplerSpecHelp();
  for (const SamplerKind& kind : kinds) {
    EXPECT_FALSE(kind.summary.empty()) << kind.name;
    EXPECT_EQ(kind.usage.rfind(kind.name, 0), 0u) << kind.usage << " does not start with its kind " << kind.name;
    EXPECT_NE(help.find(kind.usage), std::string::npos) << kind.usage;
    // The unknown-kind error lists every usage too (one table behind both).
    EXPECT_NE(SpecError("no-such-kind").message.find(kind.usage), std::string::npos) << kind.usage;
  }
}

// Both plugin kinds split the spec the same way and give the same names.
TEST(SamplerRegistry, PluginSpecSplitsPathAndConfig) {
  for (const std::string kind : {"plugin:", "plugin-inproc:"}) {
    auto plain = MakeSampler(kind + SAMPLECHECK_EXAMPLE_PLUGIN, {});
    ASSERT_TRUE(plain.ok()) << kind << ": " << plain.error().ToString();
    EXPECT_EQ((*plain)->Name(), "plugin:exact-vllm") << kind;
    auto configured = MakeSampler(kind + SAMPLECHECK_EXAMPLE_PLUGIN + ":bug=no-renorm", {});
    ASSERT_TRUE(configured.ok()) << kind << ": " << configured.error().ToString();
    EXPECT_EQ((*configured)->Name(), "plugin:exact-vllm:bug=no-renorm") << kind;
  }
}

// The library a plugin spec loads, as the spec names it (an input no command may write over).
TEST(SamplerRegistry, PluginLibraryOfSpecNamesTheLibrary) {
  const std::string lib = SAMPLECHECK_EXAMPLE_PLUGIN;
  for (const std::string& spec : {"plugin:" + lib, "plugin-inproc:" + lib + ":bug=no-renorm", "lossy:plugin:" + lib}) {
    EXPECT_EQ(PluginLibraryOfSpec(spec), lib) << spec;
  }
  EXPECT_EQ(PluginLibraryOfSpec("plugin:/no/such/lib.so:cfg"), "/no/such/lib.so");
  for (const char* spec : {"exact", "exact:vllm", "mutant:topp-truncated-cdf", "process:python3 x.py", "plugin:", ""}) {
    EXPECT_EQ(PluginLibraryOfSpec(spec), "") << spec;
  }
}

TEST(SamplerRegistry, PluginThatCannotLoadIsPluginError) {
  for (const std::string kind : {"plugin:", "plugin-inproc:"}) {
    const Error error = SpecError(kind + "/no/such/libplugin.so:cfg");
    EXPECT_EQ(error.code, ErrorCode::kPlugin) << kind;
    EXPECT_NE(error.message.find("cannot load plugin /no/such/libplugin.so"), std::string::npos) << error.message;
  }
}

TEST(SamplerRegistry, ProcessThatIsNotASamplerIsPluginError) {
  const Error error = SpecError("process:exit 3");
  EXPECT_EQ(error.code, ErrorCode::kPlugin);
  EXPECT_NE(error.message.find("exited with status 3"), std::string::npos) << error.message;
}

}  // namespace
}  // namespace samplecheck::harness
