#!/bin/bash
# Two bench_profiler builds, interleaved round by round on one host, so that its fast and slow rounds (1.4-1.8x
# apart on the development VM and on the H100 host) fall on both alike. Prints, per round and build, the p50 per
# start+stop pair and per 32-channel collective (one thread) and the harness's (empty functions: NCCL's side of
# the calls); then each build's best and median, and its own cost (best less the harness's best).
# Usage: scripts/ab-bench-profiler.sh BEFORE_BINARY AFTER_BINARY [ROUNDS (default 5)]
set -euo pipefail
before=$1 after=$2 rounds=${3:-5}
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
filter='^BM_(StartStop|Collective32)/(separate|harness)/real_time/threads:1$'
for r in $(seq "$rounds"); do
  for side in before after; do
    bin=$before
    [ "$side" = after ] && bin=$after
    "$bin" --benchmark_filter="$filter" --benchmark_min_time=0.3 --benchmark_out="$out/$r.$side.json" \
      --benchmark_out_format=json >/dev/null 2>&1
  done
done
python3 - "$out" "$rounds" <<'PY'
import json, os, statistics, sys
out, rounds = sys.argv[1], int(sys.argv[2])
names = {"BM_StartStop/separate": "pair", "BM_Collective32/separate": "coll",
         "BM_StartStop/harness": "h_pair", "BM_Collective32/harness": "h_coll"}
rows = {"before": [], "after": []}
print(f"{'round':>5} {'build':>6} {'pair ns':>8} {'coll ns':>8} {'harness pair':>13} {'harness coll':>13}")
for r in range(1, rounds + 1):
    for side in ("before", "after"):
        got = {}
        for b in json.load(open(os.path.join(out, f"{r}.{side}.json")))["benchmarks"]:
            key = b["name"].split("/real_time")[0]
            if key in names:
                got[names[key]] = b["p50_ns"]
        rows[side].append(got)
        print(f"{r:>5} {side:>6} {got['pair']:>8.1f} {got['coll']:>8.1f} {got['h_pair']:>13.1f} {got['h_coll']:>13.1f}")
for side, rs in rows.items():
    best = {k: min(x[k] for x in rs) for k in names.values()}
    med = {k: statistics.median(x[k] for x in rs) for k in names.values()}
    print(f"{side}: pair best {best['pair']:.1f} ns (median {med['pair']:.1f}), own {best['pair'] - best['h_pair']:.1f} ns;"
          f" collective best {best['coll']:.0f} ns (median {med['coll']:.0f}), own {best['coll'] - best['h_coll']:.0f} ns")
PY
