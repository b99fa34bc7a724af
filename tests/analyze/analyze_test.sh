#!/usr/bin/env bash
# ncclscope-analyze against the dumps of real rank processes (ncclscope-sim through the built plugin):
# it must call a healthy job healthy (exit 0), name the hung rank, the killed rank and the straggler (exit 1),
# write a loadable merged trace, and reject a corrupt dump naming the file (exit 2).
set -uo pipefail
sim=${1:?usage: analyze_test.sh SIM LIB_DIR ANALYZE}
lib=${2:?usage: analyze_test.sh SIM LIB_DIR ANALYZE}
analyze=${3:?usage: analyze_test.sh SIM LIB_DIR ANALYZE}
work=$(mktemp -d /tmp/ncclscope-analyze-XXXXXX)
trap 'rm -rf "$work"' EXIT
fail=0
job() {  # job NAME SIM_ARGS...: dumps into $work/NAME
  local name=$1
  shift
  mkdir -p "$work/$name"
  LD_LIBRARY_PATH=$lib NCCLSCOPE_PROM_PORT=-1 NCCLSCOPE_DUMP_DIR="$work/$name" NCCLSCOPE_STALL_TIMEOUT_S=1 \
    timeout 120 "$sim" "$@" >"$work/$name.sim.log" 2>&1
}
expect() {  # expect NAME STATUS PATTERN: run the analyzer on NAME's dumps
  local name=$1 want=$2 pattern=$3
  python3 "$analyze" "$work/$name" >"$work/$name.out" 2>&1
  local rc=$?
  echo "--- $name (exit $rc)"
  head -1 "$work/$name.out"
  if [ "$rc" != "$want" ]; then echo "FAIL: $name: exit $rc, expected $want"; fail=1; fi
  if ! grep -qE "$pattern" "$work/$name.out"; then echo "FAIL: $name: no line matches /$pattern/"; cat "$work/$name.out"; fail=1; fi
}
job healthy --ranks 4 --comms 2 --ops allreduce,allgather --sizes 64K:1M --iters 3
expect healthy 0 "healthy, 4/4 ranks"
job hang --ranks 4 --ops allreduce --sizes 64K:64K --iters 10 --hang 2@3 --timeout 6 --expect-hang
expect hang 1 "rank\(s\) \[2\] are the likely cause: rank\(s\) \[0, 1, 3\] wait inside AllReduce seq 3"
job kill --ranks 4 --ops allreduce --sizes 64K:64K --iters 10 --kill 1@3 --timeout 30
expect kill 1 "MISSING: rank\(s\) \[1\]"
job straggle --ranks 4 --ops allreduce --sizes 256K:256K --iters 12 --straggle 3:30
expect straggle 1 "STRAGGLER: rank 3 arrives last"
# The dumps real NCCL 2.28.9 left in the golden abort scenario (rank 0 waits in a second all-reduce that
# rank 1 never issued; recorded on an H100, tests/data/golden/README.md).
mkdir -p "$work/real_abort" && cp "$(dirname "$0")"/../data/golden/nccl-2.28.9/abort/dumps/*.json "$work/real_abort/"
expect real_abort 1 "BEHIND: rank\(s\) \[1\] never issued AllReduce seq 1 that rank\(s\) \[0\] are waiting in"
python3 "$analyze" --trace "$work/trace.json" "$work/healthy" >/dev/null
python3 -c "import json,sys; t=json.load(open(sys.argv[1])); n=sum(e['ph']=='X' for e in t['traceEvents']); \
print('merged trace:', n, 'operations'); sys.exit(0 if n >= 4 * 2 * 2 * 3 else 1)" "$work/trace.json" || {
  echo "FAIL: merged trace"; fail=1; }
cp -r "$work/healthy" "$work/corrupt" && echo '{"schema": "ncclscope.comm.v1", "rank": 0' >"$work/corrupt/ncclscope-comm-bad-rank9.json"
python3 "$analyze" "$work/corrupt" >/dev/null 2>"$work/corrupt.err"
rc=$?
echo "--- corrupt (exit $rc): $(cat "$work/corrupt.err")"
[ "$rc" = 2 ] && grep -q "ncclscope-comm-bad-rank9.json" "$work/corrupt.err" || { echo "FAIL: corrupt dump"; fail=1; }
exit $fail
