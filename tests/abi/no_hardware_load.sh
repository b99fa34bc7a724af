#!/usr/bin/env bash
# The plugin must load and initialise on a host with no GPU, no RDMA device and no libibverbs installed.
# This host has no GPU and no RDMA device; libibverbs (and any CUDA driver) is hidden for real inside a
# private mount namespace by mounting /dev/null over it, then ncclscope-loadcheck loads the plugin there.
set -u
loadcheck=$1 plugin=$2
if ! unshare -m --propagation private true 2>/dev/null; then
  echo "SKIP: cannot create a mount namespace here (unshare -m refused), so libibverbs cannot be hidden"
  exit 77
fi
exec unshare -m --propagation private bash -c '
  set -e
  hidden=0
  for lib in $(ldconfig -p | awk "/libibverbs\.so|libcuda\.so|libmlx5\.so/ {print \$NF}" | sort -u); do
    mount --bind /dev/null "$lib" && hidden=$((hidden+1))
  done
  echo "hid $hidden libibverbs/CUDA driver files"
  if python3 -c "import ctypes; ctypes.CDLL(\"libibverbs.so.1\")" 2>/dev/null; then
    echo "FAIL: libibverbs.so.1 still loads inside the namespace"; exit 1
  fi
  export NCCLSCOPE_SOCKET_IFNAME=lo NCCL_DEBUG=INFO
  "$0" "$1"
' "$loadcheck" "$plugin"
