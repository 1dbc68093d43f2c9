# Runs dl_probe/dl_resolution_probe (one managed allocation, a copy into it, a launch with a
# pointer to it) under LD_PRELOAD=libpump.so with the fake driver as libcuda.so.1, twice:
# (1) the budget is the device's memory: everything fits, so the copy and the launch pass
# by the engine (fits_gate.h): counted as passed, no kernel decided; (2) a budget below the
# allocation: the engine sees both calls (the launch's block known), none passes.
# On the copy data path (PUMP_DATAPATH=copy): the probe checks that its allocation is managed
# memory (physical_alloc_hooks_fake_driver_test covers the default, vmm).
# -DPROBE -DLIBPUMP -DFAKE_CUDA_DIR -DSCOPED -DSTATS (a file to write).
include(${CMAKE_CURRENT_LIST_DIR}/preload_list.cmake)
pump_preload_list("${LIBPUMP}" preload)

function(run_probe budget)
  file(REMOVE "${STATS}")
  execute_process(
    COMMAND ${CMAKE_COMMAND} -E env LD_PRELOAD=${preload} "LD_LIBRARY_PATH=${FAKE_CUDA_DIR}:$ENV{LD_LIBRARY_PATH}"
            "ASAN_OPTIONS=$ENV{ASAN_OPTIONS}:detect_leaks=0" PUMP_DATAPATH=copy PUMP_STATS=${STATS} PUMP_LOG_LEVEL=warn ${budget}
            "${PROBE}" "${SCOPED}"
    OUTPUT_VARIABLE out ERROR_VARIABLE err RESULT_VARIABLE rc)
  message(STATUS "probe ${budget} (rc=${rc}):\n${out}${err}")
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "the probe failed (rc=${rc}): see the FAILED lines above")
  endif()
  file(READ "${STATS}" stats)
  set(stats "${stats}" PARENT_SCOPE)
endfunction()
include(${CMAKE_CURRENT_LIST_DIR}/expect_stat.cmake)

run_probe("PUMP_GPU_BUDGET=80GiB")
expect_stat(2 while_fitting calls_passed)  # the copy and the launch
expect_stat(OFF while_fitting over_budget)
expect_stat(0 devices 0 kernels)
expect_stat(1 allocations managed_allocations)  # allocations are tracked all the same

run_probe("PUMP_GPU_BUDGET=512KiB")
expect_stat(0 while_fitting calls_passed)
expect_stat(ON while_fitting over_budget)
expect_stat(1 hooks cuLaunchKernel calls_with_extents)
expect_stat(65536 hooks cuLaunchKernel bytes_known)
message(STATUS "calls pass by the engine while everything fits, and reach it once over the budget")
