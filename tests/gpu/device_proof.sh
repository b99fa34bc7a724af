#!/usr/bin/env bash
# One command for a lent GPU machine on which nothing can be installed: build ncclscope against Debian
# packages carried as .deb files (unpacked into a private prefix, never installed), then run the real-NCCL
# proof (run_real_nccl.sh) and the benchmarks, and leave a log and a tarball of everything in OUT_DIR.
# Usage: device_proof.sh DEBS_DIR OUT_DIR    (DEBS_DIR: scripts/fetch-gpu-debs.sh fills one; an NVIDIA/nccl source
# tarball put there as nccl-src.tgz is built and proved too)
set -uo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
debs=$(cd "${1:?usage: device_proof.sh DEBS_DIR OUT_DIR}" && pwd)
out=${2:?usage: device_proof.sh DEBS_DIR OUT_DIR}
mkdir -p "$out"
exec > >(tee "$out/log.txt") 2>&1
echo "=== machine ==="
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
grep PRETTY_NAME /etc/os-release; nproc; echo "clocksource: $(cat /sys/devices/system/clocksource/clocksource0/current_clocksource 2>/dev/null)"; g++ --version | head -1; cmake --version | head -1; nvcc --version | tail -2
python3 -c 'import torch; print("torch", torch.__version__, "NCCL", torch.cuda.nccl.version())' 2>&1 | tail -1

. "$root/tests/gpu/deps_env.sh"
build=/tmp/ncclscope-build
# Abseil linked in as the packages ship it, from the source fetch-gpu-debs.sh carried (nothing can be fetched here);
# without it, Debian's shared abseil from the unpacked .debs.
abseil_src=$(ls -d "$debs"/abseil-source/abseil-* 2>/dev/null | head -n1)
if [ -n "$abseil_src" ]; then abseil=(-DNCCLSCOPE_ABSEIL_SOURCE_DIR="$abseil_src"); else abseil=(-DNCCLSCOPE_STATIC_ABSEIL=OFF); fi
configure() {
  rm -rf "$build"
  cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_PREFIX_PATH="$prefix/usr" "${abseil[@]}" "$@" \
    >"$out/configure.txt" 2>&1
}
echo "=== build ==="
if configure; then
  echo "configured with every component"
elif configure -DNCCLSCOPE_BUILD_TESTS=OFF -DNCCLSCOPE_BUILD_BENCHMARKS=OFF -DNCCLSCOPE_WITH_PROMETHEUS=OFF; then
  echo "configured the plugin core only (full configure failed: see configure.txt)"
else
  tail -30 "$out/configure.txt"; exit 1
fi
grep -E "absl_DIR|prometheus-cpp_DIR" "$build/CMakeCache.txt"
# Only what the proof runs: the plugin, the two benchmarks and two inner plugins for the chain (the test suite
# runs on CI machines).
targets=ncclscope_plugin
all_targets=$(ninja -C "$build" -t targets all)  # not piped into grep -q: SIGPIPE would fail the pipeline
for t in bench_net bench_profiler ncclscope_inner_tcp_v8 ncclscope_inner_tcp_v12; do
  grep -q "^$t:" <<<"$all_targets" && targets+=" $t"
done
time ninja -C "$build" -j"$(nproc)" $targets >"$out/build.txt" 2>&1 || { tail -40 "$out/build.txt"; exit 1; }
echo "built: $(ls "$build"/lib/libnccl-*)"

echo "=== real NCCL ==="
"$root/tests/gpu/run_real_nccl.sh" "$build/lib" "$out/proof"
proof_rc=$?
echo "run_real_nccl.sh exit status $proof_rc"
tar -C "$out" --exclude=nccl_job --exclude='*/id' -czf "$out/proof.tar.gz" proof
rm -rf "$out/proof"

# The profiler benchmark first: it is short, and the network runs may be cut by the lease.
if [ -x "$build/bin/bench_profiler" ]; then
  echo "=== bench_profiler ==="
  timeout 300 "$build/bin/bench_profiler" --benchmark_repetitions=3 --benchmark_report_aggregates_only=true
fi
if [ -x "$build/bin/bench_net" ]; then
  echo "=== bench_net spread: 12 runs in fresh processes, 1-64 MiB ==="
  BENCH_MIN=1048576 timeout 300 "$build/bin/bench_net" --runs=12 --sizes-max=67108864 --quick
  echo "=== bench_net ($(nproc) CPUs, default: helper threads) ==="
  timeout 300 "$build/bin/bench_net"
  echo "=== bench_net, inline data path (NCCLSCOPE_NET_NTHREADS=-1) ==="
  NCCLSCOPE_NET_NTHREADS=-1 timeout 300 "$build/bin/bench_net"
fi

# The newest NCCL, where its source came along (DEBS_DIR/nccl-src.tgz, a `git archive` of NVIDIA/nccl): built for
# this GPU by build_nccl.sh, then the same proof against it (it loads the newest net and profiler tables we export).
if [ -f "$debs/nccl-src.tgz" ]; then
  echo "=== real NCCL built from source ==="
  if "$root/tests/gpu/build_nccl.sh" "$debs/nccl-src.tgz" "$root/.nccl" 300; then
    NCCL_HOME=$root/.nccl/nccl/build timeout 200 "$root/tests/gpu/run_real_nccl.sh" "$build/lib" "$out/newest"
    newest_rc=$?
    echo "run_real_nccl.sh against the source build: exit status $newest_rc"
    tar -C "$out" --exclude=nccl_job --exclude='*/id' -czf "$out/newest.tar.gz" newest && rm -rf "$out/newest"
    [ "$newest_rc" = 0 ] || proof_rc=$newest_rc
  else
    echo "SKIP: NCCL from source did not build in time (see above)"
  fi
fi
exit $proof_rc
