#!/usr/bin/env bash
# bench_verbs.sh BUILD_DIR — the verbs transport next to perftest on the same soft-RoCE device, same run.
# Boots one soft-RoCE guest (guest_vm.sh) and, on rxe0 (both ends on one device, as the guest tier does):
#   ib_write_bw and ib_send_bw (perftest, 1 QP) at 64 KiB .. 4 MiB, before and after ours;
#   ncclscope's verbs transport through the built plugin (bench_net, ncclNetPlugin_v12, 4 requests in
#   flight, buffers registered once as NCCL does) at the same sizes;
#   8-byte latency: ib_write_lat's and ib_send_lat's typical half round trip next to bench_net's ping-pong
#   half round trip (each of our messages also puts a clear-to-send WRITE on the wire, perftest's do not).
# Prints one table in MiB/s (perftest's MB/sec is 2^20 bytes). ours/write is against the faster of the two
# ib_write_bw runs, so a noisy neighbour during ours cannot flatter the ratio. The device is EMULATED
# (soft-RoCE under QEMU TCG): absolute figures say nothing about hardware, the ratios compare the protocol
# and the host-side work per message on the same device.
# Knobs: BENCH_BYTES (bytes per size for ours, default 64 MiB), RXE_VM_CACHE (kernel cache, default
# BUILD_DIR/rdma-vm-cache). Exit 77 with SKIP when the guest cannot start here (guest_vm.sh).
set -euo pipefail
[ $# -eq 1 ] || { echo "usage: $0 BUILD_DIR" >&2; exit 2; }
here=$(cd "$(dirname "$0")" && pwd)
build=$(realpath -e "$1")
[ -x "$build/bin/bench_net" ] || { echo "FAIL: $build/bin/bench_net is not built" >&2; exit 2; }

if [ -z "${NCCLSCOPE_RDMA_GUEST:-}" ]; then  # on the host: boot the guest and run this script in it
  export RXE_VM_CACHE=${RXE_VM_CACHE:-$build/rdma-vm-cache} RXE_VM_MEM=${RXE_VM_MEM:-2G}
  exec "$here/guest_vm.sh" "$0" "$build"
fi

command -v ib_write_bw >/dev/null || { echo "FAIL: perftest is not installed (scripts/install-deps.sh)"; exit 1; }
dev=rxe0 ip=$(ip -4 -o addr show | awk '/198\.51\.100\./ {split($4, a, "/"); print a[1]; exit}')
gid=${RXE_GID:?guest_vm.sh sets RXE_GID}
sizes=(65536 262144 1048576 4194304)
port=18515

# perftest TOOL SIZE ITERS -> the average bandwidth (MB/sec column) or, for *_lat, t_typical (usec).
perftest() {
  local tool=$1 size=$2 iters=$3 out
  port=$((port + 1))
  # A bounded run: a perftest pair that loses its peer waits forever.
  timeout 120 "$tool" -d "$dev" -x "$gid" -s "$size" -n "$iters" -F -p "$port" >/dev/null 2>&1 &
  local server=$!
  sleep 1
  out=$(timeout 120 "$tool" -d "$dev" -x "$gid" -s "$size" -n "$iters" -F -p "$port" "$ip" 2>&1) || true
  wait "$server" || true
  echo "  $tool $size B x $iters: $(awk -v s="$size" '$1 == s' <<<"$out")" >&2
  if [[ $tool == *_lat ]]; then
    awk -v s="$size" '$1 == s {print $5; exit}' <<<"$out"
  else
    awk -v s="$size" '$1 == s {print $4; exit}' <<<"$out"
  fi
}
iters_for() { local n=$((67108864 / $1)); [ $n -ge 50 ] || n=50; echo $n; }

declare -A write1 write2 send ours
for s in "${sizes[@]}"; do write1[$s]=$(perftest ib_write_bw "$s" "$(iters_for "$s")"); done
for s in "${sizes[@]}"; do send[$s]=$(perftest ib_send_bw "$s" "$(iters_for "$s")"); done
lat_perftest=$(perftest ib_write_lat 8 1000)
lat_send=$(perftest ib_send_lat 8 1000)

bench=$(NCCLSCOPE_TRANSPORT=ib NCCL_IB_HCA="=$dev" NCCLSCOPE_PROM_PORT=-1 \
  "$build/bin/bench_net" --bytes="${BENCH_BYTES:-67108864}" --lat-iters=1000 --sizes-max=4194304 --mib)
echo "$bench" | sed 's/^/  bench_net: /'
while read -r n unit _ plugin _; do
  case $unit in KiB) ours[$((n * 1024))]=$plugin ;; MiB) ours[$((n * 1048576))]=$plugin ;; esac
done <<<"$(echo "$bench" | grep -E '^ +[0-9]+ (KiB|MiB) ')"
lat_ours=$(echo "$bench" | sed -n 's/.*plugin p50 \([0-9.]*\) us.*/\1/p')
for s in "${sizes[@]}"; do write2[$s]=$(perftest ib_write_bw "$s" "$(iters_for "$s")"); done

echo
echo "verbs transport vs perftest on $dev (soft-RoCE, EMULATED under QEMU TCG; MiB/s, 1 QP, $(nproc) guest CPUs)"
printf '%8s %14s %14s %14s %12s %12s\n' size ib_write_bw ib_send_bw ncclscope ours/write ours/send
status=0
for s in "${sizes[@]}"; do
  w1=${write1[$s]:-0} w2=${write2[$s]:-0} sd=${send[$s]:-0} o=${ours[$s]:-0}
  python3 - "$s" "$w1" "$w2" "$sd" "$o" <<'PY' || status=1
import sys
s, w1, w2, sd, o = int(sys.argv[1]), *map(float, sys.argv[2:])
w = max(w1, w2)
if w <= 0 or sd <= 0 or o <= 0:
    print(f"FAIL: a measurement is missing at {s} bytes (write {w1}/{w2}, send {sd}, ours {o})")
    sys.exit(1)
label = f"{s >> 20} MiB" if s >= 1 << 20 else f"{s >> 10} KiB"
print(f"{label:>8} {w:>14.1f} {sd:>14.1f} {o:>14.1f} {o / w:>11.0%} {o / sd:>11.0%}"
      f"   (ib_write_bw runs: {w1:.1f}, {w2:.1f})")
PY
done
echo "8-byte latency, half round trip: ib_write_lat typical ${lat_perftest:-?} us, ib_send_lat typical" \
  "${lat_send:-?} us, ncclscope ping-pong p50 ${lat_ours:-?} us"
exit $status
