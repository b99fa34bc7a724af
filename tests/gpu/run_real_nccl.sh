#!/usr/bin/env bash
# The proof under real NCCL (gpu-proof.md): two processes on one GPU machine, each its own "host" (NCCL_HOSTID) so that
# NCCL routes through the net plugin, load ncclscope as net and profiler plugin with NCCL_DEBUG=INFO, and
#  1. run all-reduces of 1 MiB and 64 MiB with the profiler on and off (three times each) for the overhead,
#  2. check NCCL's log, our dumps and our final metrics against what the job did,
#  3. record golden traces (NCCLSCOPE_RECORD_DIR, every event type) of an all-reduce, grouped point-to-point,
#     a CUDA-graph replay loop, a split communicator and an abort, into OUT_DIR/golden/<scenario>/.
# NCCL: $NCCL_HOME, else the CUDA toolkit's, else the one PyTorch's wheels bring (nvidia.nccl).
# Exits 77 (skipped, with the reason) where no GPU or no CUDA toolkit exists.
set -uo pipefail
libdir=$(cd "${1:?usage: run_real_nccl.sh BUILD_LIB_DIR [OUT_DIR]}" && pwd)
out=${2:-$(mktemp -d /tmp/ncclscope-gpu-XXXXXX)}
here=$(cd "$(dirname "$0")" && pwd)
if ! command -v nvidia-smi >/dev/null || ! nvidia-smi -L >/dev/null 2>&1; then
  echo "SKIP: no NVIDIA GPU on this machine (nvidia-smi finds none); the real-NCCL proof needs a GPU machine"; exit 77
fi
if ! command -v nvcc >/dev/null; then echo "SKIP: nvcc (CUDA toolkit) not found"; exit 77; fi
cuda=$(dirname "$(dirname "$(command -v nvcc)")")
mkdir -p "$out"

# --- which NCCL ---
if [ -n "${NCCL_HOME:-}" ]; then
  nccl_inc=$NCCL_HOME/include nccl_lib=$NCCL_HOME/lib
elif ls "$cuda"/lib64/libnccl.so.2 >/dev/null 2>&1; then
  nccl_inc=$cuda/include nccl_lib=$cuda/lib64
else
  d=$(python3 -c 'import nvidia.nccl as n; print(list(n.__path__)[0])' 2>/dev/null) || d=
  [ -n "$d" ] || { echo "SKIP: no NCCL found (NCCL_HOME, the CUDA toolkit, PyTorch's nvidia.nccl)"; exit 77; }
  nccl_inc=$d/include nccl_lib=$d/lib
fi
[ -f "$nccl_inc/nccl.h" ] || nccl_inc=${NCCLSCOPE_NCCL_INCLUDE:-$nccl_inc}  # a wheel without headers
echo "NCCL library: $(ls "$nccl_lib"/libnccl.so.2), header: $nccl_inc/nccl.h"
nvcc -O2 -o "$out/nccl_job" "$here/nccl_job.cu" -I"$nccl_inc" -L"$nccl_lib" -l:libnccl.so.2 \
  -Xlinker -rpath="$nccl_lib" || exit 1
export LD_LIBRARY_PATH="$libdir:$nccl_lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
nvidia-smi -L

# job NAME PROFILER SCENARIO ARGS...: two ranks in DIR=$out/NAME; extra environment in $JOB_ENV.
job() {
  local name=$1 profiler=$2 dir="$out/$1"
  shift 2
  mkdir -p "$dir"; rm -f "$dir/id"
  for r in 0 1; do
    env NCCL_HOSTID="ncclscope-host-$r" NCCL_NET_PLUGIN=ncclscope NCCL_PROFILER_PLUGIN=$profiler \
      NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,NET,ENV,PROFILE NCCLSCOPE_DUMP_DIR="$dir" \
      NCCLSCOPE_PROM_TEXTFILE_DIR="$dir" NCCLSCOPE_SOCKET_IFNAME=lo NCCLSCOPE_TRANSPORT=tcp LOCAL_RANK=$r \
      ${JOB_ENV:-} timeout 120 "$out/nccl_job" $r 2 "$dir/id" "$@" >"$dir/rank$r.log" 2>&1 &
  done
  wait
  grep -h "^nccl_job:" "$dir/rank0.log" "$dir/rank1.log"
}

echo "=== overhead: profiler on vs off (and NCCL's own socket transport), 3 runs each, 40 all-reduces per size ==="
for rep in 1 2 3; do
  job "on$rep" ncclscope timing 40 1048576 67108864
  job "off$rep" none timing 40 1048576 67108864
  JOB_ENV="NCCL_NET_PLUGIN=none NCCL_NET=Socket NCCL_SOCKET_IFNAME=lo" job "socket$rep" none timing 40 1048576 67108864
done

echo "=== the chain: ncclscope wrapping an inner net plugin (ncclscope's TCP built alone, v8 and v12) ==="
for v in 8 12; do
  inner=$libdir/libnccl-net-inner-tcp-v$v.so
  if [ -f "$inner" ]; then
    JOB_ENV="NCCLSCOPE_TRANSPORT=auto NCCLSCOPE_NET_CHAIN=$inner" job "chain_v$v" ncclscope timing 40 1048576 67108864
  else
    echo "SKIP chain_v$v: $inner was not built"
  fi
done

echo "=== golden traces (every event type recorded) ==="
for scenario in allreduce p2p_group graph split abort; do
  mkdir -p "$out/golden/$scenario"
  args=$scenario; [ "$scenario" = allreduce ] && args="timing 3 1048576"
  JOB_ENV="NCCLSCOPE_RECORD_DIR=$out/golden/$scenario NCCLSCOPE_EVENT_MASK=0xFFF" job "golden/$scenario" ncclscope $args
done

log=$out/on1/rank0.log
echo "=== NCCL's own lines about our plugins (on1, rank 0) ==="
grep -E "NET/Plugin|PROFILER|Profiler|ncclscope|via NET|NCCL version" "$log" | head -30
fail=0
grep -q "ncclscope" "$log" || { echo "FAIL: NCCL's log never mentions ncclscope"; fail=1; }
grep -qE "via NET/ncclscope" "$log" || { echo "FAIL: no channel goes via NET/ncclscope"; fail=1; }
ls "$out"/on1/ncclscope-comm-*.json.gz >/dev/null 2>&1 || { echo "FAIL: no ncclscope dump was written"; fail=1; }
grep -q "0 wrong results" "$log" || { echo "FAIL: the job's results were wrong or it did not finish"; fail=1; }
python3 "$here/check_real_nccl.py" "$out" || fail=1
exit $fail
