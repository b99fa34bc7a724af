#!/usr/bin/env python3
"""Summarises a `bench_net --runs=N --trace=FILE` trace: per size and run, the plugin against the plain pair
measured next to it, the CPU seconds per GiB of each side (where a slow run's time goes), and where each side
of the plugin ran (share of samples on CPU 0)."""
import collections
import sys


def main(path):
    rows = [dict(kv.split("=", 1) for kv in line.split()) for line in open(path)]
    runs = collections.defaultdict(dict)
    for r in rows:
        runs[(int(r["size"]), int(r["run"]))][r["role"]] = r
    print(f"{'size':>8} {'run':>4} {'paired':>7}   CPU s/GiB: plain send/recv  plugin send/recv"
          "   plugin on CPU 0: send/recv")
    for (size, run), sides in sorted(runs.items()):
        if not {"plain-send", "plain-recv", "plugin-send", "plugin-recv"} <= sides.keys():
            continue
        cpu = {k: (float(v["user"]) + float(v["sys"])) / (int(v["bytes"]) / 2**30)
               for k, v in sides.items()}
        on0 = {k: int(v["cpu0"]) / max(1, int(v["cpu0"]) + int(v["cpu1"])) for k, v in sides.items()}
        paired = float(sides["plain-send"]["secs"]) / float(sides["plugin-send"]["secs"])
        print(f"{size >> 20:>5}MiB {run:>4} {paired:>6.2f}x   {cpu['plain-send']:>13.3f}/{cpu['plain-recv']:<6.3f}"
              f" {cpu['plugin-send']:>9.3f}/{cpu['plugin-recv']:<6.3f}"
              f" {on0['plugin-send']:>13.2f}/{on0['plugin-recv']:.2f}")


if __name__ == "__main__":
    main(sys.argv[1])
