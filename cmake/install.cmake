# What `cmake --install` and the packages put where (docs/install.md), and the packages themselves (CPack): a .deb
# named ncclscope, and a relocatable .tar.gz. The version is project()'s.
#
#   <libdir>/libnccl-net-ncclscope.so          the plugin NCCL loads (net and profiler)
#   <libdir>/libnccl-profiler-ncclscope.so     a symlink to it (NCCL_PROFILER_PLUGIN=ncclscope finds it by name)
#   bin/ncclscope-{sim,loadcheck,params,cleanup,analyze}
#   bin/ncclscope-dump                         a symlink to the Slurm dump helper, share/.../deploy/slurm/
#   share/ncclscope/{dashboards,rules,docs}/   Grafana dashboard, Prometheus rules (and their promtool tests), docs
#   share/ncclscope/mixin/                     the jsonnet source of the rules and dashboard, to regenerate them tuned
#   share/ncclscope/deploy/                    Alertmanager, Kubernetes and Slurm examples (ncclscope-dump.sh)
#   share/ncclscope/python/ncclscope-analyze/  the analyzer as a pip-installable package (bin/ncclscope-analyze
#                                              runs it from there)
#   share/doc/ncclscope/                       README.md, CHANGELOG.md, LICENSE, copyright (Debian's format)
include(GNUInstallDirs)
# `ninja install` and cpack install what is built and build nothing first: the whole tree (every test and benchmark)
# is not needed for a package, and the package test runs inside a built tree. Build, then package (docs/install.md).
set(CMAKE_SKIP_INSTALL_ALL_DEPENDENCY ON)
set(NCCLSCOPE_SHARE_DIR ${CMAKE_INSTALL_DATADIR}/ncclscope)

install(TARGETS ncclscope_plugin LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR})
# The build's symlink, installed as a symlink (file(INSTALL) copies links as links).
install(FILES ${CMAKE_LIBRARY_OUTPUT_DIRECTORY}/libnccl-profiler-ncclscope.so DESTINATION ${CMAKE_INSTALL_LIBDIR})

if(NCCLSCOPE_BUILD_TOOLS)
  # Every ncclscope-* program that tools/<name>/ builds (a new tool is installed without a line here).
  get_property(_tool_dirs DIRECTORY ${PROJECT_SOURCE_DIR}/tools PROPERTY SUBDIRECTORIES)
  foreach(_dir IN LISTS _tool_dirs)
    get_property(_targets DIRECTORY ${_dir} PROPERTY BUILDSYSTEM_TARGETS)
    foreach(_target IN LISTS _targets)
      get_target_property(_type ${_target} TYPE)
      if(_type STREQUAL "EXECUTABLE" AND _target MATCHES "^ncclscope-")
        install(TARGETS ${_target} RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
      endif()
    endforeach()
  endforeach()
  install(PROGRAMS ${PROJECT_SOURCE_DIR}/tools/analyze/ncclscope_analyze.py DESTINATION ${CMAKE_INSTALL_BINDIR}
          RENAME ncclscope-analyze)
  install(DIRECTORY ${NCCLSCOPE_ANALYZE_PYPROJECT_DIR}/ DESTINATION ${NCCLSCOPE_SHARE_DIR}/python/ncclscope-analyze
          PATTERN __pycache__ EXCLUDE)
endif()

install(DIRECTORY ${PROJECT_SOURCE_DIR}/dashboards/ DESTINATION ${NCCLSCOPE_SHARE_DIR}/dashboards)
install(DIRECTORY ${PROJECT_SOURCE_DIR}/rules/ DESTINATION ${NCCLSCOPE_SHARE_DIR}/rules)
install(DIRECTORY ${PROJECT_SOURCE_DIR}/docs/ DESTINATION ${NCCLSCOPE_SHARE_DIR}/docs)
install(DIRECTORY ${PROJECT_SOURCE_DIR}/mixin/ DESTINATION ${NCCLSCOPE_SHARE_DIR}/mixin)
install(DIRECTORY ${PROJECT_SOURCE_DIR}/deploy/ DESTINATION ${NCCLSCOPE_SHARE_DIR}/deploy USE_SOURCE_PERMISSIONS)
install(FILES ${PROJECT_SOURCE_DIR}/README.md ${PROJECT_SOURCE_DIR}/CHANGELOG.md ${PROJECT_SOURCE_DIR}/LICENSE
        DESTINATION ${CMAKE_INSTALL_DOCDIR})

# The Slurm dump helper on PATH as bin/ncclscope-dump (docs/slurm.md, docs/kubernetes.md): a relative symlink to
# the copy under deploy/, so the relocatable .tar.gz keeps it working wherever it is unpacked.
file(RELATIVE_PATH _dump_target /prefix/${CMAKE_INSTALL_BINDIR}
     /prefix/${NCCLSCOPE_SHARE_DIR}/deploy/slurm/ncclscope-dump.sh)
file(MAKE_DIRECTORY ${CMAKE_BINARY_DIR}/package)
file(CREATE_LINK ${_dump_target} ${CMAKE_BINARY_DIR}/package/ncclscope-dump SYMBOLIC)
install(FILES ${CMAKE_BINARY_DIR}/package/ncclscope-dump DESTINATION ${CMAKE_INSTALL_BINDIR})

# Who answers for the package: the .deb's Maintainer field and the copyright file's Upstream-Contact. A
# distributor rebuilding the package sets their own.
set(NCCLSCOPE_PACKAGE_MAINTAINER "ncclscope maintainers <maintainers@users.noreply.a-seed-fd969cfd.example>"
    CACHE STRING "The package maintainer, 'Name <e-mail>'")
if(NOT NCCLSCOPE_PACKAGE_MAINTAINER MATCHES "^[^<>]+ <[^<>@ ]+@[^<>@ ]+>$")
  message(FATAL_ERROR "NCCLSCOPE_PACKAGE_MAINTAINER='${NCCLSCOPE_PACKAGE_MAINTAINER}' is not 'Name <e-mail>'")
endif()
# Debian's machine-readable copyright file (/usr/share/doc/ncclscope/copyright): ncclscope's license and those of
# what the binaries link in.
configure_file(${PROJECT_SOURCE_DIR}/cmake/debian-copyright.in ${CMAKE_BINARY_DIR}/package/copyright @ONLY)
install(FILES ${CMAKE_BINARY_DIR}/package/copyright DESTINATION ${CMAKE_INSTALL_DOCDIR})

# Packages: `cpack --config <build>/CPackConfig.cmake` writes both into the current directory.
set(CPACK_PACKAGE_NAME ncclscope)
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGE_VENDOR ncclscope)
set(CPACK_PACKAGE_CONTACT "${NCCLSCOPE_PACKAGE_MAINTAINER}")
set(CPACK_DEBIAN_PACKAGE_MAINTAINER "${NCCLSCOPE_PACKAGE_MAINTAINER}")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "NCCL net and profiler plugin: telemetry for NCCL jobs, stuck ranks named")
set(CPACK_PACKAGE_DESCRIPTION "One library that NCCL loads as its network plugin and its profiler plugin. It
times every collective and point-to-point operation, keeps a flight recorder, names the operation a stuck
communicator waits in, counts traffic per NIC and communicator, and exports Prometheus metrics and JSON dumps.
Includes ncclscope-sim (an emulated NCCL job), ncclscope-loadcheck, ncclscope-analyze (post-mortem), Prometheus
rules and a Grafana dashboard.")
set(CPACK_GENERATOR "DEB;TGZ")
set(CPACK_PACKAGE_FILE_NAME ncclscope-${PROJECT_VERSION}-Linux-${CMAKE_SYSTEM_PROCESSOR})
# Shipped binaries carry no debug sections (the RelWithDebInfo plugin is ~45 MB with them, ~2 MB without).
set(CPACK_STRIP_FILES ON)
set(CPACK_THREADS 0)

set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_SECTION utils)
set(CPACK_DEBIAN_PACKAGE_PRIORITY optional)
# Depends: what the installed binaries NEED (abseil is linked in), plus python3 for ncclscope-analyze.
if(NCCLSCOPE_PORTABLE_LINK)
  # libstdc++ and libgcc are linked in too, and glibc is needed from NCCLSCOPE_GLIBC_FLOOR on
  # (cmake/portable_link.cmake). Written out, not read by dpkg-shlibdeps: Debian 12's symbols file of libc6 asks
  # for 2.34 for sysconf@GLIBC_2.2.5 (a new caller may pass 2.34's _SC_SIGSTKSZ; ours pass only _SC_PAGESIZE),
  # which would keep the package off Debian 11 and Ubuntu 20.04, where it runs (tests/package/old_glibc_test.sh).
  # package_deb_bare_root checks that the installed files need nothing else.
  set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS OFF)
  set(CPACK_DEBIAN_PACKAGE_DEPENDS "libc6 (>= ${NCCLSCOPE_GLIBC_FLOOR}), zlib1g (>= 1:1.2.0), python3")
else()
  # As dpkg-shlibdeps reads them: libc6, libstdc++6, libgcc-s1, zlib1g.
  set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
  set(CPACK_DEBIAN_PACKAGE_DEPENDS "python3")
endif()
# OpenSSL 3 is a Recommends, not a Depends: the plugin dlopens libssl.so.3 and libcrypto.so.3 only when the
# endpoint is configured for TLS (NCCLSCOPE_PROM_WEB_CONFIG, src/exporters/http/tls.cc). Without them the plugin,
# the tools and the plain-HTTP endpoint work; an endpoint asked for TLS then serves nothing and its warning names the
# missing library (docs/endpoint-security.md). apt installs Recommends by default. libssl3t64 is the same library
# on Ubuntu 24.04 and later Debian. libcrypt1 (basic auth) is Priority: required, on every Debian and Ubuntu host.
set(CPACK_DEBIAN_PACKAGE_RECOMMENDS "libssl3 | libssl3t64")
set(CPACK_DEBIAN_PACKAGE_CONTROL_STRICT_PERMISSION ON)
include(CPack)
