# hl_embed.cmake - embeds text files in C as NUL-terminated byte arrays, at build
# time (cmake -P; no other tool needed):
#
#   cmake -DOUT=<file.c> -DHEADER=<include> -DINPUTS=<a;b> -DSYMBOLS=<sym_a;sym_b> -P hl_embed.cmake
#
# Each input becomes `const unsigned char SYMBOL[] = {0x.., ..., 0x00};`: bytes, not a string
# literal, so no length limit applies (C17 promises literals of 4095 characters) and the
# text needs no escaping. The file is rewritten only when its content changes.
cmake_minimum_required(VERSION 3.20)
foreach(var OUT HEADER INPUTS SYMBOLS)
  if(NOT DEFINED ${var})
    message(FATAL_ERROR "hl_embed.cmake: -D${var}=... is required")
  endif()
endforeach()
list(LENGTH INPUTS n_in)
list(LENGTH SYMBOLS n_sym)
if(NOT n_in EQUAL n_sym)
  message(FATAL_ERROR "hl_embed.cmake: ${n_in} inputs but ${n_sym} symbols")
endif()
set(text "/* Generated at build time by hlir/encode/hl_embed.cmake from the files named below;\n")
string(APPEND text " * do not edit: edit those files. */\n#include \"${HEADER}\"\n")
math(EXPR last "${n_in} - 1")
foreach(i RANGE ${last})
  list(GET INPUTS ${i} in)
  list(GET SYMBOLS ${i} sym)
  file(READ ${in} hex HEX)
  string(LENGTH "${hex}" nhex)
  math(EXPR nbytes "${nhex} / 2")
  # 16 bytes a line: "0x3b, 0x20, ..."
  string(REGEX REPLACE "([0-9a-f][0-9a-f])" "0x\\1, " bytes "${hex}")
  string(REPEAT "0x[0-9a-f][0-9a-f], " 16 line) # CMake's regexes have no {16}
  string(REGEX REPLACE "(${line})" "\\1\n    " bytes "${bytes}")
  get_filename_component(name ${in} NAME)
  string(APPEND text "\n/* ${name}: ${nbytes} bytes and a NUL */\n")
  string(APPEND text "const unsigned char ${sym}[] = {\n    ${bytes}0x00};\n")
endforeach()
if(EXISTS ${OUT})
  file(READ ${OUT} old)
  if(old STREQUAL text)
    return()
  endif()
endif()
file(WRITE ${OUT} "${text}")
