# SPDX-License-Identifier: Apache-2.0
# Turns a source file into a C++ header holding it as one string constant, so that the preload
# library can write it out and compile it where it runs. Run as
#   cmake -DINPUT=file.cpp -DOUTPUT=header.h -DNAME=kConstant -P embed_source.cmake
set(delimiter "gmtsource")
file(READ "${INPUT}" text)
string(FIND "${text}" ")${delimiter}\"" clash)
if(NOT clash EQUAL -1)
  message(FATAL_ERROR "${INPUT} contains the raw string delimiter )${delimiter}\"")
endif()
file(WRITE "${OUTPUT}.tmp"
     "// Generated from ${INPUT} by embed_source.cmake.\n#pragma once\n\n"
     "inline constexpr const char ${NAME}[] = R\"${delimiter}(${text})${delimiter}\";\n")
file(RENAME "${OUTPUT}.tmp" "${OUTPUT}")
