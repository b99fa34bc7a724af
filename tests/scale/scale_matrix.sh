#!/bin/bash
# The engine x shape table of docs/scaling.md: rule_eval_scale.py for each shape on each engine, one after the
# other (each needs the machine to itself), then scale_table.py over the results.
#   tests/scale/scale_matrix.sh OUT_DIR VM_BIN [RUN...]
# RUN: ENGINE:SHAPE with ENGINE vm or prom and SHAPE 2048, 4096, 16384 or 20x512 (default: every shape on
# VictoriaMetrics, and 2048, 4096 and 20x512 on Prometheus, which does not hold 16,384 x 8 in 24 GiB).
# About 45 minutes for the default set on 2 cores. Each run's log and JSON land in OUT_DIR.
set -u
out=$1 vm_bin=$2
shift 2
runs=("$@")
[ ${#runs[@]} -gt 0 ] || runs=(vm:2048 vm:4096 vm:16384 vm:20x512 prom:2048 prom:4096 prom:20x512)
here=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$out"
status=0
jsons=()
for run in "${runs[@]}"; do
  engine=${run%%:*} shape=${run#*:}
  case $shape in
    *x*) args=(--jobs "${shape%x*}" --ranks "${shape#*x}") ;;
    *) args=(--ranks "$shape") ;;
  esac
  case $engine in
    vm) args+=(--engine victoriametrics --vm-bin "$vm_bin") ;;
    prom) args+=(--engine prometheus --memlimit 16GiB) ;;
    *) echo "scale_matrix: unknown engine in $run (vm or prom)" >&2; exit 2 ;;
  esac
  echo "== $run"
  python3 "$here/rule_eval_scale.py" "${args[@]}" --comms 8 --history 300 --settle 30 --phase 60 --phase-all 120 \
    --json "$out/$engine-$shape.json" > "$out/$engine-$shape.log" 2>&1 || status=1
  tail -1 "$out/$engine-$shape.log"
done
for run in "${runs[@]}"; do
  f="$out/${run%%:*}-${run#*:}.json"
  [ -f "$f" ] && jsons+=("$f")
done
python3 "$here/scale_table.py" "${jsons[@]}" > "$out/table.md"
echo "scale_matrix: table in $out/table.md"
exit $status
