# LmInstall.cmake - what `cmake --install BUILD --prefix P` puts under P (docs/python.md,
# "The C library"):
#
#   lib/libluminal.so.X.Y.Z, lib/libluminal.a   the engine, the compiler and the program
#                                               runtime with the C API (lib/CMakeLists.txt)
#   include/luminal/{base,egraph,program,search,luminal}.h   the public headers
#   lib/pkgconfig/luminal.pc                    pkg-config (Cflags, Libs; --static adds
#                                               jansson, libxxhash, gmp, mimalloc, pthread, dl, m)
#   lib/cmake/luminal/                          find_package(luminal): luminal::luminal
#                                               (shared) and luminal::luminal_static
#   bin/luminal_search, bin/luminal_run, bin/eqsat
#
# The files are relocatable: the .pc finds its prefix from its own folder, the CMake
# package from its own. tests/install installs into a temporary prefix and builds
# examples/embed and examples/program against it, with each.
if(NOT TARGET luminal_shared)
  return()
endif()
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

set_target_properties(luminal_shared PROPERTIES EXPORT_NAME luminal)
set_target_properties(luminal_static PROPERTIES EXPORT_NAME luminal_static)
foreach(t luminal_shared luminal_static)
  target_include_directories(${t} INTERFACE
    $<INSTALL_INTERFACE:${CMAKE_INSTALL_INCLUDEDIR}/luminal>)
endforeach()
install(TARGETS luminal_shared luminal_static EXPORT luminalTargets
  LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
  ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
  RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
install(FILES ${LU_PUBLIC_HEADERS} DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/luminal)
foreach(t luminal_search luminal_run eqsat)
  if(TARGET ${t})
    install(TARGETS ${t} RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
  endif()
endforeach()

set(LU_CONFIG_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/luminal)
install(EXPORT luminalTargets NAMESPACE luminal:: DESTINATION ${LU_CONFIG_DIR})
configure_package_config_file(${CMAKE_SOURCE_DIR}/cmake/install/luminalConfig.cmake.in
  ${CMAKE_BINARY_DIR}/luminalConfig.cmake INSTALL_DESTINATION ${LU_CONFIG_DIR})
write_basic_package_version_file(${CMAKE_BINARY_DIR}/luminalConfigVersion.cmake
  VERSION ${PROJECT_VERSION} COMPATIBILITY SameMinorVersion)
install(FILES ${CMAKE_BINARY_DIR}/luminalConfig.cmake
              ${CMAKE_BINARY_DIR}/luminalConfigVersion.cmake DESTINATION ${LU_CONFIG_DIR})

if(LU_USE_MIMALLOC)
  set(LU_PC_MIMALLOC "-lmimalloc ")
else()
  set(LU_PC_MIMALLOC "")
endif()
file(RELATIVE_PATH LU_PC_UP ${CMAKE_INSTALL_PREFIX}/${CMAKE_INSTALL_LIBDIR}/pkgconfig
     ${CMAKE_INSTALL_PREFIX})
string(REGEX REPLACE "/$" "" LU_PC_UP "${LU_PC_UP}")
configure_file(${CMAKE_SOURCE_DIR}/cmake/install/luminal.pc.in
               ${CMAKE_BINARY_DIR}/luminal.pc @ONLY)
install(FILES ${CMAKE_BINARY_DIR}/luminal.pc
        DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
