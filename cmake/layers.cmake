# The layers of src/ (docs/architecture.md draws them). A layer is one folder of src/ (its subfolders are
# layers of their own) built as the OBJECT library ncclscope_<name>. It compiles against an include tree
# of its own, ${CMAKE_BINARY_DIR}/layers/<name>/, holding links to the headers of its folder and of the
# layers it was declared to see (and everything those see) - nothing else. An #include of a header from a
# layer above, or from a side that was not declared, therefore fails to compile: "No such file".
#
# ncclscope_layer(<name> DIR <folder of src/> [SEES <layer>...] [LIBS <target>...])
function(ncclscope_layer name)
  cmake_parse_arguments(L "" "DIR" "SEES;LIBS" ${ARGN})
  set(_src ${PROJECT_SOURCE_DIR}/src/${L_DIR})
  file(GLOB _srcs CONFIGURE_DEPENDS ${_src}/*.cc ${_src}/*.c)
  if(NOT _srcs)
    message(FATAL_ERROR "ncclscope_layer(${name}): src/${L_DIR} has no sources")
  endif()

  # What this layer sees: its own folder, then the closure of what its declared layers see.
  set(_folders ${L_DIR})
  foreach(_below IN LISTS L_SEES)
    get_property(_known GLOBAL PROPERTY NCCLSCOPE_LAYER_${_below}_FOLDERS SET)
    if(NOT _known)
      message(FATAL_ERROR "ncclscope_layer(${name}) sees '${_below}', which is not declared before it")
    endif()
    get_property(_theirs GLOBAL PROPERTY NCCLSCOPE_LAYER_${_below}_FOLDERS)
    list(APPEND _folders ${_theirs})
  endforeach()
  list(REMOVE_DUPLICATES _folders)
  set_property(GLOBAL PROPERTY NCCLSCOPE_LAYER_${name}_FOLDERS ${_folders})

  # The include tree: one link per header, so that seeing net/ does not mean seeing net/tcp/.
  set(_tree ${CMAKE_BINARY_DIR}/layers/${name})
  file(REMOVE_RECURSE ${_tree})
  foreach(_folder IN LISTS _folders)
    file(GLOB _headers CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/src/${_folder}/*.h
         ${PROJECT_SOURCE_DIR}/src/${_folder}/*.inc)
    file(MAKE_DIRECTORY ${_tree}/${_folder})
    foreach(_h IN LISTS _headers)
      get_filename_component(_base ${_h} NAME)
      file(CREATE_LINK ${_h} ${_tree}/${_folder}/${_base} SYMBOLIC)
    endforeach()
  endforeach()

  add_library(ncclscope_${name} OBJECT ${_srcs})
  target_include_directories(ncclscope_${name} PRIVATE ${_tree})
  target_link_libraries(ncclscope_${name} PUBLIC ncclscope_build_flags ${L_LIBS})
  foreach(_below IN LISTS L_SEES)
    target_link_libraries(ncclscope_${name} PUBLIC ncclscope_${_below})
  endforeach()
  set_property(GLOBAL APPEND PROPERTY NCCLSCOPE_OBJECT_LIBS ncclscope_${name})
endfunction()
