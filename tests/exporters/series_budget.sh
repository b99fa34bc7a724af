#!/usr/bin/env bash
# The cardinality budget: series one rank exports (the sample lines of its final textfile) per detail level
# (NCCLSCOPE_METRICS_LEVEL) for 1, 8 and 16 communicators running every operation type over one NIC, with the
# estimate for a 10,000-GPU job. Fails when the default level exceeds 200 series per rank at 8 communicators.
# The test runs that case only; with --table it measures every level and prints the table the README shows.
set -uo pipefail
sim=${1:?usage: series_budget.sh SIM LIB_DIR [--table]}
lib=${2:?usage: series_budget.sh SIM LIB_DIR [--table]}
levels="basic" comm_counts="8"
[ "${3:-}" = --table ] && levels="basic detailed full" comm_counts="1 8 16"
budget=200
work=$(mktemp -d /tmp/ncclscope-series-XXXXXX)
trap 'rm -rf "$work"' EXIT
declare -A series
# One rank's /metrics while its communicators live: the sim runs the operation types one after the other and
# the communicators are destroyed at its end, so the largest of the scrapes taken while it runs is the count
# with every operation type seen.
scrape() {  # scrape SD_DIR OUT: the first target's /metrics sample lines into OUT
  local target
  target=$(python3 -c 'import glob,json,sys; f=sorted(glob.glob(sys.argv[1]+"/*.json")); print(json.load(open(f[0]))[0]["targets"][0] if f else "")' "$1" 2>/dev/null)
  : >"$2"
  [ -n "$target" ] && curl -sf "http://$target/metrics" | grep -v '^#' | grep . >"$2"
}
for level in $levels; do
  for comms in $comm_counts; do
    dir="$work/$level-$comms"
    mkdir -p "$dir/sd"
    LD_LIBRARY_PATH=$lib NCCLSCOPE_PROM_PORT=0 NCCLSCOPE_PROM_BIND=127.0.0.1 NCCLSCOPE_SD_DIR="$dir/sd" \
      NCCLSCOPE_METRICS_LEVEL=$level NCCLSCOPE_SOCKET_IFNAME=lo NCCLSCOPE_DUMP_ON_FINALIZE=0 \
      timeout 120 "$sim" --ranks 2 --comms "$comms" --ops all --sizes 1K:1M --factor 32 --iters 150 --warmup 0 \
      >"$dir/sim.log" 2>&1 &
    pid=$!
    n=0
    while kill -0 "$pid" 2>/dev/null; do
      scrape "$dir/sd" "$dir/now"
      c=$(wc -l <"$dir/now")
      [ "$c" -gt "$n" ] && { n=$c; cp "$dir/now" "$dir/largest"; }
      sleep 0.2
    done
    wait "$pid" || { echo "FAIL: the sim failed at level $level with $comms communicators"; tail -5 "$dir/sim.log"; exit 1; }
    [ "$n" -gt 0 ] || { echo "FAIL: no scrape at level $level with $comms communicators"; tail -5 "$dir/sim.log"; exit 1; }
    types=$(grep -c '^ncclscope_operation_duration_seconds_count' "$dir/largest")
    [ "$types" = 6 ] || { echo "FAIL: the largest scrape saw $types operation types, not 6 (level $level, $comms communicators)"; exit 1; }
    series[$level-$comms]=$n
  done
done
if [ "${3:-}" = --table ]; then
printf '| level | 1 comm | 8 comms | 16 comms | 10,000 GPUs x 8 comms |\n|---|---|---|---|---|\n'
for level in $levels; do
  printf '| %s | %s | %s | %s | %s M |\n' "$level" "${series[$level-1]}" "${series[$level-8]}" "${series[$level-16]}" \
    "$(python3 -c "print(round(${series[$level-8]} * 10000 / 1e6, 2))")"
done
fi
if [ "${series[basic-8]}" -gt "$budget" ]; then
  echo "FAIL: the default level exports ${series[basic-8]} series per rank at 8 communicators (budget $budget)"; exit 1
fi
echo "PASS: ${series[basic-8]} series per rank at the default level with 8 communicators (budget $budget)"
