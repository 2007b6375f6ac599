# Shared build helpers: third-party libraries found once, the module table and
# lm_add_module (LmModule.cmake), and one way to declare a test.
include(LmModule)
find_package(PkgConfig REQUIRED)
pkg_check_modules(XXHASH REQUIRED IMPORTED_TARGET libxxhash)
pkg_check_modules(JANSSON REQUIRED IMPORTED_TARGET jansson)
find_package(mimalloc CONFIG QUIET)
if(LUMINAL_TESTS)
  pkg_check_modules(CHECK REQUIRED IMPORTED_TARGET check)
endif()

# The folder that holds egglog's conformance programs, beside the repository. Tests that
# need it are skipped (exit 77, reported as skipped, never passed) where it is missing;
# LUMINAL_SHARED_DIR in a test's environment overrides it. A script test runs through
# tests/common/need_shared.sh, a Check program through lm_check_require_dir.
set(LUMINAL_SHARED_DIR "${CMAKE_SOURCE_DIR}/../shared" CACHE PATH
    "Shared material (conformance programs); tests that need it are skipped when absent")
set(LUMINAL_NEED_SHARED ${CMAKE_SOURCE_DIR}/tests/common/need_shared.sh)

# lm_add_check_test(NAME LABELS l1 [l2...] SOURCES f1.c [...] LIBS lib1 [...]
#                   [INTERNALS module ...] [TIMEOUT s] [ENV VAR=value ...])
# Builds a Check test program and registers it with ctest under the given labels. The
# program defines its suites in a NULL-terminated table, lm_check_suites, and gets its
# main() from tests/common (lm_check.h says how; every program shares that one main).
# A program that cannot run its checks exits 77, which ctest reports as skipped
# (SKIP_RETURN_CODE 77), never as passed. ENV adds to the test's environment
# (CK_FORK=yes and CK_DEFAULT_TIMEOUT=120 are always set).
# Does nothing when LUMINAL_TESTS is OFF (the fuzz build), so test folders can hold both.
function(lm_add_check_test name)
  if(NOT LUMINAL_TESTS)
    return()
  endif()
  cmake_parse_arguments(T "" "TIMEOUT" "LABELS;SOURCES;LIBS;INTERNALS;ENV" ${ARGN})
  if(T_UNPARSED_ARGUMENTS)
    message(FATAL_ERROR "lm_add_check_test(${name}): unknown arguments ${T_UNPARSED_ARGUMENTS}")
  endif()
  add_executable(${name} ${T_SOURCES})
  target_link_libraries(${name} PRIVATE ${T_LIBS} lm_check PkgConfig::CHECK m)
  # White-box tests may read the private headers of the modules they name in INTERNALS.
  foreach(m IN LISTS T_INTERNALS)
    target_include_directories(${name} PRIVATE ${CMAKE_SOURCE_DIR}/${m})
  endforeach()
  target_compile_definitions(${name} PRIVATE
    LUMINAL_SOURCE_DIR="${CMAKE_SOURCE_DIR}"
    LUMINAL_SHARED_DIR="${LUMINAL_SHARED_DIR}")
  add_test(NAME ${name} COMMAND ${name})
  set(env CK_DEFAULT_TIMEOUT=120 CK_FORK=yes ${T_ENV})
  set_tests_properties(${name} PROPERTIES LABELS "${T_LABELS}" SKIP_RETURN_CODE 77
    ENVIRONMENT "${env}")
  if(T_TIMEOUT)
    set_tests_properties(${name} PROPERTIES TIMEOUT ${T_TIMEOUT})
  endif()
endfunction()

# lm_add_subdirs(): add every direct subfolder that has a CMakeLists.txt, in name order.
function(lm_add_subdirs)
  file(GLOB children RELATIVE ${CMAKE_CURRENT_SOURCE_DIR} ${CMAKE_CURRENT_SOURCE_DIR}/*)
  list(SORT children)
  foreach(child ${children})
    if(IS_DIRECTORY ${CMAKE_CURRENT_SOURCE_DIR}/${child}
       AND EXISTS ${CMAKE_CURRENT_SOURCE_DIR}/${child}/CMakeLists.txt)
      add_subdirectory(${child})
    endif()
  endforeach()
endfunction()
