# Runs the quick start of docs/writing-a-policy.md as written: its first indented code
# block, taken from the doc itself (so the doc cannot drift from what works), in a
# scratch folder that looks like the top of a pump checkout (plugins/ and build/release
# are links to the real ones). Two substitutions only: /opt/pump becomes a scratch
# prefix, and step 4's `python train.py` becomes a check that the preloaded library and
# the policy it names exist (the loader only warns about a missing LD_PRELOAD file).
#   cmake -DPUMP_BUILD_DIR=... -DPUMP_SOURCE_DIR=... -DWORK_DIR=... -P run_policy_quickstart.cmake
cmake_minimum_required(VERSION 3.16)

foreach(var PUMP_BUILD_DIR PUMP_SOURCE_DIR WORK_DIR)
  if(NOT DEFINED ${var} OR "${${var}}" STREQUAL "")
    message(FATAL_ERROR "run_policy_quickstart.cmake: -D${var}=... is required")
  endif()
endforeach()

set(doc "${PUMP_SOURCE_DIR}/docs/writing-a-policy.md")
file(READ "${doc}" text)
# The first block of lines indented by four spaces, unindented (read whole: a list of
# lines would turn a trailing backslash into an escaped separator).
string(REGEX MATCH "\n((    [^\n]*\n)+)" block "${text}")
string(REGEX REPLACE "(^|\n)    " "\\1" block "${CMAKE_MATCH_1}")
if(NOT block MATCHES "# 1\\." OR NOT block MATCHES "# 4\\.")
  message(FATAL_ERROR "${doc}: the first code block is not the numbered quick start:\n${block}")
endif()

file(REMOVE_RECURSE "${WORK_DIR}")
file(MAKE_DIRECTORY "${WORK_DIR}/checkout/build")
file(CREATE_LINK "${PUMP_SOURCE_DIR}/plugins" "${WORK_DIR}/checkout/plugins" SYMBOLIC)
file(CREATE_LINK "${PUMP_BUILD_DIR}" "${WORK_DIR}/checkout/build/release" SYMBOLIC)
set(prefix "${WORK_DIR}/prefix")

string(REPLACE "/opt/pump" "${prefix}" script "${block}")
set(check [[sh -c 'test -f "$PUMP_POLICY" && echo "quickstart: policy $PUMP_POLICY"']])
string(REPLACE "python train.py" "${check}" script "${script}")
if(script STREQUAL block OR NOT script MATCHES "quickstart: policy")
  message(FATAL_ERROR "${doc}: the quick start no longer installs to /opt/pump or runs `python train.py`; "
                      "update this test with it:\n${block}")
endif()
file(WRITE "${WORK_DIR}/quickstart.sh" "set -euo pipefail\nset -x\n${script}")

# The doc says `cmake`: the one running this test.
get_filename_component(cmake_dir "${CMAKE_COMMAND}" DIRECTORY)
# Under the sanitizer presets libpump.so is sanitized, and the doc's LD_PRELOAD cannot put
# the sanitizer's runtime first: tell it not to insist (step 4 only runs `sh`).
execute_process(COMMAND ${CMAKE_COMMAND} -E env "PATH=${cmake_dir}:$ENV{PATH}"
                  "ASAN_OPTIONS=verify_asan_link_order=0:detect_leaks=0"
                  bash "${WORK_DIR}/quickstart.sh"
                WORKING_DIRECTORY "${WORK_DIR}/checkout"
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "the quick start of ${doc} failed (exit ${rc}):\n${out}\n${err}")
endif()
if(NOT out MATCHES "quickstart: policy ${WORK_DIR}/checkout/my_policy/build/libpump_policy_my_policy.so")
  message(FATAL_ERROR "step 4 did not find the policy built in step 3:\n${out}\n${err}")
endif()
if(err MATCHES "cannot be preloaded")
  message(FATAL_ERROR "step 4's LD_PRELOAD names a file step 2 did not install:\n${err}")
endif()
file(STRINGS "${WORK_DIR}/checkout/my_policy/build/CMakeCache.txt" found_dir REGEX "^pump_sdk_DIR:")
if(NOT found_dir MATCHES "^pump_sdk_DIR:PATH=${prefix}/")
  message(FATAL_ERROR "my_policy found pump_sdk outside the prefix of step 2: ${found_dir}")
endif()
message(STATUS "the quick start of ${doc} ran as written:\n${out}")
