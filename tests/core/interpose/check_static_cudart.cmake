# Runs tests/gpu/static_cudart_probe (built with nvcc's default static CUDA runtime)
# against the fake driver as libcuda.so.1, natively and under LD_PRELOAD=libpump.so
# (PUMP_LOG_LEVEL=debug), and checks that the static runtime's driver functions are
# pump's hooks: it took cuGetProcAddress from libcuda's handle and got pump's, and the
# entry points it then asked for (allocation, copies, launches) are pump's. The fake
# driver cannot run a CUDA runtime to the end: the runtime then needs the driver's
# private export tables (cuGetExportTable), which no public header describes, so its
# first call fails here, the same way with and without pump (same output, no pump error).
# What the hooks do with the calls is checked on a GPU (tests/gpu/static_cudart_check.sh).
# -DPROBE -DLIBPUMP -DFAKE_CUDA_DIR.
include(${CMAKE_CURRENT_LIST_DIR}/preload_list.cmake)
pump_preload_list("${LIBPUMP}" preload)
set(path "LD_LIBRARY_PATH=${FAKE_CUDA_DIR}:$ENV{LD_LIBRARY_PATH}")
execute_process(COMMAND ${CMAKE_COMMAND} -E env ${path} "${PROBE}"
                OUTPUT_VARIABLE native RESULT_VARIABLE native_rc ERROR_VARIABLE native_err)
execute_process(COMMAND ${CMAKE_COMMAND} -E env LD_PRELOAD=${preload} ${path} PUMP_LOG_LEVEL=debug "${PROBE}"
                OUTPUT_VARIABLE preloaded RESULT_VARIABLE preloaded_rc ERROR_VARIABLE log)
message(STATUS "native:    rc=${native_rc} ${native}")
message(STATUS "preloaded: rc=${preloaded_rc} ${preloaded}")
if(NOT native_rc EQUAL 0 OR NOT preloaded_rc EQUAL 0)
  message(FATAL_ERROR "the probe failed (native rc=${native_rc}, preloaded rc=${preloaded_rc}):\n${native_err}\n${log}")
endif()
if(NOT native STREQUAL preloaded)
  message(FATAL_ERROR "libpump.so changed what the program printed:\n native:    ${native}\n preloaded: ${preloaded}")
endif()
if(log MATCHES "pump: error[^\n]*")
  message(FATAL_ERROR "pump printed an error into a program that is fine: ${CMAKE_MATCH_0}")
endif()
foreach(expected
    "dlsym cuGetProcAddress_v2 in [^\n]*/libcuda\\.so\\.1 -> hook"
    "entry point cuGetProcAddress \\(version 12000, flags 0x0\\) -> hook cuGetProcAddress_v2"
    "entry point cuMemAlloc \\(version 3020, flags 0x0\\) -> hook cuMemAlloc_v2"
    "entry point cuMemFree \\(version 3020, flags 0x0\\) -> hook cuMemFree_v2"
    "entry point cuMemcpyHtoD \\(version 3020, flags 0x0\\) -> hook cuMemcpyHtoD_v2"
    "entry point cuMemcpyDtoH \\(version 3020, flags 0x0\\) -> hook cuMemcpyDtoH_v2"
    "entry point cuLaunchKernel \\(version 4000, flags 0x0\\) -> hook cuLaunchKernel")
  if(NOT log MATCHES "${expected}")
    message(FATAL_ERROR "expected pump's debug log to match\n  ${expected}\nbut it was:\n${log}")
  endif()
endforeach()
message(STATUS "the static CUDA runtime's driver entry points are pump's hooks")
