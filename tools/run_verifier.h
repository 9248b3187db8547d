// `samplecheck run --suite spec-... --verifier <spec>`: the speculative-decoding campaign (cmd_run_verifier.cpp).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "samplecheck/checks/result.h"

namespace samplecheck::tools {

struct SpecRunArgs {
  std::string suite;
  std::string verifier;
  std::string profile;
  std::optional<uint64_t> seed;
  std::optional<double> tv;
  std::optional<uint64_t> max_trials;
  unsigned jobs = 0;
  std::string report;
  std::string html;
  bool quiet = false;
  bool follow_symlinks = false;
  harness::EvidencePolicy evidence;
  std::vector<std::string> cases;  // --case (case_selection.h)
};

// Exit codes of `run`: 0 pass, 1 a case fails or the evidence is short, 2 usage or input error.
int RunSpecCampaignCommand(const SpecRunArgs& args, const std::string& command_line);

}  // namespace samplecheck::tools
