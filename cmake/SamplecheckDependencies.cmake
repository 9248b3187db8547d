# All dependencies come from Debian packages (scripts/setup installs them). Nothing is downloaded here.
find_package(Boost 1.74 REQUIRED)                 # Boost.Math is header-only
find_package(nlohmann_json 3.10 REQUIRED)
find_package(CLI11 REQUIRED)
find_package(Threads REQUIRED)
find_package(rapidcheck REQUIRED)                 # properties/ (a library of every build: `samplecheck properties`)
if(SAMPLECHECK_BUILD_TESTS)
  find_package(GTest REQUIRED)
endif()
if(SAMPLECHECK_BUILD_BENCH)
  find_package(benchmark REQUIRED)
endif()
