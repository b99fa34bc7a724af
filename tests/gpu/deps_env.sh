# Sourced by the GPU machine scripts: unpacks the .deb files of DEBS_DIR ($debs) into a private prefix (never
# installed: nothing can be installed there) and points the loader and NCCL's header at it. Sets $prefix.
prefix=/tmp/ncclscope-deps
rm -rf "$prefix" && mkdir -p "$prefix"
for f in "$debs"/*.deb; do dpkg -x "$f" "$prefix"; done
export LD_LIBRARY_PATH="$prefix/usr/lib/x86_64-linux-gnu:$prefix/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export NCCLSCOPE_NCCL_INCLUDE=$debs/nccl-include
