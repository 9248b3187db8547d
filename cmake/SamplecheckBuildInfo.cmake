# Run at build time (cmake -P): writes the git revision of the source tree into a C++ source, rewriting it only when
# the revision changes, so reports carry the revision samplecheck was built from without running git at run time.
#   -DSOURCE_DIR=<source tree> -DOUTPUT=<build_info.cpp>
set(revision "")
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
  endif()
endif()
set(content "// Generated at build time by cmake/SamplecheckBuildInfo.cmake. Do not edit.
#include \"build_info.h\"

namespace samplecheck::harness {
const char* BuildGitRevision() { return \"${revision}\"; }
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
