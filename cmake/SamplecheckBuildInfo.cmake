# Run at build time (cmake -P): writes the git revision of the source tree, and the fingerprint of the sources that
# plan, draw and judge a campaign, into a C++ source, rewriting it only when they change, so reports carry the
# revision samplecheck was built from without running git at run time.
#   -DSOURCE_DIR=<source tree> -DOUTPUT=<build_info.cpp>
# The campaign-source fingerprint (a journal's identity, docs/campaigns.md "Interruption, journal, reports"): the
# first 16 hex digits of the SHA-256 of the git tree ids of the campaign sources (`git ls-tree HEAD` of the paths
# below) and of their uncommitted diff against HEAD, with "-dirty" when that diff is not empty; "" when the tree has
# no git. Two builds of different commits have the same fingerprint when none of these paths changed between them.
set(campaign_paths core reference stats harness kernels tools)
set(revision "")
set(fingerprint "")
find_program(_git git)
if(_git AND EXISTS "${SOURCE_DIR}/.git")
  execute_process(COMMAND ${_git} -C "${SOURCE_DIR}" rev-parse HEAD
                  OUTPUT_VARIABLE head OUTPUT_STRIP_TRAILING_WHITESPACE RESULT_VARIABLE rc ERROR_QUIET)
  if(rc EQUAL 0 AND head)
    execute_process(COMMAND ${_git} -C "${SOURCE_DIR}" status --porcelain --untracked-files=no
                    OUTPUT_VARIABLE dirty OUTPUT_STRIP_TRAILING_WHITESPACE RESULT_VARIABLE rc2 ERROR_QUIET)
    set(revision "${head}")
    if(rc2 EQUAL 0 AND dirty)
      string(APPEND revision "-dirty")
    endif()
    execute_process(COMMAND ${_git} -C "${SOURCE_DIR}" ls-tree HEAD -- ${campaign_paths}
                    OUTPUT_VARIABLE trees RESULT_VARIABLE rc3 ERROR_QUIET)
    execute_process(COMMAND ${_git} -C "${SOURCE_DIR}" diff --no-ext-diff --binary HEAD -- ${campaign_paths}
                    OUTPUT_VARIABLE diff RESULT_VARIABLE rc4 ERROR_QUIET)
    if(rc3 EQUAL 0 AND rc4 EQUAL 0 AND trees)
      string(SHA256 digest "trees:\n${trees}diff:\n${diff}")
      string(SUBSTRING "${digest}" 0 16 fingerprint)
      if(diff)
        string(APPEND fingerprint "-dirty")
      endif()
    endif()
  endif()
endif()
set(content "// Generated at build time by cmake/SamplecheckBuildInfo.cmake. Do not edit.
#include \"build_info.h\"

namespace samplecheck::harness {
const char* BuildGitRevision() { return \"${revision}\"; }
const char* BuildSourceFingerprint() { return \"${fingerprint}\"; }
}  // namespace samplecheck::harness
")
if(EXISTS "${OUTPUT}")
  file(READ "${OUTPUT}" old)
else()
  set(old "")
endif()
if(NOT old STREQUAL content)
  file(WRITE "${OUTPUT}" "${content}")
endif()
