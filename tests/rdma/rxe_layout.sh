#!/usr/bin/env bash
# rxe_layout.sh LAYOUT DEAD_IP -- CMD [ARG…]  (in a two-host guest, root)
# Makes this guest a direct-connect host with two RoCE ports, runs CMD, and puts the guest back as it
# was (rxe0 and rxe1 on their links to the other host). The second port sits on a dummy netdev with
# DEAD_IP/24: a link to a host that is not there, on a subnet of its own. LAYOUT says which port
# is on the real link:
#   link-first   rxe0 on the link, rxe1 on the dummy
#   link-second  rxe0 on the dummy, rxe1 on the link
# Exits with CMD's status (2 if the layout could not be built).
set -uo pipefail
[ $# -ge 4 ] && [ "$3" = -- ] || { echo "usage: $0 link-first|link-second DEAD_IP -- CMD [ARG…]" >&2; exit 2; }
layout=$1 dead_ip=$2; shift 3
netdev_of() { rdma link show "$1/1" 2>/dev/null | sed -n 's/.* netdev \([^ ]*\).*/\1/p'; }
link=$(netdev_of rxe0) link2=$(netdev_of rxe1)
[ -n "$link" ] || { echo "rxe_layout: no rxe0 in this guest" >&2; exit 2; }

wait_gids() {  # every named device has its IPv4-mapped (RoCE v2) GID, or 5 s passed
  for _ in $(seq 50); do
    local ok=1
    for d in "$@"; do grep -qs 0000:0000:0000:0000:0000:ffff: /sys/class/infiniband/$d/ports/1/gids/* || ok=0; done
    [ $ok = 1 ] && return 0
    sleep 0.1
  done
  echo "rxe_layout: no IPv4 GID on $* after 5 s" >&2; return 1
}
ports() {  # port NAME NETDEV…, in order: rxe0 first, so it is also the first the library enumerates
  rdma link delete rxe0 2>/dev/null; rdma link delete rxe1 2>/dev/null
  rdma link add rxe0 type rxe netdev "$1" && { [ -z "${2:-}" ] || rdma link add rxe1 type rxe netdev "$2"; }
}
restore() {
  ports "$link" $link2; ip link del deadend0 2>/dev/null; wait_gids rxe0 ${link2:+rxe1}
}

ip link add deadend0 type dummy && ip addr add "$dead_ip/24" dev deadend0 && ip link set deadend0 up || exit 2
case $layout in
  link-first) ports "$link" deadend0 ;;
  link-second) ports deadend0 "$link" ;;
  *) echo "rxe_layout: unknown layout '$layout'" >&2; restore; exit 2 ;;
esac
wait_gids rxe0 rxe1 || { restore; exit 2; }
for d in rxe0 rxe1; do
  echo "rxe_layout: $d on $(rdma link show $d/1 | sed -n 's/.* netdev \([^ ]*\).*/\1/p')" \
       "($(ip -4 -o addr show dev "$(rdma link show $d/1 | sed -n 's/.* netdev \([^ ]*\).*/\1/p')" | awk '{print $4}'))"
done
"$@"; rc=$?
restore
exit $rc
