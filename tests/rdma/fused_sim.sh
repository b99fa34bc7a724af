#!/usr/bin/env bash
# fused_sim.sh NIC,NIC[,…] SIM [ARG…]: runs the emulated job (SIM ARG… --fuse-nics, one launcher and its rank
# processes) with every rank writing its metrics as a textfile, then checks that it passed and that each
# listed NIC (the members of the fused device) carried a share of every rank's bytes.
set -uo pipefail
nics=$1; shift
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
  for nic in ${nics//,/ }; do
    echo "$counts" | awk -v n="$nic" '$1 == n && $2 > 0 { hit = 1 } END { exit !hit }' ||
      { echo "FAIL: $nic carried none of this rank's bytes"; ok=1; }
  done
done
[ "$nfiles" -gt 0 ] || { echo "FAIL: no textfile written"; ok=1; }
exit $ok
