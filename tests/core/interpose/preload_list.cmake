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

# pump_split_case(<case> <before-var> <after-var>): a table row "<before>|<after>" of the
# preload checks, split at its first "|".
function(pump_split_case case before after)
  string(FIND "${case}" "|" bar)
  string(SUBSTRING "${case}" 0 ${bar} left)
  math(EXPR rest "${bar} + 1")
  string(SUBSTRING "${case}" ${rest} -1 right)
  set(${before} "${left}" PARENT_SCOPE)
  set(${after} "${right}" PARENT_SCOPE)
endfunction()
