#!/usr/bin/env bash
# The demo on a fresh Debian 12 machine: installs the packages, builds, and runs an emulated NCCL job
# (ncclscope-sim: 4 rank processes, 2 communicators) with ncclscope loaded as both its net plugin (TCP over
# loopback) and its profiler plugin, then shows what ncclscope recorded.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh

jobs=$(nproc)
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo >build.configure.log 2>&1 || { cat build.configure.log; exit 1; }
ninja -C build -j"$jobs" ncclscope_plugin ncclscope-sim ncclscope-loadcheck

out=${NCCLSCOPE_DEMO_DIR:-$PWD/ncclscope-demo}
rm -rf "$out" && mkdir -p "$out"
export LD_LIBRARY_PATH="$PWD/build/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export NCCLSCOPE_SOCKET_IFNAME=lo NCCLSCOPE_PROM_BIND=127.0.0.1

echo "=== can this host load the plugin? ==="
build/bin/ncclscope-loadcheck build/lib/libnccl-net-ncclscope.so

export NCCLSCOPE_DUMP_DIR="$out"

echo "=== ncclscope-sim: 4 ranks, 2 communicators, ncclscope as net + profiler plugin ==="
build/bin/ncclscope-sim --ranks 4 --comms 2 --ops all \
  --sizes 8:4M --factor 8 --iters 5 --net-plugin ncclscope --profiler-plugin ncclscope

echo "=== what ncclscope recorded ==="
echo "per-communicator dumps (one per communicator and rank, written at finalize): $out"
ls -1 "$out"
python3 - "$out" <<'PY'
import glob, json, os, sys
sys.path.insert(0, "tools/analyze")  # demo.sh runs from the repository root
from ncclscope_analysis.dumps import read_dump  # v1 and v2 dumps alike

dumps = [read_dump(f) for f in sorted(glob.glob(os.path.join(sys.argv[1], "ncclscope-comm-*.json.gz")))]
print(f"{'communicator':20} {'rank':>4} {'abi':>3} {'operations':>10} {'bytes':>14}  last seq per collective")
for d in sorted(dumps, key=lambda d: (d["comm_hash"], d["rank"])):
    ops = sum(o["count"] for o in d["ops"])
    nbytes = sum(o["bytes"] for o in d["ops"])
    seqs = " ".join(f"{o['func']}={o['last_seq']}" for o in d["ops"] if o["kind"] == "coll")
    print(f"{d['comm_hash']:20} {d['rank']:>4} {d['abi']:>3} {ops:>10} {nbytes:>14}  {seqs}")
fr = dumps[0]["flight_recorder"] if dumps else {"completed": [], "in_flight": []}
print(f"flight recorder of the first: {len(fr['completed'])} completed, {len(fr['in_flight'])} in flight;",
      "dropped events:", sum(sum(d["dropped"].values()) for d in dumps))
PY
echo "metrics: each rank serves Prometheus text at http://127.0.0.1:<9850 + LOCAL_RANK>/metrics while it runs"
