# The test helper as it stood at cf64453, before issue 40 (kept as a fixture: tests/testing/helper_meta_test.py must
# report it wrong). Not used by the build.
# Test registration shared by every folder. Labels (ctest -L): unit, property, stats, gpu, fuzz, engine, slow.
#
# samplecheck_add_gtest(<name> SOURCES <files...> [LIBS <targets...>] LABELS <labels...> [TIMEOUT <s>])
#   Builds a GoogleTest program and registers each of its tests with ctest (gtest_discover_tests). A test that
#   calls GTEST_SKIP() is reported by ctest as "Skipped" (never "Passed"), e.g. gpu tests on a machine without a GPU.
#   Test names are prefixed with <name>. so `ctest -R reference_test.` selects one program.
include(GoogleTest)

# Every gtest-based test is reported as skipped when GoogleTest printed its skip marker.
set(SAMPLECHECK_GTEST_SKIP_REGEX "\\[  SKIPPED \\]")

function(samplecheck_add_gtest name)
  cmake_parse_arguments(ARG "" "TIMEOUT" "SOURCES;LIBS;LABELS" ${ARGN})
  if(NOT ARG_LABELS)
    message(FATAL_ERROR "samplecheck_add_gtest(${name}): LABELS is required (unit, property, stats, gpu, fuzz, slow)")
  endif()
  if(NOT ARG_TIMEOUT)
    set(ARG_TIMEOUT 600)
  endif()
  add_executable(${name} ${ARG_SOURCES})
  target_link_libraries(${name} PRIVATE ${ARG_LIBS} GTest::gtest GTest::gtest_main Threads::Threads)
  samplecheck_warnings(${name})
  gtest_discover_tests(${name}
    TEST_PREFIX "${name}."
    DISCOVERY_TIMEOUT 60
    PROPERTIES LABELS "${ARG_LABELS}" TIMEOUT ${ARG_TIMEOUT}
               SKIP_REGULAR_EXPRESSION "${SAMPLECHECK_GTEST_SKIP_REGEX}")
endfunction()

# samplecheck_add_command_test(<name> COMMAND <cmd...> LABELS <labels...> [WILL_FAIL] [PASS_REGEX <re>]
#                              [SKIP_RETURN_CODE <rc>])
#   A plain command as a ctest test (CLI end-to-end tests, corpus replays).
function(samplecheck_add_command_test name)
  cmake_parse_arguments(ARG "WILL_FAIL" "PASS_REGEX;SKIP_RETURN_CODE;TIMEOUT" "COMMAND;LABELS" ${ARGN})
  add_test(NAME ${name} COMMAND ${ARG_COMMAND})
  set_tests_properties(${name} PROPERTIES LABELS "${ARG_LABELS}")
  if(ARG_WILL_FAIL)
    set_tests_properties(${name} PROPERTIES WILL_FAIL TRUE)
  endif()
  if(ARG_PASS_REGEX)
    set_tests_properties(${name} PROPERTIES PASS_REGULAR_EXPRESSION "${ARG_PASS_REGEX}")
  endif()
  if(ARG_SKIP_RETURN_CODE)
    set_tests_properties(${name} PROPERTIES SKIP_RETURN_CODE ${ARG_SKIP_RETURN_CODE})
  endif()
  if(ARG_TIMEOUT)
    set_tests_properties(${name} PROPERTIES TIMEOUT ${ARG_TIMEOUT})
  endif()
endfunction()
