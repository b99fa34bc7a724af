#!/usr/bin/env bash
# The proof under real NCCL (issue 6): two processes on one GPU machine, each its own "host" (NCCL_HOSTID) so that
# NCCL routes through the net plugin, load ncclscope as net and profiler plugin with NCCL_DEBUG=INFO, run
# all-reduces of 1 MiB and 64 MiB with the profiler on and off, and check NCCL's log and ncclscope's dumps.
# Exits 77 (skipped, with the reason) where no GPU or no CUDA toolkit exists.
set -uo pipefail
libdir=${1:?usage: run_real_nccl.sh BUILD_LIB_DIR [OUT_DIR]}
out=${2:-$(mktemp -d /tmp/ncclscope-gpu-XXXXXX)}
here=$(cd "$(dirname "$0")" && pwd)
if ! command -v nvidia-smi >/dev/null || ! nvidia-smi -L >/dev/null 2>&1; then
  echo "SKIP: no NVIDIA GPU on this machine (nvidia-smi finds none); the real-NCCL proof needs a GPU machine"; exit 77
fi
if ! command -v nvcc >/dev/null; then echo "SKIP: nvcc (CUDA toolkit) not found"; exit 77; fi
cuda=$(dirname "$(dirname "$(command -v nvcc)")")
mkdir -p "$out"
nvcc -O2 -o "$out/nccl_job" "$here/nccl_job.cu" -I"$cuda/include" -L"$cuda/lib64" -L"$cuda/lib" -lnccl || exit 1
export LD_LIBRARY_PATH="$libdir:$cuda/lib64:$cuda/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
nvidia-smi -L
run() {  # run NAME PROFILER: two ranks, 20 iterations per size
  local name=$1 profiler=$2 dir="$out/$1"
  mkdir -p "$dir"; rm -f "$dir/id"
  for r in 0 1; do
    NCCL_HOSTID="ncclscope-host-$r" NCCL_NET_PLUGIN=ncclscope NCCL_PROFILER_PLUGIN=$profiler NCCL_DEBUG=INFO \
      NCCL_DEBUG_SUBSYS=INIT,NET,ENV,PROFILE NCCLSCOPE_DUMP_DIR="$dir" NCCLSCOPE_SOCKET_IFNAME=lo \
      NCCLSCOPE_TRANSPORT=tcp LOCAL_RANK=$r \
      "$out/nccl_job" $r 2 "$dir/id" 20 1048576 67108864 >"$dir/rank$r.log" 2>&1 &
  done
  wait
  grep "allreduce" "$dir/rank0.log"
}
for rep in 1 2 3; do run "on$rep" ncclscope; run "off$rep" none; done
log=$out/on1/rank0.log
echo "--- NCCL's own lines about our plugins ---"
grep -E "NET/Plugin|Profiler|ncclscope|via NET" "$log" | head -20
fail=0
grep -q "ncclscope" "$log" || { echo "FAIL: NCCL's log never mentions ncclscope"; fail=1; }
grep -qE "via NET/ncclscope" "$log" || { echo "FAIL: no channel goes via NET/ncclscope"; fail=1; }
ls "$out"/on1/ncclscope-comm-*.json >/dev/null 2>&1 || { echo "FAIL: no ncclscope dump was written"; fail=1; }
python3 - "$out" <<'PY'
import glob, json, os, re, statistics, sys
out = sys.argv[1]
for f in sorted(glob.glob(os.path.join(out, "on1", "ncclscope-comm-*.json"))):
    d = json.load(open(f))
    print(f"{os.path.basename(f)}: abi {d['abi']}", [(o["func"], o["count"], o["bytes"], o["last_seq"]) for o in d["ops"]])
def times(kind):
    t = {}
    for f in glob.glob(os.path.join(out, kind + "*", "rank0.log")):
        for m in re.finditer(r"allreduce (\d+) bytes: ([\d.]+) us", open(f).read()):
            t.setdefault(int(m.group(1)), []).append(float(m.group(2)))
    return t
on, off = times("on"), times("off")
for size in sorted(on):
    a, b = statistics.median(on[size]), statistics.median(off.get(size, [float("nan")]))
    print(f"profiler overhead at {size} bytes: on {a:.1f} us, off {b:.1f} us, {100 * (a - b) / b:+.2f} %")
PY
exit $fail
