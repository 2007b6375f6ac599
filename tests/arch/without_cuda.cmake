# cmake -DROOT=<repo> -DWORK=<dir> [-DCC=<compiler>] [-DSHARED=<dir>] -P without_cuda.cmake
# Configures the whole repository with the CUDA headers hidden
# (-DLUMINAL_CUDA_INCLUDE=/nonexistent) and checks that the configure step succeeds and
# says what it leaves out, that the cuda_rt tests are not registered while the others
# are, and that the engine, the HLIR and the tools build (only those targets, at -O0, to
# keep it quick), and program with its CPU backend only (saying so) and its example.
foreach(v ROOT WORK)
  if(NOT DEFINED ${v})
    message(FATAL_ERROR "without_cuda.cmake: -D${v}= is required")
  endif()
endforeach()
set(args -S ${ROOT} -B ${WORK} -DLUMINAL_CUDA_INCLUDE=/nonexistent -DCMAKE_BUILD_TYPE=Debug
         -DCMAKE_C_FLAGS_DEBUG=-O0 -DLUMINAL_TESTS=ON -DLUMINAL_WERROR=ON)
if(CC)
  list(APPEND args -DCMAKE_C_COMPILER=${CC})
endif()
if(SHARED)
  list(APPEND args -DLUMINAL_SHARED_DIR=${SHARED})
endif()
execute_process(COMMAND ${CMAKE_COMMAND} ${args}
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE out)
message("configure: exit ${rc}\n${out}")
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "configuring without the CUDA headers failed")
endif()
foreach(want "cuda_rt LEFT OUT: the CUDA toolkit headers \\(cuda.h, nvrtc.h, cublasLt.h\\)"
             "luminal modules built: base egraph hlir[a-z_ ]*; left out: [a-z_ ]*cuda_rt")
  if(NOT out MATCHES "${want}")
    message(FATAL_ERROR "the configure output does not say '${want}'")
  endif()
endforeach()

# program builds without cuda_rt on its CPU backend only, and says so
set(targets egraph hlir eqsat luminal_search)
if(EXISTS ${ROOT}/program/CMakeLists.txt)
  if(NOT out MATCHES "program: CPU backend only \\(cuda_rt is left out")
    message(FATAL_ERROR "the configure output does not say that program is CPU-only")
  endif()
  list(APPEND targets program program_run)
endif()

execute_process(COMMAND ${CMAKE_CTEST_COMMAND} --test-dir ${WORK} -N
                RESULT_VARIABLE rc OUTPUT_VARIABLE tests ERROR_VARIABLE tests)
if(tests MATCHES "test_cuda_rt" OR tests MATCHES "test_program ")
  message(FATAL_ERROR "cuda_rt tests are registered without the CUDA headers:\n${tests}")
endif()
foreach(want egraph_unit hlir_expr luminal_search_cli)
  if(NOT tests MATCHES "${want}")
    message(FATAL_ERROR "test ${want} is missing without the CUDA headers:\n${tests}")
  endif()
endforeach()

execute_process(COMMAND ${CMAKE_COMMAND} --build ${WORK} -j 2
                        --target ${targets}
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE out)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "building egraph, hlir and the tools without the CUDA headers "
                      "failed:\n${out}")
endif()
string(REPLACE ";" ", " targets "${targets}")
message("ok: without the CUDA headers cuda_rt is left out, saying so; ${targets} build")
