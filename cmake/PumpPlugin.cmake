# pump_add_plugin(<target> SOURCES <files...> [LIBRARIES <libs...>])
# A plugin is a MODULE library built against the SDK alone, with hidden visibility so
# only its versioned entry struct is exported (Boost.DLL's advice), written to
# lib/pump/ where the plugin host looks for built-in names.
function(pump_add_plugin target)
  cmake_parse_arguments(ARG "" "" "SOURCES;LIBRARIES" ${ARGN})
  add_library(${target} MODULE ${ARG_SOURCES})
  target_link_libraries(${target} PRIVATE pump_sdk ${ARG_LIBRARIES})
  set_target_properties(${target} PROPERTIES
    PREFIX "lib"
    C_VISIBILITY_PRESET hidden
    CXX_VISIBILITY_PRESET hidden
    VISIBILITY_INLINES_HIDDEN ON
    LIBRARY_OUTPUT_DIRECTORY ${PUMP_PLUGIN_OUTPUT_DIR})
  pump_warnings(${target})
  install(TARGETS ${target} LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}/pump)
endfunction()
