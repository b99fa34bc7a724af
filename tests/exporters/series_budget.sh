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
# One rank's final textfile: written at the last finalize, it holds every communicator's final totals and
# every operation type the job ran.
for level in $levels; do
  for comms in $comm_counts; do
    dir="$work/$level-$comms"
    mkdir -p "$dir"
    LD_LIBRARY_PATH=$lib NCCLSCOPE_PROM_PORT=-1 NCCLSCOPE_PROM_TEXTFILE_DIR="$dir" NCCLSCOPE_METRICS_LEVEL=$level \
      NCCLSCOPE_SOCKET_IFNAME=lo NCCLSCOPE_DUMP_ON_FINALIZE=0 \
      timeout 120 "$sim" --ranks 2 --comms "$comms" --ops all --sizes 1K:1M --factor 32 --iters 2 --warmup 0 \
      >"$dir/sim.log" 2>&1 || { echo "FAIL: the sim failed at level $level with $comms communicators"; tail -5 "$dir/sim.log"; exit 1; }
    files=("$dir"/*.prom)
    [ -f "${files[0]}" ] || { echo "FAIL: no textfile at level $level with $comms communicators"; exit 1; }
    grep -v '^#' "${files[0]}" | grep . >"$dir/samples"
    types=$(grep -c '^ncclscope_operation_duration_seconds_count' "$dir/samples")
    [ "$types" = 6 ] || { echo "FAIL: the textfile has $types operation types, not 6 (level $level, $comms communicators)"; exit 1; }
    live=$(grep -c '^ncclscope_comm_info' "$dir/samples")
    [ "$live" = "$comms" ] || { echo "FAIL: the textfile has $live communicators, not $comms (level $level)"; exit 1; }
    series[$level-$comms]=$(wc -l <"$dir/samples")
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
