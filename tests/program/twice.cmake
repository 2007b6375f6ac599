# cmake -DMAKER=<test_program_example_make> -DWORK=<dir> -P twice.cmake
# Saves the example program in two fresh processes and compares every file byte for byte
# (determinism: the same plan and LLIR give the same program directory).
foreach(run a b)
  file(REMOVE_RECURSE ${WORK}/${run})
  execute_process(COMMAND ${CMAKE_COMMAND} -E env PG_EXAMPLE_DIR=${WORK}/${run} PG_EXAMPLE_N=9
                          PG_EXAMPLE_SEED=3 CK_FORK=no ${MAKER}
                  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE out)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "saving run ${run} failed:\n${out}")
  endif()
endforeach()
file(GLOB_RECURSE files RELATIVE ${WORK}/a ${WORK}/a/*)
list(LENGTH files n)
if(n LESS 4)
  message(FATAL_ERROR "only ${n} files saved: ${files}")
endif()
foreach(f IN LISTS files)
  file(SHA256 ${WORK}/a/${f} ha)
  if(NOT EXISTS ${WORK}/b/${f})
    message(FATAL_ERROR "${f} is missing from the second run")
  endif()
  file(SHA256 ${WORK}/b/${f} hb)
  if(NOT ha STREQUAL hb)
    message(FATAL_ERROR "${f} differs between two runs")
  endif()
endforeach()
message("ok: two processes saved the same ${n} files")
