#!/usr/bin/env bash
# The net half used alone (no profiler plugin) starts the exporters at net init whatever net table NCCL
# binds: for ncclNetPlugin_v8 (NCCL 2.19+), v10 (2.26+) and v12 (2.30+) a 2-rank sim job with
# --profiler-plugin none serves each rank's metrics endpoint with NIC counters while it runs, and writes
# one node_exporter textfile per rank whose final write (at the last close for v8-v10, which have no
# finalize; at finalize for v11+) holds the bytes sent. The runtime starts once and stops once per rank.
set -uo pipefail
sim=${1:?usage: net_alone_test.sh SIM LIB_DIR}
lib=${2:?usage: net_alone_test.sh SIM LIB_DIR}
root=$(mktemp -d /tmp/ncclscope-net-alone-XXXXXX)
trap 'rm -rf "$root"' EXIT
fail=0
for v in 8 10 12; do
  dir="$root/v$v"
  mkdir -p "$dir"
  LD_LIBRARY_PATH=$lib NCCL_DEBUG=INFO NCCLSCOPE_PROM_PORT=0 NCCLSCOPE_PROM_BIND=127.0.0.1 \
    NCCLSCOPE_PROM_TEXTFILE_DIR="$dir" NCCLSCOPE_PROM_TEXTFILE_INTERVAL_S=1 NCCLSCOPE_DUMP_DIR="$dir/dump" \
    timeout 120 "$sim" --ranks 2 --profiler-plugin none --net-max-version "$v" --ops allreduce \
    --sizes 256K:256K --iters 30 --straggle 1:100 >"$dir/sim.log" 2>&1 &
  pid=$!
  scraped=0
  for _ in $(seq 1 100); do  # up to 10 s: scrape rank 0's endpoint while the job runs
    url=$(grep -o 'metrics endpoint at http://[^ ]*' "$dir/sim.log" 2>/dev/null | head -1 | sed 's/.* at //')
    if [ -n "$url" ]; then
      url=$(echo "$url" | sed -E 's#http://[^:/]+:#http://127.0.0.1:#')
      if curl -sf --max-time 2 "$url" >"$dir/scrape.txt" 2>/dev/null &&
         grep -q '^ncclscope_nic_sent_bytes_total' "$dir/scrape.txt"; then scraped=1; break; fi
    fi
    sleep 0.1
  done
  wait $pid || { echo "FAIL v$v: the sim failed"; tail -5 "$dir/sim.log"; fail=1; }
  [ "$scraped" = 1 ] && echo "ok v$v: the metrics endpoint served NIC counters while the job ran" ||
    { echo "FAIL v$v: no metrics endpoint with NIC counters while the job ran"; fail=1; }
  files=("$dir"/ncclscope-*.prom)
  [ -e "${files[0]}" ] && [ "${#files[@]}" = 2 ] && echo "ok v$v: one textfile per rank" ||
    { echo "FAIL v$v: ${#files[@]} textfiles (${files[*]})"; fail=1; continue; }
  for f in "${files[@]}"; do
    sent=$(awk '/^ncclscope_nic_sent_bytes_total/ {s += $2} END {print s + 0}' "$f")
    [ "$sent" -gt 0 ] && echo "ok v$v: final $(basename "$f"): NIC sent bytes $sent" ||
      { echo "FAIL v$v: no NIC bytes in $f"; fail=1; }
    if command -v promtool >/dev/null; then
      promtool check metrics <"$f" >"$dir/promtool.out" 2>&1 || { echo "FAIL v$v: promtool on $f"; cat "$dir/promtool.out"; fail=1; }
    fi
  done
  starts=$(grep -c 'runtime started for' "$dir/sim.log")
  stops=$(grep -c 'runtime stopped after' "$dir/sim.log")
  [ "$starts" = 2 ] && [ "$stops" = 2 ] && echo "ok v$v: the runtime started and stopped once per rank" ||
    { echo "FAIL v$v: runtime started $starts, stopped $stops times over 2 ranks"; grep 'runtime' "$dir/sim.log"; fail=1; }
done
exit $fail
