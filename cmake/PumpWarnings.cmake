# Warnings for pump's own targets (not for third-party headers).
# PUMP_WERROR (ON in the release preset, which scripts/test.sh and CI build) turns
# them into errors, so the release build stays warning-free. The sanitizer and debug
# presets leave it OFF: their instrumentation can raise warnings of its own (GCC's
# -Wmaybe-uninitialized and friends under -fsanitize), which should not fail them.
option(PUMP_WERROR "Treat warnings in pump's own targets as errors" OFF)

function(pump_warnings target)
  target_compile_options(${target} PRIVATE
    $<$<COMPILE_LANGUAGE:CXX>:-Wall -Wextra -Wpedantic -Wno-missing-field-initializers>
    $<$<COMPILE_LANGUAGE:C>:-Wall -Wextra -Wpedantic -Wno-missing-field-initializers>)
  if(PUMP_WERROR)
    target_compile_options(${target} PRIVATE $<$<COMPILE_LANGUAGE:CXX,C>:-Werror>)
  endif()
endfunction()
