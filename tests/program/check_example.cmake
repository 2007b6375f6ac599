# cmake -DRUN=<program_run> -DDIR=<saved program> -DN=<n> -DSEED=<seed> -P check_example.cmake
# Runs the example on the CPU backend and compares its output lines with DIR/expected.txt
# (llir's executor on the same seeded inputs); the first line must say it runs on the CPU.
execute_process(COMMAND ${RUN} --cpu --seed ${SEED} --dim n=${N} ${DIR}
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE errout)
message("${out}${errout}")
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "program_run failed (exit ${rc})")
endif()
if(NOT out MATCHES "^program 'example': CPU: ")
  message(FATAL_ERROR "the first line does not say the program runs on the CPU")
endif()
if(NOT out MATCHES "dims: n=${N}\n")
  message(FATAL_ERROR "the dims line does not say n=${N}")
endif()
string(REGEX MATCHALL "output [^\n]*\n" got "${out}")
string(REPLACE ";" "" got "${got}")
file(READ ${DIR}/expected.txt want)
if(NOT got STREQUAL want)
  message(FATAL_ERROR "the outputs differ from llir's executor:\n got: ${got}\nwant: ${want}")
endif()
message("ok: the example's checksums equal llir's executor's")
