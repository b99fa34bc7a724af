#!/usr/bin/env bash
# run_two_host_tier.sh BUILD_DIR — the two-host test tier (ctest test `rdma2_tier`, label rdma2): boots
# TWO soft-RoCE guests (guest_vm.sh, one emulated CPU each, so both fit on a 2-core machine) joined by
# two emulated links (a tap per guest on a host bridge per link; QEMU's UDP socket netdev where tap is not
# to be had), one virtio NIC per link and guest: host A has rxe0 on 198.51.100.1/24 and rxe1 on
# 203.0.113.1/24, host B rxe0 on 198.51.100.2/24 and rxe1 on 203.0.113.2/24. One boot runs every two-host test
# registered with ncclscope_rdma2_test (rdma2_test.cmake; the list is BUILD_DIR/rdma2/manifest): in
# each guest rdma2_driver.sh runs that side's commands in order, with a barrier between the guests
# around each test and a per-test timeout.
# BUILD_DIR/rdma2-results is shared read-write with both guests: each test's output and status per
# side (NAME.a.log, NAME.a.rc, NAME.b.log, NAME.b.rc) and each guest's own output (guest-a.log,
# guest-b.log) end up there. This script prints them and exits 0 only when every test passed on both
# sides; 77 with a "SKIP: <reason>" line only when a guest cannot be started on this machine (as
# guest_vm.sh; in CI that is a failure).
# A test's side may ask the host to freeze its own guest (sim_ranks.sh --freeze-self): it writes the
# seconds to RESULTS/freeze.SIDE; this script SIGSTOPs that guest's QEMU, SIGCONTs it after that long and
# removes the file. It may also ask for its own link to flap (nic_degraded_rdma2.py --flap): "DOWN UP" in
# RESULTS/flap.SIDE; this script then turns the carrier of that guest's first NIC (rxe0's link) off for DOWN
# seconds and on for UP seconds through QEMU's monitor, over and over, until the file is gone. Knobs: RDMA2_TESTS (regex: run only the matching
# tests, opt-in ones included), RXE_VM_TIMEOUT (s, default 840, under the ctest timeout of 900), RXE_VM_MEM (1G).
set -euo pipefail
[ $# -eq 1 ] || { echo "usage: $0 BUILD_DIR" >&2; exit 2; }
here=$(cd "$(dirname "$0")" && pwd)
build=$(realpath -e "$1")
[ -s "$build/rdma2/manifest" ] || { echo "FAIL: no two-host tests in $build/rdma2/manifest (configure first)" >&2; exit 2; }
if [ -n "${NCCLSCOPE_RDMA_GUEST:-}" ]; then
  echo "SKIP: already inside the soft-RoCE guest (the tier does not boot a guest in a guest)"; exit 77
fi
R=$build/rdma2-results
rm -rf "$R" "$build/rdma2-failed" && mkdir -p "$R"
export RXE_VM_CACHE=${RXE_VM_CACHE:-$build/rdma-vm-cache} RXE_VM_RW=$R RXE_VM_SMP=1
export RXE_VM_TIMEOUT=${RXE_VM_TIMEOUT:-840} RXE_VM_MEM=${RXE_VM_MEM:-1G}
# The tests to run, in the guests' driver's list: RDMA2_TESTS (a grep -E regex over the names), by
# default every test not marked opt-in.
if [ -n "${RDMA2_TESTS:-}" ]; then grep -E "^(${RDMA2_TESTS}) " "$build/rdma2/manifest"
else grep -v ' opt-in$' "$build/rdma2/manifest"; fi > "$R/manifest" ||
  { echo "FAIL: no test to run (RDMA2_TESTS=${RDMA2_TESTS:-})"; exit 2; }
export RDMA2_MANIFEST=$R/manifest

# The network: per link, one tap device per guest on a host bridge of its own (the kernel forwards, QEMU only
# reads and writes its tap; a frozen or slow peer's frames are dropped at its tap's queue). Without tap or bridge
# (no /dev/net/tun, not root) QEMU's point-to-point UDP socket netdev, two free local ports per link. Neither
# backend kept guest A's first NIC from stopping for good (twice in CI over UDP, once here over tap with B
# frozen): that was the guest kernel's napi_tx, which guest_vm.sh turns off. Not listen=/connect= (TCP): B must
# then connect after A listens, and once here, on a host loaded by another guest, B's QEMU ended up with no
# connection at all (B: "No route to host").
tag=r2-$$
links=()
# Bridges and taps of earlier runs killed before their trap ran (their runner's pid is gone).
for l in $(ip -o link show 2>/dev/null | sed -n 's/^[0-9]*: \(r2-[0-9]*-[a-z0-9]*\)[@:].*/\1/p'); do
  p=${l#r2-}; p=${p%%-*}; kill -0 "$p" 2>/dev/null || ip link del "$l" 2>/dev/null || true
done
tap_link() {  # tap_link N: bridge $tag-bN with taps $tag-aN and $tag-cN (A's and B's)
  ip link add "$tag-b$1" type bridge && links+=("$tag-b$1") || return 1
  for t in "$tag-a$1" "$tag-c$1"; do
    ip tuntap add dev "$t" mode tap && links+=("$t") && ip link set "$t" mtu 9000 master "$tag-b$1" up || return 1
  done
  ip link set "$tag-b$1" up
}
cleanup_links() { for l in "${links[@]}"; do ip link del "$l" 2>/dev/null; done; }
if { tap_link 0 && tap_link 1; } 2> "$R/tap.err"; then
  a0="tap,ifname=$tag-a0,script=no,downscript=no" a1="tap,ifname=$tag-a1,script=no,downscript=no"
  b0="tap,ifname=$tag-c0,script=no,downscript=no" b1="tap,ifname=$tag-c1,script=no,downscript=no"
  where="host bridges $tag-b0, $tag-b1"
else
  cleanup_links; links=()
  echo "rdma2_tier: no tap on a bridge here ($(tail -n 1 "$R/tap.err")): QEMU's UDP socket netdev instead"
  used() { ss -Hlun "sport = :$1" | grep -q .; }
  pa_=$((20000 + RANDOM % 20000)); while used $pa_; do pa_=$((pa_ + 1)); done
  pb_=$((pa_ + 1)); while used $pb_; do pb_=$((pb_ + 1)); done
  pc_=$((pb_ + 1)); while used $pc_; do pc_=$((pc_ + 1)); done
  pd_=$((pc_ + 1)); while used $pd_; do pd_=$((pd_ + 1)); done
  a0="udp=127.0.0.1:$pb_,localaddr=127.0.0.1:$pa_" a1="udp=127.0.0.1:$pd_,localaddr=127.0.0.1:$pc_"
  b0="udp=127.0.0.1:$pa_,localaddr=127.0.0.1:$pb_" b1="udp=127.0.0.1:$pc_,localaddr=127.0.0.1:$pd_"
  where="UDP 127.0.0.1:$pa_ <-> :$pb_ and :$pc_ <-> :$pd_"
fi

# guest SIDE NET IP MAC NET2 IP2 MAC2: boots one guest running the driver for SIDE, in the background.
guest() {
  (cd "$build" && RXE_VM_NET=$2 RXE_VM_IP=$3 RXE_VM_MAC=$4 RXE_VM_NET2=$5 RXE_VM_IP2=$6 RXE_VM_MAC2=$7 \
    RXE_VM_PIDFILE=$R/qemu.$1.pid RXE_VM_MONITOR=$R/monitor.$1 \
    "$here/guest_vm.sh" "$here/rdma2_driver.sh" "$1" "$build/rdma2" "$R" > "$R/guest-$1.log" 2>&1)
}
# Guests outlive a killed runner (ctest's timeout) otherwise; the links go with them.
trap 'for f in "$R"/qemu.?.pid; do [ -s "$f" ] && kill -CONT "$(cat "$f")" && kill "$(cat "$f")"; done 2>/dev/null
  sleep 0.5; cleanup_links' EXIT
echo "rdma2_tier: booting two soft-RoCE guests on two links (rxe0: A 198.51.100.1, B 198.51.100.2;" \
  "rxe1: A 203.0.113.1, B 203.0.113.2) over $where"
t0=$(date +%s)
guest a "$a0" 198.51.100.1 52:54:00:12:34:01 "$a1" 203.0.113.1 52:54:00:12:35:01 & pa=$!
guest b "$b0" 198.51.100.2 52:54:00:12:34:02 "$b1" 203.0.113.2 52:54:00:12:35:02 & pb=$!

# monitor SIDE COMMAND: one command to that guest's QEMU monitor.
monitor() {
  python3 - "$R/monitor.$1" "$2" <<'PY'
import socket, sys, time
s = socket.socket(socket.AF_UNIX)
s.connect(sys.argv[1])
s.sendall(sys.argv[2].encode() + b"\n")
time.sleep(0.2)  # QEMU reads the line before it sees the close
PY
}
# flap SIDE DOWN UP: the carrier of SIDE's first NIC off for DOWN s and on for UP s while RESULTS/flap.SIDE exists.
flap() {
  echo "rdma2_tier: $(date +%T) flapping guest $1's first link: down $2 s, up $3 s"
  while [ -e "$R/flap.$1" ] && [ -S "$R/monitor.$1" ]; do
    monitor "$1" "set_link n0 off"; sleep "$2"; monitor "$1" "set_link n0 on"; sleep "$3"
  done
  echo "rdma2_tier: $(date +%T) guest $1's first link stays up"
}
declare -A flapping=()

# While the guests run: serve freeze and flap requests.
while kill -0 $pa 2>/dev/null || kill -0 $pb 2>/dev/null; do
  for s in a b; do
    if [ -s "$R/flap.$s" ] && [ -z "${flapping[$s]:-}" ]; then
      read -r down up < "$R/flap.$s"; flap "$s" "$down" "$up" & flapping[$s]=$!
    elif [ ! -e "$R/flap.$s" ] && [ -n "${flapping[$s]:-}" ]; then
      wait "${flapping[$s]}" || true; flapping[$s]=
    fi
  done
  for f in "$R"/freeze.a "$R"/freeze.b; do
    [ -s "$f" ] && [ -s "$R/qemu.${f##*.}.pid" ] || continue
    qpid=$(cat "$R/qemu.${f##*.}.pid") secs=$(cat "$f")
    echo "rdma2_tier: $(date +%T) freezing guest ${f##*.} (QEMU $qpid) for $secs s"
    kill -STOP "$qpid"; sleep "$secs"; kill -CONT "$qpid"; rm -f "$f"
    echo "rdma2_tier: $(date +%T) guest ${f##*.} resumed"
  done
  sleep 0.2
done
ra=0; wait $pa || ra=$?
rb=0; wait $pb || rb=$?
rm -f "$R"/qemu.?.pid  # both gone: nothing for the trap to kill
echo "rdma2_tier: guests done after $(($(date +%s) - t0)) s (A status $ra, B status $rb)"
for s in a b; do echo "=== guest ${s^^} ==="; cat "$R/guest-$s.log"; done
[ $ra -eq 77 ] || [ $rb -eq 77 ] && { echo "SKIP: a guest could not be started (see above)"; exit 77; }

# Every test must have passed on both sides (a missing status is a failure: its guest died or a barrier
# timed out).
failed=()
while read -r name timeout _; do
  for s in a b; do
    echo "=== $name, host ${s^^}: status $(cat "$R/$name.$s.rc" 2>/dev/null || echo none) ==="
    cat "$R/$name.$s.log" 2>/dev/null || true
  done
  [ "$(cat "$R/$name.a.rc" 2>/dev/null)" = 0 ] && [ "$(cat "$R/$name.b.rc" 2>/dev/null)" = 0 ] || failed+=("$name")
done < "$R/manifest"
# The failed tests' names for scripts/test.sh's one rerun (of those only), outside RESULTS (emptied at each start),
# and the end of each failed side's log once more, last, where a truncated CI log still shows it.
printf '%s\n' "${failed[@]}" | sed '/^$/d' > "$build/rdma2-failed"
if [ ${#failed[@]} -gt 0 ]; then
  for name in "${failed[@]}"; do
    for s in a b; do
      [ "$(cat "$R/$name.$s.rc" 2>/dev/null)" = 0 ] && continue
      tail -n 8 "$R/$name.$s.log" 2>/dev/null | sed "s/^/FAIL $name, host ${s^^}: /" || true
    done
  done
  echo "FAIL: ${failed[*]}"; exit 1
fi
echo "rdma2_tier: all $(wc -l < "$R/manifest") two-host tests passed on both hosts"
