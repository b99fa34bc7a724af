# The portable link of what is shipped (the plugin and the ncclscope-* tools): built on Debian 12 (glibc 2.36,
# gcc 12), it loads on any x86-64 Linux with glibc >= NCCLSCOPE_GLIBC_FLOOR and nothing else of the toolchain:
#  - libstdc++ and libgcc are linked in (-static-libstdc++ -static-libgcc), so no GLIBCXX_/CXXABI_ version and
#    no libstdc++.so.6 or libgcc_s.so.1 is needed where the job runs. In a module library --exclude-libs,ALL
#    (cmake/static_abseil.cmake) and the version script keep every symbol of theirs local: the plugin's
#    libstdc++ (its operator new/delete, its exception types) is its own, and only NCCL's C tables cross.
#  - every glibc symbol is bound to its oldest version by cmake/portable/glibc_floor.c (how, and what it has to do
#    itself for symbols old glibc lacks, is written there); libpthread.so.0 and libdl.so.2, where pthread_* and
#    dl* lived before glibc 2.34, are in DT_NEEDED (on newer glibc they are empty stubs).
# tests/abi/glibc_floor.sh checks the result (ctest glibc_floor); tests/package/old_glibc_test.sh runs a job on
# Debian 11's glibc. Sanitizer and fuzz builds are never shipped and keep the ordinary link (their runtimes
# interpose libstdc++ and libc).
#
# Defines NCCLSCOPE_PORTABLE_LINK, NCCLSCOPE_GLIBC_FLOOR and ncclscope_portable_link(<target>).
if(NCCLSCOPE_SANITIZE STREQUAL "" AND NOT NCCLSCOPE_FUZZ AND CMAKE_SYSTEM_PROCESSOR MATCHES "^(x86_64|AMD64)$"
   AND CMAKE_CXX_COMPILER_ID STREQUAL "GNU")
  set(_portable_default ON)
else()
  set(_portable_default OFF)
endif()
option(NCCLSCOPE_PORTABLE_LINK
       "Link libstdc++/libgcc into the plugin and tools and bind glibc symbols to their oldest versions (x86-64, gcc)"
       ${_portable_default})
# The newest GLIBC_ version the portable plugin and tools may need (glibc 2.17: clock_gettime moved into libc).
set(NCCLSCOPE_GLIBC_FLOOR 2.17)

if(NCCLSCOPE_PORTABLE_LINK)
  if(NOT NCCLSCOPE_SANITIZE STREQUAL "" OR NCCLSCOPE_FUZZ)
    message(FATAL_ERROR "NCCLSCOPE_PORTABLE_LINK links libstdc++ statically, which the sanitizer runtimes do not "
                        "support: configure the sanitizer or fuzz build with -DNCCLSCOPE_PORTABLE_LINK=OFF")
  endif()
  if(NOT CMAKE_SYSTEM_PROCESSOR MATCHES "^(x86_64|AMD64)$")
    message(FATAL_ERROR "NCCLSCOPE_PORTABLE_LINK names x86-64's glibc symbol versions; this is "
                        "${CMAKE_SYSTEM_PROCESSOR}: configure with -DNCCLSCOPE_PORTABLE_LINK=OFF")
  endif()
  add_library(ncclscope_glibc_floor OBJECT ${CMAKE_CURRENT_LIST_DIR}/portable/glibc_floor.c)
  add_library(ncclscope_glibc_floor_exe OBJECT ${CMAKE_CURRENT_LIST_DIR}/portable/glibc_floor_exe.c)
  set_target_properties(ncclscope_glibc_floor ncclscope_glibc_floor_exe PROPERTIES POSITION_INDEPENDENT_CODE ON)
  target_compile_options(ncclscope_glibc_floor PRIVATE -Wall -Wextra)
  target_compile_options(ncclscope_glibc_floor_exe PRIVATE -Wall -Wextra)
  message(STATUS "portable link: static libstdc++/libgcc, glibc >= ${NCCLSCOPE_GLIBC_FLOOR}")
else()
  message(STATUS "portable link: off (the plugin and tools need this host's glibc, libstdc++ and libgcc_s)")
endif()

function(ncclscope_portable_link target)
  if(NOT NCCLSCOPE_PORTABLE_LINK)
    return()
  endif()
  get_target_property(_type ${target} TYPE)
  target_sources(${target} PRIVATE $<TARGET_OBJECTS:ncclscope_glibc_floor>)
  if(_type STREQUAL "EXECUTABLE")
    target_sources(${target} PRIVATE $<TARGET_OBJECTS:ncclscope_glibc_floor_exe>)
  endif()
  # --undefined=__cxa_pure_virtual: vtables refer to it weakly, which pulls nothing out of libstdc++.a; without
  # it the symbol would stay an undefined weak import, bound to whatever libstdc++ the job has loaded, or to null.
  target_link_options(${target} PRIVATE -static-libstdc++ -static-libgcc LINKER:--undefined=__cxa_pure_virtual
                      "SHELL:-Wl,--push-state,--no-as-needed -l:libpthread.so.0 -l:libdl.so.2 -Wl,--pop-state")
endfunction()
