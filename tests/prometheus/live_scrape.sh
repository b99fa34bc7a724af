#!/usr/bin/env bash
# Tier 5: a real Prometheus server (Debian's) discovers every rank of a running ncclscope-sim job through the
# file_sd target files ncclscope writes (NCCLSCOPE_SD_DIR), scrapes them, and answers queries on ncclscope's
# metrics: every rank is up, and the net counters of the job's traffic are there and growing.
set -euo pipefail
sim=$1 libdir=$2
if ! command -v prometheus >/dev/null; then
  echo "SKIP: the prometheus server is not installed (scripts/install-deps.sh installs it)"; exit 77
fi
source "$(dirname "$0")/prom_lib.sh"
# The recording rules: the dashboard's legends name communicators through ncclscope:comm_name.
prom_file_sd_setup prom "$(cd "$(dirname "$0")/../../rules" && pwd)/ncclscope-recording.yml" || exit 1

export LD_LIBRARY_PATH="$libdir${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
NCCLSCOPE_JOB_ID=live-scrape NCCLSCOPE_SD_DIR="$work/sd" NCCLSCOPE_PROM_PORT=0 NCCLSCOPE_PROM_BIND=127.0.0.1 NCCLSCOPE_SOCKET_IFNAME=lo \
  NCCLSCOPE_HOST_NETDEVS=lo \
  "$sim" --ranks 2 --comms 1 --ops allreduce --sizes 1M:1M --iters 1000000 >"$work/sim.log" 2>&1 &
pids+=($!)

query() { curl -sf --get "http://127.0.0.1:$port/api/v1/query" --data-urlencode "query=$1"; }
value() { query "$1" | python3 -c 'import json,sys; r=json.load(sys.stdin)["data"]["result"]; print(r[0]["value"][1] if r else "")'; }

deadline=$((SECONDS + 60))
up=""
while [ $SECONDS -lt $deadline ]; do
  up=$(value 'count(up{job="ncclscope"} == 1)' 2>/dev/null || true)
  [ "$up" = "2" ] && break
  sleep 1
done
if [ "$up" != "2" ]; then
  echo "FAIL: Prometheus does not see 2 healthy ncclscope targets (saw '${up}')"
  ls -l "$work/sd"; tail -20 "$work/sim.log"; tail -5 "$work/prometheus.log"; exit 1
fi
echo "Prometheus scrapes both ranks through file_sd"
wait_for_traffic 60
info=$(value 'count(ncclscope_build_info{job="ncclscope"})')
echo "sum(rate(ncclscope_nic_sent_bytes_total[10s])) = ${rate:-none} B/s; build_info series: ${info:-none}"
python3 -c "import sys; sys.exit(0 if float('${rate:-0}') > 0 else 1)" || { echo "FAIL: no net traffic in Prometheus"; exit 1; }
[ "$info" = "2" ] || { echo "FAIL: expected 2 ncclscope_build_info series"; exit 1; }
# The identity labels come from the file_sd targets: one target per global rank, and the exposition adds none.
ranks=$(value 'count(count by (global_rank, local_rank, host) (ncclscope_process_info{job="ncclscope"}))')
npids=$(value 'count(count by (pid) (ncclscope_process_info{job="ncclscope", global_rank=~"0|1"}))')
echo "ncclscope_process_info: ${ranks:-none} (global_rank, local_rank, host) sets, ${npids:-none} pids"
[ "$ranks" = "2" ] && [ "$npids" = "2" ] || { echo "FAIL: expected the 2 ranks' identity labels on their targets"; exit 1; }
# The host's NIC counters (here lo's, NCCLSCOPE_HOST_NETDEVS=lo) come from one of the two ranks: one process per
# job and host speaks for it.
speakers=$(value 'count(count by (global_rank) (ncclscope_host_netdev_bytes_total{job="ncclscope", netdev="lo"}))')
echo "ncclscope_host_netdev_bytes_total{netdev=\"lo\"}: exported by ${speakers:-no} rank(s)"
[ "$speakers" = "1" ] || { echo "FAIL: expected the host's NIC counters from exactly one rank"; exit 1; }
# Every dashboard query runs against the live server; the ones that need only the recording rules loaded here
# (ncclscope:comm_name) must show this job's data (latency, bus bandwidth, oldest in flight, in flight,
# operations, NIC throughput, dropped events, ranks). The panels built on the straggler and lag rules are
# required by tests/prometheus/rules_live.sh.
# Retried for up to 60 s (until_ok): the rate panels need two scrapes in their window and the in-flight one an
# operation in flight when scraped, which a loaded host may not have at the first look.
for d in "$(dirname "$0")"/../../dashboards/*.json; do
  until_ok 60 python3 "$(dirname "$0")/../dashboards/check_dashboard.py" "$d" --prometheus "http://127.0.0.1:$port" \
    --require 6,7,8,10,11,12,15,16 || exit 1
done
echo "PASS: live Prometheus scrape"
