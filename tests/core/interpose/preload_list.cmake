# pump_preload_list(<libpump> <out-var>): the LD_PRELOAD value that loads <libpump> into a
# program. A sanitizer build of libpump.so needs its sanitizer runtime loaded first, as
# any sanitized library preloaded into an unsanitized program does (libubsan is an
# ordinary dependency).
function(pump_preload_list libpump out)
  set(preload "${libpump}")
  execute_process(COMMAND ldd "${libpump}" OUTPUT_VARIABLE deps)
  foreach(runtime asan tsan)
    if(deps MATCHES "(/[^ \n]*lib${runtime}\\.so[^ \n]*)")
      set(preload "${CMAKE_MATCH_1}:${preload}")
    endif()
  endforeach()
  set(${out} "${preload}" PARENT_SCOPE)
endfunction()
