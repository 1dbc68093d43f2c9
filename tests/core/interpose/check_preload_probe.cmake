# Runs the cudaMalloc probe natively and under LD_PRELOAD=libpump.so; both must exit 0
# and print the same results. -DPROBE=<path> -DLIBPUMP=<path>.
execute_process(COMMAND "${PROBE}" OUTPUT_VARIABLE native RESULT_VARIABLE native_rc ERROR_VARIABLE native_err)
include(${CMAKE_CURRENT_LIST_DIR}/preload_list.cmake)
pump_preload_list("${LIBPUMP}" preload)
execute_process(COMMAND ${CMAKE_COMMAND} -E env LD_PRELOAD=${preload} PUMP_MANAGED_LIMIT=1GiB "${PROBE}"
                OUTPUT_VARIABLE preloaded RESULT_VARIABLE preloaded_rc ERROR_VARIABLE preloaded_err)
message(STATUS "native:    rc=${native_rc} ${native}")
message(STATUS "preloaded: rc=${preloaded_rc} ${preloaded}${preloaded_err}")
if(NOT native_rc EQUAL 0 OR NOT preloaded_rc EQUAL 0)
  message(FATAL_ERROR "the probe failed (native rc=${native_rc}, preloaded rc=${preloaded_rc})")
endif()
if(NOT native STREQUAL preloaded)
  message(FATAL_ERROR "libpump.so changed what cudaMalloc returned:\n native:    ${native}\n preloaded: ${preloaded}")
endif()
