#!/usr/bin/env bash
# fused_sim.sh NIC,NIC[,…] [--rails R,R[,…]] SIM [ARG…]: runs the emulated job (SIM ARG… --fuse-nics, one
# launcher and its rank processes) with every rank writing its metrics as a textfile, then checks that it
# passed and that each listed NIC (the members of the fused device) carried a share of every rank's bytes;
# with --rails, that each NIC's ncclscope_nic_info names its rail (NCCL_IB_HCA's dev:port:rail:plane).
set -uo pipefail
nics=$1; shift
rails=''
if [ "${1:-}" = --rails ]; then rails=$2; shift 2; fi
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
NCCLSCOPE_PROM_TEXTFILE_DIR=$dir "$@" --fuse-nics; rc=$?
[ $rc -eq 0 ] || { echo "FAIL: the job exited $rc"; exit 1; }
nfiles=$(ls "$dir"/*.prom 2>/dev/null | wc -l)
echo "fused_sim: $nfiles textfile(s)"
ok=0
for f in "$dir"/*.prom; do
  one=$(mktemp -d); cp "$f" "$one/"
  counts=$("$(dirname "$0")/nic_bytes.sh" "$one"); rm -rf "$one"
  echo "fused_sim: $(basename "$f"): bytes per NIC: $(echo $counts)"
  i=0
  for nic in ${nics//,/ }; do
    echo "$counts" | awk -v n="$nic" '$1 == n && $2 > 0 { hit = 1 } END { exit !hit }' ||
      { echo "FAIL: $nic carried none of this rank's bytes"; ok=1; }
    i=$((i + 1))
    [ -n "$rails" ] || continue
    rail=$(echo "$rails" | cut -d, -f$i)
    line=$(grep "^ncclscope_nic_info{.*nic=\"$nic\"" "$f")
    echo "fused_sim:   $line"
    echo "$line" | grep -q "rail=\"$rail\"" || { echo "FAIL: $nic's info does not name rail $rail"; ok=1; }
  done
done
[ "$nfiles" -gt 0 ] || { echo "FAIL: no textfile written"; ok=1; }
exit $ok
