#!/usr/bin/env bash
# The cardinality budget: series one rank exports (the sample lines of its final textfile) per detail level
# (NCCLSCOPE_METRICS_LEVEL) for 1, 8 and 16 communicators running every operation type over one NIC, with the
# estimate for a 10,000-GPU job, and what a stalled communicator adds. Fails when the default level exceeds 200
# series per rank at 8 communicators, one of them stalled, with the rank's share of the host's NIC counters.
# The test runs that case only; with --table it measures every level and prints the table the README shows.
set -uo pipefail
sim=${1:?usage: series_budget.sh SIM LIB_DIR [--table]}
lib=${2:?usage: series_budget.sh SIM LIB_DIR [--table]}
levels="basic" comm_counts="8"
[ "${3:-}" = --table ] && levels="basic detailed full" comm_counts="1 8 16"
budget=200
work=$(mktemp -d /tmp/ncclscope-series-XXXXXX)
trap 'rm -rf "$work"' EXIT
declare -A series host
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
    # The host's NIC counters (ncclscope_host_*) come from one rank per host: counted per host, not per rank.
    grep -v '^#' "${files[0]}" | grep . | grep -v '^ncclscope_host_' >"$dir/samples"
    host[$level-$comms]=$(cat "${files[@]}" | grep -c '^ncclscope_host_')
    types=$(grep -c '^ncclscope_operation_duration_seconds_count' "$dir/samples")
    [ "$types" = 6 ] || { echo "FAIL: the textfile has $types operation types, not 6 (level $level, $comms communicators)"; exit 1; }
    live=$(grep -c '^ncclscope_comm_info' "$dir/samples")
    [ "$live" = "$comms" ] || { echo "FAIL: the textfile has $live communicators, not $comms (level $level)"; exit 1; }
    series[$level-$comms]=$(wc -l <"$dir/samples")
  done
done
# A stalled communicator adds only where its oldest operation waits (ncclscope_comm_wait_seconds, one series per
# peer waited on, at most 8) and the collectives it issued (ncclscope_comm_wait_last_seq): rank 0 of a 2-rank job
# whose rank 1 stops issuing, with 8 communicators, while the stall lasts (textfile every second; the stall shows
# after the 2 s floor). There each communicator has its own thread, so rank 1 stays busy on the other seven; a rank
# idle on every communicator adds ncclscope_comm_idle_last_seq, one per communicator: rank 1 of a 4-rank job with a
# tensor- and a data-parallel communicator issued from one thread (--layout tp=2), once it stops issuing.
# hung_rank_textfile DIR LEVEL GLOBAL_RANK FAMILY SIM_ARGS...: runs a hung job (the stall capped at 2 s however slow
# a loaded host made the operations before it, the textfile written every second) until the textfile of GLOBAL_RANK
# has FAMILY, then ends it; prints that textfile's path (nothing if FAMILY never showed).
hung_rank_textfile() {
  local dir=$1 level=$2 rank=$3 family=$4 pid f="" _
  shift 4
  mkdir -p "$dir"
  LD_LIBRARY_PATH=$lib NCCLSCOPE_PROM_PORT=-1 NCCLSCOPE_PROM_TEXTFILE_DIR="$dir" NCCLSCOPE_METRICS_LEVEL=$level \
    NCCLSCOPE_PROM_TEXTFILE_INTERVAL_S=1 NCCLSCOPE_STALL_TIMEOUT_S=2 NCCLSCOPE_SOCKET_IFNAME=lo \
    NCCLSCOPE_DUMP_ON_FINALIZE=0 timeout 90 "$sim" --ops allreduce --sizes 1K:1K --iters 100000 --expect-hang \
    --timeout 60 "$@" >"$dir/sim.log" 2>&1 &
  pid=$!
  for _ in $(seq 1 600); do
    sleep 0.1
    f=$(grep -l ",global_rank=\"$rank\"" "$dir"/*.prom 2>/dev/null | head -1)
    [ -n "$f" ] && grep -q "^$family" "$f" && break
    f=""
    kill -0 $pid 2>/dev/null || break
  done
  kill $pid 2>/dev/null
  wait $pid
  echo "$f"
}
declare -A stalled idle
for level in $levels; do
  f=$(hung_rank_textfile "$work/$level-stalled" "$level" 0 ncclscope_comm_wait_seconds --ranks 2 --comms 8 --hang 1@20)
  [ -n "$f" ] || { echo "FAIL: no wait series while rank 0 was stalled (level $level)"; tail -5 "$work/$level-stalled/sim.log"; exit 1; }
  n=$(grep -c '^ncclscope_comm_wait_seconds' "$f") last=$(grep -c '^ncclscope_comm_wait_last_seq' "$f")
  [ "$last" = 1 ] || { echo "FAIL: rank 0 exports $last ncclscope_comm_wait_last_seq series for its stalled communicator, not 1"; exit 1; }
  grep -q '^ncclscope_comm_idle_last_seq' "$f" && { echo "FAIL: stalled rank 0 exports ncclscope_comm_idle_last_seq"; exit 1; }
  stalled[$level]=$((n + last))
  dir="$work/$level-idle"
  g=$(hung_rank_textfile "$dir" "$level" 1 ncclscope_comm_idle_last_seq --ranks 4 --layout tp=2 --hang 1@20)
  i=0
  [ -z "$g" ] || i=$(grep -c '^ncclscope_comm_idle_last_seq' "$g")
  [ "$i" = 2 ] || { echo "FAIL: idle rank 1 exports $i ncclscope_comm_idle_last_seq series, not one per communicator (2)"; tail -5 "$dir/sim.log"; exit 1; }
  others=$(grep -L ',global_rank="1"' "$dir"/*.prom | xargs grep -l '^ncclscope_comm_idle_last_seq' 2>/dev/null | wc -l)
  [ "$others" = 0 ] || { echo "FAIL: $others ranks that wait export ncclscope_comm_idle_last_seq"; exit 1; }
  idle[$level]=$((i / 2 * 8))  # one per communicator, as measured on 2: at 8 communicators
done
if [ "${3:-}" = --table ]; then
printf '| level | 1 comm | 8 comms | 16 comms | 10,000 GPUs x 8 comms | added by a stalled communicator |\n|---|---|---|---|---|---|\n'
for level in $levels; do
  printf '| %s | %s | %s | %s | %s M | %s |\n' "$level" "${series[$level-1]}" "${series[$level-8]}" "${series[$level-16]}" \
    "$(python3 -c "print(round(${series[$level-8]} * 10000 / 1e6, 2))")" "${stalled[$level]}"
done
fi
# The host's share per rank on a host of 8 ranks, rounded up: this machine's NICs (bench_host_nics gives a host
# of 8 RDMA NICs: 48 series at the basic level, 6 per rank).
host_share=$(( (host[basic-8] + 7) / 8 ))
echo "host NIC counters: ${host[basic-8]} series on this host at the default level (one rank exports them), $host_share per rank of 8"
if [ $((series[basic-8] + stalled[basic] + host_share)) -gt "$budget" ] || [ $((series[basic-8] + idle[basic] + host_share)) -gt "$budget" ]; then
  echo "FAIL: the default level exports ${series[basic-8]} + ${stalled[basic]} (stalled) or + ${idle[basic]} (idle) + $host_share (host) series per rank at 8 communicators (budget $budget)"; exit 1
fi
echo "PASS: ${series[basic-8]} series per rank at the default level with 8 communicators, ${stalled[basic]} more while one is stalled, ${idle[basic]} while idle on all, $host_share for the host's NICs (budget $budget)"
