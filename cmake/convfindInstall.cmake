# convfindInstall.cmake - install rules and the exported package: the shared and static
# libraries, the public headers, the CUDA backend module where it is built,
# convfindConfig.cmake (+ version file), convfind.pc and convfind-cuda.pc.
# Included once from the top-level CMakeLists.txt after the library targets exist.
# The library's external dependencies come from CONVFIND_DEPENDENCY_PACKAGES (CMake
# package names, found again by convfindConfig.cmake for the static target) and
# CONVFIND_PC_REQUIRES_PRIVATE (pkg-config module names), both set next to the
# find_package() calls in the top-level CMakeLists.txt.  None of them is a CUDA
# package: the CUDA backend is a module the library loads at run time, which a program
# never links, so the package offers it as the optional component `cuda`
# (convfind::cuda, an imported MODULE target naming the installed file).
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
# The module goes next to libconvfind.so, the first place the library looks for it.
if(TARGET convfind_cuda)
  set_target_properties(convfind_cuda PROPERTIES EXPORT_NAME cuda)
  install(TARGETS convfind_cuda EXPORT convfindCudaTargets
          LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR})
  install(EXPORT convfindCudaTargets
          NAMESPACE convfind::
          DESTINATION ${CONVFIND_INSTALL_CMAKEDIR})
endif()
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
set(CONVFIND_PC_LIBS_PRIVATE -lpthread -lm)
foreach(_lib ${CMAKE_DL_LIBS})
  list(APPEND CONVFIND_PC_LIBS_PRIVATE -l${_lib})
endforeach()
list(JOIN CONVFIND_PC_LIBS_PRIVATE " " CONVFIND_PC_LIBS_PRIVATE_TEXT)
configure_file(${PROJECT_SOURCE_DIR}/cmake/convfind.pc.in
               ${PROJECT_BINARY_DIR}/convfind.pc @ONLY)
install(FILES ${PROJECT_BINARY_DIR}/convfind.pc DESTINATION ${_pc_dir})
if(TARGET convfind_cuda)
  configure_file(${PROJECT_SOURCE_DIR}/cmake/convfind-cuda.pc.in
                 ${PROJECT_BINARY_DIR}/convfind-cuda.pc @ONLY)
  install(FILES ${PROJECT_BINARY_DIR}/convfind-cuda.pc DESTINATION ${_pc_dir})
endif()

# convfind_install_cli_docs(TARGET): the tool's man pages (convfind.1 and one
# convfind-COMMAND.1 per command) and its bash completion script, made by running the
# built tool (`convfind help --man`, `--bash-completion`; cmake/convfindCliDocs.cmake), so
# they say exactly what its help says.  Installed to man1 and to bash-completion's
# completions directory.  Called from tools/CMakeLists.txt once the tool exists.
function(convfind_install_cli_docs target)
  set(_dir ${CMAKE_CURRENT_BINARY_DIR}/cli-docs)
  add_custom_command(
    OUTPUT ${_dir}/convfind.1 ${_dir}/convfind.bash
    COMMAND ${CMAKE_COMMAND} -DTOOL=$<TARGET_FILE:${target}> -DDIR=${_dir}
            -P ${PROJECT_SOURCE_DIR}/cmake/convfindCliDocs.cmake
    DEPENDS ${target} ${PROJECT_SOURCE_DIR}/cmake/convfindCliDocs.cmake
    COMMENT "Generating the convfind man pages and bash completion")
  add_custom_target(${target}_docs ALL DEPENDS ${_dir}/convfind.1 ${_dir}/convfind.bash)
  install(DIRECTORY ${_dir}/ DESTINATION ${CMAKE_INSTALL_MANDIR}/man1
          FILES_MATCHING PATTERN "*.1")
  install(FILES ${_dir}/convfind.bash
          DESTINATION ${CMAKE_INSTALL_DATADIR}/bash-completion/completions RENAME convfind)
endfunction()
