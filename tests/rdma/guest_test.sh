#!/usr/bin/env bash
# guest_test.sh CMD [ARG...] — what every `rdma_guest` ctest test runs (registered by
# ncclscope_rdma_guest_test in rdma_guest_test.cmake): CMD needs a verbs device, so it runs only inside
# the soft-RoCE guest that tests/rdma/run_guest_tier.sh boots (guest_vm.sh sets NCCLSCOPE_RDMA_GUEST=1
# there). Anywhere else it is skipped with its reason (exit 77 = the tests' SKIP_RETURN_CODE).
# NCCLSCOPE_RDMA_ON_HOST=1 runs it on the host anyway (a machine with real RDMA hardware or a
# hand-made rxe device; the tests assume the guest's devices, see run_guest_tier.sh).
set -euo pipefail
if [ -z "${NCCLSCOPE_RDMA_GUEST:-}" ] && [ -z "${NCCLSCOPE_RDMA_ON_HOST:-}" ]; then
  devs=$(ls /sys/class/infiniband 2>/dev/null | tr '\n' ' ' || true)
  if [ -z "$devs" ]; then
    echo "SKIP: no verbs device on this host (runs in the soft-RoCE guest: ctest -L rdma)"
  else
    echo "SKIP: rdma_guest tests assume the soft-RoCE guest's devices (rxe0, rxe1), this host has: $devs" \
         "(runs in the soft-RoCE guest: ctest -L rdma; NCCLSCOPE_RDMA_ON_HOST=1 forces it here)"
  fi
  exit 77
fi
exec "$@"
