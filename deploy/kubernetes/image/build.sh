#!/usr/bin/env bash
# Builds the ncclscope init-container image (Containerfile beside this script) from a build directory, offline:
# FROM scratch, Debian's static busybox, the plugin (lib/), ncclscope-analyze and the dump helper (bin/).
#   build.sh BUILD_DIR [TAG]      TAG defaults to localhost/ncclscope-init:<the build's version>
# Environment: IMAGE_TOOL (podman, the default, or buildah), IMAGE_TOOL_OPTS (global options for it, e.g.
# "--storage-driver vfs"), STAGE_DIR (where the build context is staged and kept; a temporary folder if unset),
# BUSYBOX (default /bin/busybox from Debian's busybox-static).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
src=$(cd "$here/../../.." && pwd)
build=${1:?usage: build.sh BUILD_DIR [TAG]}
[ -d "$build" ] || { echo "build.sh: $build is no directory" >&2; exit 2; }
build=$(cd "$build" && pwd)
busybox=${BUSYBOX:-/bin/busybox}
tool=${IMAGE_TOOL:-podman}
read -r -a tool_opts <<<"${IMAGE_TOOL_OPTS:-}"

plugin=$build/lib/libnccl-net-ncclscope.so
analyze=$build/bin/ncclscope-analyze
for f in "$plugin" "$analyze" "$build/bin/ncclscope_analysis/__init__.py"; do
  [ -f "$f" ] || { echo "build.sh: $f is missing: build the project (ninja -C $build) first" >&2; exit 2; }
done
[ -x "$busybox" ] || { echo "build.sh: no $busybox (Debian: apt-get install busybox-static)" >&2; exit 2; }
# FROM scratch has no loader: a dynamically linked busybox (Debian's busybox package) would not start.
if readelf -l "$busybox" | grep -q 'Requesting program interpreter'; then
  echo "build.sh: $busybox is dynamically linked; the image needs busybox-static's" >&2
  exit 2
fi
command -v "$tool" >/dev/null || { echo "build.sh: no $tool (Debian: apt-get install podman)" >&2; exit 2; }
version=$(sed -n 's/^CMAKE_PROJECT_VERSION:STATIC=//p' "$build/CMakeCache.txt" 2>/dev/null || true)
tag=${2:-localhost/ncclscope-init:${version:-dev}}

stage=${STAGE_DIR:-}
if [ -z "$stage" ]; then
  stage=$(mktemp -d /tmp/ncclscope-init-image-XXXXXX)
  trap 'rm -rf "$stage"' EXIT
fi
rm -rf "$stage/rootfs"
root=$stage/rootfs
mkdir -p "$root/bin" "$root/ncclscope/lib" "$root/ncclscope/bin/ncclscope_analysis"
install -m 0755 "$busybox" "$root/bin/busybox"
# The applets the entrypoint and `kubectl cp` (tar) use, as links a shell finds on PATH.
for applet in sh cp sha256sum wc cat ls tar mkdir sleep; do ln -s busybox "$root/bin/$applet"; done
install -m 0644 "$here/ncclscope-install.sh" "$root/ncclscope-install.sh"
install -m 0755 "$plugin" "$root/ncclscope/lib/libnccl-net-ncclscope.so"
# One library, both halves: NCCL_PROFILER_PLUGIN=ncclscope opens libnccl-profiler-ncclscope.so.
ln -s libnccl-net-ncclscope.so "$root/ncclscope/lib/libnccl-profiler-ncclscope.so"
install -m 0755 "$analyze" "$root/ncclscope/bin/ncclscope-analyze"
install -m 0644 "$build"/bin/ncclscope_analysis/*.py "$root/ncclscope/bin/ncclscope_analysis/"
install -m 0755 "$src/deploy/slurm/ncclscope-dump.sh" "$root/ncclscope/bin/ncclscope-dump.sh"
(cd "$root/ncclscope" && find lib bin -type f -o -type l | LC_ALL=C sort | xargs sha256sum >SHA256SUMS)
chmod 0644 "$root/ncclscope/SHA256SUMS"
cp "$here/Containerfile" "$stage/Containerfile"

case "$tool" in
  buildah) build_cmd=(buildah "${tool_opts[@]}" bud) ;;
  *) build_cmd=("$tool" "${tool_opts[@]}" build) ;;
esac
# chroot isolation: no container runtime is needed to build (there is no RUN step anyway).
"${build_cmd[@]}" --isolation chroot --label "org.opencontainers.image.version=${version:-dev}" \
  --label "org.opencontainers.image.title=ncclscope-init" -f "$stage/Containerfile" -t "$tag" "$stage"
echo "build.sh: built $tag from $build"
