#include "samplecheck/properties/suite.h"

#include <algorithm>
#include <iostream>
#include <sstream>

#include <rapidcheck.h>

#include "property_context.h"
#include "samplecheck/properties/generators.h"

namespace samplecheck::properties {
namespace {

// RapidCheck's checkProperty wants a listener; results are reported by RunProperty itself.
class QuietListener final : public rc::detail::TestListener {
 public:
  void onTestCaseFinished(const rc::detail::CaseDescription&) override {}
  void onShrinkTried(const rc::detail::CaseDescription&, bool) override {}
  void onTestFinished(const rc::detail::TestMetadata&, const rc::detail::TestResult&) override {}
};

const PropertyDef* FindDef(const std::string& name) {
  for (const auto* list : {&DistributionProperties(), &DrawProperties(), &BoundaryProperties()}) {
    for (const PropertyDef& def : *list) {
      if (def.info.name == name) return &def;
    }
  }
  return nullptr;
}

std::string ShellQuote(const std::string& text) {
  std::string quoted = "'";
  for (char ch : text) quoted += ch == '\'' ? std::string("'\\''") : std::string(1, ch);
  return quoted + "'";
}

std::string ReproduceString(const std::string& id, const rc::detail::Reproduce& reproduce) {
  rc::detail::Configuration config;
  config.reproduce[id] = reproduce;
  const std::string text = rc::detail::configToMinimalString(config);
  const size_t at = text.find("reproduce=");
  if (at == std::string::npos) return "";
  const size_t begin = at + 10;
  const size_t end = text.find(' ', begin);
  return text.substr(begin, end == std::string::npos ? std::string::npos : end - begin);
}

}  // namespace

const char* NeedName(Need need) {
  switch (need) {
    case Need::kSample: return "sample";
    case Need::kDeterministic: return "deterministic";
    case Need::kProcessedDistribution: return "processed_distribution";
  }
  return "unknown";
}

const char* PropertyStatusName(PropertyStatus status) {
  switch (status) {
    case PropertyStatus::kPassed: return "passed";
    case PropertyStatus::kFailed: return "FAILED";
    case PropertyStatus::kSkipped: return "skipped";
    case PropertyStatus::kGaveUp: return "GAVE UP";
    case PropertyStatus::kError: return "ERROR";
  }
  return "unknown";
}

const std::vector<PropertyInfo>& AllProperties() {
  static const std::vector<PropertyInfo> infos = [] {
    std::vector<PropertyInfo> all;
    for (const auto* list : {&DistributionProperties(), &DrawProperties(), &BoundaryProperties()}) {
      for (const PropertyDef& def : *list) all.push_back(def.info);
    }
    return all;
  }();
  return infos;
}

bool SuiteResult::passed() const {
  return std::all_of(results.begin(), results.end(), [](const PropertyResult& r) {
    return r.status == PropertyStatus::kPassed || r.status == PropertyStatus::kSkipped;
  });
}

int SuiteResult::count(PropertyStatus status) const {
  return static_cast<int>(std::count_if(results.begin(), results.end(), [&](const PropertyResult& r) { return r.status == status; }));
}

PropertyResult RunProperty(harness::Sampler& sampler, const Profile& profile, const std::string& name,
                           const PropertyOptions& options, const std::string& sampler_spec) {
  PropertyResult result;
  result.name = name;
  const PropertyDef* def = FindDef(name);
  if (def == nullptr) {
    result.status = PropertyStatus::kError;
    result.message = "no property named '" + name + "'";
    return result;
  }
  gen::SetExcludedRowKinds(options.exclude_rows);  // every property of the run sees the same row domain
  gen::SetMinPHeldAtZero(options.hold_min_p_zero);
  if (options.hold_min_p_zero && name == "monotone-min-p") {
    result.message = "min_p held at 0 (--no-min-p): nothing to compare";
    return result;  // skipped
  }
  Context ctx;
  ctx.sampler = &sampler;
  ctx.profile = &profile;
  ctx.caps = sampler.GetCapabilities();
  ctx.exact = sampler.Name() == "exact:" + std::string(profile.name);
  ctx.tolerance = ctx.exact ? kExactTolerance : options.tolerance;
  ctx.visibility_floor = ctx.exact ? 1e-290 : 1e-30;
  if (def->info.need == Need::kProcessedDistribution && !ctx.caps.processed_distribution) {
    result.message = sampler.Name() + " does not expose its processed distribution";
    return result;
  }
  if (def->info.need == Need::kDeterministic && !ctx.caps.deterministic) {
    result.message = sampler.Name() + " does not claim determinism";
    return result;
  }

  rc::detail::TestParams params;
  params.seed = options.seed;
  params.maxSuccess = std::max(1, static_cast<int>(options.max_success * def->info.case_share + 0.5));
  params.maxSize = options.max_size;
  rc::detail::TestMetadata metadata;
  metadata.id = std::string(profile.name) + "/" + name;
  metadata.description = metadata.id;
  std::unordered_map<std::string, rc::detail::Reproduce> reproduce;
  if (!options.reproduce.empty()) {
    try {
      const auto config = rc::detail::configFromString("reproduce=" + options.reproduce);
      reproduce = config.reproduce;
    } catch (const std::exception& e) {
      result.status = PropertyStatus::kError;
      result.message = std::string("bad reproduce string: ") + e.what();
      return result;
    }
  }
  QuietListener listener;
  const auto body = def->body;
  const rc::detail::TestResult outcome =
      rc::detail::checkProperty(rc::detail::toProperty([ctx, body] { body(ctx); }), metadata, params, listener, reproduce);

  std::ostringstream message;
  rc::detail::printResultMessage(outcome, message);
  if (outcome.is<rc::detail::SuccessResult>()) {
    result.status = PropertyStatus::kPassed;
    result.cases = outcome.get<rc::detail::SuccessResult>().numSuccess;
    const auto& distribution = outcome.get<rc::detail::SuccessResult>().distribution;
    if (!distribution.empty()) result.message = message.str();
  } else if (outcome.is<rc::detail::FailureResult>()) {
    const auto& failure = outcome.get<rc::detail::FailureResult>();
    result.status = PropertyStatus::kFailed;
    result.cases = failure.numSuccess;
    result.reproduce = ReproduceString(metadata.id, failure.reproduce);
    std::string excluded;
    for (const std::string& k : options.exclude_rows) excluded += " --exclude-rows " + k;
    if (options.hold_min_p_zero) excluded += " --no-min-p";
    result.replay = "samplecheck properties --sampler " + ShellQuote(sampler_spec.empty() ? sampler.Name() : sampler_spec) +
                    " --profile " + std::string(profile.name) + " --property " + name + " --seed " +
                    std::to_string(options.seed) + " --max-success " + std::to_string(options.max_success) +
                    excluded + " --reproduce " + result.reproduce;
    result.message = message.str();
  } else if (outcome.is<rc::detail::GaveUpResult>()) {
    result.status = PropertyStatus::kGaveUp;
    result.cases = outcome.get<rc::detail::GaveUpResult>().numSuccess;
    result.message = message.str();
  } else {
    result.status = PropertyStatus::kError;
    result.message = message.str();
  }
  return result;
}

Result<SuiteResult> RunPropertySuite(harness::Sampler& sampler, const PropertyOptions& options,
                                     const std::string& profile_name, const std::string& sampler_spec) {
  const std::string name = profile_name.empty() ? sampler.GetCapabilities().profile : profile_name;
  if (name.empty()) {
    return InvalidArgument(sampler.Name() + " claims no semantics profile; name one (--profile)");
  }
  const Profile* profile = FindProfile(name);
  if (profile == nullptr) return InvalidArgument("unknown profile '" + name + "'");
  std::vector<std::string> names = options.only;
  if (names.empty()) {
    for (const PropertyInfo& info : AllProperties()) names.push_back(info.name);
  }
  for (const std::string& n : options.skip) {
    if (FindDef(n) == nullptr) {
      std::string known;
      for (const PropertyInfo& info : AllProperties()) known += (known.empty() ? "" : ", ") + info.name;
      return InvalidArgument("--skip-property: no property named '" + n + "'; known properties: " + known);
    }
  }
  names.erase(std::remove_if(names.begin(), names.end(),
                             [&](const std::string& n) {
                               return std::find(options.skip.begin(), options.skip.end(), n) != options.skip.end();
                             }),
              names.end());
  for (const std::string& k : options.exclude_rows) {
    if (std::find(gen::RowKinds().begin(), gen::RowKinds().end(), k) == gen::RowKinds().end()) {
      std::string known;
      for (const std::string& kind : gen::RowKinds()) known += (known.empty() ? "" : ", ") + kind;
      return InvalidArgument("--exclude-rows: no row kind '" + k + "'; row kinds: " + known);
    }
  }
  if (options.exclude_rows.size() >= 8) {
    return InvalidArgument("--exclude-rows leaves out too many row kinds (" + std::to_string(options.exclude_rows.size()) +
                           "); at most 7 of the 11 may be left out");
  }
  for (const std::string& n : names) {
    if (FindDef(n) == nullptr) {
      std::string known;
      for (const PropertyInfo& info : AllProperties()) known += (known.empty() ? "" : ", ") + info.name;
      return InvalidArgument("no property named '" + n + "'; known properties: " + known);
    }
  }
  if (!options.reproduce.empty()) {
    // A reproduce string that RapidCheck cannot read is a usage error of the whole run, not a property's failure.
    try {
      (void)rc::detail::configFromString("reproduce=" + options.reproduce);
    } catch (const std::exception& e) {
      return InvalidArgument("--reproduce '" + options.reproduce +
                             "' is not a RapidCheck reproduce string (copy it from a failure's replay line): " +
                             e.what());
    }
  }
  SuiteResult suite;
  suite.sampler = sampler.Name();
  suite.profile = name;
  for (const std::string& n : names) {
    suite.results.push_back(RunProperty(sampler, *profile, n, options, sampler_spec));
    if (options.verbose) {
      const PropertyResult& r = suite.results.back();
      std::cerr << "  " << PropertyStatusName(r.status) << "  " << r.name << " (" << r.cases << " cases)\n";
    }
  }
  return suite;
}

}  // namespace samplecheck::properties
