#!/usr/bin/env bash
# Builds NCCL from a source tarball (NVIDIA/nccl, `git archive`) on a lent GPU machine, for that machine's GPU only
# and only the device functions tests/gpu/nccl_job.cu calls (float sum all-reduce, all-gather, send/receive), so
# that the newest release can be put under the real-NCCL proof inside a short lease. The host code (plugin loading,
# proxy, profiler calls) is built whole; ONLY_FUNCS drops only other collectives' kernels.
# Usage: build_nccl.sh SRC_TGZ WORK_DIR [SECONDS]   -> WORK_DIR/nccl/build/{include,lib}; NCCL_HOME for run_real_nccl.sh
set -euo pipefail
tgz=$(realpath "${1:?usage: build_nccl.sh SRC_TGZ WORK_DIR [SECONDS]}")
work=${2:?usage: build_nccl.sh SRC_TGZ WORK_DIR [SECONDS]}
limit=${3:-600}
mkdir -p "$work" && cd "$work"
[ -d nccl ] || tar xzf "$tgz"  # kept between calls: make resumes where a cut-off build stopped
cap=$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader | head -n1 | tr -d .)
cuda=$(dirname "$(dirname "$(command -v nvcc)")")
version=$(grep -E '^NCCL_(MAJOR|MINOR|PATCH)' nccl/makefiles/version.mk | awk '{print $3}' | paste -sd.)
echo "NCCL $version, sm_$cap, CUDA at $cuda"
time timeout "$limit" make -C nccl -j"$(nproc)" src.build CUDA_HOME="$cuda" \
  NVCC_GENCODE="-gencode=arch=compute_$cap,code=sm_$cap" ONLY_FUNCS="AllReduce Sum f32 * *|AllGather * *|SendRecv" \
  >build.log 2>&1 || { tail -30 build.log; exit 1; }
ls -la nccl/build/lib/libnccl.so.2 nccl/build/include/nccl.h
