# Runs dl_probe/dl_resolution_probe with "mid-pointer" (its launches: one with a pointer to its
# 1 MiB allocation, one with a pointer 256 KiB into it) under LD_PRELOAD=libpump.so with the fake
# driver as libcuda.so.1, on the copy data path (the probe checks its allocation is managed
# memory) and with PUMP_TRACE: the trace records each pointer as the launch passed it,
# to the end of the block holding it (what a policy sees), not as the block the engine resolved.
# -DPROBE -DLIBPUMP -DFAKE_CUDA_DIR -DSCOPED -DTRACE (a file to write).
include(${CMAKE_CURRENT_LIST_DIR}/preload_list.cmake)
pump_preload_list("${LIBPUMP}" preload)

file(REMOVE "${TRACE}")
execute_process(
  COMMAND ${CMAKE_COMMAND} -E env LD_PRELOAD=${preload} "LD_LIBRARY_PATH=${FAKE_CUDA_DIR}:$ENV{LD_LIBRARY_PATH}"
          "ASAN_OPTIONS=$ENV{ASAN_OPTIONS}:detect_leaks=0" PUMP_DATAPATH=copy PUMP_TRACE=${TRACE} PUMP_LOG_LEVEL=warn
          "${PROBE}" "${SCOPED}"
          mid-pointer
  OUTPUT_VARIABLE out ERROR_VARIABLE err RESULT_VARIABLE rc)
message(STATUS "probe (rc=${rc}):\n${out}${err}")
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "the probe failed (rc=${rc}): see the FAILED lines above")
endif()
file(READ "${TRACE}" trace)
string(REGEX MATCH "\"op\":\"alloc\",\"address\":\"(0x[0-9a-f]+)\",\"bytes\":1048576" found "${trace}")
if(NOT found)
  message(FATAL_ERROR "no 1 MiB allocation in the trace:\n${trace}")
endif()
set(base "${CMAKE_MATCH_1}")
math(EXPR middle "${base} + 262144" OUTPUT_FORMAT HEXADECIMAL)
# The copy split the allocation's first 64 KiB off: the first pointer is that piece's start, the
# second lies 192 KiB into the piece after it (which its record would have started at before).
foreach(expected "{\"address\":\"${base}\",\"bytes\":65536,\"access\":\"rw\",\"role\":\"unknown\",\"inexact\":true}"
                 "{\"address\":\"${middle}\",\"bytes\":786432,\"access\":\"rw\",\"role\":\"unknown\",\"inexact\":true}")
  string(FIND "${trace}" "${expected}" at)
  if(at EQUAL -1)
    message(FATAL_ERROR "the trace has no extent ${expected}:\n${trace}")
  endif()
endforeach()
message(STATUS "a traced launch's pointers are recorded as passed, to the end of their block")
