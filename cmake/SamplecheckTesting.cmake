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

# Command tests (CLI end-to-end tests, scripts, corpus replays, pytest files) run through cmake/run_test.py, which
# decides the result from the exit code AND the output: ctest's PASS_REGULAR_EXPRESSION alone passes a command that
# printed its pass line and then failed (a pytest run with 2 failed and 75 passed tests passed for months), and
# WILL_FAIL passes any non-zero exit (a usage error, 2, where a finding, 1, was meant). Neither is ever set here;
# tests/testing checks every registered test for that rule and proves the helper with a scratch project.
find_program(SAMPLECHECK_TEST_PYTHON3 NAMES python3 REQUIRED
             DOC "python3 for cmake/run_test.py (standard library only; any python3 >= 3.8)")
set(SAMPLECHECK_RUN_TEST ${CMAKE_CURRENT_LIST_DIR}/run_test.py)
set(SAMPLECHECK_RUN_WITH_PYTHON ${CMAKE_CURRENT_LIST_DIR}/../python/run_with_python.sh)  # MODULES <command...>
set(SAMPLECHECK_RUN_IF_GPU ${CMAKE_CURRENT_LIST_DIR}/run_if_gpu.sh)                         # <command...>

# samplecheck_add_command_test(<name> COMMAND <cmd...> LABELS <labels...>
#                              [EXPECT_EXIT <n>] [PASS_REGEX <re>...] [FAIL_REGEX <re>...]
#                              [SKIP_RETURN_CODE <rc> [SKIP_REGEX <re>]] [TIMEOUT <s>] [ENVIRONMENT <k=v>...])
#   The test passes when the command exits with EXPECT_EXIT (default 0), prints no FAIL_REGEX and prints every
#   PASS_REGEX: Python regular expressions searched in stdout + stderr with re.MULTILINE (^ and $ at every line; .
#   does not cross a line). A test that expects a failure says so: EXPECT_EXIT 1 PASS_REGEX "<the finding's line>".
#   It is skipped when the command exits SKIP_RETURN_CODE and printed a line "SKIPPED: <why>", or (SKIP_REGEX) met
#   the other conditions and printed SKIP_REGEX. A pattern may not hold ';' (CMake splits lists there): write \x3b.
function(samplecheck_add_command_test name)
  cmake_parse_arguments(ARG "WILL_FAIL" "EXPECT_EXIT;SKIP_RETURN_CODE;SKIP_REGEX;TIMEOUT"
                        "COMMAND;LABELS;PASS_REGEX;FAIL_REGEX;ENVIRONMENT" ${ARGN})
  if(ARG_WILL_FAIL)
    message(FATAL_ERROR "samplecheck_add_command_test(${name}): WILL_FAIL passes any non-zero exit; say what failure "
                        "is expected: EXPECT_EXIT 1 PASS_REGEX \"<the finding's line>\"")
  endif()
  if(ARG_UNPARSED_ARGUMENTS)
    message(FATAL_ERROR "samplecheck_add_command_test(${name}): unknown arguments ${ARG_UNPARSED_ARGUMENTS}")
  endif()
  if(NOT ARG_COMMAND OR NOT ARG_LABELS)
    message(FATAL_ERROR "samplecheck_add_command_test(${name}): COMMAND and LABELS are required")
  endif()
  set(expect --expect-exit 0)
  if(DEFINED ARG_EXPECT_EXIT)
    set(expect --expect-exit ${ARG_EXPECT_EXIT})
  endif()
  foreach(re IN LISTS ARG_PASS_REGEX)
    list(APPEND expect --expect "${re}")
  endforeach()
  foreach(re IN LISTS ARG_FAIL_REGEX)
    list(APPEND expect --fail-on "${re}")
  endforeach()
  if(DEFINED ARG_SKIP_RETURN_CODE)
    list(APPEND expect --skip-code ${ARG_SKIP_RETURN_CODE})
    if(DEFINED ARG_SKIP_REGEX)
      list(APPEND expect --skip-if "${ARG_SKIP_REGEX}")
    endif()
  elseif(DEFINED ARG_SKIP_REGEX)
    message(FATAL_ERROR "samplecheck_add_command_test(${name}): SKIP_REGEX needs SKIP_RETURN_CODE")
  endif()
  # add_test runs an executable target named first in COMMAND by its file; behind run_test.py that is spelled out.
  list(GET ARG_COMMAND 0 program)
  if(TARGET ${program})
    list(POP_FRONT ARG_COMMAND)
    list(PREPEND ARG_COMMAND $<TARGET_FILE:${program}>)
  endif()
  add_test(NAME ${name} COMMAND ${SAMPLECHECK_TEST_PYTHON3} ${SAMPLECHECK_RUN_TEST} ${expect} -- ${ARG_COMMAND})
  set_tests_properties(${name} PROPERTIES LABELS "${ARG_LABELS}")
  if(DEFINED ARG_SKIP_RETURN_CODE)
    set_tests_properties(${name} PROPERTIES SKIP_RETURN_CODE ${ARG_SKIP_RETURN_CODE})
  endif()
  if(ARG_TIMEOUT)
    set_tests_properties(${name} PROPERTIES TIMEOUT ${ARG_TIMEOUT})
  endif()
  if(ARG_ENVIRONMENT)
    set_tests_properties(${name} PROPERTIES ENVIRONMENT "${ARG_ENVIRONMENT}")
  endif()
endfunction()

# samplecheck_add_pytest(<name> PATHS <files or folders...> LABELS <labels...> [MODULES <m1,m2>]
#                        [PYTEST_ARGS <args...>] [ENVIRONMENT <k=v>...] [ALL_SKIPPED_IS_SKIP] [TIMEOUT <s>])
#   A pytest run as one ctest test, with a python3 that imports pytest and MODULES (python/run_with_python.sh:
#   skipped, exit 77 with its reason, without one). It passes when pytest exits 0, its summary counts no failed test
#   and no error, and at least one test passed; with ALL_SKIPPED_IS_SKIP a run whose every test skipped itself is
#   reported as skipped (an engine's tests without its source tree), otherwise it fails.
function(samplecheck_add_pytest name)
  cmake_parse_arguments(ARG "ALL_SKIPPED_IS_SKIP" "MODULES;TIMEOUT" "PATHS;LABELS;PYTEST_ARGS;ENVIRONMENT" ${ARGN})
  if(NOT ARG_PATHS OR NOT ARG_LABELS)
    message(FATAL_ERROR "samplecheck_add_pytest(${name}): PATHS and LABELS are required")
  endif()
  set(modules pytest)
  if(ARG_MODULES)
    set(modules "pytest,${ARG_MODULES}")
  endif()
  if(NOT ARG_TIMEOUT)
    set(ARG_TIMEOUT 600)
  endif()
  set(skip_all "")
  if(ARG_ALL_SKIPPED_IS_SKIP)
    # "16 skipped in 0.20s" (pytest -q), deselections allowed, nothing passed, failed or errored.
    set(skip_all SKIP_REGEX "^(=+ )?[0-9]+ skipped(, [0-9]+ deselected)? in [0-9.]+s")
  endif()
  samplecheck_add_command_test(${name}
    COMMAND ${SAMPLECHECK_RUN_WITH_PYTHON} ${modules} env PYTHONDONTWRITEBYTECODE=1 ${ARG_ENVIRONMENT}
            @PY@ -m pytest -p no:cacheprovider -q -rs ${ARG_PYTEST_ARGS} ${ARG_PATHS}
    # pytest -q's summary line: "2 failed, 75 passed, 2 deselected in 3.21s" (= signs around it without -q).
    PASS_REGEX "^(=+ )?([0-9]+ [a-z]+, )*[0-9]+ passed(, [0-9]+ [a-z]+)* in [0-9.]+s"
    FAIL_REGEX "^(=+ )?([0-9]+ [a-z]+, )*[0-9]+ (failed|errors?)(, [0-9]+ [a-z]+)* in [0-9.]+s"
    SKIP_RETURN_CODE 77 ${skip_all}
    LABELS ${ARG_LABELS} TIMEOUT ${ARG_TIMEOUT})
endfunction()
