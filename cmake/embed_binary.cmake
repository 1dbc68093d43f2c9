# cmake -DINPUT=file -DOUTPUT=header -DNAME=symbol -P embed_binary.cmake
# Writes `static const unsigned char NAME[] = {...};` with the bytes of INPUT.
file(READ "${INPUT}" hex HEX)
string(LENGTH "${hex}" length)
math(EXPR bytes "${length} / 2")
string(REGEX REPLACE "([0-9a-f][0-9a-f])" "0x\\1," body "${hex}")
string(REGEX REPLACE "(0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,)" "\\1\n" body "${body}")
file(WRITE "${OUTPUT}" "// Generated from ${INPUT} by cmake/embed_binary.cmake: do not edit.\n#pragma once\n#include <cstddef>\nalignas(8) static const unsigned char ${NAME}[] = {\n${body}\n};\nstatic const size_t ${NAME}_size = ${bytes};\n")
