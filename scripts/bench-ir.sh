#!/bin/bash
# Instructions per profiler call, counted by valgrind (callgrind): a figure that does not move with the host's
# speed, for before/after comparisons of the event path on a noisy VM (bench_profiler's times swing 1.5-1.8x).
# Usage: scripts/bench-ir.sh [BENCH_PROFILER_BINARY]   (default build/bin/bench_profiler; needs valgrind)
# Prints, for BM_StartStop and BM_Collective32 (one thread), each entry point's inclusive instructions
# per call.
# Collective32 mixes one Coll and 32 KernelCh per operation: its per-call figures are averages over both.
set -euo pipefail
bin=${1:-build/bin/bench_profiler}
if ! command -v valgrind >/dev/null; then
  echo "bench-ir.sh: valgrind is not installed (apt-get install valgrind)" >&2
  exit 2
fi
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
for bench in StartStop Collective32; do
  # The system clock: valgrind emulates rdtsc, which would send every read down the TSC line's slow path.
  NCCLSCOPE_HOST_CLOCK=system valgrind --tool=callgrind --callgrind-out-file="$out/$bench" "$bin" \
    --benchmark_filter="BM_$bench/separate/real_time/threads:1\$" --benchmark_min_time=0.05 >/dev/null 2>&1
  echo "BM_$bench:"
  # A caller line (the benchmark, with its call count) comes right before the entry point's own line.
  callgrind_annotate --inclusive=yes --tree=caller "$out/$bench" 2>/dev/null | awk '
    /^ *[0-9,]+ \(.*\)  < .*bench_profiler.cc:.*BM_/ { caller = $0; next }
    /^ *[0-9,]+ \(.*\)  \*  / {
      if (caller != "" && $0 ~ /StartEventV5|StopEventAbi|RecordEventStateAbi/) {
        calls = caller; sub(/.*\(/, "", calls); sub(/x\).*/, "", calls); gsub(",", "", calls)
        ir = caller; sub(/^ */, "", ir); sub(/ .*/, "", ir); gsub(",", "", ir)
        name = $0; gsub(/\(anonymous namespace\)::/, "", name)
        sub(/.*\*  /, "", name); sub(/\(.*/, "", name); sub(/.*::/, "", name)
        printf "  %-20s %7.1f instructions per call (%d calls)\n", name, ir / calls, calls
      }
      caller = ""; next
    }
    { caller = "" }'
done
