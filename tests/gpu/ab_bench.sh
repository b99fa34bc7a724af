#!/usr/bin/env bash
# On a lent GPU machine: bench_profiler of this tree against an earlier one, interleaved
# (scripts/ab-bench-profiler.sh), both built there the same way. BASE_TAR: `git archive -o FILE REV` of the earlier
# tree (the machine gets no git history), e.g. put in DEBS_DIR, which travels anyway.
# Usage: ab_bench.sh DEBS_DIR BASE_TAR OUT_DIR [ROUNDS (default 5)]
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
debs=$(cd "${1:?usage: ab_bench.sh DEBS_DIR BASE_TAR OUT_DIR [ROUNDS]}" && pwd)
base_tar=$(realpath "${2:?base tarball}")
out=${3:?out dir}
rounds=${4:-5}
mkdir -p "$out"
exec > >(tee "$out/ab_log.txt") 2>&1
. "$root/tests/gpu/deps_env.sh"
build() {  # build SOURCE_DIR BUILD_DIR: bench_profiler only
  cmake -S "$1" -B "$2" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_PREFIX_PATH="$prefix/usr" >"$2.configure.txt" 2>&1
  ninja -C "$2" -j"$(nproc)" bench_profiler >"$2.build.txt" 2>&1 || { tail -30 "$2.build.txt"; exit 1; }
}
rm -rf /tmp/ab-base-src && mkdir -p /tmp/ab-base-src && tar -xf "$base_tar" -C /tmp/ab-base-src
build /tmp/ab-base-src /tmp/ab-build-before
build "$root" /tmp/ab-build-after
echo "bench_profiler, before ($(basename "$base_tar")) and after (this tree), $rounds interleaved rounds, $(nproc) CPUs:"
"$root/scripts/ab-bench-profiler.sh" /tmp/ab-build-before/bin/bench_profiler /tmp/ab-build-after/bin/bench_profiler \
  "$rounds"
