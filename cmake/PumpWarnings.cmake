# Warnings for pump's own targets (not for third-party headers).
function(pump_warnings target)
  target_compile_options(${target} PRIVATE
    $<$<COMPILE_LANGUAGE:CXX>:-Wall -Wextra -Wpedantic -Wno-missing-field-initializers>
    $<$<COMPILE_LANGUAGE:C>:-Wall -Wextra -Wpedantic -Wno-missing-field-initializers>)
endfunction()
