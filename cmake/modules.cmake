# The modules and the layering between them (docs/architecture.md).
#
# autotune_module(NAME [WHOLE_ARCHIVE] [DEPENDS module...]) declares
# the static library autotune_NAME from the .cpp files under NAME/, linked to
# the libraries of the modules it DEPENDS on, and enforces the layering: a
# source of NAME may include headers of NAME, of the modules it depends on and
# of theirs, transitively, and of no other module. Anything else (an include
# that climbs back up, or reaches sideways) stops the configuration with the
# file, the line and what the module may include.

set(AUTOTUNE_ALL_MODULES core sim search store kernels model skills orchestrator report cli)

function(autotune_allowed_modules out module)
  get_property(direct GLOBAL PROPERTY AUTOTUNE_DEPENDS_${module})
  set(allowed ${module})
  foreach(dependency IN LISTS direct)
    autotune_allowed_modules(below ${dependency})
    list(APPEND allowed ${below})
  endforeach()
  list(REMOVE_DUPLICATES allowed)
  set(${out} ${allowed} PARENT_SCOPE)
endfunction()

# Fails the configuration when a source under `folder` includes a header of a
# module outside `module`'s allowed set.
function(autotune_check_layering module folder)
  autotune_allowed_modules(allowed ${module})
  file(GLOB_RECURSE sources CONFIGURE_DEPENDS ${folder}/*.cpp ${folder}/*.hpp)
  foreach(source IN LISTS sources)
    file(STRINGS ${source} includes REGEX "^[ \t]*#[ \t]*include[ \t]+\"[a-z_]+/")
    foreach(line IN LISTS includes)
      string(REGEX REPLACE "^[ \t]*#[ \t]*include[ \t]+\"([a-z_]+)/.*" "\\1" included "${line}")
      if(included IN_LIST AUTOTUNE_ALL_MODULES AND NOT included IN_LIST allowed)
        file(RELATIVE_PATH shown ${PROJECT_SOURCE_DIR} ${source})
        string(JOIN ", " accepted ${allowed})
        message(FATAL_ERROR "${shown}: ${line}: module '${module}' may not include '${included}/' "
                            "(it may include: ${accepted}; docs/architecture.md)")
      endif()
    endforeach()
  endforeach()
endfunction()

# Records NAME's dependencies and checks its folder's includes, for modules
# that build their library themselves (core, search, cli).
function(autotune_layer name)
  cmake_parse_arguments(PARSE_ARGV 1 MODULE "" "" "DEPENDS")
  set_property(GLOBAL PROPERTY AUTOTUNE_DEPENDS_${name} ${MODULE_DEPENDS})
  autotune_check_layering(${name} ${CMAKE_CURRENT_SOURCE_DIR})
endfunction()

# WHOLE_ARCHIVE is for modules whose files register entries from static
# objects (core/registry.hpp): nothing refers to those objects, so a plain
# static library would let the linker drop them. The sources are then archived
# in autotune_NAME_objects (still the file libautotune_NAME.a) and everyone
# links them whole through the interface target autotune_NAME. Properties of
# the archive itself (definitions, PIC) go on autotune_NAME_objects.
function(autotune_module name)
  cmake_parse_arguments(PARSE_ARGV 1 MODULE "WHOLE_ARCHIVE" "" "DEPENDS")
  autotune_layer(${name} DEPENDS ${MODULE_DEPENDS})
  file(GLOB_RECURSE sources CONFIGURE_DEPENDS ${CMAKE_CURRENT_SOURCE_DIR}/*.cpp)
  set(dependencies "")
  foreach(dependency IN LISTS MODULE_DEPENDS)
    list(APPEND dependencies autotune_${dependency})
  endforeach()
  if(NOT MODULE_WHOLE_ARCHIVE)
    add_library(autotune_${name} STATIC ${sources})
    target_include_directories(autotune_${name} PUBLIC ${PROJECT_SOURCE_DIR})
    target_link_libraries(autotune_${name} PUBLIC ${dependencies})
    return()
  endif()
  add_library(autotune_${name}_objects STATIC ${sources})
  set_target_properties(autotune_${name}_objects PROPERTIES OUTPUT_NAME autotune_${name})
  target_include_directories(autotune_${name}_objects PUBLIC ${PROJECT_SOURCE_DIR})
  target_link_libraries(autotune_${name}_objects PUBLIC ${dependencies})
  add_library(autotune_${name} INTERFACE)
  target_link_libraries(autotune_${name}
                        INTERFACE "$<LINK_LIBRARY:WHOLE_ARCHIVE,autotune_${name}_objects>" ${dependencies})
endfunction()
