#!/usr/bin/env bash
# nic_bytes.sh DIR: "NIC BYTES" per NIC (bytes sent plus received) from the node_exporter textfiles in DIR
# (NCCLSCOPE_PROM_TEXTFILE_DIR of one process or several: their counters add up), sorted by NIC.
cat "$1"/*.prom 2>/dev/null | awk '
  /^ncclscope_nic_(sent|received)_bytes_total\{/ {
    if (match($0, /nic="[^"]*"/)) { nic = substr($0, RSTART + 5, RLENGTH - 6); bytes[nic] += $NF }
  }
  END { for (n in bytes) printf "%s %d\n", n, bytes[n] }' | sort
