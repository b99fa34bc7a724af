#!/usr/bin/env bash
# sim_ranks.sh [--expect R=STATUS]… [--log-has R=REGEX]… [--within R=S]… [--freeze-self AFTER:SECONDS]
#              [--netdev-down AFTER] [--nic-traffic R=NIC]… [--rank-env] [--netem SPEC] [--host-moved KIND]
#              RANKS -- SIM [ARG…]
# One host's half of a two-host ncclscope-sim job (rdma2 tests, see rdma2_test.cmake): starts
# `SIM ARG… --rank R` for each R in RANKS (comma-separated; the same ARGs, --ranks and --root, on both
# hosts), waits for all, prints each rank's log ($RDMA2_OUT/rankR.log) and checks them:
#   --expect R=STATUS  rank R must exit STATUS (a number, or !0 for any failure; default 0; a rank that
#                      SIGKILLs itself, --kill R@SEQ, shows as 137)
#   --log-has R=REGEX  rank R's log must match REGEX (grep -E), e.g. the address of the failed peer; R = any:
#                      at least one rank's log must (for faults where the ranks may fail in either order)
#   --within R=S       rank R must have ended within S seconds of the start (a failure detected, not waited out)
#   --freeze-self A:S  A seconds after the start, asks the host runner to SIGSTOP this guest's QEMU for S
#                      seconds (run_two_host_tier.sh watches RDMA2_RESULTS/freeze.SIDE), and waits for it
#   --netdev-down A    A seconds after the start, takes down the netdev under this guest's rxe0 (the link
#                      to the other host) and brings it back up once the ranks have ended; writes the time
#                      (date +%s.%N) to $RDMA2_OUT/netdev_down.at just before and to netdev_down.done once
#                      `ip link set down` returned (0.3-5.5 s later in a loaded guest); their mtimes on the
#                      9p share are the host's clock
#   --nic-traffic R=NIC[+NIC…] rank R's per-NIC byte counters (its node_exporter textfile, written at its
#                      last finalize) show traffic on each NIC named and on no other; R = all: every rank
#   --netem SPEC       netem on the netdev under this guest's rxe0 while the ranks run (e.g. "loss 3%": a lossy
#                      link), removed after
#   --host-moved KIND  the host's counters of rxe0 port 1 in the ranks' textfiles (ncclscope_host_rdma_port_*,
#                      exported by the one rank that speaks for the host) rose during the job: KIND = packets
#                      (sent and received) or retransmit (the driver's retransmission counters), each against
#                      the sysfs value read before the ranks started
#   --rank-env         starts rank R with RANK=R, as a launcher would: ncclscope's identity (global_rank)
#                      and the peer names its connection handshake carries (a dump's wait.peers) need it
# Exits 0 when every check holds.
set -uo pipefail
declare -A expect=() loghas=() within=() nictraffic=()
freeze='' netdev_down='' rank_env=0 netem=''
host_moved=()
while [ $# -gt 0 ]; do
  case $1 in
    --expect) expect[${2%%=*}]=${2#*=}; shift 2 ;;
    --log-has) loghas[${2%%=*}]=${2#*=}; shift 2 ;;
    --within) within[${2%%=*}]=${2#*=}; shift 2 ;;
    --freeze-self) freeze=$2; shift 2 ;;
    --netdev-down) netdev_down=$2; shift 2 ;;
    --nic-traffic) nictraffic[${2%%=*}]=${2#*=}; shift 2 ;;
    --rank-env) rank_env=1; shift ;;
    --netem) netem=$2; shift 2 ;;
    --host-moved) host_moved+=("$2"); shift 2 ;;
    --) shift; break ;;
    *) ranks=$1; shift ;;
  esac
done
out=${RDMA2_OUT:-$(mktemp -d)}
declare -A pid=() rc=() took=()
# rxe0 port 1's hw_counters before the job, for --host-moved: "name value" lines.
hw=/sys/class/infiniband/rxe0/ports/1/hw_counters
[ ${#host_moved[@]} -eq 0 ] || for f in "$hw"/*; do echo "$(basename "$f") $(cat "$f")"; done > "$out/hw_before"
netem_dev=''
if [ -n "$netem" ]; then
  netem_dev=$(rdma link show rxe0/1 | sed -n 's/.* netdev \([^ ]*\).*/\1/p')
  echo "sim_ranks: netem $netem on $netem_dev (rxe0's netdev)"
  tc qdisc add dev "$netem_dev" root netem $netem || { echo "FAIL: cannot add netem to $netem_dev"; exit 1; }
fi
t0=$(date +%s.%N)
for r in ${ranks//,/ }; do
  vars=()  # per-NIC counters only where a check reads them; RANK with --rank-env
  [ ${#nictraffic[@]} -eq 0 ] && [ ${#host_moved[@]} -eq 0 ] || { mkdir -p "$out/metrics$r"; vars=(NCCLSCOPE_PROM_TEXTFILE_DIR="$out/metrics$r"); }
  [ $rank_env = 0 ] || vars+=(RANK="$r")
  env "${vars[@]}" "$@" --rank "$r" > "$out/rank$r.log" 2>&1 &
  pid[$r]=$!
done
# A rank still running at its --within deadline: record what its threads wait on in the kernel while it is still
# there to look at (a rank once took 66 s to exit after failing in time, and nothing said where it was).
watchers=()
for r in "${!within[@]}"; do
  [ -n "${pid[$r]:-}" ] || continue
  (
    sleep "${within[$r]}"
    p=${pid[$r]}
    kill -0 "$p" 2>/dev/null || exit 0
    {
      echo "=== rank $r still running after ${within[$r]} s: each thread's name, state, kernel wait channel, stack ==="
      for t in /proc/"$p"/task/*; do
        echo "--- $(cat "$t/comm") ($(sed 's/.*) //; s/ .*//' "$t/stat")) in $(cat "$t/wchan")"  # state: after the name's ')'
        cat "$t/stack" 2>/dev/null
      done
    } > "$out/rank$r.late" 2>&1
  ) < /dev/null > /dev/null 2>&1 &
  watchers+=($!)
done
if [ -n "$freeze" ]; then
  sleep "${freeze%%:*}"
  echo "sim_ranks: $(date +%T) asking the host to freeze this guest for ${freeze#*:} s"
  echo "${freeze#*:}" > "$RDMA2_RESULTS/freeze.$RDMA2_SIDE"
  while [ -e "$RDMA2_RESULTS/freeze.$RDMA2_SIDE" ]; do sleep 0.2; done  # the host removes it after SIGCONT
  echo "sim_ranks: $(date +%T) resumed"
fi
nic=''
if [ -n "$netdev_down" ]; then
  nic=$(rdma link show rxe0/1 | sed -n 's/.* netdev \([^ ]*\).*/\1/p')
  sleep "$netdev_down"
  date +%s.%N > "$out/netdev_down.at"
  echo "sim_ranks: $(date +%T) taking down $nic (rxe0's netdev)"
  ip link set "$nic" down
  date +%s.%N > "$out/netdev_down.done"
fi
# Reap in whatever order the ranks end, recording when each did.
declare -A rank_of=()
for r in "${!pid[@]}"; do rank_of[${pid[$r]}]=$r; done
while [ ${#rank_of[@]} -gt 0 ]; do
  wait -n -p done_pid "${!rank_of[@]}"; s=$?
  r=${rank_of[$done_pid]}; rc[$r]=$s; unset "rank_of[$done_pid]"
  took[$r]=$(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }')
done
for w in "${watchers[@]}"; do pkill -P "$w" sleep 2>/dev/null; kill "$w" 2>/dev/null; done || true
[ -z "$nic" ] || ip link set "$nic" up
[ -z "$netem_dev" ] || tc qdisc del dev "$netem_dev" root
ok=0
for r in ${ranks//,/ }; do
  echo "=== rank $r: status ${rc[$r]} after ${took[$r]} s ==="
  cat "$out/rank$r.log"
  [ ! -s "$out/rank$r.late" ] || cat "$out/rank$r.late"
  want=${expect[$r]:-0}
  if [ "$want" = '!0' ]; then [ "${rc[$r]}" -ne 0 ] || { echo "FAIL: rank $r exited 0, a failure was expected"; ok=1; }
  elif [ "${rc[$r]}" -ne "$want" ]; then echo "FAIL: rank $r exited ${rc[$r]}, $want expected"; ok=1; fi
  if [ -n "${loghas[$r]:-}" ] && ! grep -qE "${loghas[$r]}" "$out/rank$r.log"; then
    echo "FAIL: rank $r's log does not match /${loghas[$r]}/"; ok=1
  fi
  if [ -n "${within[$r]:-}" ] && awk -v t="${took[$r]}" -v w="${within[$r]}" 'BEGIN { exit !(t > w) }'; then
    echo "FAIL: rank $r took ${took[$r]} s, more than ${within[$r]} s"; ok=1
  fi
done
for r in ${ranks//,/ }; do
  want=${nictraffic[$r]:-${nictraffic[all]:-}}
  [ -n "$want" ] || continue
  counts=$("$(dirname "$0")/nic_bytes.sh" "$out/metrics$r")
  echo "=== rank $r: bytes per NIC: $(echo $counts) ==="
  echo "$counts" | awk -v want="$want" 'BEGIN { n = split(want, w, "+"); for (i in w) named[w[i]] = 1 }
    $2 > 0 { if ($1 in named) hit[$1] = 1; else other = 1 }
    END { for (i in w) if (!(w[i] in hit)) exit 1; exit other }' ||
    { echo "FAIL: rank $r's traffic is not on exactly $want"; ok=1; }
done
# --host-moved: the largest rise any of this side's textfiles shows (the rank that spoke last wrote the newest).
for kind in "${host_moved[@]}"; do
  case $kind in
    packets) family=ncclscope_host_rdma_port_packets_total ;;
    retransmit) family=ncclscope_host_rdma_port_retransmit_events_total ;;
    *) echo "FAIL: --host-moved $kind: not packets or retransmit"; ok=1; continue ;;
  esac
  files=$(grep -l "^$family{device=\"rxe0\"" $(for r in ${ranks//,/ }; do echo "$out/metrics$r/"*.prom; done) 2>/dev/null)
  echo "=== host counters ($family, rxe0) in $(echo $files | wc -w) of this side's textfiles ==="
  best=-1
  for f in $files; do
    grep "^$family{device=\"rxe0\",port=\"1\"" "$f"
    rise=$(grep "^$family{device=\"rxe0\",port=\"1\"" "$f" | awk -v before="$out/hw_before" '
      BEGIN { while ((getline line < before) > 0) { split(line, a, " "); base[a[1]] = a[2] } }
      { c = /direction="sent"/ ? "sent_pkts" : /direction="received"/ ? "rcvd_pkts" : "";
        if (match($0, /counter="[^"]*"/)) c = substr($0, RSTART + 9, RLENGTH - 10);
        total += $NF - base[c] }
      END { printf "%d", total }')
    [ "$rise" -gt "$best" ] && best=$rise
  done
  echo "sim_ranks: rxe0 $kind counters rose by $best during the job"
  [ "$best" -gt 0 ] || { echo "FAIL: rxe0's $kind counters did not rise in the host's metrics"; ok=1; }
done
if [ -n "${loghas[any]:-}" ] && ! grep -qE "${loghas[any]}" $(for r in ${ranks//,/ }; do echo "$out/rank$r.log"; done); then
  echo "FAIL: no rank's log matches /${loghas[any]}/"; ok=1
fi
exit $ok
