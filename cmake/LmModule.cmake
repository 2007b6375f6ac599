# LmModule.cmake - the architecture's module table and the one way to declare a module.
#
# The table says which module may use which; docs/architecture.md shows the same table
# in prose (a test compares the two). lm_add_module refuses, at configure time, a module
# that is not in the table or that names a dependency the table does not allow, and it
# puts only a module's public headers on its dependents' include path: the public
# headers are linked into <build>/lm_include/<module>/, which is the module's PUBLIC
# include folder, while the module's own folder (with its private headers) is PRIVATE.

set(LM_MODULES base egraph hlir llir session fuzz codegen cuda_rt program search)
set(LM_USES_base "")
set(LM_USES_egraph base)
set(LM_USES_hlir base egraph)
set(LM_USES_llir base egraph hlir)
set(LM_USES_session base egraph hlir llir)
set(LM_USES_fuzz base hlir llir session)
set(LM_USES_codegen base hlir llir)
set(LM_USES_cuda_rt base)
set(LM_USES_program base hlir llir codegen cuda_rt)
set(LM_USES_search base egraph hlir llir session codegen cuda_rt program)

# lm_add_module(NAME
#   SOURCES f1.c ...            the module's sources (paths relative to its folder)
#   HEADERS name.h ...          its public headers (the only ones dependents can include)
#   DEPS m1 ...                 modules it uses in its sources only (linked PRIVATE)
#   PUBLIC_DEPS m1 ...          modules its public headers include (linked PUBLIC)
#   LIBS l1 ...                 third-party libraries used privately
#   PUBLIC_LIBS l1 ...          third-party libraries its public headers need
#   PRIVATE_INCLUDES d1 ...)    extra private include folders (subfolders of the module)
function(lm_add_module name)
  cmake_parse_arguments(M "" ""
    "SOURCES;HEADERS;DEPS;PUBLIC_DEPS;LIBS;PUBLIC_LIBS;PRIVATE_INCLUDES" ${ARGN})
  if(M_UNPARSED_ARGUMENTS)
    message(FATAL_ERROR "lm_add_module(${name}): unknown arguments ${M_UNPARSED_ARGUMENTS}")
  endif()
  if(NOT DEFINED LM_USES_${name})
    message(FATAL_ERROR "module '${name}' is not in the architecture's module table "
                        "(cmake/LmModule.cmake, docs/architecture.md); add it there first")
  endif()
  foreach(dep IN LISTS M_DEPS M_PUBLIC_DEPS)
    list(FIND LM_USES_${name} ${dep} found)
    if(found EQUAL -1)
      if("${LM_USES_${name}}" STREQUAL "")
        set(allowed "nothing")
      else()
        string(REPLACE ";" ", " allowed "${LM_USES_${name}}")
      endif()
      message(FATAL_ERROR "module '${name}' may not use '${dep}': the architecture "
                          "(docs/architecture.md) lets it use ${allowed}")
    endif()
  endforeach()
  if(NOT M_HEADERS)
    message(FATAL_ERROR "lm_add_module(${name}): a module has at least one public header")
  endif()

  add_library(${name} STATIC ${M_SOURCES})
  set(inc ${CMAKE_BINARY_DIR}/lm_include/${name})
  file(MAKE_DIRECTORY ${inc})
  foreach(h IN LISTS M_HEADERS)
    get_filename_component(base ${h} NAME)
    get_filename_component(abs ${h} ABSOLUTE BASE_DIR ${CMAKE_CURRENT_SOURCE_DIR})
    if(NOT EXISTS ${abs})
      message(FATAL_ERROR "lm_add_module(${name}): public header ${h} does not exist")
    endif()
    file(CREATE_LINK ${abs} ${inc}/${base} SYMBOLIC)
  endforeach()
  target_include_directories(${name} PUBLIC ${inc}
    PRIVATE ${CMAKE_CURRENT_SOURCE_DIR} ${M_PRIVATE_INCLUDES})
  target_link_libraries(${name} PRIVATE ${M_DEPS} ${M_LIBS}
                                PUBLIC ${M_PUBLIC_DEPS} ${M_PUBLIC_LIBS})
  set_property(GLOBAL APPEND PROPERTY LM_BUILT_MODULES ${name})
endfunction()
