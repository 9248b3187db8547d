# Install and export so that another project can:
#   find_package(samplecheck REQUIRED)
#   target_link_libraries(my_check PRIVATE samplecheck::harness)
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

set(SAMPLECHECK_EXPORTED_TARGETS samplecheck_stats samplecheck_reference samplecheck_harness)
if(TARGET samplecheck_kernels)
  list(APPEND SAMPLECHECK_EXPORTED_TARGETS samplecheck_kernels)
endif()
install(TARGETS ${SAMPLECHECK_EXPORTED_TARGETS} EXPORT samplecheckTargets
        ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
        LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
        INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
foreach(dir stats reference harness kernels)
  if(EXISTS ${PROJECT_SOURCE_DIR}/${dir}/include)
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
