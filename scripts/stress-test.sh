#!/usr/bin/env bash
# The stress stage, opt-in (not part of scripts/test.sh: it takes the better part of an hour on 2 cores): the
# main test tier, exactly as CI runs it, while stress-ng keeps 4 CPU-bound workers per core busy. CI shares its
# machine with other work; this proves no test's verdict needs an idle one. The hog runs at the tests' priority
# and in their session: started elsewhere, the kernel's autogroup scheduling would give it one share beside
# the tests' one and the tests would see half the load. Prints the tier's result, its time and the load average
# it ran under. Extra arguments go to ctest (for example `-R prometheus_` to stress a part).
set -euo pipefail
cd "$(dirname "$0")/.."
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
echo "=== stress: the main tier under $hogs CPU hogs (stress-ng --cpu $hogs, pid $hog) ==="

start=$SECONDS
rc=0
main_tier "$@" || rc=$?
elapsed=$((SECONDS - start))
load=$(sort -n "$load_log" | awk '{v[NR]=$1} END {if (NR) printf "load average %s min, %s median, %s max (%d samples, 30 s apart)", v[1], v[int((NR+1)/2)], v[NR], NR; else print "no load sample"}')
verdict=passed
[ "$rc" -eq 0 ] || verdict=FAILED
echo "=== stress: main tier $verdict in $elapsed s under $hogs CPU hogs on $jobs cores; $load ==="
exit "$rc"
