# Runs the cudaMalloc probe under LD_PRELOAD=libpump.so with bad PUMP_* values and
# checks what the user sees on stderr: each bad value is one line tagged like every
# other message ("pump: warning: ..." / "pump: error: ..."), and the program still
# runs. -DPROBE=<path> -DLIBPUMP=<path>.
include(${CMAKE_CURRENT_LIST_DIR}/preload_list.cmake)
pump_preload_list("${LIBPUMP}" preload)

# (a list: a ";" in a regex is written ".")
# <environment assignment>|<the one line expected on stderr, as a regex>
set(cases
  "PUMP_LOG_LEVEL=bogus|^pump: warning: PUMP_LOG_LEVEL='bogus' is not one of error, warn, info, debug. using warn\n"
  "PUMP_GPU_BUDGET=0|pump: error: PUMP_GPU_BUDGET='0' is below one page \\(4096 bytes\\)"
  "PUMP_GPU_BUDGET=0B|pump: error: PUMP_GPU_BUDGET='0B' is below one page \\(4096 bytes\\)"
  "PUMP_GPU_BUDGET=0.0001|pump: error: PUMP_GPU_BUDGET='0.0001' is below one page \\(4096 bytes\\)"
  "PUMP_GPU_BUDGET=0:8GiB,0:6GiB|pump: error: PUMP_GPU_BUDGET='0:8GiB,0:6GiB' names device 0 twice"
  "PUMP_MANAGED_LIMIT=0:8GiB,1:x|pump: error: PUMP_MANAGED_LIMIT='0:8GiB,1:x' has 'x', which is not a positive size")
foreach(case IN LISTS cases)
  pump_split_case("${case}" assignment expected)
  execute_process(COMMAND ${CMAKE_COMMAND} -E env LD_PRELOAD=${preload} ${assignment} "${PROBE}"
                  OUTPUT_VARIABLE out RESULT_VARIABLE rc ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "${assignment}: the probe failed (rc=${rc}): ${err}")
  endif()
  if(NOT err MATCHES "${expected}")
    message(FATAL_ERROR "${assignment}: expected stderr to match\n  ${expected}\nbut it was:\n${err}")
  endif()
  string(REGEX MATCHALL "\n" newlines "${err}")
  list(LENGTH newlines lines)
  if(NOT lines EQUAL 1)
    message(FATAL_ERROR "${assignment}: expected one line on stderr, got ${lines}:\n${err}")
  endif()
  message(STATUS "${assignment}: ${err}")
endforeach()
