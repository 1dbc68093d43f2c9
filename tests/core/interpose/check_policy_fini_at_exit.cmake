# Runs dl_probe/dl_resolution_probe under LD_PRELOAD=libpump.so with the fake driver and
# a policy plugin given by path (the fixture "fixture-good", which logs at its fini how
# many kernels it saw), without PUMP_STATS or PUMP_TRACE: the policy's fini must run once,
# at exit, after the probe's launches (on the copy data path, where the probe checks its
# allocation is managed memory). -DPROBE -DLIBPUMP -DFAKE_CUDA_DIR -DSCOPED -DPOLICY.
include(${CMAKE_CURRENT_LIST_DIR}/preload_list.cmake)
pump_preload_list("${LIBPUMP}" preload)
execute_process(
  COMMAND ${CMAKE_COMMAND} -E env LD_PRELOAD=${preload} "LD_LIBRARY_PATH=${FAKE_CUDA_DIR}:$ENV{LD_LIBRARY_PATH}"
          "ASAN_OPTIONS=$ENV{ASAN_OPTIONS}:detect_leaks=0" PUMP_DATAPATH=copy PUMP_POLICY=${POLICY} PUMP_LOG_LEVEL=info
          PUMP_WATCH_WHILE_FITS=1 "${PROBE}" "${SCOPED}"
  OUTPUT_VARIABLE out ERROR_VARIABLE err RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "the probe failed (rc=${rc}):\n${out}${err}")
endif()
string(REGEX MATCHALL "policy fixture-good: fini after [0-9]+ kernels" finis "${err}")
list(LENGTH finis count)
# The probe's copy and its launch (each an access the engine decides) reached the policy before it.
if(NOT count EQUAL 1 OR NOT finis STREQUAL "policy fixture-good: fini after 2 kernels")
  message(FATAL_ERROR "expected the policy's fini once, after the probe's copy and launch; got ${count}: ${finis}\n${err}")
endif()
message(STATUS "${finis}")
