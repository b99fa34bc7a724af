# ncclscope_rdma_guest_test(NAME name COMMAND cmd [args…] [TIMEOUT s] [ENVIRONMENT VAR=value…]):
# registers a ctest test that needs a verbs device. It gets label `rdma_guest` and runs inside the
# soft-RoCE guest that the `rdma_tier` test (label rdma, tests/rdma/run_guest_tier.sh) boots, where
# rxe0 (198.51.100.1/24) and rxe1 (203.0.113.1/24) exist and $RXE_GID is rxe0's RoCE v2 GID index.
# Anywhere else (the host: no verbs device) it prints "SKIP: no verbs device on this host …" and exits
# 77 (SKIP_RETURN_CODE), so a plain `ctest` shows it skipped with the reason. COMMAND takes generator
# expressions ($<TARGET_FILE:…>); the guest is ~10x slower than the host (TCG), so keep each test to
# seconds here and give it a TIMEOUT that allows for that (default 300). Usable from any
# tests/<area>/CMakeLists.txt (tests/CMakeLists.txt includes this file first). Example:
#   ncclscope_rdma_guest_test(NAME rdma_guest_foo COMMAND $<TARGET_FILE:foo_test> --gtest_brief=1)
set(NCCLSCOPE_RDMA_TEST_DIR ${CMAKE_CURRENT_LIST_DIR})
function(ncclscope_rdma_guest_test)
  cmake_parse_arguments(G "" "NAME;TIMEOUT" "COMMAND;ENVIRONMENT" ${ARGN})
  if(NOT G_NAME OR NOT G_COMMAND)
    message(FATAL_ERROR "ncclscope_rdma_guest_test: NAME and COMMAND are required")
  endif()
  if(NOT G_TIMEOUT)
    set(G_TIMEOUT 300)
  endif()
  add_test(NAME ${G_NAME} COMMAND ${NCCLSCOPE_RDMA_TEST_DIR}/guest_test.sh ${G_COMMAND})
  set_tests_properties(${G_NAME} PROPERTIES LABELS rdma_guest SKIP_RETURN_CODE 77 TIMEOUT ${G_TIMEOUT})
  if(G_ENVIRONMENT)
    set_property(TEST ${G_NAME} PROPERTY ENVIRONMENT ${G_ENVIRONMENT})
  endif()
endfunction()
