#!/usr/bin/env bash
# deploy/alertmanager/alertmanager.yml: amtool's check, and where the alerts go (a hang pages, warnings do not).
# Its grouping and inhibition run against a real Alertmanager in tests/prometheus/hang_live.py.
set -euo pipefail
cfg=${1:?usage: check_alertmanager_config.sh ALERTMANAGER_YML}
command -v amtool >/dev/null || { echo "SKIP: amtool is not installed (Debian's prometheus-alertmanager has it)"; exit 77; }
amtool check-config "$cfg"
route() { amtool config routes test --config.file="$cfg" "$@" 2>/dev/null; }
for a in NcclscopeHangPage NcclscopeCommStalled NcclscopeRankDown; do
  got=$(route alertname=$a severity=critical ncclscope_job=j comm=0x1)
  [ "$got" = ncclscope-oncall ] || { echo "FAIL: $a goes to '$got', want ncclscope-oncall"; exit 1; }
done
# The early hang answer, a pause that ended and the warnings do not page (pauses are not hangs).
for a in NcclscopeHang:warning NcclscopeHangResumed:info NcclscopeHangDetectionBlind:info NcclscopeStraggler:warning; do
  got=$(route alertname=${a%:*} severity=${a#*:} ncclscope_job=j comm=0x1)
  [ "$got" = ncclscope-tickets ] || { echo "FAIL: ${a%:*} goes to '$got', want ncclscope-tickets"; exit 1; }
done
echo "PASS: $cfg is valid; critical alerts page, warnings and notes go to tickets"
