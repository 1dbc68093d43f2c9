# Two "ranks" of a job (RANK 0 and 1, WORLD_SIZE 2, as torchrun sets them) run the
# cudaMalloc probe under LD_PRELOAD=libpump.so with one PUMP_STATS path holding %r: each
# process writes its own report, named by its rank. -DPROBE -DLIBPUMP -DOUT_DIR.
include(${CMAKE_CURRENT_LIST_DIR}/preload_list.cmake)
pump_preload_list("${LIBPUMP}" preload)
file(REMOVE_RECURSE "${OUT_DIR}")
file(MAKE_DIRECTORY "${OUT_DIR}")
foreach(rank 0 1)
  execute_process(COMMAND ${CMAKE_COMMAND} -E env LD_PRELOAD=${preload} RANK=${rank} WORLD_SIZE=2
                          "PUMP_STATS=${OUT_DIR}/stats.%r.json" "${PROBE}"
                  RESULT_VARIABLE rc ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "rank ${rank}: the probe failed (rc=${rc}): ${err}")
  endif()
  if(err MATCHES "PUMP_STATS")
    message(FATAL_ERROR "rank ${rank}: a path with %r needs no warning, got: ${err}")
  endif()
  if(NOT EXISTS "${OUT_DIR}/stats.${rank}.json")
    message(FATAL_ERROR "rank ${rank} wrote no ${OUT_DIR}/stats.${rank}.json")
  endif()
  file(READ "${OUT_DIR}/stats.${rank}.json" report)
  string(JSON policy GET "${report}" config policy_requested)
endforeach()
file(GLOB written "${OUT_DIR}/*")
list(LENGTH written count)
if(NOT count EQUAL 2)
  message(FATAL_ERROR "expected one report per rank, found: ${written}")
endif()
message(STATUS "one PUMP_STATS report per rank: ${written}")
