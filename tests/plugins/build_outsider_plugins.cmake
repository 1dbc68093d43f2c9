# Builds the plugins in plugins/ as an outside developer would: installs the SDK
# component of this build into an empty prefix, configures each plugin against
# that prefix alone and builds it, then checks that the plugin exports nothing
# but its versioned entry symbol. Run by CTest as
#   cmake -DPUMP_BUILD_DIR=... -DPUMP_SOURCE_DIR=... -DWORK_DIR=... -DGENERATOR=...
#         -DMAKE_PROGRAM=... -DC_COMPILER=... -DNM=... -P build_outsider_plugins.cmake
# Everything is local: no network, nothing outside WORK_DIR is written.
cmake_minimum_required(VERSION 3.16)  # policies for -P mode (IN_LIST)

foreach(var PUMP_BUILD_DIR PUMP_SOURCE_DIR WORK_DIR GENERATOR C_COMPILER NM)
  if(NOT DEFINED ${var} OR "${${var}}" STREQUAL "")
    message(FATAL_ERROR "build_outsider_plugins.cmake: -D${var}=... is required")
  endif()
endforeach()

function(run_step what)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "${what} failed (${rc}):\n${out}\n${err}")
  endif()
endfunction()

file(REMOVE_RECURSE "${WORK_DIR}")
set(prefix "${WORK_DIR}/prefix")
run_step("installing the SDK component of ${PUMP_BUILD_DIR}"
  "${CMAKE_COMMAND}" --install "${PUMP_BUILD_DIR}" --prefix "${prefix}" --component sdk)

# Symbols a linker or C runtime may define in any shared object; everything else is ours.
set(toolchain_symbols _init _fini _edata _end __bss_start __data_start __dso_handle _IO_stdin_used)

# <source folder under plugins/>:<the one symbol it must export>
foreach(plugin template:pump_policy_plugin_v1 example_policy:pump_policy_plugin_v1)
  string(REPLACE ":" ";" plugin "${plugin}")
  list(GET plugin 0 name)
  list(GET plugin 1 symbol)
  set(build "${WORK_DIR}/${name}")
  set(configure_args -S "${PUMP_SOURCE_DIR}/plugins/${name}" -B "${build}" -G "${GENERATOR}"
      "-DCMAKE_C_COMPILER=${C_COMPILER}" "-DCMAKE_PREFIX_PATH=${prefix}" -DCMAKE_BUILD_TYPE=Release
      # Only the fresh prefix may provide pump_sdk: no registries, no system copy.
      -DCMAKE_FIND_USE_PACKAGE_REGISTRY=OFF -DCMAKE_FIND_USE_SYSTEM_PACKAGE_REGISTRY=OFF
      -DCMAKE_FIND_USE_CMAKE_SYSTEM_PATH=OFF -DCMAKE_FIND_USE_SYSTEM_ENVIRONMENT_PATH=OFF)
  if(MAKE_PROGRAM)
    list(APPEND configure_args "-DCMAKE_MAKE_PROGRAM=${MAKE_PROGRAM}")
  endif()
  run_step("configuring plugins/${name} against ${prefix}" "${CMAKE_COMMAND}" ${configure_args})
  file(STRINGS "${build}/CMakeCache.txt" found_dir REGEX "^pump_sdk_DIR:")
  if(NOT found_dir MATCHES "^pump_sdk_DIR:PATH=${prefix}/")
    message(FATAL_ERROR "plugins/${name} found pump_sdk outside the fresh prefix: ${found_dir}")
  endif()
  run_step("building plugins/${name}" "${CMAKE_COMMAND}" --build "${build}")

  file(GLOB libraries "${build}/libpump_policy_*.so")
  list(LENGTH libraries count)
  if(NOT count EQUAL 1)
    message(FATAL_ERROR "plugins/${name} should build exactly one libpump_policy_*.so, found: ${libraries}")
  endif()
  execute_process(COMMAND "${NM}" -D --defined-only "${libraries}"
                  RESULT_VARIABLE rc OUTPUT_VARIABLE nm_out ERROR_VARIABLE nm_err)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "${NM} -D ${libraries} failed: ${nm_err}")
  endif()
  string(REPLACE "\n" ";" lines "${nm_out}")
  set(exported)
  foreach(line IN LISTS lines)
    if(line MATCHES "^[0-9a-fA-F]* *[A-Za-z] ([^ @]+)")
      set(sym "${CMAKE_MATCH_1}")
      if(NOT sym IN_LIST toolchain_symbols)
        list(APPEND exported "${sym}")
      endif()
    endif()
  endforeach()
  if(NOT exported STREQUAL symbol)
    message(FATAL_ERROR "${libraries} must export only ${symbol}; its defined dynamic symbols are: ${exported}\n"
                        "(build with C_VISIBILITY_PRESET hidden and declare the struct with PUMP_DECLARE_POLICY)")
  endif()
  message(STATUS "plugins/${name}: ${libraries} exports only ${symbol}")
endforeach()
