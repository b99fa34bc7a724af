#!/usr/bin/env bash
# rdma2_driver.sh SIDE MANIFEST_DIR RESULTS — runs inside each of the two guests that
# run_two_host_tier.sh boots (SIDE a or b): for every "NAME TIMEOUT" line of MANIFEST_DIR/manifest (or
# $RDMA2_MANIFEST, the runner's copy filtered by RDMA2_TESTS), in
# order, runs MANIFEST_DIR/NAME.SIDE.sh. RESULTS is shared read-write by both guests and the host
# (9p without caching: a file one guest creates is seen by the other at once), so the barriers are
# files there: a test starts only when both sides have reached it, and the next one only when both
# have finished it (a side never starts a test while the other still runs the previous one). A side is
# killed with its whole process group after TIMEOUT s. Writes RESULTS/NAME.SIDE.log (output) and
# RESULTS/NAME.SIDE.rc (status; 124 = timed out), then RESULTS/driver.SIDE.done. Exits 0 when every
# test passed on this side. Names the guest rdma2-SIDE (hostname): the two guests boot alike, so their
# processes' pids often coincide, and only the host name tells them apart (ncclscope's dumps and the
# analyzer identify a process by host and pid).
set -uo pipefail
side=$1 dir=$2 R=$3
other=$([ "$side" = a ] && echo b || echo a)
export RDMA2_SIDE=$side RDMA2_RESULTS=$R
echo "rdma2-$side" > /proc/sys/kernel/hostname
export RDMA2_IP=$([ "$side" = a ] && echo 198.51.100.1 || echo 198.51.100.2)
export RDMA2_PEER_IP=$([ "$side" = a ] && echo 198.51.100.2 || echo 198.51.100.1)

# barrier NAME SECONDS: mark this side at NAME, wait for the other side to get there.
barrier() {
  : > "$R/$1.$side"
  local end=$((SECONDS + $2))
  while [ ! -e "$R/$1.$other" ]; do
    [ $SECONDS -lt $end ] || { echo "rdma2_driver($side): host $other never reached $1 in $2 s"; return 1; }
    sleep 0.2
  done
}

failed=0
first=1
while read -r name timeout _; do
  [ -n "$name" ] || continue
  # The first barrier also waits for the other guest to boot.
  barrier "$name.start" $([ $first = 1 ] && echo 300 || echo 120) || { failed=1; break; }
  first=0
  export RDMA2_OUT=$R/$name.$side.d
  mkdir -p "$RDMA2_OUT"
  t0=$SECONDS
  setsid bash "$dir/$name.$side.sh" > "$R/$name.$side.log" 2>&1 < /dev/null &
  pid=$!
  end=$((SECONDS + timeout))
  while kill -0 $pid 2>/dev/null && [ $SECONDS -lt $end ]; do sleep 0.2; done
  if kill -0 $pid 2>/dev/null; then
    kill -KILL -- -$pid 2>/dev/null; wait $pid 2>/dev/null
    echo "rdma2_driver($side): $name timed out after $timeout s (process group killed)" >> "$R/$name.$side.log"
    rc=124
  else
    wait $pid; rc=$?
  fi
  kill -KILL -- -$pid 2>/dev/null  # anything the test left behind
  echo $rc > "$R/$name.$side.rc"
  echo "rdma2_driver($side): $name status $rc after $((SECONDS - t0)) s"
  [ $rc -eq 0 ] || failed=1
  # The other side may still run its half (up to its own timeout), and its guest may be frozen.
  barrier "$name.end" $((timeout + 120)) || { failed=1; break; }
done < "${RDMA2_MANIFEST:-$dir/manifest}"
: > "$R/driver.$side.done"
exit $failed
