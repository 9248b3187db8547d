# Install and export so that another project can:
#   find_package(samplecheck REQUIRED)
#   target_link_libraries(my_check PRIVATE samplecheck::harness)     # samplers + campaign + report
# The package config finds what the exported targets link: Boost, nlohmann_json, Threads, and the CUDA Toolkit
# when this build has the kernels (samplecheck::kernels links CUDA::cudart_static). tests/package installs into
# a temporary prefix and builds a consumer against it (ctest package_consumer).
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

set(SAMPLECHECK_EXPORTED_TARGETS samplecheck_core samplecheck_stats samplecheck_reference samplecheck_samplers
    samplecheck_suites samplecheck_checks samplecheck_campaign samplecheck_report samplecheck_harness)
set(SAMPLECHECK_PACKAGE_HAS_CUDA OFF)
if(TARGET samplecheck_kernels)
  list(APPEND SAMPLECHECK_EXPORTED_TARGETS samplecheck_kernels)
  set(SAMPLECHECK_PACKAGE_HAS_CUDA ON)
endif()
install(TARGETS ${SAMPLECHECK_EXPORTED_TARGETS} EXPORT samplecheckTargets
        ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
        LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
        INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
foreach(dir core stats reference kernels harness/samplers harness/suites harness/checks harness/campaign harness/report)
  if(EXISTS ${PROJECT_SOURCE_DIR}/${dir}/include AND (NOT dir STREQUAL "kernels" OR SAMPLECHECK_PACKAGE_HAS_CUDA))
    install(DIRECTORY ${PROJECT_SOURCE_DIR}/${dir}/include/ DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
  endif()
endforeach()
if(TARGET samplecheck)
  install(TARGETS samplecheck RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
endif()
install(EXPORT samplecheckTargets NAMESPACE samplecheck:: DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/samplecheck)
configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/samplecheckConfig.cmake.in
  ${PROJECT_BINARY_DIR}/samplecheckConfig.cmake INSTALL_DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/samplecheck)
write_basic_package_version_file(${PROJECT_BINARY_DIR}/samplecheckConfigVersion.cmake COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/samplecheckConfig.cmake ${PROJECT_BINARY_DIR}/samplecheckConfigVersion.cmake
        DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/samplecheck)
