#!/usr/bin/env bash
# NCCLSCOPE_PROM_TEXTFILE_DIR with no HTTP endpoint: while a real sim job runs, each rank's textfile appears,
# is refreshed on the interval with its communicator's metrics, passes `promtool check metrics`, and the final
# write at the last finalize keeps the NIC byte counters. Every series carries the identity labels and pid
# (ncclscope_job, host, global_rank, local_rank; no GPU here) and none a label named job or instance; the files
# stay after the job (removed after NCCLSCOPE_OUTPUT_GRACE_S, tests/tools/cleanup_test.sh).
set -uo pipefail
sim=${1:?usage: textfile_test.sh SIM LIB_DIR}
lib=${2:?usage: textfile_test.sh SIM LIB_DIR}
dir=$(mktemp -d /tmp/ncclscope-textfile-XXXXXX)
trap 'rm -rf "$dir"' EXIT
LD_LIBRARY_PATH=$lib NCCLSCOPE_JOB_ID=tf-test NCCLSCOPE_PROM_PORT=-1 NCCLSCOPE_PROM_TEXTFILE_DIR="$dir" NCCLSCOPE_PROM_TEXTFILE_INTERVAL_S=1 \
  timeout 120 "$sim" --ranks 2 --ops allreduce --sizes 256K:256K --iters 40 --straggle 1:100 >"$dir/sim.log" 2>&1 &
pid=$!
fail=0
seen_live=0
for _ in $(seq 1 100); do  # up to 10 s for a refresh that shows the running communicator
  if grep -qs '^ncclscope_comm_operations_total' "$dir"/ncclscope-*.prom 2>/dev/null; then seen_live=1; break; fi
  sleep 0.1
done
wait $pid || { echo "FAIL: the sim failed"; tail -5 "$dir/sim.log"; fail=1; }
[ "$seen_live" = 1 ] && echo "ok: a periodic write showed the running communicator's metrics" || {
  echo "FAIL: no periodic textfile with communicator metrics while the job ran"; fail=1; }
files=("$dir"/ncclscope-*.prom)
[ "${#files[@]}" = 2 ] && echo "ok: one textfile per rank" || { echo "FAIL: ${#files[@]} textfiles"; fail=1; }
for f in "${files[@]}"; do
  promtool check metrics <"$f" >"$dir/promtool.out" 2>&1 || { echo "FAIL: promtool on $f"; cat "$dir/promtool.out"; fail=1; }
  sent=$(awk '/^ncclscope_nic_sent_bytes_total/ {s += $2} END {print s + 0}' "$f")
  [ "$sent" -gt 0 ] && echo "ok: final $(basename "$f"): NIC sent bytes $sent" || { echo "FAIL: no NIC bytes in $f"; fail=1; }
  pid=$(basename "$f" .prom | awk -F- '{print $(NF-1)}')
  samples=$(grep -vc '^#' "$f")
  labelled=$(grep -v '^#' "$f" | grep 'ncclscope_job="tf-test"' | grep 'host="' | grep 'global_rank="[01]"' |
             grep 'local_rank="[01]"' | grep -c "pid=\"$pid\"")
  [ "$samples" -gt 0 ] && [ "$samples" = "$labelled" ] && echo "ok: all $samples series carry the identity labels and pid=$pid" ||
    { echo "FAIL: $labelled of $samples series of $f carry the identity labels and pid"; fail=1; }
  if grep -v '^#' "$f" | grep -Eq '[{,](job|instance)="'; then echo "FAIL: a job or instance label in $f"; fail=1; fi
done
ranks=$(cat "${files[@]}" | grep -o '^ncclscope_process_info{[^}]*global_rank="[0-9]*"' | grep -o 'global_rank="[0-9]*"' | sort -u | tr '\n' ' ')
[ "$ranks" = 'global_rank="0" global_rank="1" ' ] && echo "ok: one file per global rank: $ranks" ||
  { echo "FAIL: global ranks '$ranks'"; fail=1; }
exit $fail
