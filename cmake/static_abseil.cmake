# Abseil, linked statically by default, so that the plugin and the tools load on any host with glibc, libstdc++
# and zlib: no libabsl20220623 (nor any abseil release) is needed where the job runs, and a job that loads an
# abseil of its own never meets ours.
#
# Debian's libabsl-dev does ship archives (libabsl_<name>.a), but they were compiled for executables (-fPIE): their
# objects reach libstdc++'s vtables and keep thread-locals in ways no shared object may ("relocation
# R_X86_64_PC32 / R_X86_64_TPOFF32 ... can not be used when making a shared object"). So a static build compiles
# the abseil libraries it links from Debian's source of the installed release (the same code, with Debian's
# patches: scripts/fetch-abseil-source.sh), position-independent, as a subproject that builds only what is
# linked. Sanitizer and fuzz builds, which are never shipped, keep linking Debian's shared abseil by default.
#
# A module library (the plugin NCCL dlopens, the test plugins) links with --exclude-libs,ALL: no symbol of a
# static archive reaches its dynamic symbol table (its version script already keeps everything but NCCL's tables
# local; this says the same for the archives).
#
# Replaces find_package(absl). Defines the absl:: targets and NCCLSCOPE_ABSEIL_LINKAGE ("static" or "shared"),
# NCCLSCOPE_MODULE_LINK_OPTIONS.
if(NCCLSCOPE_SANITIZE STREQUAL "" AND NOT NCCLSCOPE_FUZZ)
  set(_static_default ON)
else()
  set(_static_default OFF)
endif()
option(NCCLSCOPE_STATIC_ABSEIL "Link abseil statically (compiled from Debian's source of libabsl-dev) into the plugin and tools"
       ${_static_default})
set(NCCLSCOPE_ABSEIL_SOURCE_DIR "" CACHE PATH
    "Debian's abseil source of the installed libabsl-dev (empty: scripts/fetch-abseil-source.sh fetches it)")

if(NCCLSCOPE_STATIC_ABSEIL)
  set(_abseil_src "${NCCLSCOPE_ABSEIL_SOURCE_DIR}")
  if(NOT _abseil_src)
    # Fetched once into a cache the build trees share (a second configure finds it there, offline).
    set(_cache /var/cache/ncclscope)
    execute_process(COMMAND sh -c "mkdir -p '${_cache}' 2>/dev/null && test -w '${_cache}'" RESULT_VARIABLE _unwritable)
    if(_unwritable)
      set(_cache ${CMAKE_BINARY_DIR}/_deps)
    endif()
    execute_process(COMMAND bash ${PROJECT_SOURCE_DIR}/scripts/fetch-abseil-source.sh ${_cache}
                    OUTPUT_VARIABLE _abseil_src ERROR_VARIABLE _fetch_err RESULT_VARIABLE _fetch_rc
                    OUTPUT_STRIP_TRAILING_WHITESPACE)
    if(_fetch_rc)
      message(FATAL_ERROR "NCCLSCOPE_STATIC_ABSEIL=ON compiles abseil from Debian's source, which could not be had:\n"
                          "${_fetch_err}\nGive an unpacked tree with -DNCCLSCOPE_ABSEIL_SOURCE_DIR=, or configure with "
                          "-DNCCLSCOPE_STATIC_ABSEIL=OFF (the plugin then needs libabsl20220623 where it runs)")
    endif()
  endif()
  if(NOT EXISTS "${_abseil_src}/absl/base/options.h")
    message(FATAL_ERROR "NCCLSCOPE_ABSEIL_SOURCE_DIR=${_abseil_src} is not an abseil source tree")
  endif()
  # Built with our C++ standard and global flags (position-independent); no tests, no install rules of its own.
  block(SCOPE_FOR VARIABLES)
    set(ABSL_PROPAGATE_CXX_STD ON)
    set(ABSL_ENABLE_INSTALL OFF)
    set(ABSL_BUILD_TESTING OFF)
    set(BUILD_TESTING OFF)
    add_subdirectory(${_abseil_src} ${CMAKE_BINARY_DIR}/_deps/abseil EXCLUDE_FROM_ALL SYSTEM)
  endblock()
  set(NCCLSCOPE_ABSEIL_LINKAGE static)
  message(STATUS "abseil: static, from ${_abseil_src}")
else()
  find_package(absl CONFIG REQUIRED)
  set(NCCLSCOPE_ABSEIL_LINKAGE shared)
  message(STATUS "abseil: shared (${absl_DIR})")
endif()

# Applied through ncclscope_build_flags: only module libraries get it (an executable exports nothing anyway,
# and a test executable that exports symbols to a plugin it loads must keep doing so).
set(NCCLSCOPE_MODULE_LINK_OPTIONS "$<$<STREQUAL:$<TARGET_PROPERTY:TYPE>,MODULE_LIBRARY>:LINKER:--exclude-libs,ALL>")
