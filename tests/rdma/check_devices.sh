#!/usr/bin/env bash
# rdma_guest_devices: the guest that run_guest_tier.sh boots has the verbs devices every other
# rdma_guest test relies on: rxe0 (198.51.100.1/24) and rxe1 (203.0.113.1/24), both listed by
# libibverbs and sysfs, rxe0 port 1 PORT_ACTIVE with link_layer Ethernet (RoCE), and each device with
# the IPv4-mapped (RoCE v2) GID of its subnet. Prints what it saw.
set -uo pipefail
fail=0
bad() { echo "FAIL: $*"; fail=1; }

echo "--- /sys/class/infiniband: $(ls /sys/class/infiniband 2>/dev/null | tr '\n' ' ')"
list=$(ibv_devinfo -l 2>&1) || bad "ibv_devinfo -l failed"
echo "--- ibv_devinfo -l:"; echo "$list"
for d in rxe0 rxe1; do
  grep -qw "$d" <<<"$list" || bad "ibv_devinfo -l does not list $d"
  [ -e "/sys/class/infiniband/$d" ] || bad "/sys/class/infiniband/$d is missing"
done

# The port goes ACTIVE shortly after `rdma link add` on an up netdev: allow a few seconds.
for _ in $(seq 50); do
  port=$(ibv_devinfo -d rxe0 -i 1 2>&1) || true
  grep -q 'PORT_ACTIVE' <<<"$port" && break
  sleep 0.2
done
echo "--- ibv_devinfo -d rxe0 -i 1:"; echo "$port"
grep -Eq 'state:[[:space:]]+PORT_ACTIVE' <<<"$port" || bad "rxe0 port 1 is not PORT_ACTIVE"
grep -Eq 'link_layer:[[:space:]]+Ethernet' <<<"$port" || bad "rxe0 port 1 link_layer is not Ethernet"

# IPv4-mapped GIDs: 198.51.100.1 = c633:6401, 203.0.113.1 = cb00:7101.
check_gid() {  # check_gid DEV GID_SUFFIX ADDR
  local gids; gids=$(cat /sys/class/infiniband/"$1"/ports/1/gids/* 2>/dev/null | sort -u | grep -v '^0000:0000:0000:0000:0000:0000:0000:0000$')
  echo "--- $1 GIDs:"; echo "$gids"
  grep -q "0000:0000:0000:0000:0000:ffff:$2" <<<"$gids" || bad "$1 has no RoCE v2 GID for $3"
}
check_gid rxe0 c633:6401 198.51.100.1
check_gid rxe1 cb00:7101 203.0.113.1
echo "--- RXE_GID (rxe0's RoCE v2 GID index): ${RXE_GID:-unset}"
[ -n "${RXE_GID:-}" ] || bad "RXE_GID is not set"

[ $fail = 0 ] && echo "rdma_guest_devices: OK"
exit $fail
