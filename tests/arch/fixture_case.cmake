# cmake -DROOT=<repo> -DWORK=<dir> -DCASE=<case> -DSTAGE=configure|build
#       -DEXPECT=pass|fail [-DMATCH=<regex>] [-DCC=<compiler>] -P fixture_case.cmake
# Configures (and for STAGE=build, builds) the fixture project (fixture/CMakeLists.txt)
# for one case and checks the outcome: EXPECT=fail must fail at that stage with output
# matching MATCH; EXPECT=pass must succeed.
foreach(v ROOT WORK CASE STAGE EXPECT)
  if(NOT DEFINED ${v})
    message(FATAL_ERROR "fixture_case.cmake: -D${v}= is required")
  endif()
endforeach()
set(bin ${WORK}/${CASE})
file(REMOVE_RECURSE ${bin})
set(cc "")
if(CC)
  set(cc -DCMAKE_C_COMPILER=${CC})
endif()
execute_process(
  COMMAND ${CMAKE_COMMAND} -S ${ROOT}/tests/arch/fixture -B ${bin} -DLUMINAL_ROOT=${ROOT}
          -DARCH_CASE=${CASE} ${cc}
  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE out)
set(stage configure)
if(rc EQUAL 0 AND STAGE STREQUAL "build")
  set(stage build)
  execute_process(COMMAND ${CMAKE_COMMAND} --build ${bin}
                  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE out)
endif()
message("${CASE}: ${stage} exit ${rc}\n${out}")
if(EXPECT STREQUAL "pass")
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "${CASE}: the ${stage} step was expected to succeed")
  endif()
else()
  if(rc EQUAL 0 OR NOT stage STREQUAL STAGE)
    message(FATAL_ERROR "${CASE}: expected to fail at ${STAGE}, but ${stage} exited ${rc}")
  endif()
  if(MATCH AND NOT out MATCHES "${MATCH}")
    message(FATAL_ERROR "${CASE}: failed, but the output does not match '${MATCH}'")
  endif()
endif()
