# convfindInstall.cmake - install rules and the exported package: the shared and static
# libraries, the public headers, convfindConfig.cmake (+ version file) and convfind.pc.
# Included once from the top-level CMakeLists.txt after the library targets exist.
# The library's external dependencies come from CONVFIND_DEPENDENCY_PACKAGES (CMake
# package names, found again by convfindConfig.cmake for the static target) and
# CONVFIND_PC_REQUIRES_PRIVATE (pkg-config module names), both set next to the
# find_package() calls in the top-level CMakeLists.txt.
include(CMakePackageConfigHelpers)

set(CONVFIND_INSTALL_CMAKEDIR ${CMAKE_INSTALL_LIBDIR}/cmake/convfind
    CACHE STRING "Where convfindConfig.cmake is installed, relative to the prefix")

install(TARGETS convfind convfind_static
        EXPORT convfindTargets
        LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
        ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
        RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR}
        INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(FILES ${PROJECT_SOURCE_DIR}/include/convfind.h
              ${PROJECT_BINARY_DIR}/include/convfind_version.h
        DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})

install(EXPORT convfindTargets
        NAMESPACE convfind::
        DESTINATION ${CONVFIND_INSTALL_CMAKEDIR})
configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/convfindConfig.cmake.in
                              ${PROJECT_BINARY_DIR}/convfindConfig.cmake
                              INSTALL_DESTINATION ${CONVFIND_INSTALL_CMAKEDIR})
# Semantic versioning: from 1.0.0 on a major version keeps its API; before 1.0.0 any
# minor release may break it, so 0.x only matches its own minor version.
if(PROJECT_VERSION_MAJOR EQUAL 0)
  set(_compat SameMinorVersion)
else()
  set(_compat SameMajorVersion)
endif()
write_basic_package_version_file(${PROJECT_BINARY_DIR}/convfindConfigVersion.cmake
                                 VERSION ${PROJECT_VERSION}
                                 COMPATIBILITY ${_compat})
install(FILES ${PROJECT_BINARY_DIR}/convfindConfig.cmake
              ${PROJECT_BINARY_DIR}/convfindConfigVersion.cmake
        DESTINATION ${CONVFIND_INSTALL_CMAKEDIR})

# convfind.pc locates the prefix relative to itself (${pcfiledir}) so that an install
# with `cmake --install --prefix DIR` is described correctly whatever prefix was
# configured.
set(_pc_dir ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
file(RELATIVE_PATH CONVFIND_PC_TO_PREFIX /prefix/${_pc_dir} /prefix)
string(REGEX REPLACE "/$" "" CONVFIND_PC_TO_PREFIX "${CONVFIND_PC_TO_PREFIX}")
foreach(_kind LIBDIR INCLUDEDIR)
  if(IS_ABSOLUTE "${CMAKE_INSTALL_${_kind}}")
    set(CONVFIND_PC_${_kind} "${CMAKE_INSTALL_${_kind}}")
  else()
    set(CONVFIND_PC_${_kind} "\${prefix}/${CMAKE_INSTALL_${_kind}}")
  endif()
endforeach()
list(JOIN CONVFIND_PC_REQUIRES_PRIVATE " " CONVFIND_PC_REQUIRES_PRIVATE_TEXT)
configure_file(${PROJECT_SOURCE_DIR}/cmake/convfind.pc.in
               ${PROJECT_BINARY_DIR}/convfind.pc @ONLY)
install(FILES ${PROJECT_BINARY_DIR}/convfind.pc DESTINATION ${_pc_dir})
