# Under LD_PRELOAD=libpump.so with a budget, the program starts with XLA's command buffers
# turned off in its environment (core/interpose/framework_settings.h); without a budget, or
# where XLA_FLAGS already chose, its environment is its own. `printenv` shows what the
# program sees. -DLIBPUMP=<path> (a path naming libpump: only a preload changes anything).
include(${CMAKE_CURRENT_LIST_DIR}/preload_list.cmake)
pump_preload_list("${LIBPUMP}" preload)

# <environment assignments, ","-separated>|<XLA_FLAGS expected, exactly>
set(cases
  "PUMP_GPU_BUDGET=1GiB|--xla_gpu_enable_command_buffer="
  "PUMP_GPU_BUDGET=1GiB,XLA_FLAGS=--xla_gpu_autotune_level=0|--xla_gpu_autotune_level=0 --xla_gpu_enable_command_buffer="
  "PUMP_GPU_BUDGET=1GiB,XLA_FLAGS=--xla_gpu_enable_command_buffer=FUSION|--xla_gpu_enable_command_buffer=FUSION"
  "XLA_FLAGS=--xla_gpu_autotune_level=0|--xla_gpu_autotune_level=0"
  "PUMP_GPU_BUDGET=1GiB,PUMP_DISABLE=1,XLA_FLAGS=x|x")
foreach(case IN LISTS cases)
  pump_split_case("${case}" assignments expected)
  string(REPLACE "," ";" assignments "${assignments}")
  execute_process(COMMAND ${CMAKE_COMMAND} -E env --unset=XLA_FLAGS LD_PRELOAD=${preload} ${assignments} printenv XLA_FLAGS
                  OUTPUT_VARIABLE out OUTPUT_STRIP_TRAILING_WHITESPACE RESULT_VARIABLE rc ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "${assignments}: printenv failed (rc=${rc}): ${err}")
  endif()
  if(NOT out STREQUAL expected)
    message(FATAL_ERROR "${assignments}: XLA_FLAGS='${out}', expected '${expected}'")
  endif()
  if(NOT err STREQUAL "")
    message(FATAL_ERROR "${assignments}: expected nothing on stderr at the default log level, got:\n${err}")
  endif()
endforeach()
