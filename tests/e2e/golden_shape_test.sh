#!/usr/bin/env bash
# ncclscope-sim must drive the plugins the way real NCCL 2.28.9 and 2.30.7 did: record the sim's calls
# (NCCLSCOPE_RECORD_DIR, every event type) for the scenarios it can play and compare their shape with the golden
# traces of real NCCL (tests/data/golden): parent/child event types, threads, state sequences, descriptor fields,
# net call threads.
set -uo pipefail
sim=${1:?usage: golden_shape_test.sh SIM_BINARY LIB_DIR}
lib=${2:?usage: golden_shape_test.sh SIM_BINARY LIB_DIR}
root=$(cd "$(dirname "$0")/../.." && pwd)
work=$(mktemp -d /tmp/ncclscope-golden-shape-XXXXXX)
trap 'rm -rf "$work"' EXIT
fail=0
check() {  # check NAME GOLDEN_SCENARIO SIM_ARGS...
  local name=$1 scenario=$2
  shift 2
  mkdir -p "$work/$name"
  if ! LD_LIBRARY_PATH=$lib NCCLSCOPE_RECORD_DIR="$work/$name" NCCLSCOPE_EVENT_MASK=0xFFF NCCLSCOPE_PROM_PORT=-1 \
      timeout 120 "$sim" --ranks 2 "$@" >"$work/$name.log" 2>&1; then
    echo "FAIL: $name: the sim failed"; tail -5 "$work/$name.log"; fail=1; return
  fi
  for nccl in 2.28.9 2.30.7; do
    echo "== $name (sim $*) against real NCCL $nccl's $scenario"
    python3 "$root/tools/golden/trace_shape.py" --compare "$root/tests/data/golden/nccl-$nccl/$scenario" "$work/$name" ||
      fail=1
  done
}
check allreduce allreduce --ops allreduce --sizes 1M:1M --iters 3 --warmup 3
check sendrecv p2p_group --ops sendrecv --sizes 1K:1M --factor 64 --iters 2 --warmup 1
check graph graph --ops allreduce --sizes 1M:1M --graph-replay 5 --iters 1 --warmup 0
exit $fail
