# Runs dl_probe/dl_resolution_probe under LD_PRELOAD=libpump.so with the fake driver as
# libcuda.so.1, and checks that (1) every expectation the probe prints held: lookups
# relative to their caller (RTLD_NEXT, RTLD_DEFAULT) are unchanged, lookups through the
# driver's and cuBLAS's handles give pump's hooks; (2) pump said no error; (3) its
# statistics saw what the probe did through those hooks: a managed allocation, the
# copy's exact extent, the launch's block, and a CUDA library's own allocation left alone.
# On the copy data path (PUMP_DATAPATH=copy): the probe checks that its allocation is managed
# memory (physical_alloc_hooks_fake_driver_test covers the default, vmm).
# -DPROBE -DLIBPUMP -DFAKE_CUDA_DIR -DSCOPED (scoped library) -DSTATS (a file to write).
include(${CMAKE_CURRENT_LIST_DIR}/preload_list.cmake)
pump_preload_list("${LIBPUMP}" preload)
file(REMOVE "${STATS}")
# In a sanitizer build: LeakSanitizer's scan at exit crashes ("Tracer caught signal 11")
# reading the dynamic TLS of the cuda backend's worker thread, which this probe is the
# first preloaded program to start; it does so with or without pump's dlsym. Leaks are
# still checked by every other test.
execute_process(
  COMMAND ${CMAKE_COMMAND} -E env LD_PRELOAD=${preload} "LD_LIBRARY_PATH=${FAKE_CUDA_DIR}:$ENV{LD_LIBRARY_PATH}"
          "ASAN_OPTIONS=$ENV{ASAN_OPTIONS}:detect_leaks=0"
          PUMP_DATAPATH=copy PUMP_STATS=${STATS} PUMP_LOG_LEVEL=warn PUMP_SPLIT_GRANULARITY=64KiB PUMP_WATCH_WHILE_FITS=1
          "${PROBE}" "${SCOPED}"
  OUTPUT_VARIABLE out ERROR_VARIABLE err RESULT_VARIABLE rc)
message(STATUS "probe (rc=${rc}):\n${out}${err}")
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "the probe failed (rc=${rc}): see the FAILED lines above")
endif()
if(err MATCHES "pump: error")
  message(FATAL_ERROR "pump printed an error into a program that is fine:\n${err}")
endif()

file(READ "${STATS}" stats)
include(${CMAKE_CURRENT_LIST_DIR}/expect_stat.cmake)
expect_stat(1 allocations managed_allocations)
expect_stat(1 allocations untracked_library_allocations)  # the stand-in NCCL's
expect_stat(2 hooks cuMemAlloc_v2 calls)
expect_stat(1 hooks cuMemFree_v2 calls)
expect_stat(1 hooks cuMemcpyHtoD_v2 calls_with_extents)
expect_stat(4096 hooks cuMemcpyHtoD_v2 bytes_known)    # the device side, exact
expect_stat(4096 hooks cuMemcpyHtoD_v2 bytes_unknown)  # the host side, in no block
expect_stat(1 hooks cuLaunchKernel calls_with_extents)
# The block its pointer names: the copy split the 1 MiB allocation at 64 KiB pieces.
expect_stat(65536 hooks cuLaunchKernel bytes_known)
expect_stat(0 hooks cuLaunchKernel bytes_unknown)
message(STATUS "lookups through library handles reached pump's hooks, and the hooks tracked the calls")
