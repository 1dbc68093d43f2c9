# expect_stat(EXPECTED KEY...): fails the test unless the PUMP_STATS report in ${stats}
# holds EXPECTED at the path KEY... (compared as text: numbers as written, booleans as ON/OFF).
function(expect_stat expected)
  string(JSON value ERROR_VARIABLE missing GET "${stats}" ${ARGN})
  if(missing OR NOT value STREQUAL expected)
    string(REPLACE ";" "." where "${ARGN}")
    message(FATAL_ERROR "PUMP_STATS ${where}: expected ${expected}, got '${value}' ${missing}\n${stats}")
  endif()
endfunction()
