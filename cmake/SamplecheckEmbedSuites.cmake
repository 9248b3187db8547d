# cmake -DOUTPUT=<file.inc> -DSUITES="<kind>=<file.json>|..." -P SamplecheckEmbedSuites.cmake
# Writes the built-in suites as C++ string literals (harness/suites/src/suite_file.cpp includes the file), so an
# installed samplecheck needs no data files and the literals are never out of step with the .json they come from:
# the build regenerates them whenever a .json changes. <kind> is the SuiteKind enumerator (kSampler, kSpec,
# kReplay); the suite's name is the file's stem.
set(text "// Generated at build time by cmake/SamplecheckEmbedSuites.cmake from harness/suites/data/*.json.\n")
string(APPEND text "constexpr BuiltinSuiteText kBuiltinSuiteTexts[] = {\n")
string(REPLACE "|" ";" SUITES "${SUITES}")
foreach(entry IN LISTS SUITES)
  string(REPLACE "=" ";" parts "${entry}")
  list(GET parts 0 kind)
  list(GET parts 1 file)
  get_filename_component(name "${file}" NAME_WE)
  file(READ "${file}" json)
  string(FIND "${json}" ")sc_suite\"" clash)
  if(NOT clash EQUAL -1)
    message(FATAL_ERROR "${file} holds the raw string delimiter )sc_suite\" and cannot be embedded")
  endif()
  string(APPEND text "    {SuiteKind::${kind}, \"${name}\", R\"sc_suite(${json})sc_suite\"},\n")
endforeach()
string(APPEND text "};\n")
# Rewrite only when the text changed, so that nothing recompiles after an unrelated edit.
if(EXISTS "${OUTPUT}")
  file(READ "${OUTPUT}" old)
  if(old STREQUAL text)
    return()
  endif()
endif()
file(WRITE "${OUTPUT}" "${text}")
