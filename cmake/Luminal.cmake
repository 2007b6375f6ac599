# Shared build helpers: third-party libraries found once, the module table and
# lm_add_module (LmModule.cmake), and one way to declare a test.
include(LmModule)
find_package(PkgConfig REQUIRED)
pkg_check_modules(XXHASH REQUIRED IMPORTED_TARGET libxxhash)
pkg_check_modules(GMP REQUIRED IMPORTED_TARGET gmp) # BigInt and BigRat (egraph/eg_big.c)
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

# lm_add_fuzz(NAME
#   SOURCES f1.c ...          the harness and the sources compiled into it, instrumented
#                             (lm_module_sources gives a module's)
#   [INCLUDES d1 ...]         private include folders
#   [LIBS l1 ...]             libraries linked as they are (not instrumented)
#   SEEDS d1 ...              seed folders, read and never written
#   [OPTIONAL_SEEDS d1 ...]   seed folders read only where they exist (../shared)
#   DICT file                 the libFuzzer dictionary
#   RUNS n                    inputs per ctest run (from seed 1; tests/run_fuzz.sh)
#   [MAX_LEN n]               longest input, bytes (default 8192)
#   [INPUT_TIMEOUT s])        seconds one input may take (default 10)
# Builds the libFuzzer harness NAME (clang, ASan + UBSan), writes NAME.sh beside it, which
# runs it through tests/run_fuzz.sh with these arguments, and registers that as the ctest
# NAME (label fuzz). By hand: `FUZZ_SECONDS=3600 sh <build>/<folder>/NAME.sh` (see
# tests/run_fuzz.sh). Does nothing unless LUMINAL_FUZZ is ON.
function(lm_add_fuzz name)
  if(NOT LUMINAL_FUZZ)
    return()
  endif()
  if(NOT CMAKE_C_COMPILER_ID MATCHES "Clang")
    message(WARNING "${name}: LUMINAL_FUZZ needs clang (CC=clang); harness not built")
    return()
  endif()
  cmake_parse_arguments(F "" "DICT;RUNS;MAX_LEN;INPUT_TIMEOUT"
    "SOURCES;INCLUDES;LIBS;SEEDS;OPTIONAL_SEEDS" ${ARGN})
  if(F_UNPARSED_ARGUMENTS OR NOT F_SOURCES OR NOT F_SEEDS OR NOT F_DICT OR NOT F_RUNS)
    message(FATAL_ERROR "lm_add_fuzz(${name}): SOURCES, SEEDS, DICT and RUNS are required "
                        "(unknown: ${F_UNPARSED_ARGUMENTS})")
  endif()
  if(NOT F_MAX_LEN)
    set(F_MAX_LEN 8192)
  endif()
  if(NOT F_INPUT_TIMEOUT)
    set(F_INPUT_TIMEOUT 10)
  endif()
  add_executable(${name} ${F_SOURCES})
  target_include_directories(${name} PRIVATE ${F_INCLUDES})
  set(flags -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all
      -fno-omit-frame-pointer -g)
  target_compile_options(${name} PRIVATE ${flags})
  target_link_options(${name} PRIVATE -fsanitize=fuzzer,address,undefined)
  target_link_libraries(${name} PRIVATE ${F_LIBS} m)
  set(args "")
  foreach(d IN LISTS F_SEEDS)
    string(APPEND args " '${d}'")
  endforeach()
  foreach(d IN LISTS F_OPTIONAL_SEEDS)
    string(APPEND args " '?${d}'")
  endforeach()
  set(script ${CMAKE_CURRENT_BINARY_DIR}/${name}.sh)
  file(GENERATE OUTPUT ${script}
    CONTENT "#!/bin/sh
# ${name}: the libFuzzer harness, bounded as its ctest (tests/run_fuzz.sh says how to run
# it longer). Written by lm_add_fuzz (cmake/Luminal.cmake); do not edit.
exec sh '${CMAKE_SOURCE_DIR}/tests/run_fuzz.sh' '$<TARGET_FILE:${name}>' \
  '${CMAKE_CURRENT_BINARY_DIR}/${name}.work' ${F_RUNS} \
  -dict='${F_DICT}' -max_len=${F_MAX_LEN} -timeout=${F_INPUT_TIMEOUT}${args}
"
    FILE_PERMISSIONS OWNER_READ OWNER_WRITE OWNER_EXECUTE GROUP_READ GROUP_EXECUTE
                     WORLD_READ WORLD_EXECUTE)
  add_test(NAME ${name} COMMAND sh ${script})
  set_tests_properties(${name} PROPERTIES LABELS fuzz TIMEOUT 300)
endfunction()

# lm_module_sources(VAR module): the module's sources as absolute paths, for a harness
# that compiles them again with instrumentation (so its list never goes stale).
function(lm_module_sources var module)
  get_target_property(sources ${module} SOURCES)
  get_target_property(dir ${module} SOURCE_DIR)
  set(out "")
  foreach(src IN LISTS sources)
    if(IS_ABSOLUTE "${src}")
      list(APPEND out "${src}")
    else()
      list(APPEND out "${dir}/${src}")
    endif()
  endforeach()
  set(${var} ${out} PARENT_SCOPE)
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
