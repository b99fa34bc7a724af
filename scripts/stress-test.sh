#!/usr/bin/env bash
# The stress stage, opt-in (not part of scripts/test.sh: it takes about an hour on 2 cores): the main test tier,
# exactly as CI runs it, while stress-ng keeps 4 CPU-bound workers per core busy. CI shares its machine with other
# work; this proves no test's verdict needs an idle one. The hog runs at the tests' priority, started by this
# script: started from another terminal, the kernel's autogroup scheduling would give it one share beside the
# tests' one and the tests would see half the load.
#
# The soft-RoCE guest tier (rdma_tier) runs after the rest, by its own script rather than through ctest: its guest
# is an emulated machine (QEMU TCG) that gets a fifth of the host under the hog and runs about 6 times slower
# (its TCP conformance test: 310 s), past the 900 s limit ctest holds it to; here its limit is 5 times that.
# --no-guest leaves it out. Other arguments go to ctest (for example `-R prometheus_` to stress a part).
# Prints each part's result, its time and the load average it ran under.
set -euo pipefail
cd "$(dirname "$0")/.."
guest=1
if [ "${1:-}" = --no-guest ]; then guest=0; shift; fi
bash scripts/install-deps.sh
source scripts/tiers.sh

echo "=== build (RelWithDebInfo) ==="
configure build
ninja -C build -j"$jobs"

hogs=$((4 * jobs))
load_log=build/stress-load.log
: >"$load_log"
stress-ng --cpu "$hogs" --timeout 6h --quiet &
hog=$!
(while sleep 30; do cut -d' ' -f1 /proc/loadavg >>"$load_log"; done) &
sampler=$!
trap 'kill "$sampler" "$hog" 2>/dev/null || true; wait "$hog" 2>/dev/null || true' EXIT
sleep 3
kill -0 "$hog" 2>/dev/null || { echo "stress: stress-ng did not start"; exit 1; }

load() {  # the load average samples since the last call
  sort -n "$load_log" | awk '{v[NR]=$1} END {if (NR) printf "load average %s min, %s median, %s max (%d samples, 30 s apart)", v[1], v[int((NR+1)/2)], v[NR], NR; else print "no load sample"}'
  : >"$load_log"
}
verdict() { [ "$1" -eq 0 ] && echo passed || echo FAILED; }

echo "=== stress: the main tier under $hogs CPU hogs (stress-ng --cpu $hogs, pid $hog) ==="
start=$SECONDS
main_rc=0
main_tier_also_exclude=rdma_tier main_tier "$@" || main_rc=$?
echo "=== stress: main tier (but the guest tier) $(verdict $main_rc) in $((SECONDS - start)) s under $hogs CPU hogs on $jobs cores; $(load) ==="

guest_rc=0
if [ "$guest" = 1 ]; then
  echo "=== stress: the soft-RoCE guest tier under the same hog (limit 4,200 s) ==="
  start=$SECONDS
  RXE_VM_TIMEOUT=4200 tests/rdma/run_guest_tier.sh build || guest_rc=$?
  echo "=== stress: guest tier $(verdict $guest_rc) in $((SECONDS - start)) s under $hogs CPU hogs; $(load) ==="
fi
[ "$main_rc" -eq 0 ] && [ "$guest_rc" -eq 0 ]
