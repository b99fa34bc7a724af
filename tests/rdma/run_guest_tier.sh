#!/usr/bin/env bash
# run_guest_tier.sh BUILD_DIR — the guest test tier (ctest test `rdma_tier`, label rdma): boots ONE
# soft-RoCE guest (guest_vm.sh, RXE_VM_NDEV=2: rxe0 on 198.51.100.1/24, rxe1 on 203.0.113.1/24) and
# runs every `rdma_guest` test of BUILD_DIR in it:
#   ctest --test-dir BUILD_DIR -L rdma_guest --output-on-failure
# BUILD_DIR/rdma-guest-results is shared read-write with the guest: ctest's JUnit report (junit.xml)
# and log (ctest.log) come back there. Prints the guest's ctest output and exits with ctest's status
# (0: all passed). 77 with a "SKIP: <reason>" line only when the guest cannot be started on this
# machine (guest_vm.sh: no QEMU and no way to install it, no kernel download); in CI that is a failure.
# The kernel and initramfs are cached in BUILD_DIR/rdma-vm-cache (one-time setup, ~35 s).
# Knobs: RXE_VM_TIMEOUT (s, default 840: under rdma_tier's ctest timeout of 900), RXE_VM_MEM (3G), CTEST (the ctest to
# run in the guest; default: ctest on PATH), RDMA_GUEST_CTEST_ARGS (extra ctest arguments, e.g. -R NAME).
set -euo pipefail
[ $# -eq 1 ] || { echo "usage: $0 BUILD_DIR" >&2; exit 2; }
here=$(cd "$(dirname "$0")" && pwd)
build=$(realpath -e "$1")
[ -f "$build/CTestTestfile.cmake" ] || { echo "FAIL: $build is not a configured build directory" >&2; exit 2; }
if [ -n "${NCCLSCOPE_RDMA_GUEST:-}" ]; then  # someone ran plain `ctest` inside the guest
  echo "SKIP: already inside the soft-RoCE guest (the tier does not boot a guest in a guest)"
  exit 77
fi
ctest_bin=$(command -v "${CTEST:-ctest}") || { echo "FAIL: no ctest" >&2; exit 2; }

results=$build/rdma-guest-results
rm -rf "$results" && mkdir -p "$results"
export RXE_VM_CACHE=${RXE_VM_CACHE:-$build/rdma-vm-cache}
# 3G: rdma_guest_tcp_conformance's 1 GiB message needs two 1 GiB buffers (2G is OOM-killed).
export RXE_VM_NDEV=2 RXE_VM_RW=$results RXE_VM_TIMEOUT=${RXE_VM_TIMEOUT:-840} RXE_VM_MEM=${RXE_VM_MEM:-3G}

# What runs in the guest (as root, in $build, with this environment). No `ctest -j`: the guest has
# two emulated CPUs, and the tests in it run client and server processes of their own.
inner="set -o pipefail
echo \"guest: up after \$(cut -d' ' -f1 /proc/uptime) s, kernel \$(uname -r), \$(nproc) CPUs, verbs devices: \$(ls /sys/class/infiniband | tr '\\n' ' ')\"
$ctest_bin --test-dir $build -L rdma_guest --no-tests=error --output-on-failure \\
  --output-junit $results/junit.xml ${RDMA_GUEST_CTEST_ARGS:-} 2>&1 | tee $results/ctest.log
rc=\$?; echo \"guest: ctest done at uptime \$(cut -d' ' -f1 /proc/uptime) s\"; exit \$rc"

echo "rdma_tier: booting the soft-RoCE guest (rxe0, rxe1) to run ctest -L rdma_guest in $build"
t0=$(date +%s)
rc=0
(cd "$build" && "$here/guest_vm.sh" bash -c "$inner") || rc=$?
echo "rdma_tier: guest status $rc after $(($(date +%s) - t0)) s (setup if any, boot, tests, power-off)"
[ ! -s "$results/junit.xml" ] || echo "rdma_tier: JUnit report $results/junit.xml, log $results/ctest.log"
if [ $rc -ne 0 ] && [ $rc -ne 77 ] && [ ! -s "$results/ctest.log" ]; then
  echo "FAIL: the guest did not run ctest (status $rc; 124 = timeout, 125 = no status from the guest)"
fi
exit $rc
