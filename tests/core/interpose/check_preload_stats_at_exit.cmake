# PUMP_STATS is written whole or not at all, however the process ends: exit() from a
# thread other than main, SIGTERM (no exit handlers: no report), and a fork whose parent
# and child both exit (each writes its own report with %p). Every report that exists
# parses as JSON and no temporary file is left; without %p a forked child writes none, so
# its parent's report is never replaced. -DPROBE -DLIBPUMP -DOUT_DIR.
include(${CMAKE_CURRENT_LIST_DIR}/preload_list.cmake)
pump_preload_list("${LIBPUMP}" preload)

function(run_mode mode expect_reports name)
  set(dir "${OUT_DIR}/${mode}-${expect_reports}")
  file(REMOVE_RECURSE "${dir}")
  file(MAKE_DIRECTORY "${dir}")
  execute_process(COMMAND ${CMAKE_COMMAND} -E env LD_PRELOAD=${preload} "PUMP_STATS=${dir}/${name}" "${PROBE}" ${mode}
                  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(mode STREQUAL "sigterm")
    if(rc EQUAL 0)
      message(FATAL_ERROR "${mode}: the probe was not killed (rc=${rc})")
    endif()
  elseif(NOT rc EQUAL 0)
    message(FATAL_ERROR "${mode}: the probe failed (rc=${rc}): ${err}")
  endif()
  file(GLOB written "${dir}/*")
  set(reports 0)
  foreach(f ${written})
    if(NOT f MATCHES "/stats\\.[0-9]+\\.json$")
      message(FATAL_ERROR "${mode}: a file other than a report was left: ${f}")
    endif()
    file(READ "${f}" report)
    string(JSON policy ERROR_VARIABLE bad GET "${report}" config policy_requested)
    if(bad)
      message(FATAL_ERROR "${mode}: ${f} is not a whole report (${bad})")
    endif()
    math(EXPR reports "${reports} + 1")
  endforeach()
  if(NOT reports EQUAL expect_reports)
    message(FATAL_ERROR "${mode}: expected ${expect_reports} report(s), found ${reports}: ${written}")
  endif()
  message(STATUS "${mode}: ${reports} whole report(s)")
endfunction()

run_mode(thread-exit 1 stats.%p.json)
run_mode(sigterm 0 stats.%p.json)
run_mode(fork 2 stats.%p.json)
run_mode(fork 1 stats.0.json)
