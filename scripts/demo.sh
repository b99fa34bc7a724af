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
export NCCLSCOPE_DUMP_DIR="$out" NCCLSCOPE_SOCKET_IFNAME=lo NCCLSCOPE_PROM_BIND=127.0.0.1

echo "=== can this host load the plugin? ==="
build/bin/ncclscope-loadcheck build/lib/libnccl-net-ncclscope.so

echo "=== ncclscope-sim: 4 ranks, 2 communicators, ncclscope as net + profiler plugin ==="
build/bin/ncclscope-sim --ranks 4 --comms 2 --ops allreduce,allgather,reducescatter,broadcast,sendrecv \
  --sizes 8:4M --iters 20 --net-plugin ncclscope --profiler-plugin ncclscope

echo "=== what ncclscope recorded ==="
echo "per-communicator dumps (one per communicator and rank, written at finalize): $out"
ls -1 "$out"
first=$(ls "$out"/ncclscope-comm-*.json 2>/dev/null | head -n 1 || true)
if [ -n "$first" ]; then
  python3 - "$first" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
print(f"{sys.argv[1]}: comm {d['comm_hash']} rank {d['rank']}/{d['nranks']} (profiler ABI {d['abi']})")
for op in d["ops"]:
    print(f"  {op['kind']:5} {op['func']:14} ops {op['count']:6}  bytes {op['bytes']:>14}  last seq {op.get('last_seq')}")
print("  flight recorder:", len(d["flight_recorder"]["completed"]), "completed,",
      len(d["flight_recorder"]["in_flight"]), "in flight; dropped:", d["dropped"])
PY
fi
echo "metrics: each rank serves Prometheus text at http://127.0.0.1:<9850 + LOCAL_RANK>/metrics while it runs"
