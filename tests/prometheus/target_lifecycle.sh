#!/usr/bin/env bash
# A real Prometheus discovers two jobs through the file_sd target files ncclscope writes into one folder. When
# the short job exits cleanly its targets stay for NCCLSCOPE_OUTPUT_GRACE_S (its last values scrapeable, its
# ranks shown down), then the long job's output janitor removes its files and Prometheus drops the targets;
# the long job's own targets stay up throughout.
set -euo pipefail
sim=$1 libdir=$2
if ! command -v prometheus >/dev/null; then
  echo "SKIP: the prometheus server is not installed (scripts/install-deps.sh installs it)"; exit 77
fi
grace=8
source "$(dirname "$0")/prom_lib.sh"
prom_file_sd_setup lifecycle || exit 1

export LD_LIBRARY_PATH="$libdir${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
# run_job JOB_ID ITERS LOG. exec: `$!` is then the launcher itself, whose ranks die with it; killing the subshell
# at exit left the long job running for its million iterations. Rank 1 sleeps 10 ms before each operation, so a
# job's life is about ITERS × 10 ms on any host: under a CPU hog the operations themselves take several times
# longer, and a job paced by them alone (20,000 of 1 ms) outlived the test's limit.
run_job() {
  NCCLSCOPE_JOB_ID=$1 NCCLSCOPE_OUTPUT_GRACE_S=$grace NCCLSCOPE_SD_DIR="$work/sd" NCCLSCOPE_PROM_PORT=0 \
    NCCLSCOPE_PROM_BIND=127.0.0.1 NCCLSCOPE_SOCKET_IFNAME=lo exec \
    "$sim" --ranks 2 --comms 1 --ops allreduce --sizes 64K:64K --iters "$2" --straggle 1:10 >"$3" 2>&1
}
run_job long 1000000 "$work/long.log" &
pids+=($!)
run_job short 2000 "$work/short.log" &  # 20 s and more: long enough to be seen up (1 s scrapes) on a loaded host
short=$!

# targets JOB HEALTH: how many of JOB's targets Prometheus lists with that health ("up", "down", or "any").
targets() {
  curl -sf "http://127.0.0.1:$port/api/v1/targets" | python3 -c '
import json, sys
job, health = sys.argv[1], sys.argv[2]
ts = json.load(sys.stdin)["data"]["activeTargets"]
print(sum(1 for t in ts if t["labels"].get("ncclscope_job") == job and health in ("any", t["health"])))' "$1" "$2"
}
wait_for() {  # wait_for SECONDS DESCRIPTION COMMAND...: polls until COMMAND succeeds
  local until=$((SECONDS + $1)) what=$2; shift 2
  while [ $SECONDS -lt $until ]; do "$@" && return 0; sleep 0.5; done
  echo "FAIL: $what"; ls -l "$work/sd"; tail -n 3 "$work/short.log" "$work/long.log"; return 1
}
both_up() { [ "$(targets short up)" = 2 ] && [ "$(targets long up)" = 2 ]; }
wait_for 60 "both jobs' targets up" both_up
echo "ok: Prometheus scrapes both jobs' 2 ranks through file_sd"
wait "$short" || { echo "FAIL: the short job failed"; tail -5 "$work/short.log"; exit 1; }
exited=$SECONDS
short_down() { [ "$(targets short down)" = 2 ]; }
wait_for 30 "the exited job's targets shown down within the grace period" short_down
echo "ok: the exited job's 2 targets are listed down after its exit ($((SECONDS - exited)) s)"
short_gone() { [ "$(targets short any)" = 0 ]; }
wait_for 60 "the exited job's targets removed after the grace period" short_gone
gone=$((SECONDS - exited))
echo "ok: the exited job's targets are gone ${gone} s after its exit (grace ${grace} s)"
[ "$gone" -ge "$grace" ] || { echo "FAIL: removed before the grace period"; exit 1; }
[ "$(targets long up)" = 2 ] || { echo "FAIL: the running job lost a target"; exit 1; }
echo "PASS: targets of a cleanly exited job stay for the grace period, then go; the running job's stay up"
