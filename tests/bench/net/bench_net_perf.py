#!/usr/bin/env python3
"""Splits each process's CPU time in a `bench_net --runs=N --trace=FILE` run into the kernel's data copies and
everything else, from a system-wide `perf` sampling of the same run (what a slow run spends more on).

  perf record -a -k CLOCK_MONOTONIC -e cpu-clock -F 997 -o P.data -- build/bin/bench_net --runs=12 --trace=T
  perf script -i P.data -F pid,tid,time,ip,sym --ns > P.txt
  tests/bench/net/bench_net_perf.py T P.txt

A sample belongs to a process of the trace when its thread is one of that process's threads and it was taken
while that process measured (the trace's `t` is CLOCK_MONOTONIC, as is perf's clock with `-k`). Thread ids are
matched within the measuring window only: the plain pair's and the plugin's sender are the same process."""
import collections
import re
import sys

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
from bench_net_trace import rows  # noqa: E402

# The kernel's user<->kernel copy routines: what moving the bytes costs, apart from the TCP work around it.
COPY_SYMBOLS = {"_copy_to_iter", "_copy_from_iter", "rep_movs_alternative", "copy_user_generic_string",
                "copy_user_enhanced_fast_string", "__copy_user_nocache", "copy_page_to_iter", "copy_page_from_iter"}
SAMPLE = re.compile(r"\s*(\d+)/(\d+)\s+([\d.]+):\s+\S+\s+(\S+)")


def windows(trace_rows):
    """(tid, start, end, key) per thread of each process; key is (size, run, role)."""
    spans = {}
    for row in trace_rows:
        if "kind" not in row:
            end = float(row["t"])
            spans[(int(row["size"]), int(row["run"]), row["role"])] = (end - float(row["secs"]), end, int(row["bytes"]))
    out = []
    for row in trace_rows:
        if row.get("kind") == "thread":
            key = (int(row["size"]), int(row["run"]), row["role"])
            if key in spans:
                out.append((int(row["tid"]), spans[key][0], spans[key][1], key))
    return out, {key: span[2] for key, span in spans.items()}


def attribute(spans, samples):
    """{key: (samples, copy samples)} for the samples (lines of `perf script -F pid,tid,time,ip,sym`), given
    the threads' measuring windows (`windows`)."""
    by_tid = collections.defaultdict(list)
    for tid, start, end, key in spans:
        by_tid[tid].append((start, end, key))
    total, copy = collections.Counter(), collections.Counter()
    for line in samples:
        m = SAMPLE.match(line)
        if not m:
            continue
        t = float(m.group(3))
        for start, end, key in by_tid.get(int(m.group(2)), ()):
            if start <= t <= end:
                total[key] += 1
                copy[key] += m.group(4) in COPY_SYMBOLS
                break
    return {key: (total[key], copy[key]) for key in total}


def main(trace_path, samples_path, hz=997.0):
    spans, moved = windows(rows(trace_path))
    with open(samples_path) as samples:
        counts = attribute(spans, samples)
    print("CPU ms per GiB moved (copy = the kernel's copy routines; rest = everything else), from perf samples")
    print(f"{'size':>6} {'run':>4}  {'plain send':>13} {'plain recv':>13}  {'plugin send':>13} {'plugin recv':>13}")
    for size, run in sorted({(key[0], key[1]) for key in moved}):
        cells = []
        for role in ("plain-send", "plain-recv", "plugin-send", "plugin-recv"):
            key = (size, run, role)
            n, c = counts.get(key, (0, 0))
            per_gib = 1000.0 / hz * (1 << 30) / moved[key] if key in moved else 0
            cells.append(f"{c * per_gib:5.0f}+{(n - c) * per_gib:<5.0f}".rjust(13))
        print(f"{size >> 20:4d}Mi {run:4d}  {cells[0]} {cells[1]}  {cells[2]} {cells[3]}")


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    main(sys.argv[1], sys.argv[2])
